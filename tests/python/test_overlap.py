# SPDX-License-Identifier: Apache-2.0
"""Outputs overlapping the inputs they are computed from (planning/overlap.py): the offset bound
against a byte-level replay of the kernels' order, which kernels may overlap on which
tier, and plans that use it and still replay exactly."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest
from conftest import MODELS, REPO, assert_replays
from et_zephyr.api import ExportOptions, export
from et_zephyr.frontend.io_mode import IOMode
from et_zephyr.planning.overlap import CHUNK_PIXELS, convolution_offset


def _clobbers(
    input_chw: tuple[int, int, int],
    output_chw: tuple[int, int, int],
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    offset: int,
) -> bool:
    """Replay the order overlap.py assumes, byte by byte, with the output `offset` bytes
    below the input: blocks of CHUNK_PIXELS output pixels in row-major order, each
    block's outputs written while its windows may still be read. True if a read finds a
    byte already written."""
    c_in, h_in, w_in = input_chw
    c_out, h_out, w_out = output_chw
    input_base = max(offset, 0)
    output_base = input_base - offset
    written: set[int] = set()
    pixels = h_out * w_out
    for first in range(0, pixels, CHUNK_PIXELS):
        block = range(first, min(pixels, first + CHUNK_PIXELS))
        for p in block:
            written.update(range(output_base + p * c_out, output_base + (p + 1) * c_out))
        for p in block:
            out_y, out_x = divmod(p, w_out)
            for dy in range(kernel[0]):
                for dx in range(kernel[1]):
                    y = out_y * stride[0] - padding[0] + dy
                    x = out_x * stride[1] - padding[1] + dx
                    if 0 <= y < h_in and 0 <= x < w_in:
                        start = input_base + (y * w_in + x) * c_in
                        if not written.isdisjoint(range(start, start + c_in)):
                            return True
    return False


def _random_layers(count: int) -> list[tuple]:
    rng = random.Random(0)
    layers = []
    while len(layers) < count:
        k = (rng.choice([1, 3, 5]), rng.choice([1, 3]))
        stride = (rng.choice([1, 2]), rng.choice([1, 2]))
        padding = (rng.randint(0, k[0] // 2), rng.randint(0, k[1] // 2))
        h, w = rng.randint(k[0], 9), rng.randint(k[1], 9)
        c_in, c_out = rng.choice([1, 3, 8]), rng.choice([1, 4, 8, 16])
        h_out = (h + 2 * padding[0] - k[0]) // stride[0] + 1
        w_out = (w + 2 * padding[1] - k[1]) // stride[1] + 1
        layers.append(((c_in, h, w), (c_out, h_out, w_out), k, stride, padding))
    return layers


@pytest.mark.parametrize("layer", _random_layers(60))
def test_the_bound_is_exactly_what_the_kernel_order_allows(layer) -> None:
    input_chw, output_chw, kernel, stride, padding = layer
    offset = convolution_offset(input_chw, output_chw, stride, padding)
    assert not _clobbers(input_chw, output_chw, kernel, stride, padding, offset)
    assert _clobbers(input_chw, output_chw, kernel, stride, padding, offset - 1)


def test_mobilenets_pointwise_layer_and_a_resnet_block() -> None:
    # 8 -> 16 channels at 48x48: the output must start 18,464 bytes below the input.
    assert convolution_offset((8, 48, 48), (16, 48, 48), (1, 1), (0, 0)) == 18464
    # 3x3, 16 channels at 32x32: one row and 5 pixels of 16 channels.
    assert convolution_offset((16, 32, 32), (16, 32, 32), (1, 1), (1, 1)) == 37 * 16


def _overlaps(model: str, target: str) -> list[tuple[str, tuple, int]]:
    """The pairs the planner was allowed in the export's first planning run (on Helium,
    pipeline.plan_within_peak may plan again with other scratch sizes)."""
    import et_zephyr.planning.offset_planner as planner
    from et_zephyr.planning import overlap

    runs: list[list] = []
    original = overlap.output_overlaps

    def recording(graph_module, isa):
        found = original(graph_module, isa)
        runs.append(found)
        return found

    planner.output_overlaps = recording
    try:
        export(f"{MODELS}:{model}", ExportOptions(target=target, io=IOMode("int8", "int8")))
    finally:
        planner.output_overlaps = original
    return [(tuple(o.input.shape), tuple(o.output.shape), o.offset) for o in runs[0]]


def test_which_layers_may_overlap_on_each_tier() -> None:
    stem = ((1, 3, 20, 18), (1, 8, 10, 9))
    block = ((1, 8, 10, 9), (1, 8, 10, 9))
    down, widen = ((1, 8, 10, 9), (1, 8, 5, 5)), ((1, 8, 5, 5), (1, 24, 5, 5))
    expected = Counter(
        {
            # The stem reads the program input; a block's first convolution does not
            # overlap (its input lives on for the residual), its second does.
            (*stem, convolution_offset((3, 20, 18), (8, 10, 9), (2, 2), (1, 1))): 1,
            (*block, convolution_offset((8, 10, 9), (8, 10, 9), (1, 1), (1, 1))): 2,
            (*block, 0): 4,  # each add, over either input
        }
    )
    assert Counter(_overlaps("residual_stages", "cortex-m4")) == expected
    assert Counter(_overlaps("residual_stages", "cortex-m3")) == expected
    # Helium also runs the pointwise layer of depth 8 in order; the strided depthwise
    # layer is et-zephyr's depthwise kernel's, which goes over the whole image once per
    # channel group: not overlapped.
    expected[(*widen, convolution_offset((8, 5, 5), (24, 5, 5), (1, 1), (0, 0)))] = 1
    helium = Counter(_overlaps("residual_stages", "cortex-m55"))
    assert helium == expected
    assert not [overlap for overlap in helium if overlap[:2] == down]


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4", "cortex-m3"])
def test_overlapping_plans_reach_their_bound_and_replay_exactly(
    tmp_path, monkeypatch, target: str
) -> None:
    options = ExportOptions(target=target, name="m", io=IOMode("int8", "int8"), generated_vectors=8)
    artifacts = export(f"{MODELS}:residual_stages", options)
    memory = artifacts.manifest["memory"]
    planned = sum(b["bytes"] for b in memory["planned"])
    assert planned == memory["planned_lower_bound"]
    assert_replays(artifacts, tmp_path)
    # The same program planned side by side needs more.
    import et_zephyr.planning.memory
    import et_zephyr.planning.offset_planner

    for module in (et_zephyr.planning.offset_planner, et_zephyr.planning.memory):
        monkeypatch.setattr(module, "output_overlaps", lambda graph_module, isa: [])
    side_by_side = export(f"{MODELS}:residual_stages", options).manifest["memory"]
    assert planned < sum(b["bytes"] for b in side_by_side["planned"])


def test_a_depthwise_layer_at_the_peak_gets_the_scratch_that_lets_the_plan_shrink(
    tmp_path, monkeypatch
) -> None:
    """VWW's MobileNetV1 on Helium peaks at a strided 3x3 depthwise layer, which
    et-zephyr's kernel cannot write over its input: given CMSIS-NN's scratch there, the
    layer's output overlaps its input (the upstream kernel runs it) and the plan shrinks
    by 7,024 bytes, to its new lower bound; the bytes still replay. `--arena-budget` at
    the faster plan's size keeps that plan."""
    import et_zephyr.pipeline as pipeline

    options = ExportOptions(
        target="cortex-m55", name="vww", io=IOMode("int8", "int8"), calib_random=8, vectors=2
    )
    model = f"{REPO / 'benchmarks/mlperf_tiny_models.py'}:mobilenet_v1"
    fitted = export(model, options)
    memory = fitted.manifest["memory"]
    planned = sum(b["bytes"] for b in memory["planned"])
    assert planned == memory["planned_lower_bound"]
    assert_replays(fitted, tmp_path)
    # The overlapping call is the upstream kernel's: the firmware must link it.
    assert "depthwise_conv_mve" not in fitted.manifest["target"]["kernels_without_fallback"]
    # With a budget the faster plan fits, none of it: the plan and kernels of before.
    unfitted_bytes = 48_416
    budgeted = export(model, dataclasses.replace(options, arena_budget=unfitted_bytes))
    assert sum(b["bytes"] for b in budgeted.manifest["memory"]["planned"]) == unfitted_bytes
    assert "depthwise_conv_mve" in budgeted.manifest["target"]["kernels_without_fallback"]
    plain = pipeline.plan_and_serialize
    monkeypatch.setattr(pipeline, "plan_within_peak", lambda p, t, f, b: plain(p, t, f))
    unfitted = export(model, options).manifest["memory"]
    assert sum(b["bytes"] for b in unfitted["planned"]) == unfitted_bytes
    assert planned <= unfitted_bytes - 4096
