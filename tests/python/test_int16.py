# SPDX-License-Identifier: Apache-2.0
"""--activations int16: 16x8 linears on arm_fully_connected_s16 and their host reference.

The reference (reference/linear_s16.py) must be the float linear rounded to the output's
steps, except where the C code rounds its own way (halves up, a 16-bit multiplier); the
export must put every linear on the s16 kernel, run it on the host as the device does,
and come closer to the float model than INT8 does.
"""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
import torch
from conftest import REPO
from et_zephyr import api
from et_zephyr.artifacts.report import render_report
from et_zephyr.errors import ExportError
from et_zephyr.firmware.analysis import portable_arithmetic
from et_zephyr.frontend.io_mode import parse_io
from et_zephyr.frontend.loading import ModelBundle
from et_zephyr.passes.quantizer_int16 import INT16_MAX, WEIGHT_MAX
from et_zephyr.reference import edges as reference_edges
from et_zephyr.reference import linear_s16
from executorch.backends.cortex_m.passes.passes_utils import quantize_multiplier_aot
from torch import nn

S16 = "et_zephyr::quantized_linear_s16.out"
INT16_OR_CONVERSIONS = {
    S16,
    "cortex_m::quantize_per_tensor.out",
    "cortex_m::dequantize_per_tensor.out",
}


def _linear(inputs, weights, biases, scale, bounds=(-INT16_MAX, INT16_MAX)):
    multiplier, shift = quantize_multiplier_aot(scale)
    return linear_s16.fully_connected_s16(inputs, weights, biases, multiplier, shift, *bounds)


@pytest.mark.parametrize("columns", [1, 3, 64, 511, 512, 513, 1000])
def test_the_reference_is_the_float_linear_rounded_to_output_steps(columns: int) -> None:
    torch.manual_seed(columns)
    rows = 9
    inputs = torch.randint(-INT16_MAX, INT16_MAX + 1, (5, columns), dtype=torch.int16)
    weights = torch.randint(-WEIGHT_MAX, WEIGHT_MAX + 1, (rows, columns), dtype=torch.int8)
    biases = torch.randint(-(1 << 30), 1 << 30, (rows,), dtype=torch.int64)
    # Outputs spread over the whole int16 range.
    sums = inputs.double() @ weights.double().t() + biases.double()
    scale = 30000.0 / sums.abs().max().item()
    got = _linear(inputs, weights, biases, scale)
    exact = sums * scale
    # The multiplier is rounded to 16 bits: up to |y| * 2^-15 steps more than a rounding.
    assert ((got.double() - exact).abs() <= 0.5 + exact.abs() * 2**-15 + 1e-9).all()
    assert (got.double() - exact).abs().mean() < 0.5


def test_halves_round_up_as_the_c_code_does() -> None:
    """arm_nn_requantize_s64's last step, (x + 1) >> 1: a half goes up, -1.5 to -1."""
    inputs = torch.tensor([[3], [-3], [1], [-1]], dtype=torch.int16)
    weights = torch.ones(1, 1, dtype=torch.int8)
    assert _linear(inputs, weights, None, 0.5).flatten().tolist() == [2, -1, 1, 0]


def test_the_fused_activation_bounds_clamp() -> None:
    inputs = torch.tensor([[-20000], [20000]], dtype=torch.int16)
    weights = torch.full((1, 1), 100, dtype=torch.int8)
    assert _linear(inputs, weights, None, 0.01, (0, 1000)).flatten().tolist() == [0, 1000]


def test_a_large_multiplier_is_reduced_to_the_largest_q15() -> None:
    reduced = linear_s16.reduce_multiplier(torch.tensor([0x7FFF0000, 0x7FFEFFFF, 0x40000000]))
    assert reduced.tolist() == [0x7FFF, 0x7FFF, 0x4000]


