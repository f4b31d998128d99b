# SPDX-License-Identifier: Apache-2.0
"""The passes that bring the 1-D family and string paddings to the Cortex-M quantizer
(et_zephyr/passes/): the rewritten float graph computes what the model does, and the
exported program runs every MAC on Cortex-M kernels with no float operator and no
layout copy between layers."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import REPO, assert_replays
from et_zephyr import pipeline
from et_zephyr.api import ExportOptions, export
from et_zephyr.frontend.loading import ModelBundle
from et_zephyr.passes.explicit_padding import explicit_padding
from et_zephyr.passes.one_d_as_two_d import one_d_as_two_d
from et_zephyr.passes.spatial_means_as_pools import spatial_means_as_pools
from et_zephyr.passes.transpose_conv_rows import crop_transpose_conv_rows
from et_zephyr.passes.transpose_conv_variants import plain_transpose_convs
from torch import nn

aten = torch.ops.aten
_ONE_D = {
    aten.conv1d.default,
    aten.conv1d.padding,
    aten.conv_transpose1d.default,
    aten.max_pool1d.default,
    aten.avg_pool1d.default,
    aten.adaptive_avg_pool1d.default,
}


def _captured(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.fx.GraphModule:
    graph = pipeline.capture_graph(model.eval(), inputs)
    pipeline.fold_batch_norm(graph)
    return graph


def _targets(graph: torch.fx.GraphModule) -> list[object]:
    return [node.target for node in graph.graph.nodes if node.op == "call_function"]


class _Convolution(nn.Module):
    def __init__(self, convolution: nn.Module) -> None:
        super().__init__()
        self.convolution = convolution

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.convolution(x)


SAME_CASES = [  # (module, input shape)
    (nn.Conv2d(3, 4, 3, padding="same"), (1, 3, 9, 8)),
    (nn.Conv2d(3, 4, 4, padding="same"), (1, 3, 9, 8)),
    (nn.Conv2d(3, 4, (1, 7), padding="same"), (1, 3, 5, 16)),
    (nn.Conv2d(3, 4, (2, 5), padding="same", dilation=(3, 2)), (1, 3, 11, 12)),
    (nn.Conv2d(4, 4, 3, padding="same", groups=4), (1, 4, 6, 6)),
    (nn.Conv2d(3, 4, 3, padding="valid", stride=2), (1, 3, 9, 8)),
    (nn.Conv1d(3, 4, 6, padding="same", dilation=2), (1, 3, 30)),
    (nn.Conv1d(3, 4, 1, padding="same"), (1, 3, 7)),
]


@pytest.mark.parametrize(("module", "shape"), SAME_CASES)
def test_string_paddings_become_numbers_with_the_same_result(module, shape) -> None:
    torch.manual_seed(0)
    model, x = _Convolution(module), torch.randn(shape)
    graph = _captured(model, (x,))
    assert explicit_padding(graph) == 1
    assert not {aten.conv1d.padding, aten.conv2d.padding} & set(_targets(graph))
    expected = model(x)
    torch.testing.assert_close(graph(x), expected, rtol=0, atol=1e-5)


class _Sequence(nn.Module):
    """Every 1-D operator, with the rank-blind ones between them."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Conv1d(3, 8, 5, stride=2, padding=2)
        self.norm = nn.BatchNorm1d(8)
        self.causal = nn.Conv1d(8, 8, 3, dilation=2)
        self.depthwise = nn.Conv1d(16, 16, 3, groups=16, padding=1)
        self.up = nn.ConvTranspose1d(16, 4, 4, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = F.relu(self.norm(self.first(x)))
        y = F.max_pool1d(y, 3, stride=2, padding=1)
        z = F.hardtanh(self.causal(F.pad(y, (4, 0))))
        y = torch.cat([y + z, z], dim=1)
        y = F.avg_pool1d(self.depthwise(y), 2)
        return F.adaptive_avg_pool1d(y, 1).flatten(1), y.mean(-1), self.up(y)


def test_the_1d_family_runs_as_2d_operators_with_the_same_result() -> None:
    torch.manual_seed(0)
    model, x = _Sequence(), torch.randn(2, 3, 64)
    with torch.no_grad():
        model.norm.running_var.uniform_(0.5, 2)
    graph = _captured(model, (x,))
    assert one_d_as_two_d(graph) == 7
    targets = _targets(graph)
    assert not _ONE_D & set(targets)
    # Two layout changes: the input's into an image, the transposed convolution's output
    # back to [N, C, L]. Between the layers the sequence stays an image.
    clones = [
        n.kwargs["memory_format"] for n in graph.graph.nodes if n.target == aten.clone.default
    ]
    assert clones == [torch.channels_last, torch.contiguous_format]
    assert targets.count(aten.squeeze.dim) == 0
    expected = model(x)
    for actual, wanted in zip(graph(x), expected, strict=True):
        torch.testing.assert_close(actual, wanted, rtol=0, atol=1e-5)


class _SpatialMeans(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x.mean((2, 3)), x.mean((-1, -2), keepdim=True), x.mean((1, 2)), x.mean(3)


def test_spatial_means_become_global_pools_and_other_means_stay() -> None:
    x = torch.randn(2, 5, 7, 3)
    graph = _captured(_SpatialMeans(), (x,))
    assert spatial_means_as_pools(graph) == 2
    assert _targets(graph).count(aten.adaptive_avg_pool2d.default) == 2
    assert _targets(graph).count(aten.mean.dim) == 2
    for actual, wanted in zip(graph(x), _SpatialMeans()(x), strict=True):
        torch.testing.assert_close(actual, wanted, rtol=0, atol=1e-6)


TRANSPOSE_CASES = [  # (module, input shape, rewritten)
    (nn.ConvTranspose2d(8, 5, 3, stride=2, padding=1), (1, 8, 6, 7), True),
    (nn.ConvTranspose2d(8, 5, 4, stride=2, padding=1), (1, 8, 6, 7), True),
    (nn.ConvTranspose2d(4, 4, 1, stride=2), (1, 4, 5, 5), True),
    (nn.ConvTranspose2d(4, 4, (1, 3), stride=(3, 1), padding=(0, 1)), (1, 4, 5, 5), True),
    (nn.ConvTranspose2d(8, 5, 3, stride=2, padding=2), (1, 8, 6, 7), False),
    (nn.ConvTranspose2d(24, 5, 3, stride=2, padding=1), (1, 24, 6, 7), False),
    (nn.ConvTranspose2d(8, 5, 3, stride=1, padding=1), (1, 8, 6, 7), False),
]


@pytest.mark.parametrize(("module", "shape", "rewritten"), TRANSPOSE_CASES)
def test_transpose_convolutions_cmsis_nn_gets_wrong_become_crops(module, shape, rewritten):
    torch.manual_seed(0)
    model, x = _Convolution(module), torch.randn(shape)
    graph = _captured(model, (x,))
    assert crop_transpose_conv_rows(graph) == int(rewritten)
    if rewritten:
        (convolution,) = [n for n in graph.graph.nodes if n.target == aten.conv_transpose2d.input]
        assert convolution.args[4][0] == 0  # no top padding
        assert convolution.args[1].meta["val"].shape[2] >= module.stride[0]
    torch.testing.assert_close(graph(x), model(x), rtol=0, atol=1e-5)


def test_an_activation_after_a_cropped_transpose_convolution_goes_before_the_crop() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(8, 5, 3, stride=2, padding=1), nn.ReLU())
    x = torch.randn(1, 8, 6, 7)
    graph = _captured(model, (x,))
    assert crop_transpose_conv_rows(graph) == 1
    targets = _targets(graph)
    assert targets.index(aten.relu.default) < targets.index(aten.slice.Tensor)
    torch.testing.assert_close(graph(x), model(x), rtol=0, atol=1e-5)


VARIANT_CASES = [  # (module, input shape, rewritten)
    (nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1), (1, 8, 5, 6), True),
    (nn.ConvTranspose2d(8, 8, 3, stride=2, padding=1, groups=8), (1, 8, 5, 6), True),
    (nn.ConvTranspose2d(8, 4, 3, stride=1, padding=2, dilation=2), (1, 8, 5, 6), True),
    (nn.ConvTranspose2d(6, 9, 4, stride=2, padding=1, groups=3), (1, 6, 4, 7), True),
    (
        nn.ConvTranspose2d(
            8,
            4,
            (3, 5),
            stride=(2, 3),
            padding=(1, 2),
            output_padding=(1, 2),
            dilation=(1, 2),
            groups=2,
        ),
        (1, 8, 5, 6),
        True,
    ),  # fmt: skip
    (nn.ConvTranspose2d(5, 3, 2, stride=2, output_padding=1), (1, 5, 4, 4), True),
    (nn.ConvTranspose2d(2, 4, 3, stride=2, output_padding=1), (1, 2, 5, 5), True),
    (nn.ConvTranspose2d(3, 6, 4, stride=2, output_padding=(1, 0)), (1, 3, 4, 4), True),
    (
        nn.ConvTranspose2d(3, 6, 3, stride=2, padding=1, output_padding=1, dilation=2),
        (1, 3, 8, 8),
        True,
    ),
    (nn.ConvTranspose2d(5, 3, 3, stride=2, padding=1), (1, 5, 4, 4), False),
]


