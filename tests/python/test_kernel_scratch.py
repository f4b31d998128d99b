# SPDX-License-Identifier: Apache-2.0
"""Scratch sized for et-zephyr's Helium depthwise and convolution kernels
(firmware/kernel_scratch.py), the kernels that take every call (built without their upstream
fallback), and the build's refusal of such a program on firmware without them."""

from __future__ import annotations

import pytest
import torch
from conftest import CONV, DEPTHWISE, REPO, generator_module, lowered_by_upstream
from et_zephyr import pipeline
from et_zephyr.firmware.kernel_scratch import (
    CONV_MVE,
    DEPTHWISE_CONV_MVE,
    LINEAR_MVE,
    conv_mve_scratch_bytes,
    depthwise_mve_scratch_bytes,
    has_nhwc_bytes,
    kernels_without_fallback,
    plan_own_kernel_scratch,
    resize_scratch,
)
from et_zephyr.frontend.loading import load_model
from et_zephyr.frontend.targets import resolve_target
from et_zephyr.reference import dim_orders

CMSIS_NN_MVE_DEPTHWISE_SCRATCH = 4 * 124 * 3 * 3  # arm_depthwise_conv_s8_opt, 3x3, Helium


def _conv_shapes(target: str):
    """tests/kernels' model through et-export's passes up to where the scratch is sized."""
    bundle = load_model(f"{REPO / 'tests/kernels/model.py'}:conv_shapes")
    program, _ = lowered_by_upstream(
        bundle.model, bundle.example_inputs, bundle.calibration, target
    )
    pipeline.remove_noop_pads(program)
    pipeline.convolve_single_channel_inputs(program, resolve_target(target))
    pipeline.drop_unused_constants(program)
    dim_orders.default_dim_order_for_portable(program)
    return program


def _depthwise_scratch(program) -> dict[str, int]:
    return {
        node.name: node.args[-1].meta["val"].numel()
        for node in program.graph_module.graph.nodes
        if node.target == DEPTHWISE
    }


@pytest.fixture(scope="module")
def helium_program():
    return _conv_shapes("cortex-m55")


