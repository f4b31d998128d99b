# SPDX-License-Identifier: Apache-2.0
"""Resizing, joining, cutting and gating in INT8 with no layout copies: nearest
resizes (reference/resize.py, the portable kernel's arithmetic), concatenations and
slices in the channels-last order (et_zephyr::concatenate and ::slice), GLUs as a
table and a multiplication, softmaxes over channels-last channels, and ReLUs whose
range a concatenation widens fused into their convolution
(passes/activation_bounds.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from et_zephyr import pipeline
from et_zephyr.api import ExportOptions, export
from et_zephyr.frontend.loading import ModelBundle
from et_zephyr.passes.glu_as_gate import glu_as_gate
from et_zephyr.reference import portable_kernel, resize
from et_zephyr.reference.emulate import run_pte
from torch import nn

aten = torch.ops.aten

SCALES = [2.0, 3.0, 0.5, 1.5, 1.7, 2.3, 0.3, 1.0, 7.0]
MAPS = [(1, 1), (2, 3), (7, 5), (16, 16), (31, 17), (256, 256)]


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("size", MAPS)
def test_nearest_reference_is_torchs_float_resize_on_int8(scale, size) -> None:
    """torch's float kernel computes the sources the portable kernel's way (a
    single-precision product with 1 / scale); the reference must pick the same ones on
    int8 tensors, which torch refuses."""
    generator = torch.Generator().manual_seed(sum(size))
    values = torch.randint(-128, 128, (1, 3, *size), dtype=torch.int8, generator=generator)
    if int(size[0] * scale) < 1 or int(size[1] * scale) < 1:
        with pytest.raises(ValueError, match="empty output"):
            resize.upsample_nearest2d(values, None, [scale, scale])
        return
    ours = resize.upsample_nearest2d(values, None, [scale, scale])
    assert ours.dtype == torch.int8
    # torch's kernel copies an unchanged size and halves the index of a doubled one
    # whatever the scale factor; the portable kernel always steps by float(1 / scale).
    special = scale not in (1.0, 2.0) and any(int(n * scale) in (n, 2 * n) for n in size)
    if not special:
        theirs = aten.upsample_nearest2d.vec(values.float(), None, [scale, scale])
        assert torch.equal(ours.float(), theirs)
    for n_in in size:
        n_out = int(n_in * scale)
        step = np.float32(1.0 / scale)
        expected = [min(int(np.floor(np.float32(i) * step)), n_in - 1) for i in range(n_out)]
        assert resize.source_indices(scale, n_out, n_in).tolist() == expected


@pytest.mark.parametrize("output", [(1, 1), (4, 17), (9, 9), (64, 3), (255, 256)])
def test_nearest_reference_at_a_size_uses_the_kernels_scale(output) -> None:
    """Given a size, the kernel's step is float(1 / (output / input)) in double."""
    values = torch.arange(7 * 5, dtype=torch.int8).reshape(1, 1, 7, 5)
    ours = resize.upsample_nearest2d(values, list(output), None)
    assert tuple(ours.shape[-2:]) == output
    for axis, (n_in, n_out) in enumerate(zip((7, 5), output)):
        step = np.float32(1.0 / (n_out / n_in))
        expected = [min(int(np.floor(np.float32(i) * step)), n_in - 1) for i in range(n_out)]
        assert resize.source_indices(n_out / n_in, n_out, n_in).tolist() == expected
        assert ours.shape[2 + axis] == n_out


@pytest.mark.parametrize("corners", [False, True])
@pytest.mark.parametrize("scale", [2.0, 3.0, 0.5, 1.7, 0.3, 1.0])
@pytest.mark.parametrize("size", [(1, 1), (2, 3), (7, 5), (31, 17), (256, 256)])
def test_the_bilinear_kernels_arithmetic_is_within_a_step_of_torchs(size, scale, corners):
    """Q10 weights and a Q20 sum rounded half up: within one step of torch's float
    bilinear resize of the same int8 values, and exact where the weights are exact."""
    out = [int(n * scale) for n in size]
    if min(out) < 1:
        return
    generator = torch.Generator().manual_seed(sum(size))
    values = torch.randint(-128, 128, (1, 3, *size), dtype=torch.int8, generator=generator)
    taps = [
        resize.bilinear_taps(n, m, corners, None if corners else scale) for n, m in zip(size, out)
    ]
    ours = resize.resize_bilinear(values, *taps).float()
    if corners:
        theirs = F.interpolate(values.float(), size=out, mode="bilinear", align_corners=True)
    else:
        theirs = F.interpolate(values.float(), scale_factor=scale, mode="bilinear")
    assert (ours - theirs).abs().max() <= 1.0
    if scale == 1.0:
        assert torch.equal(ours, values.float())


