# SPDX-License-Identifier: Apache-2.0
"""Shared constant values: fewer values, the same program behaviour."""

from et_zephyr.planning.compaction import share_constant_values
from et_zephyr.planning.memory import arena_sizes
from executorch.exir._serialize._program import deserialize_pte_binary
from executorch.exir.schema import Int, IntList, KernelCall, Operator


def kws_plan(export_kws):
    pte = export_kws("cortex-m55").path(".pte").read_bytes()
    return deserialize_pte_binary(pte).program.execution_plan[0]


def test_each_constant_appears_once(export_kws) -> None:
    plan = kws_plan(export_kws)
    ints = [v.val.int_val for v in plan.values if isinstance(v.val, Int)]
    lists = [tuple(v.val.items) for v in plan.values if isinstance(v.val, IntList)]
    assert len(ints) == len(set(ints))
    assert len(lists) == len(set(lists))
    assert share_constant_values(plan) == 0  # already compact


def test_every_reference_stays_in_range(export_kws) -> None:
    plan = kws_plan(export_kws)
    count = len(plan.values)
    for instruction in plan.chains[0].instructions:
        assert all(0 <= arg < count for arg in instruction.instr_args.args)
    for value in plan.values:
        if isinstance(value.val, IntList):
            assert all(0 <= item < count and isinstance(plan.values[item].val, Int)
                       for item in value.val.items)  # fmt: skip


def test_sharing_shrinks_the_method_arena(export_kws) -> None:
    plan = kws_plan(export_kws)
    compact = arena_sizes(plan, "mve").method
    # Undo the sharing: give every kernel argument its own copy of each value.
    for instruction in plan.chains[0].instructions:
        call = instruction.instr_args
        assert isinstance(call, KernelCall)
        for position, arg in enumerate(call.args):
            if isinstance(plan.values[arg].val, Int):
                plan.values.append(plan.values[arg])
                call.args[position] = len(plan.values) - 1
    assert arena_sizes(plan, "mve").method > compact
    assert share_constant_values(plan) > 0
    assert arena_sizes(plan, "mve").method == compact


def test_programs_that_write_scalars_are_left_alone(export_kws) -> None:
    plan = kws_plan(export_kws)
    first_int = next(value for value in plan.values if isinstance(value.val, Int))
    plan.values.append(first_int)
    plan.operators.append(Operator(name="executorch_prim::add", overload="Scalar"))
    assert share_constant_values(plan) == 0