def test_the_kernels_shapes_get_its_size_and_others_none(helium_program) -> None:
    sizes = {}
    for node in helium_program.graph_module.graph.nodes:
        if node.target != DEPTHWISE:
            continue
        x, out = node.args[0].meta["val"], node.meta["val"]
        stride = node.args[3]
        expected = None
        channels, height = x.shape[1], out.shape[2]
        if channels >= 8 and channels % 4 == 0 and stride != [1, 2] and height >= 4:
            # 8 channels' records for the ring's 3 turns (two weight vectors and 4 terms,
            # 48 bytes), then their strips: 3 bytes a padded row the outputs' blocks of 4
            # read, and the 16 of the last block's second load.
            computed = -(-height // 4) * 4
            expected = 3 * 8 * 48 + 8 * (3 * stride[0] * (computed - 2) + 16)
        sizes[node.name] = depthwise_mve_scratch_bytes(node)
        assert sizes[node.name] == expected, node.name
    # Padded and valid ones, strided ones (a padded one over 27 rows: 14 outputs, 4
    # blocks), one strided only across and the 4-channel one: the upstream kernel's.
    assert list(sizes.values()).count(None) == 2
    assert 1152 + 8 * (6 * 14 + 16) in sizes.values()
    assert 1152 + 8 * (3 * 10 + 16) in sizes.values()
    # Others: stride 3, dilation 2, padding 2 (the node's own arguments changed and put
    # back).
    node = next(n for n in helium_program.graph_module.graph.nodes if n.target == DEPTHWISE)
    args = node.args
    for position, value in ((3, [3, 3]), (5, [2, 2]), (4, [2, 2])):
        node.args = (*args[:position], value, *args[position + 1 :])
        assert depthwise_mve_scratch_bytes(node) is None, (position, value)
    node.args = args


def test_only_scratch_the_kernel_needs_less_of_shrinks(helium_program) -> None:
    before = _depthwise_scratch(helium_program)
    assert CMSIS_NN_MVE_DEPTHWISE_SCRATCH in before.values()
    nodes = {n.name: n for n in helium_program.graph_module.graph.nodes}
    needed = {name: depthwise_mve_scratch_bytes(nodes[name]) for name in before}

    kernels = plan_own_kernel_scratch(helium_program, resolve_target("cortex-m55"), "et-zephyr")

    assert kernels == [CONV_MVE, DEPTHWISE_CONV_MVE]
    after = _depthwise_scratch(helium_program)
    for name, size in after.items():
        own = needed[name]
        if own is not None and own < before[name]:
            assert size == own, name
        else:
            assert size == before[name], name
    assert sorted(after.values()) != sorted(before.values())
    # The graph's scratch allocations carry the new size, not only the metadata.
    for node in helium_program.graph_module.graph.nodes:
        if node.target == DEPTHWISE:
            assert node.args[-1].args[0][0] == (after[node.name],)


# tests/kernels' convolutions by weight shape (OHWI) and stride: the scratch each needs,
# from its output pixels and its patch rounded up to 16 values, plus two channels'
# weights where a patch (or a pointwise layer's input) is over 128 values; None where
# CMSIS-NN's size is kept (pointwise layers read their input in place).
PATCH_SCRATCH = {
    ((16, 4, 2, 1), (2, 2)): 6 * 16,  # window_one_channel: 3x2 outputs of 8 values
    ((8, 10, 4, 1), (2, 2)): 8 * 48,  # window_padded: 4x2 outputs of 40 values
    ((8, 3, 3, 4), (1, 1)): 45 * 48,  # padded_small: 9x5 outputs of 36 values
    ((16, 1, 1, 12), (1, 1)): 45 * 16,  # 1x1 on 12 channels, not a multiple of 16
    ((4, 1, 1, 12), (1, 1)): 45 * 16,
    ((1, 1, 1, 12), (1, 1)): 45 * 16,
    ((144, 1, 1, 12), (1, 1)): 45 * 16,
    ((16, 1, 1, 12), (2, 2)): 15 * 16,  # shortcut_strided: 5x3 outputs
    # patches_chunked: 8 KiB hold 56 of 135 patches; the 8 channels' terms ahead.
    ((8, 3, 3, 16), (1, 1)): 8 * 4 + 2 * 144 + 56 * 144,
    ((20, 1, 1, 16), (1, 1)): None,
    ((7, 1, 1, 16), (1, 1)): None,
    ((8, 1, 1, 144), (1, 1)): 2 * 144,  # pointwise_deepest: weights of two channels
    ((8, 3, 3, 12), (1, 1)): 45 * 112,  # deep_window: 9x5 outputs of 108 values
    ((4, 6, 6, 2), (1, 1)): 60 * 80,  # deep_gathered: 10x6 outputs of 72 values
    ((8, 3, 3, 3), (2, 2)): 15 * 32,  # image_stem: 5x3 outputs of 27 values
    ((6, 5, 5, 3), (1, 1)): 45 * 80,  # wide_stem: 9x5 outputs of 75 values
}


def _patch_key(node) -> tuple:
    return tuple(node.args[1].meta["val"].shape), tuple(node.args[3])


def test_patch_scratch_holds_the_patches_up_to_8_kib(helium_program) -> None:
    seen = set()
    for node in helium_program.graph_module.graph.nodes:
        if node.target == CONV:
            key = _patch_key(node)
            assert conv_mve_scratch_bytes(node) == PATCH_SCRATCH[key], key
            seen.add(key)
    assert seen == set(PATCH_SCRATCH)


def test_patch_scratch_is_planned_and_pointwise_scratch_kept(helium_program) -> None:
    plan_own_kernel_scratch(helium_program, resolve_target("cortex-m55"), "et-zephyr")
    for node in helium_program.graph_module.graph.nodes:
        if node.target == CONV:
            expected = PATCH_SCRATCH[_patch_key(node)]
            scratch = node.args[-1].meta["val"].numel()
            # CMSIS-NN's arm_convolve_1x1_s8_fast needs none.
            assert scratch == (0 if expected is None else expected), _patch_key(node)


@pytest.mark.parametrize(
    ("target", "kernels"), [("cortex-m4", "et-zephyr"), ("cortex-m55", "cmsis-nn")]
)
def test_other_tiers_and_cmsis_nn_sizes_are_left_alone(target: str, kernels: str) -> None:
    program = _conv_shapes(target)
    before = _depthwise_scratch(program)
    assert plan_own_kernel_scratch(program, resolve_target(target), kernels) == []
    assert _depthwise_scratch(program) == before


def test_kws_plans_less_and_says_which_kernel_it_needs(export_kws) -> None:
    manifest = export_kws("cortex-m55").manifest
    assert manifest["target"]["scratch_for"] == [CONV_MVE, DEPTHWISE_CONV_MVE]
    planned = manifest["memory"]["planned"][0]["bytes"]
    # KWS's peak is a depthwise layer's 8,000-byte input and output and its scratch (8
    # channels' records, 8 strips of 3 bytes a row for 28 outputs); the first layer's 125
    # patches of 40 values (6,000 bytes) fit below it.
    assert planned == 2 * 8000 + 1152 + 8 * (3 * 26 + 16)
    assert export_kws("cortex-m4").manifest["target"]["scratch_for"] == []


def test_the_build_refuses_the_program_without_the_kernel() -> None:
    gen = generator_module()
    manifest = {
        "target": {"isa": "mve", "cpu": "cortex-m55", "scratch_for": ["depthwise_conv_mve"]}
    }
    gen.check_scratch_kernels(manifest, ["depthwise_conv_mve"], None)
    gen.check_scratch_kernels({"target": {"isa": "mve"}}, [], None)
    with pytest.raises(
        gen.GenError, match="CONFIG_ET_ZEPHYR_DEPTHWISE_CONV_MVE=y.*--kernels cmsis-nn"
    ):
        gen.check_scratch_kernels(manifest, [], None)
    manifest["target"]["scratch_for"].append("conv_mve")
    with pytest.raises(gen.GenError, match="CONFIG_ET_ZEPHYR_CONV_MVE=y"):
        gen.check_scratch_kernels(manifest, ["depthwise_conv_mve"], None)


def test_kws_kernels_take_every_call_so_no_fallback_is_built(export_kws) -> None:
    target = export_kws("cortex-m55").manifest["target"]
    # Its classifier is a single row: the upstream kernel's (linear_mve.cpp hands it over).
    assert target["kernels_without_fallback"] == [CONV_MVE, DEPTHWISE_CONV_MVE]
    assert export_kws("cortex-m4").manifest["target"]["kernels_without_fallback"] == []


def _patch_convs(program) -> list:
    return [
        node
        for node in program.graph_module.graph.nodes
        if node.target == CONV and tuple(node.args[1].meta["val"].shape[1:3]) != (1, 1)
    ]


def test_a_call_the_kernel_does_not_take_keeps_its_fallback() -> None:
    m55 = resolve_target("cortex-m55")
    program = _conv_shapes("cortex-m55")
    plan_own_kernel_scratch(program, m55, "et-zephyr")
    # The tall depthwise layer is CMSIS-NN's; every convolution is the kernel's.
    assert kernels_without_fallback(program, m55, "et-zephyr") == [CONV_MVE]
    assert kernels_without_fallback(program, m55, "cmsis-nn") == []
    assert kernels_without_fallback(program, resolve_target("cortex-m4"), "et-zephyr") == []

    # One patch convolution whose scratch holds one patch short of 16 (or of all).
    node = _patch_convs(program)[0]
    scratch = node.args[-1]
    planned = scratch.meta["val"].numel()
    _, k_h, k_w, depth = node.args[1].meta["val"].shape
    out = node.meta["val"]
    row_stride = -(-k_h * k_w * depth // 16) * 16
    fewest = row_stride * min(16, out.shape[2] * out.shape[3])
    resize_scratch(scratch, fewest - 1)
    assert kernels_without_fallback(program, m55, "et-zephyr") == []
    resize_scratch(scratch, fewest)
    assert kernels_without_fallback(program, m55, "et-zephyr") == [CONV_MVE]
    resize_scratch(scratch, planned)

    # A dilated convolution is not the kernel's.
    node.args = (*node.args[:5], [2, 2], *node.args[6:])
    assert kernels_without_fallback(program, m55, "et-zephyr") == []


def _linears(*widths: int, rows: int = 4) -> torch.export.ExportedProgram:
    """Linears widths[0] -> widths[1] -> ..., over `rows` rows, lowered for the M55."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(a, b) for a, b in zip(widths, widths[1:])]
    model = torch.nn.Sequential(*layers).eval()
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(rows, widths[0], generator=generator),) for _ in range(8)]
    program, _ = lowered_by_upstream(model, calibration[0], calibration, "cortex-m55")
    return program


def test_linears_16_deep_take_every_call_others_keep_the_fallback() -> None:
    m55 = resolve_target("cortex-m55")
    # Four rows each (a batch, a transformer's tokens), inputs 32 and 16 wide: the kernel's.
    assert kernels_without_fallback(_linears(32, 16, 4), m55, "et-zephyr") == [LINEAR_MVE]
    assert kernels_without_fallback(_linears(32, 16, 4), m55, "cmsis-nn") == []
    # An input 20 wide (not a multiple of 16) goes to the upstream kernel, and so does a
    # single row (a classifier: CMSIS-NN's vector-by-matrix loop is faster there).
    assert kernels_without_fallback(_linears(32, 20, 4), m55, "et-zephyr") == []
    assert kernels_without_fallback(_linears(32, 16, 4, rows=1), m55, "et-zephyr") == []


def test_the_build_leaves_out_the_fallback_of_kernels_taking_every_call() -> None:
    gen = generator_module()
    kernels = REPO / "lib/src/kernels"
    overrides = {
        "cortex_m::quantized_conv2d.out": ("f", kernels / "conv_mve.cpp"),
        "cortex_m::quantized_depthwise_conv2d.out": ("g", kernels / "depthwise_conv_mve.cpp"),
        "cortex_m::quantized_linear.out": ("h", kernels / "linear_mve.cpp"),
    }
    manifest = {"target": {"kernels_without_fallback": [DEPTHWISE_CONV_MVE, CONV_MVE]}}
    assert gen.sources_without_fallback(manifest, overrides, keep=False) == [
        kernels / "conv_mve.cpp",
        kernels / "depthwise_conv_mve.cpp",
    ]
    # CONFIG_ET_ZEPHYR_KERNEL_FALLBACKS, or a manifest from before the field.
    assert gen.sources_without_fallback(manifest, overrides, keep=True) == []
    assert gen.sources_without_fallback({"target": {}}, overrides, keep=False) == []
    # A kernel the firmware does not build has no source to define it on.
    del overrides["cortex_m::quantized_conv2d.out"]
    assert gen.sources_without_fallback(manifest, overrides, keep=False) == [
        kernels / "depthwise_conv_mve.cpp"
    ]


def test_nhwc_bytes_ignore_where_a_size_1_dim_sits() -> None:
    nhwc = torch.empty(1, 8, 9, 5).to(memory_format=torch.channels_last)
    assert has_nhwc_bytes(nhwc)
    assert not has_nhwc_bytes(torch.empty(1, 8, 9, 5))
    # One channel, or one pixel: NCHW and NHWC are the same bytes; 0, 2, 1, 3 is not
    # NHWC for a 9 x 5 map of 8 channels, but is for one channel.
    assert has_nhwc_bytes(torch.empty(1, 1, 9, 5))
    assert has_nhwc_bytes(torch.empty(1, 8, 1, 1))
    assert has_nhwc_bytes(
        torch.empty(1, 1, 9, 5).permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    )
    assert not has_nhwc_bytes(
        torch.empty(1, 8, 9, 5).permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    )
    # A row: channels before the width is not NHWC.
    assert not has_nhwc_bytes(torch.empty(1, 8, 1, 5))
    assert has_nhwc_bytes(torch.empty(1, 8, 1, 5).to(memory_format=torch.channels_last))