class Regression(nn.Module):
    """A small regressor of unnormalized sensor readings: one feature is a hundred times
    the others, so INT8's 255 steps across its range leave the others almost nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(12, 48)
        self.middle = nn.Linear(48, 48)
        self.out = nn.Linear(48, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.middle(torch.relu(self.hidden(x))).clamp(-2.0, 6.0))


def _readings() -> torch.Tensor:
    return torch.randn(1, 12) * torch.tensor([100.0] + [1.0] * 11)


def _bundle() -> ModelBundle:
    torch.manual_seed(0)
    model = Regression().eval()
    calibration = [(_readings(),) for _ in range(64)]
    return ModelBundle(model, (_readings(),), calibration)


def _export(activations: str, **options) -> api.Artifacts:
    return api.export(
        _bundle(),
        api.ExportOptions(target="cortex-m4", name="r", activations=activations, **options),
    )


def test_every_linear_runs_on_the_s16_kernel_and_beats_int8() -> None:
    int16 = _export("int16")
    int8 = _export("int8")
    assert int16.stats[S16].calls == 3
    assert set(int16.stats) == {
        "cortex_m::quantize_per_tensor.out",
        S16,
        "cortex_m::dequantize_per_tensor.out",
    }
    # The input's quantization and each linear's output, and nothing in INT8.
    assert len(int16.manifest["int16_tensors"]) == 4
    assert int8.manifest["int16_tensors"] == []
    assert "INT16 activations  4:" in render_report(int16)
    agreement16, agreement8 = int16.manifest["agreement"], int8.manifest["agreement"]
    assert isinstance(agreement16, dict) and isinstance(agreement8, dict)
    # The host reference (the device's arithmetic) follows the fake-quant model closely:
    # each layer's rounding and 16-bit multiplier (|y| * 2^-15) add a step or so, which
    # the next layers amplify; within 0.05 % of the INT16 range.
    assert agreement16["max_steps_vs_fake_quant"] <= 16
    # INT8 weights limit what INT16 activations gain; here the input's range is the limit.
    assert agreement16["relative_error_vs_float"] < agreement8["relative_error_vs_float"] / 5


def test_the_keyword_spotter_runs_wholly_in_16x8() -> None:
    """MLPerf Tiny's KWS: its asymmetric first padding, convolutions, depthwise
    convolutions, average pool and linear all on s16 kernels, nothing in float."""
    warnings: list[str] = []
    options = api.ExportOptions(
        target="cortex-m4", activations="int16", expose_activations="all", warn=warnings.append
    )
    artifacts = api.export(f"{REPO}/samples/kws/model.py:kws", options)
    # The kernels write NHWC: every layer's map says so, the first too, whose input (one
    # channel) is NCHW and NHWC at once (a program that said otherwise got the bytes
    # right and their order wrong on the device).
    exposed = artifacts.manifest["outputs"][1:]  # type: ignore[index]
    assert len(exposed) == 10
    assert all(output["dim_order"] == [0, 2, 3, 1] for output in exposed[:9])
    calls = {name: stats.calls for name, stats in artifacts.stats.items()}
    assert calls == {
        "cortex_m::quantize_per_tensor.out": 1,
        "et_zephyr::pad_s16.out": 1,
        "et_zephyr::quantized_conv2d_s16.out": 5,
        "et_zephyr::quantized_depthwise_conv2d_s16.out": 4,
        "et_zephyr::avg_pool2d_s16.out": 1,
        "et_zephyr::quantized_linear_s16.out": 1,
        "cortex_m::dequantize_per_tensor.out": 1,
    }
    assert warnings == []
    agreement = artifacts.manifest["agreement"]
    assert isinstance(agreement, dict) and agreement["top1_vs_float"] == 1.0


def test_operators_without_an_s16_kernel_run_int8_and_are_named() -> None:
    """LayerNorm, GELU and sigmoid have no s16 kernel: they run on their INT8 integer
    kernels between the 16x8 linears (nothing in float, whose rounding the host reference
    need not share), and the warning names them."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4), nn.Sigmoid()
    )
    bundle = ModelBundle(
        model.eval(), (torch.randn(1, 8),), [(torch.randn(1, 8),) for _ in range(16)]
    )
    warnings: list[str] = []
    options = api.ExportOptions(target="cortex-m4", activations="int16", warn=warnings.append)
    artifacts = api.export(bundle, options)
    assert artifacts.stats[S16].calls == 2
    assert portable_arithmetic(artifacts.stats) == []
    int8 = [name for name in artifacts.stats if name not in INT16_OR_CONVERSIONS]
    assert int8 == ["et_zephyr::quantized_layer_norm.out", "cortex_m::quantized_activation.out"]
    assert artifacts.stats["cortex_m::quantized_activation.out"].calls == 2  # GELU, sigmoid
    (warning,) = warnings
    assert all(name in warning for name in int8) and "run INT8" in warning
    agreement = artifacts.manifest["agreement"]
    assert isinstance(agreement, dict) and agreement["relative_error_vs_float"] < 0.05


def test_subtractions_run_on_the_s16_addition() -> None:
    """Denoisers' `x - f(x)` (a model input of another dim order or stride on its size-1
    dims than the convolution's output) and a clamped difference of two slices: all on
    arm_elementwise_add_s16 with the second input's multiplier negated, nothing in
    float, the program what the fake-quant model computes."""
    artifacts = api.export(
        f"{REPO}/tests/models/operators.py:subtractions_16x8",
        api.ExportOptions(target="cortex-m4", warn=lambda _: None, activations="int16"),
    )
    assert artifacts.stats["et_zephyr::add_s16.out"].calls == 3
    assert portable_arithmetic(artifacts.stats) == []
    agreement = artifacts.manifest["agreement"]
    assert isinstance(agreement, dict) and agreement["max_steps_vs_fake_quant"] <= 2