@pytest.mark.parametrize(("module", "shape", "rewritten"), VARIANT_CASES)
def test_dilated_grouped_and_output_padded_transpose_convolutions_become_plain_ones(
    module, shape, rewritten
) -> None:
    torch.manual_seed(0)
    model, x = _Convolution(module), torch.randn(shape)
    graph = _captured(model, (x,))
    assert plain_transpose_convs(graph) == int(rewritten)
    if rewritten:
        for node in graph.graph.nodes:
            if node.target == aten.conv_transpose2d.input:
                # No output padding, one group, no dilation.
                assert list(node.args[5:]) == [[0, 0], 1, [1, 1]]
    torch.testing.assert_close(graph(x), model(x), rtol=0, atol=1e-5)


class _Tcn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv1d(6, 12, 1)
        self.dilated = nn.ModuleList(nn.Conv1d(12, 12, 3, dilation=d) for d in (1, 2, 4))
        self.head = nn.Linear(12, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        for conv in self.dilated:
            y = F.relu(y + conv(F.pad(y, (2 * conv.dilation[0], 0))))
        return self.head(y.mean(-1))


class _Audio(nn.Module):
    """Raw samples (one channel) through strided 1-D convolutions, flattened."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Conv1d(1, 8, 40, stride=10)
        self.second = nn.Conv1d(8, 8, 3, padding="same")
        self.head = nn.Linear(8 * 12, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool1d(F.relu(self.second(F.relu(self.first(x)))), 4)
        return self.head(y.flatten(1))


class _Pooled(nn.Module):
    """A CIFAR-style net: max pools on 32x32 and 16x16 maps, then a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Conv2d(3, 8, 3, padding="same")
        self.second = nn.Conv2d(8, 16, 3, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.head = nn.Linear(8 * 16 * 16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool2d(F.relu(self.first(x)), 2)
        y = F.max_pool2d(F.relu(self.second(y)), 3, stride=2, padding=1)
        return self.head(F.relu(self.up(y)).flatten(1))


class _Variants(nn.Module):
    """Output padding, depthwise groups and dilation in transpose convolutions."""

    def __init__(self) -> None:
        super().__init__()
        self.lift = nn.Conv2d(3, 8, 3, padding=1)
        self.padded = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
        self.depthwise = nn.ConvTranspose2d(8, 8, 3, stride=2, padding=1, groups=8)
        self.dilated = nn.ConvTranspose2d(8, 4, 3, padding=2, dilation=2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = F.relu(self.lift(x))
        return self.padded(y), self.depthwise(y), self.dilated(y)


EXPORTS = {  # name: (model, input shape); none makes a layout copy (planning/layout_views.py)
    "tcn": (_Tcn, (1, 6, 100)),
    "audio": (_Audio, (1, 1, 512)),
    "pooled": (_Pooled, (1, 3, 32, 32)),
    "transpose_variants": (_Variants, (1, 3, 7, 6)),
}


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_models_export_in_int8_on_cortex_m_kernels(name: str, target: str) -> None:
    factory, shape = EXPORTS[name]
    torch.manual_seed(0)
    model = factory()
    calibration = [(torch.randn(shape),) for _ in range(12)]
    warnings: list[str] = []
    artifacts = export(
        ModelBundle(model, calibration[0], calibration),
        ExportOptions(target=target, strict=True, warn=warnings.append),
    )
    macs = artifacts.manifest["macs"]
    assert macs["cmsis_nn"] == macs["total"] > 0
    assert not any(s.float_calls for s in artifacts.stats.values() if s.runs_on == "portable")
    assert artifacts.manifest["layout_copies"]["calls"] == 0
    assert warnings == []
    agreement = artifacts.manifest["agreement"]
    assert agreement["max_steps_vs_fake_quant"] <= 2


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m4", "cortex-m55"])
def test_every_pool_of_the_device_scenario_runs_on_cmsis_nn_bit_exact(
    target: str, tmp_path
) -> None:
    """tests/models/breadth.py's pools, ceil-mode average pools among them
    (passes/avg_pool_kernels.py): no operator left on a portable kernel, and the emulated
    program reproduces the reference, which stays near PyTorch's float pools."""
    artifacts = export(
        f"{REPO / 'tests/models/breadth.py'}:pools",
        ExportOptions(target=target, strict=True, vectors=4, generated_vectors=8),
    )
    assert not [name for name, s in artifacts.stats.items() if s.runs_on == "portable"]
    assert artifacts.stats["et_zephyr::avg_pool2d_clipped.out"].calls == 4
    assert artifacts.manifest["layout_copies"]["calls"] == 0
    assert artifacts.manifest["agreement"]["max_steps_vs_fake_quant"] <= 1
    assert_replays(artifacts, tmp_path)


class _CeilAvgPool(nn.Module):
    def __init__(self, kernel: int, stride: int, padding: int, include_pad: bool) -> None:
        super().__init__()
        self.lift = nn.Conv2d(3, 7, 1)
        self.pool = nn.AvgPool2d(kernel, stride, padding, ceil_mode=True,
                                 count_include_pad=include_pad)  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.lift(x))


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "padding", "include_pad"),
    [
        (1, 1, 2, 0, True), (2, 3, 2, 1, True), (5, 2, 2, 0, True), (6, 3, 2, 1, False),
        (7, 3, 3, 1, True), (9, 4, 3, 2, False), (11, 5, 4, 2, True), (33, 2, 2, 0, False),
        (64, 3, 2, 1, True), (15, 7, 5, 3, False),
    ],
)  # fmt: skip
def test_ceil_mode_average_pools_match_pytorch(
    size: int, kernel: int, stride: int, padding: int, include_pad: bool
) -> None:
    """Ceil-mode average pools over maps of 1 to 64 pixels a side, any window, stride
    and padding, the padding in the divisor or not: INT8 on CMSIS-NN, within a step of
    PyTorch's pool on the fake-quantized values."""
    torch.manual_seed(0)
    model = _CeilAvgPool(kernel, stride, padding, include_pad)
    calibration = [(torch.randn(1, 3, size, size + 1),) for _ in range(8)]
    artifacts = export(
        ModelBundle(model, calibration[0], calibration),
        ExportOptions(target="cortex-m4", strict=True),
    )
    assert not [name for name, s in artifacts.stats.items() if s.runs_on == "portable"]
    assert artifacts.manifest["agreement"]["max_steps_vs_fake_quant"] <= 1


def test_an_average_pool_with_a_divisor_override_stays_in_float_with_a_warning() -> None:
    """No CMSIS-NN kernel divides by another count: the int8 pool the quantizer left
    computes in float between a dequantize and a quantize, as the warning says (it
    failed in the host reference before: torch has no int8 average pool)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 5, 3, padding=1), nn.AvgPool2d(2, divisor_override=3))
    calibration = [(torch.randn(1, 3, 8, 8),) for _ in range(8)]
    warnings: list[str] = []
    artifacts = export(
        ModelBundle(model.eval(), calibration[0], calibration),
        ExportOptions(target="cortex-m4", warn=warnings.append),
    )
    assert artifacts.stats["aten::avg_pool2d.out"].float_calls == 1
    assert any("left in float" in w and "aten::avg_pool2d" in w for w in warnings)
    assert artifacts.manifest["agreement"]["max_steps_vs_fake_quant"] <= 1


def test_a_host_reference_failure_names_the_operator_node_and_line(monkeypatch) -> None:
    from et_zephyr import reference
    from et_zephyr.errors import ExportError

    def refuse(*args: object) -> torch.Tensor:
        raise ValueError("refused")

    monkeypatch.setitem(reference.HOST_KERNELS, "quantized_max_pool2d", refuse)
    torch.manual_seed(0)
    calibration = [(torch.randn(1, 3, 32, 32),) for _ in range(8)]
    with pytest.raises(ExportError) as error:
        export(ModelBundle(_Pooled(), calibration[0], calibration), ExportOptions())
    message = str(error.value)
    assert "cortex_m::quantized_max_pool2d.out" in message
    assert "node 'cortex_m_quantized_max_pool2d_default'" in message
    assert f"{__file__}:" in message and message.endswith("failed: refused")
