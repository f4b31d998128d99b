#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""INT8 against 16x8 (et-export --activations int16) on models where INT8 loses accuracy.

Each model is trained here on a synthetic task (seeded, a few seconds on a CPU), exported
both ways for one target, and each program is run on the host exactly as the device runs
it (the host reference, reference/emulate.py; device = host is what twister checks) on
held-out data. Prints one row a model and width: the task's metric, the error of the
output against the float model's (relative to the float output's spread), flash (the
program) and RAM (planned arena + method + temp allocator).

- sensor_regression: an MLP on unnormalized readings (one feature a hundred times the
  others' scale), RMSE of its prediction;
- anomaly_autoencoder: MLPerf Tiny's anomaly-detection autoencoder (640 log-mel values,
  benchmarks/mlperf_tiny_models.py) trained on synthetic machine hum, AUC of its
  reconstruction error between normal and anomalous frames.

    python benchmarks/int16.py [-t cortex-m4] [MODEL ...]
"""

from __future__ import annotations

import argparse
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
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.common.table import format_table
    from et_zephyr.frontend.loading import ModelBundle
    from et_zephyr.reference.emulate import run_pte
    from mlperf_tiny_models import AutoEncoder
    from torch import nn

TEST_SAMPLES = 256


@dataclass
class Task:
    model: nn.Module
    calibration: list[torch.Tensor]
    test: torch.Tensor  # [samples, ...] one input a row
    # The task's metric from the model's outputs on `test` (one row a sample).
    metric: Callable[[torch.Tensor], float]
    metric_name: str


def _train(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, steps: int) -> None:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(1)
    model.train()
    for _ in range(steps):
        batch = torch.randint(0, inputs.shape[0], (64,), generator=generator)
        loss = nn.functional.mse_loss(model(inputs[batch]), targets[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
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

    calibration = [train_x[i : i + 1] for i in range(64)]
    return Task(model, calibration, test_x, rmse, "RMSE")


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

    calibration = [normal[i : i + 1] for i in range(64)]
    return Task(model, calibration, test, auc, "AUC")


TASKS: dict[str, Callable[[], Task]] = {
    "sensor_regression": sensor_regression,
    "anomaly_autoencoder": anomaly_autoencoder,
}


def rows(name: str, target: str) -> list[tuple[str, ...]]:
    with quiet_imports():
        task = TASKS[name]()
    with torch.no_grad():
        reference = task.model(task.test)
    spread = (reference.max() - reference.min()).item()
    result = [(name, "float", f"{task.metric_name} {task.metric(reference):.4f}", "", "", "")]
    for width in ("int8", "int16"):
        bundle = ModelBundle(task.model, (task.test[:1],), [(x,) for x in task.calibration])
        options = ExportOptions(target=target, name=name, activations=width, verify=False)
        with quiet_imports():
            artifacts = export(bundle, options)
        pte = artifacts.files[f"{name}.pte"]
        isa = artifacts.manifest["target"]["isa"]
        outputs = torch.cat([run_pte(pte, (x.unsqueeze(0),), isa)[0] for x in task.test])
        error = (outputs.reshape(reference.shape) - reference).abs().max().item() / spread
        memory = artifacts.manifest["memory"]
        ram = sum(entry["bytes"] for entry in memory["planned"])
        ram += memory["method_allocator"] + memory["temp_allocator"]
        label = "INT8" if width == "int8" else "16x8"
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-t", "--target", default="cortex-m4", help="Cortex-M target")
    parser.add_argument("models", nargs="*", choices=[[], *TASKS], help="models (default all)")
    args = parser.parse_args()
    table = [("model", "width", "metric", "largest error vs float", "flash B", "RAM B")]
    for name in args.models or list(TASKS):
        table += rows(name, args.target)
    print("\n".join(format_table(table, left=(0, 1, 2))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
