#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""INT8, INT8 after quantization-aware training, 16x8 (et-export --activations int16) and
mixed (--precision auto) on models where INT8 loses accuracy.

Each model is trained here on a synthetic task (seeded, a few seconds on a CPU), exported
each way for one target, and each program is run on the host exactly as the device runs
it (the host reference, reference/emulate.py; device = host is what twister checks) on
held-out data. QAT fine-tunes the trained model through et-export's INT8 fake
quantization (api.prepare_qat, 500 steps at a tenth of the learning rate) before
api.export_qat. Mixed is --precision auto --drop-measure error with the model's own
--max-drop (what 16x8 can reach; "asked" in the table): its row says how many of the
operators it put in 16x8 (of the linears, convolutions, additions and pools). Each model
is calibrated on 1024 training samples, the last 256 of which are the export's held-out
inputs (what --precision auto judges on); the test inputs are another 256.
Prints one row a model and variant: the task's metric, the error of the output against
the float model's on the test inputs, measured as --precision auto measures it
(reference/verify.py's relative_rms_error: each input's RMS error over its float
output's RMS, averaged), flash (the program) and RAM (planned arena + method + temp
allocator).

- sensor_regression: an MLP on unnormalized readings (one feature a hundred times the
  others' scale), RMSE of its prediction;
- anomaly_autoencoder: MLPerf Tiny's anomaly-detection autoencoder (640 log-mel values,
  benchmarks/mlperf_tiny_models.py) trained on synthetic machine hum, AUC of its
  reconstruction error between normal and anomalous frames;
- signal_denoiser: a 1-D convolutional denoiser of sensor signals whose amplitude spans
  three orders of magnitude, the output's SNR in dB (median over the test signals);
- residual_chain: a regressor of 12 residual blocks (linear + ReLU each), RMSE.

    python benchmarks/int16.py [-t cortex-m4] [MODEL ...]

`<model>_trained` and `<model>_qat` are et-export factories of the trained model and of
it after quantization-aware training, for benchmarks/firmware.py.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "benchmarks"))

from et_zephyr.common.runtime_quiet import quiet_imports  # noqa: E402

with quiet_imports():
    import torch
    from et_zephyr.api import ExportOptions, export, export_qat, prepare_qat
    from et_zephyr.artifacts import Artifacts
    from et_zephyr.common.table import format_table
    from et_zephyr.errors import first_line
    from et_zephyr.frontend.loading import ModelBundle
    from et_zephyr.reference.emulate import run_pte
    from et_zephyr.reference.verify import relative_rms_error
    from mlperf_tiny_models import AutoEncoder
    from torch import nn
    from torch.fx import GraphModule
    from torchao.quantization.pt2e import move_exported_model_to_train

TEST_SAMPLES = 256
BATCH = 64
# Quantization-aware fine-tuning of the trained float model (INT8, et_zephyr.api.prepare_qat).
QAT_STEPS = 500
CALIBRATION_SAMPLES = 1024


@dataclass
class Task:
    model: nn.Module
    calibration: list[torch.Tensor]
    test: torch.Tensor  # [samples, ...] one input a row
    # The task's metric from the model's outputs on `test` (one row a sample).
    metric: Callable[[torch.Tensor], float]
    metric_name: str
    # What the model was trained on, for quantization-aware fine-tuning.
    train_inputs: torch.Tensor
    train_targets: torch.Tensor
    # --precision auto's --max-drop (relative_rms_error against the float model).
    max_drop: float