def test_the_host_reference_takes_the_resize_in_every_form() -> None:
    assert portable_kernel(aten.upsample_nearest2d.vec) is resize.upsample_nearest2d
    assert portable_kernel(aten.upsample_nearest2d.vec_out) is resize.upsample_nearest2d
    assert portable_kernel(aten.upsample_bilinear2d.vec) is None  # et-zephyr's kernel instead


class _Gated(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return F.glu(x, dim=1), F.glu(x, dim=-1)


def test_a_glu_becomes_a_gate_with_the_same_result() -> None:
    x = torch.randn(2, 6, 10)
    graph = pipeline.capture_graph(_Gated().eval(), (x,))
    assert glu_as_gate(graph) == 2
    targets = [node.target for node in graph.graph.nodes if node.op == "call_function"]
    assert aten.glu.default not in targets and targets.count(aten.sigmoid.default) == 2
    for ours, theirs in zip(graph(x), _Gated()(x)):
        assert torch.allclose(ours, theirs)


class _Neck(nn.Module):
    """A YOLO-style neck and a U-Net step: resized maps joined with others, a ReLU
    whose output a concatenation with signed values shares, cuts along channels and
    width, a channel shuffle, a GLU over channels, a FOMO-style softmax over channels."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 7, 3, padding=1)
        self.deep = nn.Conv2d(7, 5, 3, stride=2, padding=1)
        self.fuse = nn.Conv2d(12, 6, 3, padding=1)
        self.head = nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        fine = F.relu(self.stem(x))
        up = F.interpolate(self.deep(fine), scale_factor=2.0, mode="nearest")
        smooth = F.interpolate(self.deep(fine), size=(10, 14), mode="bilinear")
        fused = self.fuse(torch.cat([up, fine], dim=1))
        n, c, h, w = fused.shape
        shuffled = fused.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        gated = F.glu(shuffled, dim=1)
        cut = torch.cat([fused[:, :, :, :3], fused[:, :, :, 5:12:3]], dim=3)
        softmax = torch.softmax(self.head(gated), dim=1)
        return self.head(gated), cut, fused[:, 1:6:2], softmax, smooth


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m4", "cortex-m55"])
def test_resizes_joins_and_cuts_run_in_int8_with_no_layout_copy(target: str) -> None:
    torch.manual_seed(0)
    calibration = [(torch.randn(1, 3, 10, 14),) for _ in range(12)]
    warnings: list[str] = []
    artifacts = export(
        ModelBundle(_Neck(), calibration[0], calibration),
        ExportOptions(
            target=target,
            name="neck",
            strict=True,
            warn=warnings.append,
            expose_activations="all",
        ),
    )
    manifest = artifacts.manifest
    assert manifest["macs"]["cmsis_nn"] == manifest["macs"]["total"] > 0
    assert not any(s.float_calls for s in artifacts.stats.values() if s.runs_on == "portable")
    assert manifest["layout_copies"]["calls"] == 0
    operators = manifest["operators"]
    assert "et_zephyr::concatenate.out" in operators and "et_zephyr::slice.out" in operators
    assert "et_zephyr::channel_shuffle.out" in operators
    assert "et_zephyr::resize_bilinear.out" in operators
    assert "aten::upsample_nearest2d.vec_out" in operators and "cortex_m::softmax.out" in operators
    assert "aten::cat.out" not in operators and "aten::slice_copy.Tensor_out" not in operators
    assert warnings == []
    assert manifest["agreement"]["max_steps_vs_fake_quant"] <= 2
    # The serialized program, run as the device runs it, gives the host reference's bytes.
    isa = {"cortex-m0": "scalar", "cortex-m4": "dsp", "cortex-m55": "mve"}[target]
    with np.load(io.BytesIO(artifacts.files["neck.vectors.npz"])) as data:
        vectors = {name: data[name] for name in data.files}
    for v in range(len(vectors["input_0"])):
        inputs = (torch.from_numpy(np.asarray(vectors["input_0"][v])),)
        for index, result in enumerate(run_pte(artifacts.files["neck.pte"], inputs, isa)):
            assert np.array_equal(result.contiguous().numpy(), vectors[f"output_{index}"][v])


class _Prelus(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Conv2d(3, 4, 3, padding=1)
        self.second = nn.Conv2d(4, 4, 1)
        self.one = nn.PReLU()
        self.per_channel = nn.PReLU(4)
        with torch.no_grad():
            self.one.weight.fill_(0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.per_channel(self.second(self.one(self.first(x))))


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m55"])
def test_prelus_with_one_slope_and_a_slope_per_channel_run_in_int8(target: str) -> None:
    torch.manual_seed(0)
    calibration = [(torch.randn(1, 3, 6, 6),) for _ in range(8)]
    model = _Prelus()
    with torch.no_grad():
        model.per_channel.weight.copy_(torch.tensor([0.1, 0.25, 0.5, -0.3]))
    artifacts = export(
        ModelBundle(model, calibration[0], calibration),
        ExportOptions(target=target, strict=True),
    )
    manifest = artifacts.manifest
    operators = manifest["operators"]
    assert "cortex_m::quantized_activation.out" in operators
    assert "cortex_m::quantized_mul.out" in operators
    assert not any("prelu" in name or "where" in name for name in operators)
    assert manifest["layout_copies"]["calls"] == 0
    assert manifest["agreement"]["max_steps_vs_fake_quant"] <= 1


def test_a_layer_left_unlowered_on_int8_tensors_is_refused(monkeypatch) -> None:
    """Upstream's activation fusion left a YOLO neck's convolution as an int8
    aten::convolution, integer sums with no quantization: et-export refuses such a
    program, naming the layer."""
    from et_zephyr.errors import ExportError
    from et_zephyr.passes import cortex_m_passes
    from executorch.backends.cortex_m.passes.activation_fusion_pass import ActivationFusionPass

    upstream = cortex_m_passes.pass_list

    def without_the_fix(*args: object) -> list[type]:
        return [
            ActivationFusionPass if p.__name__ == "ActivationFusionWithinRange" else p
            for p in upstream(*args)  # type: ignore[arg-type]
        ]

    monkeypatch.setattr(cortex_m_passes, "pass_list", without_the_fix)
    torch.manual_seed(0)
    calibration = [(torch.randn(1, 3, 10, 14),) for _ in range(8)]
    with pytest.raises(
        ExportError, match=r"aten::convolution\.out \(node .*was left on a portable"
    ):
        export(ModelBundle(_Neck(), calibration[0], calibration), ExportOptions(target="cortex-m4"))


class _CeilPools(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lift = nn.Conv2d(3, 5, 3, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.lift(x)  # 13 x 14
        return (
            F.max_pool2d(y, 3, 2, ceil_mode=True),
            F.max_pool2d(y, 2, 2, ceil_mode=True),
            F.max_pool2d(y, 3, 2, 1, ceil_mode=True),
            F.max_pool2d(y, (3, 2), (2, 3), (1, 0), ceil_mode=True),
        )


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m55"])
def test_ceil_mode_max_pools_run_on_cmsis_nn_over_a_padded_input(target: str) -> None:
    torch.manual_seed(0)
    calibration = [(torch.randn(1, 3, 13, 14),) for _ in range(8)]
    artifacts = export(
        ModelBundle(_CeilPools(), calibration[0], calibration),
        ExportOptions(target=target, name="pools", strict=True),
    )
    operators = artifacts.manifest["operators"]
    assert operators["cortex_m::quantized_max_pool2d.out"]["calls"] == 4
    assert not any(name.startswith("aten::max_pool2d") for name in operators)
    assert artifacts.manifest["layout_copies"]["calls"] == 0
    # The -128 rows and columns never win: the program gives torch's ceil-mode maxima.
    assert artifacts.manifest["agreement"]["max_steps_vs_fake_quant"] == 0
