# SPDX-License-Identifier: Apache-2.0
"""Share identical constant values in a serialized program's values table.

ExecuTorch's emitter gives every scalar and int-list argument its own entry
in the values table (KWS: 137 ints, 17 distinct), and the runtime spends a
16-byte EValue on each entry, plus list storage, in the method arena. Kernels
only read such arguments, so identical ones can share one entry.
"""

from __future__ import annotations

import struct
from dataclasses import replace

from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
from executorch.exir.schema import (
    Bool,
    DelegateCall,
    Double,
    EValue,
    ExecutionPlan,
    FreeCall,
    Int,
    IntList,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    Null,
    OptionalTensorList,
    Program,
    TensorList,
)

# Operators that write scalar values (symbolic sizes): never share their values.
_SCALAR_WRITERS = ("executorch_prim::", "aten::sym_")


def compact_program(pte: bytes) -> tuple[bytes, Program]:
    """The program with shared constant values, serialized as et-export does."""
    pte_file = deserialize_pte_binary(pte)
    for plan in pte_file.program.execution_plan:
        share_constant_values(plan)
    data = serialize_pte_binary(pte_file, extract_delegate_segments=True)
    return bytes(data), pte_file.program


def share_constant_values(plan: ExecutionPlan) -> int:
    """Merge equal Int, Double, Bool, Null and IntList values; return how many went."""
    if any(op.name.startswith(_SCALAR_WRITERS) for op in plan.operators):
        return 0
    pinned = set(plan.inputs) | set(plan.outputs)
    remap: dict[int, int] = {}
    canonical: dict[tuple, int] = {}
    values: list[EValue] = []
    for index, value in enumerate(plan.values):
        moved = _remapped(value, remap)
        key = None if index in pinned else _key(moved.val)
        if key is not None and key in canonical:
            remap[index] = canonical[key]
            continue
        remap[index] = len(values)
        values.append(moved)
        if key is not None:
            canonical[key] = remap[index]
    removed = len(plan.values) - len(values)
    plan.values = values
    plan.inputs = [remap[i] for i in plan.inputs]
    plan.outputs = [remap[i] for i in plan.outputs]
    for chain in plan.chains:
        chain.inputs = [remap[i] for i in chain.inputs]
        chain.outputs = [remap[i] for i in chain.outputs]
        for instruction in chain.instructions:
            instruction.instr_args = _remapped_instruction(instruction.instr_args, remap)
    return removed


def _key(value: object) -> tuple | None:
    if isinstance(value, Int):
        return ("int", value.int_val)
    if isinstance(value, Double):
        # By bit pattern: 0.0 and -0.0 differ, and a NaN equals itself. Infinities
        # arrive as the strings "inf" and "-inf" (e.g. attention's masked fill).
        return ("double", struct.pack("<d", float(value.double_val)))
    if isinstance(value, Bool):
        return ("bool", value.bool_val)
    if isinstance(value, Null):
        return ("null",)
    if isinstance(value, IntList):
        return ("int list", tuple(value.items))
    return None


def _remapped(value: EValue, remap: dict[int, int]) -> EValue:
    """Items of lists refer to earlier values: point them at the kept ones."""
    val = value.val
    if isinstance(val, (IntList, TensorList, OptionalTensorList)):
        return EValue(replace(val, items=[remap.get(i, i) if i >= 0 else i for i in val.items]))
    return value


def _remapped_instruction(args: object, remap: dict[int, int]) -> object:
    if isinstance(args, (KernelCall, DelegateCall)):
        return replace(args, args=[remap[i] for i in args.args])
    if isinstance(args, MoveCall):
        return MoveCall(move_from=remap[args.move_from], move_to=remap[args.move_to])
    if isinstance(args, JumpFalseCall):
        return replace(args, cond_value_index=remap[args.cond_value_index])
    if isinstance(args, FreeCall):
        return FreeCall(value_index=remap[args.value_index])
    return args