def _train(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, steps: int, lr: float = 1e-3
) -> None:
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(1)
    exported = isinstance(model, GraphModule)  # a prepare_qat model: no train()/eval()
    if exported:
        move_exported_model_to_train(model)
    else:
        model.train()
    for _ in range(steps):
        batch = torch.randint(0, inputs.shape[0], (BATCH,), generator=generator)
        loss = nn.functional.mse_loss(model(inputs[batch]), targets[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if not exported:
        model.eval()


def sensor_regression() -> Task:
    generator = torch.Generator().manual_seed(0)

    def readings(count: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(count, 12, generator=generator)
        x[:, 0] *= 100.0  # e.g. a raw pressure offset, in its own units
        y = torch.sin(x[:, 1:2]) + 0.5 * x[:, 2:3] * x[:, 3:4] + 0.004 * x[:, 0:1]
        return x, y

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
    model.append(nn.Linear(64, 1))
    train_x, train_y = readings(8192)
    _train(model, train_x, train_y, 3000)
    test_x, test_y = readings(TEST_SAMPLES)

    def rmse(predicted: torch.Tensor) -> float:
        return math.sqrt(nn.functional.mse_loss(predicted.reshape(test_y.shape), test_y).item())

    calibration = [train_x[i : i + 1] for i in range(CALIBRATION_SAMPLES)]
    return Task(model, calibration, test_x, rmse, "RMSE", train_x, train_y, 0.15)


def _hum(count: int, anomalous: bool, generator: torch.Generator) -> torch.Tensor:
    """5 frames of 128 log-mel bands: a machine's harmonics (random fundamental and
    levels) over noise; an anomaly adds a band of broadband rattle."""
    bands = torch.arange(128).float()
    fundamental = 6.0 + 4.0 * torch.rand(count, 1, generator=generator)
    spectrum = torch.zeros(count, 128)
    for harmonic in range(1, 8):
        level = torch.rand(count, 1, generator=generator) / harmonic
        spectrum += level * torch.exp(-((bands - harmonic * fundamental) ** 2) / 2.0)
    if anomalous:
        start = torch.randint(20, 100, (count, 1), generator=generator)
        rattle = ((bands >= start) & (bands < start + 12)).float()
        spectrum += 0.3 * rattle * torch.rand(count, 1, generator=generator)
    frames = spectrum.unsqueeze(1) + 0.05 * torch.rand(count, 5, 128, generator=generator)
    return torch.log(frames + 1e-3).reshape(count, 640)


def anomaly_autoencoder() -> Task:
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = AutoEncoder()
    normal = _hum(4096, False, generator)
    _train(model, normal, normal, 1500)
    half = TEST_SAMPLES // 2
    test = torch.cat([_hum(half, False, generator), _hum(half, True, generator)])
    labels = torch.cat([torch.zeros(half), torch.ones(half)])

    def auc(reconstructed: torch.Tensor) -> float:
        scores = ((reconstructed.reshape(test.shape) - test) ** 2).mean(1)
        # The probability that an anomalous frame scores above a normal one.
        above = scores[labels == 1].unsqueeze(1) > scores[labels == 0].unsqueeze(0)
        return above.double().mean().item()

    calibration = [normal[i : i + 1] for i in range(CALIBRATION_SAMPLES)]
    return Task(model, calibration, test, auc, "AUC", normal, normal, 0.003)


def _signals(count: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Noisy and clean [count, 1, 1, 128] signals: two tones, amplitude 10^-2 to 10^1."""
    time = torch.arange(128).float()
    frequency = 0.05 + 0.25 * torch.rand(count, 2, 1, generator=generator)
    phase = 6.3 * torch.rand(count, 2, 1, generator=generator)
    clean = torch.sin(frequency * time + phase).sum(1)
    amplitude = 10.0 ** (3.0 * torch.rand(count, 1, generator=generator) - 2.0)
    clean = clean * amplitude
    noisy = clean + 0.2 * amplitude * torch.randn(count, 128, generator=generator)
    return noisy.view(count, 1, 1, 128), clean.view(count, 1, 1, 128)


class Denoiser(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(1, 16, (1, 9), padding=(0, 4)),
            nn.ReLU(),
            nn.Conv2d(16, 16, (1, 9), padding=(0, 4)),
            nn.ReLU(),
            nn.Conv2d(16, 1, (1, 9), padding=(0, 4)),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - self.layers(x)


def signal_denoiser() -> Task:
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = Denoiser()
    noisy, clean = _signals(4096, generator)
    # Each signal weighs the same whatever its amplitude: trained on unit-scale copies.
    scale = clean.abs().amax((1, 2, 3), keepdim=True)
    _train(model, noisy / scale, clean / scale, 1500)
    test_noisy, test_clean = _signals(TEST_SAMPLES, generator)

    def snr(denoised: torch.Tensor) -> float:
        error = (denoised.reshape(test_clean.shape) - test_clean).pow(2).mean((1, 2, 3))
        power = test_clean.pow(2).mean((1, 2, 3))
        return (10 * torch.log10(power / error)).median().item()

    calibration = [noisy[i : i + 1] for i in range(CALIBRATION_SAMPLES)]
    return Task(model, calibration, test_noisy, snr, "SNR dB", noisy / scale, clean / scale, 0.05)


class ResidualChain(nn.Module):
    def __init__(self, blocks: int = 12, width: int = 32) -> None:
        super().__init__()
        self.stem = nn.Linear(8, width)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(blocks))
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        for block in self.blocks:
            h = h + torch.relu(block(h))
        return self.head(h)


def residual_chain() -> Task:
    generator = torch.Generator().manual_seed(0)

    def samples(count: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(count, 8, generator=generator)
        y = torch.tanh(x[:, :1] * x[:, 1:2]) + 0.3 * torch.cos(2 * x[:, 2:3]) + 0.1 * x[:, 3:4]
        return x, y

    torch.manual_seed(0)
    model = ResidualChain()
    with torch.no_grad():
        for block in model.blocks:
            block.weight.mul_(0.3)
    train_x, train_y = samples(8192)
    _train(model, train_x, train_y, 3000)
    test_x, test_y = samples(TEST_SAMPLES)

    def rmse(predicted: torch.Tensor) -> float:
        return math.sqrt(nn.functional.mse_loss(predicted.reshape(test_y.shape), test_y).item())

    calibration = [train_x[i : i + 1] for i in range(CALIBRATION_SAMPLES)]
    return Task(model, calibration, test_x, rmse, "RMSE", train_x, train_y, 0.02)


TASKS: dict[str, Callable[[], Task]] = {
    "sensor_regression": sensor_regression,
    "anomaly_autoencoder": anomaly_autoencoder,
    "signal_denoiser": signal_denoiser,
    "residual_chain": residual_chain,
}


def trained(name: str) -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """An et-export factory's (model, example inputs, calibration) for a trained model of
    this table, so that benchmarks/firmware.py measures its firmware."""
    task = TASKS[name]()
    return task.model, (task.test[:1],), [(x,) for x in task.calibration]


def fine_tuned(name: str) -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """An et-export factory's (model, example inputs, held-out inputs) for a model of this
    table after quantization-aware training (et-export lowers it as export_qat does)."""
    task = TASKS[name]()
    return _fine_tuned(task), (task.test[:1],), _held_out(task)


def sensor_regression_qat() -> tuple[nn.Module, tuple[torch.Tensor], list]:
    """et-export factory: the sensor regressor after QAT (benchmarks/firmware.py)."""
    return fine_tuned("sensor_regression")


def signal_denoiser_qat() -> tuple[nn.Module, tuple[torch.Tensor], list]:
    """et-export factory: the signal denoiser after QAT (benchmarks/firmware.py)."""
    return fine_tuned("signal_denoiser")


def residual_chain_qat() -> tuple[nn.Module, tuple[torch.Tensor], list]:
    """et-export factory: the residual chain after QAT (benchmarks/firmware.py)."""
    return fine_tuned("residual_chain")


def sensor_regression_trained() -> tuple[nn.Module, tuple[torch.Tensor], list]:
    """et-export factory: the trained sensor regressor (benchmarks/firmware.py)."""
    return trained("sensor_regression")


def signal_denoiser_trained() -> tuple[nn.Module, tuple[torch.Tensor], list]:
    """et-export factory: the trained signal denoiser (benchmarks/firmware.py)."""
    return trained("signal_denoiser")


def residual_chain_trained() -> tuple[nn.Module, tuple[torch.Tensor], list]:
    """et-export factory: the trained residual chain (benchmarks/firmware.py)."""
    return trained("residual_chain")


def rows(name: str, target: str) -> list[tuple[str, ...]]:
    with quiet_imports():
        task = TASKS[name]()
    with torch.no_grad():
        reference = task.model(task.test)
    result = [(name, "float", f"{task.metric_name} {task.metric(reference):.4f}", "", "", "")]
    for width in ("int8", "int8 QAT", "int16", "auto"):
        options = ExportOptions(target=target, name=name, verify=False)
        if width == "int16":
            options.activations = "int16"
        elif width == "auto":
            options.precision, options.max_drop = "auto", task.max_drop
            options.drop_measure = "error"
        label = {"int8": "INT8", "int8 QAT": "INT8 QAT", "int16": "16x8", "auto": "auto"}[width]
        try:
            with quiet_imports():
                artifacts = _export(task, width, options)
        except Exception as error:  # noqa: BLE001  (a row says why it has no figures)
            result.append((name, label, f"failed: {first_line(error)}", "", "", ""))
            continue
        pte = artifacts.files[f"{name}.pte"]
        isa = artifacts.manifest["target"]["isa"]
        outputs = torch.cat([run_pte(pte, (x.unsqueeze(0),), isa)[0] for x in task.test])
        error = relative_rms_error(list(outputs.reshape(reference.shape)), list(reference))
        precision = artifacts.manifest.get("precision")
        if isinstance(precision, dict):
            chosen, candidates = len(precision["int16_layers"]), len(precision["candidates"])
            label = f"mixed (asked {100 * task.max_drop:g} %): {chosen} of {candidates}"
        memory = artifacts.manifest["memory"]
        ram = sum(entry["bytes"] for entry in memory["planned"])
        ram += memory["method_allocator"] + memory["temp_allocator"]
        result.append(
            (
                name,
                label,
                f"{task.metric_name} {task.metric(outputs):.4f}",
                f"{100 * error:.2f} %",
                f"{artifacts.manifest['pte_bytes']:,}",
                f"{ram:,}",
            )
        )
    return result


def _export(task: Task, width: str, options: ExportOptions) -> Artifacts:
    """Post-training quantization, or with "QAT" the trained model fine-tuned through
    et-export's fake quantization first (at a tenth of the learning rate)."""
    example = (task.test[:1],)
    if not width.endswith("QAT"):
        bundle = ModelBundle(task.model, example, [(x,) for x in task.calibration])
        return export(bundle, options)
    return export_qat(_fine_tuned(task), example, options, _held_out(task))


def _held_out(task: Task) -> list[tuple[torch.Tensor]]:
    """What export holds out of the calibration samples: the last quarter."""
    return [(x,) for x in task.calibration[-CALIBRATION_SAMPLES // 4 :]]


def _fine_tuned(task: Task) -> GraphModule:
    """The trained model after QAT_STEPS of quantization-aware training."""
    prepared = prepare_qat(copy.deepcopy(task.model), (task.train_inputs[:BATCH],))
    channels_last = prepared.meta["channels_last"]
    layout = (
        (lambda x: x.contiguous(memory_format=torch.channels_last))
        if channels_last
        else (lambda x: x)
    )
    _train(prepared, layout(task.train_inputs), task.train_targets, QAT_STEPS, lr=1e-4)
    return prepared


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-t", "--target", default="cortex-m4", help="Cortex-M target")
    parser.add_argument("models", nargs="*", choices=[[], *TASKS], help="models (default all)")
    args = parser.parse_args()
    table = [("model", "width", "metric", "error vs float", "flash B", "RAM B")]
    for name in args.models or list(TASKS):
        table += rows(name, args.target)
        print(f"int16.py: {name} done", file=sys.stderr)
    print("\n".join(format_table(table, left=(0, 1, 2))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
