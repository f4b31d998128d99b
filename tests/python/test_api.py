# SPDX-License-Identifier: Apache-2.0
"""The Python API: factories, exported programs and quantization-aware training."""

from __future__ import annotations

import sys

import pytest
import torch
from conftest import KWS_MODEL, REPO
from et_zephyr.api import ExportOptions, export, export_qat, prepare_qat
from et_zephyr.errors import ExportError
from et_zephyr.frontend.loading import load_model

sys.path.insert(0, str(REPO / "samples/kws"))
from model import DSCNN, INPUT_SHAPE  # noqa: E402


def test_saved_torch_export_program_lowers_like_the_factory(tmp_path) -> None:
    bundle = load_model(KWS_MODEL)
    program = torch.export.export(bundle.model.eval(), bundle.example_inputs)
    torch.export.save(program, tmp_path / "kws.pt2")
    warnings: list[str] = []
    options = ExportOptions(target="cortex-m33", calib_random=8, warn=warnings.append)
    artifacts = export(str(tmp_path / "kws.pt2"), options)
    assert artifacts.name == "kws"
    assert artifacts.manifest["macs"]["cmsis_nn"] == artifacts.manifest["macs"]["total"] > 0
    assert any("random inputs" in warning for warning in warnings)


def test_pt2_without_calibration_is_refused(tmp_path) -> None:
    bundle = load_model(KWS_MODEL)
    program = torch.export.export(bundle.model.eval(), bundle.example_inputs)
    torch.export.save(program, tmp_path / "kws.pt2")
    with pytest.raises(ExportError, match="no calibration data"):
        export(str(tmp_path / "kws.pt2"), ExportOptions())


def test_batch_norm_is_folded_into_the_convolutions() -> None:
    artifacts = export(KWS_MODEL, ExportOptions(target="cortex-m3", verify=False))
    assert not any("batch_norm" in op for op in artifacts.manifest["operators"])
    # 9 convolutions, one bias each: BatchNorm left no extra constants behind.
    assert artifacts.manifest["pte_bytes"] < 40_000


def test_quantization_aware_training_exports_to_cmsis_nn() -> None:
    torch.manual_seed(0)
    example = (torch.randn(INPUT_SHAPE) * 8,)
    prepared = prepare_qat(DSCNN(), example)
    optimizer = torch.optim.SGD(prepared.parameters(), lr=1e-3)
    for _ in range(3):
        batch = torch.randn((4, *INPUT_SHAPE[1:])) * 8
        batch = batch.contiguous(memory_format=torch.channels_last)
        loss = prepared(batch).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    artifacts = export_qat(prepared, example, ExportOptions(target="cortex-m55", name="qat"))
    assert artifacts.manifest["macs"]["cmsis_nn"] == 2_656_768
    assert artifacts.manifest["agreement"]["max_steps_vs_fake_quant"] <= 2
    # No float model after QAT: the report says what the program was held against.
    assert artifacts.manifest["agreement"]["reference"] == "the QAT model"


def test_quantization_aware_training_rounds_as_the_kernels_do() -> None:
    """Training sees INT8: the prepared model's output lies on its output's INT8 grid,
    and the weights it multiplies by are on theirs (observers alone would pass float)."""
    from torchao.quantization.pt2e import FakeQuantizeBase

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    prepared = prepare_qat(model, (torch.randn(4, 16),))
    fake_quants = [m for m in prepared.modules() if isinstance(m, FakeQuantizeBase)]
    assert len(fake_quants) >= 4  # input, two weights, hidden and output activations
    output = prepared(torch.randn(64, 16) * 3)
    last = prepared.get_submodule(next(iter(prepared.graph.find_nodes(op="output")))
                                  .args[0][0].target)  # fmt: skip
    steps = output / last.scale + last.zero_point
    assert torch.allclose(steps, steps.round(), atol=1e-3)
    assert steps.min() >= -128 and steps.max() <= 127


def test_quantization_aware_training_folds_a_linears_batch_norm() -> None:
    """MLPerf Tiny's autoencoder form (Linear, BatchNorm1d, ReLU): the BatchNorm folded
    with its running statistics, trained through and exported onto the s8 linear."""
    from torchao.quantization.pt2e import move_exported_model_to_train

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU(), torch.nn.Linear(32, 16)
    )
    model.train()(torch.randn(64, 16))  # running statistics other than the initial ones
    prepared = prepare_qat(model, (torch.randn(4, 16),))
    move_exported_model_to_train(prepared)
    optimizer = torch.optim.SGD(prepared.parameters(), lr=1e-3)
    for _ in range(3):
        loss = prepared(torch.randn(4, 16)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    artifacts = export_qat(prepared, (torch.randn(4, 16),), ExportOptions(name="qat_bn"))
    assert artifacts.stats["cortex_m::quantized_linear.out"].calls == 2
    assert not any("batch_norm" in name for name in artifacts.stats)
    assert artifacts.manifest["agreement"]["max_steps_vs_fake_quant"] <= 2


def test_inputs_with_odd_strides_export() -> None:
    from conftest import MODELS

    artifacts = export(f"{MODELS}:numpy_view_inputs", ExportOptions(target="cortex-m4"))
    assert artifacts.manifest["macs"]["cmsis_nn"] == artifacts.manifest["macs"]["total"]
