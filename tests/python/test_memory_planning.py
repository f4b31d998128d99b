# SPDX-License-Identifier: Apache-2.0
"""Memory planning: the offset planner beside ExecuTorch's greedy one, and activations
across two memory regions (et-export --fast-arena)."""

from __future__ import annotations

import pytest
import torch
from conftest import KWS_MODEL, MODELS, assert_replays
from et_zephyr.api import ExportOptions, export
from et_zephyr.cli import main
from et_zephyr.frontend.io_mode import IOMode
from et_zephyr.planning.offset_planner import offset_first_fit
from executorch.exir.memory_planning import greedy
from executorch.exir.tensor import TensorSpec


def _spec(nbytes: int, first: int, last: int) -> TensorSpec:
    spec = TensorSpec.from_tensor(torch.empty(nbytes, dtype=torch.int8))
    spec.lifetime = [first, last]
    return spec


def _chain() -> list[TensorSpec]:
    """MobileNetV1's first layers with an INT8 input: the input lives until its consumer,
    then ever larger activations; at most 55,296 bytes are alive at once (t2 + t3)."""
    return [
        _spec(27648, 0, 2),  # the input
        _spec(18432, 2, 4),  # t1
        _spec(18432, 4, 6),  # t2
        _spec(36864, 6, 8),  # t3
        _spec(9216, 8, 10),
    ]


def _no_overlap_in_time_and_space(specs: list[TensorSpec], result) -> None:
    placed = [(result.spec_dict[s].mem_offset, s) for s in specs]
    for i, (offset_a, a) in enumerate(placed):
        for offset_b, b in placed[i + 1 :]:
            alive_together = a.lifetime[0] <= b.lifetime[1] and b.lifetime[0] <= a.lifetime[1]
            overlap = (
                offset_a < offset_b + b.allocated_memory
                and offset_b < offset_a + a.allocated_memory
            )
            assert not (alive_together and overlap), (a.lifetime, b.lifetime)


def test_offset_planner_reaches_the_lower_bound_where_greedy_does_not() -> None:
    specs = _chain()
    result = offset_first_fit(16, set(specs), torch.fx.GraphModule({}, torch.fx.Graph()), None)
    assert result.bufsizes == [0, 18432 + 36864]
    _no_overlap_in_time_and_space(specs, result)
    # Tensors whose bytes overlap share a mem_obj_id, as ExecuTorch's verifier wants.
    for a in specs:
        for b in specs:
            ra, rb = result.spec_dict[a], result.spec_dict[b]
            if (
                ra.mem_offset < rb.mem_offset + b.allocated_memory
                and rb.mem_offset < ra.mem_offset + a.allocated_memory
            ):
                assert ra.mem_obj_id == rb.mem_obj_id
    greedy_plan = greedy(16, set(_chain()), torch.fx.GraphModule({}, torch.fx.Graph()), None)
    assert sum(greedy_plan.bufsizes) > sum(result.bufsizes)


def test_each_memory_id_is_planned_on_its_own() -> None:
    specs = _chain()
    for spec in specs[:2]:
        spec.mem_id = 2
    result = offset_first_fit(16, set(specs), torch.fx.GraphModule({}, torch.fx.Graph()), None)
    assert result.bufsizes == [0, 18432 + 36864, 27648 + 18432]
    assert {result.spec_dict[s].mem_id for s in specs[:2]} == {2}


def test_int8_models_plan_their_lower_bound() -> None:
    memory = export(f"{MODELS}:strided_stem", ExportOptions(io=IOMode("int8", "int8")))
    memory = memory.manifest["memory"]
    assert [b["bytes"] for b in memory["planned"]] == [memory["planned_lower_bound"]]


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m3"])
def test_fast_arena_splits_the_plan_and_the_program_still_replays(tmp_path, target: str) -> None:
    options = ExportOptions(target=target, name="kws", fast_arena=12 * 1024, generated_vectors=4)
    artifacts = export(KWS_MODEL, options)
    planned = artifacts.manifest["memory"]["planned"]
    assert [b["mem_id"] for b in planned] == [1, 2]
    assert 0 < planned[0]["bytes"] <= 12 * 1024
    assert sum(b["bytes"] for b in planned) >= artifacts.manifest["memory"]["planned_lower_bound"]
    conf = artifacts.files["kws.conf"].decode()
    assert f"# memory id 1: {planned[0]['bytes']} B (CONFIG_ET_ZEPHYR_PLANNED_REGION_1)" in conf
    assert f"# memory id 2: {planned[1]['bytes']} B (CONFIG_ET_ZEPHYR_PLANNED_REGION_2)" in conf
    assert_replays(artifacts, tmp_path)


def test_a_fast_arena_that_holds_everything_plans_one_buffer() -> None:
    planned = export(KWS_MODEL, ExportOptions(fast_arena=1 << 20)).manifest["memory"]["planned"]
    assert [b["mem_id"] for b in planned] == [1]


def test_cli_fast_arena(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main([f"{MODELS}:small_cnn", "--fast-arena", "0K", "-o", str(out), "--name", "m"]) == 0
    report = capsys.readouterr().out
    assert "in memory id 1 + " in report and "in memory id 2 (lower bound" in report
    with pytest.raises(SystemExit):
        main([f"{MODELS}:small_cnn", "--fast-arena", "12Q"])
    assert "'12Q' is not a byte count" in capsys.readouterr().err


# What et-zephyr's DSP kernels borrow from the temp arena (firmware/kernel_temp.py):
# linear_dsp.cpp the input row as int16 pairs (640 values: 1,280 bytes), conv_dsp.cpp
# 4 pixels' patches deeper than its stack buffer (144 values: 1,152 bytes; 75 values
# padded to 76, gathered, with the last channel's weights padded: 760 bytes). Without
# them the kernel hands the layer to the upstream kernel. The Helium and scalar tiers
# have no such kernels.
@pytest.mark.parametrize(
    ("factory", "borrowed"),
    [("wide_linear", 2 * 640), ("deep_patches", 8 * 144), ("padded_patches", 10 * 76)],
)
@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m33", "cortex-m55", "cortex-m3"])
def test_the_temp_arena_holds_what_the_dsp_kernels_borrow(
    factory: str, borrowed: int, target: str
) -> None:
    artifacts = export(f"{MODELS}:{factory}", ExportOptions(target=target))
    temp = artifacts.manifest["memory"]["temp_allocator"]
    assert (temp >= borrowed) == (artifacts.manifest["target"]["isa"] == "dsp")
    conf = next(data for file, data in artifacts.files.items() if file.endswith(".conf"))
    assert f"CONFIG_ET_ZEPHYR_TEMP_ARENA_SIZE={temp}\n" in conf.decode()