def test_io_int16_takes_and_gives_the_int16_tensors() -> None:
    """--io int16: no quantize or dequantize left in the program; its vectors hold the
    INT16 inputs as et_zephyr_quantize_int16() makes them, and the host reference run on
    them gives what the program with float edges gives."""
    edges = _export("int16", io=parse_io("int16"))
    floats = _export("int16")
    assert set(edges.stats) == {S16}
    (entry,) = edges.manifest["inputs"]  # type: ignore[misc]
    assert entry["dtype"] == "int16" and entry["zero_point"] == 0
    with (
        np.load(io.BytesIO(edges.files["r.vectors.npz"])) as stored,
        np.load(io.BytesIO(floats.files["r.vectors.npz"])) as float_edges,
    ):
        assert stored["input_0"].dtype == np.int16 and stored["output_0"].dtype == np.int16
        quantized = reference_edges.quantize_int16(
            torch.from_numpy(float_edges["input_0"]), entry["scale"], 0
        )
        assert np.array_equal(stored["input_0"], quantized.numpy())
        dequantized = reference_edges.dequantize_per_tensor(
            torch.from_numpy(stored["output_0"]), edges.manifest["outputs"][0]["scale"], 0
        )
        assert torch.equal(dequantized, torch.from_numpy(float_edges["output_0"]))
    assert "integer edges      input 0 int16 (scale " in render_report(edges)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"io": parse_io("int8")}, "input 0 is INT16 .16x8. in the program, not INT8"),
        ({"npu": "ethos-u55-128"}, "not with --npu"),
    ],
)
def test_what_16x8_cannot_do_yet_is_one_clear_error(options, message) -> None:
    with pytest.raises(ExportError, match=message):
        _export("int16", **options)


def _auto(max_drop: float) -> api.Artifacts:
    options = api.ExportOptions(
        target="cortex-m4", name="r", precision="auto", max_drop=max_drop, drop_measure="error"
    )
    return api.export(_bundle(), options)


def test_precision_auto_moves_the_fewest_layers_that_meet_the_drop() -> None:
    """The regressor's loss is its input's INT8 steps: its first linear alone in 16x8
    (the input quantized to INT16 once) brings its relative RMS error within 10 %; within
    2 % takes all three; the lowered program keeps what was measured."""
    loose, tight = _auto(0.1), _auto(0.02)
    for artifacts, layers in ((loose, ["linear"]), (tight, ["linear", "linear_1", "linear_2"])):
        precision = artifacts.manifest["precision"]
        assert isinstance(precision, dict)
        assert precision["int16_layers"] == layers
        assert precision["int8_drop"] > 0.1 and precision["drop"] <= precision["max_drop"]
        assert artifacts.stats[S16].calls == len(layers)
        int8 = artifacts.stats.get("cortex_m::quantized_linear.out")
        assert (int8.calls if int8 else 0) == 3 - len(layers)
        agreement = artifacts.manifest["agreement"]
        assert isinstance(agreement, dict)
        assert agreement["relative_error_vs_float"] <= precision["max_drop"]
    assert "precision auto     16x8 on 3 layers (linear, linear_1, linear_2)" in render_report(
        tight
    )


def test_precision_auto_keeps_int8_where_it_is_within_the_drop() -> None:
    artifacts = _auto(0.5)
    assert artifacts.manifest["precision"]["int16_layers"] == []  # type: ignore[index]
    assert S16 not in artifacts.stats and artifacts.manifest["int16_tensors"] == []


def test_precision_auto_and_activations_int16_are_one_clear_error() -> None:
    with pytest.raises(ExportError, match="chooses the 16x8 layers itself"):
        _export("int16", precision="auto")


def test_whole_recurrent_layers_keep_their_int8_kernels_in_16x8() -> None:
    """lstm_kws in 16x8: the LSTM layer on CMSIS-NN's s8 LSTM, its head on the s16
    linear, the two meeting through float; nothing left without a kernel."""
    artifacts = api.export(
        f"{REPO}/tests/models/recurrent.py:lstm_kws",
        api.ExportOptions(target="cortex-m4", activations="int16", verify=False),
    )
    calls = {name: stats.calls for name, stats in artifacts.stats.items()}
    assert calls["et_zephyr::quantized_lstm.out"] == 1
    assert calls[S16] == 1


def test_precision_auto_says_when_the_program_misses_what_its_trials_met() -> None:
    """A whole GRU layer's integer gates round more than PT2E's fake quantization shows:
    gru's head (its one candidate) in 16x8 meets 1.85 % in its trial, not in the lowered
    program. The report says so, a warning names the program's figure, and --strict
    refuses the export."""
    warnings: list[str] = []
    options = api.ExportOptions(
        target="cortex-m4",
        precision="auto",
        max_drop=0.0185,
        drop_measure="error",
        warn=warnings.append,
    )
    artifacts = api.export(f"{REPO}/tests/models/recurrent.py:gru", options)
    precision = artifacts.manifest["precision"]
    assert precision["drop"] <= 0.0185 < precision["program_drop"]
    assert precision["program_drop"] == artifacts.manifest["agreement"]["relative_error_vs_float"]
    assert "NOT within --max-drop 1.85 %" in render_report(artifacts)
    assert [w for w in warnings if "the program is" in w and "above --max-drop 1.85 %" in w]
    with pytest.raises(ExportError, match="above --max-drop 1.85 %.*--strict"):
        api.export(
            f"{REPO}/tests/models/recurrent.py:gru", dataclasses.replace(options, strict=True)
        )
