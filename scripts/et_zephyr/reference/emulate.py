# SPDX-License-Identifier: Apache-2.0
"""Run a serialized .pte on the host the way the device does.

The runtime's own executor cannot run cortex_m::* kernels on the host, so this
walks the program's instructions itself: tensors live at their planned offsets
in shared arenas (so a wrong memory plan corrupts results here as it would on
the device), constants come from the program's segment, and each operator runs
its host implementation (the device's arithmetic for cortex_m::*: ExecuTorch's
Python, or et_zephyr.reference's where that is not exact; ATen for portable
operators, on tensors in the default dim order only: the device's portable
kernels assume it, so the emulation refuses others).
"""

from __future__ import annotations

import contextlib

# Importing the passes first registers the cortex_m::* operators without an import cycle.
import executorch.backends.cortex_m.passes  # noqa: F401
import torch
from executorch.exir._serialize._program import deserialize_pte_binary
from executorch.exir.scalar_type import ScalarType
from executorch.exir.schema import (
    Bool,
    BoolList,
    Double,
    DoubleList,
    ExecutionPlan,
    Int,
    IntList,
    KernelCall,
    Null,
    Program,
    String,
    Tensor,
    TensorList,
)
from executorch.exir.tensor import get_scalar_type

from .. import reference
from ..errors import ExportError
from . import (
    memory_order,
    own_ops,  # noqa: F401  (registers the et_zephyr::* operators it may run)
)
from .dim_orders import portable_takes


def run_pte(
    pte: bytes, inputs: tuple[torch.Tensor, ...], isa: str, own_reference: bool = True
) -> tuple[torch.Tensor, ...]:
    """Outputs of method 0 ('forward') of the program for these inputs, computed as
    firmware of this ISA tier ("scalar", "dsp", "mve") computes them; with
    `own_reference=False`, with ExecuTorch's Python implementations throughout (to
    compare the two)."""
    program = deserialize_pte_binary(pte).program
    plan = program.execution_plan[0]
    arenas = [torch.zeros(size, dtype=torch.uint8) for size in plan.non_const_buffer_sizes]
    values: list[object] = []
    for value in plan.values:
        values.append(_materialize(value.val, values, program, arenas))
    if len(inputs) != len(plan.inputs):
        raise ExportError(f"the program takes {len(plan.inputs)} inputs, got {len(inputs)}")
    for index, tensor in zip(plan.inputs, inputs):
        destination = values[index]
        assert isinstance(destination, torch.Tensor)
        destination.copy_(tensor)
    with reference.installed(isa) if own_reference else contextlib.nullcontext():
        for chain in plan.chains:
            for instruction in chain.instructions:
                call = instruction.instr_args
                if not isinstance(call, KernelCall):
                    raise ExportError(f"cannot emulate instruction {type(call).__name__}")
                _call(plan, call, values)
    return tuple(_clone(values[index]) for index in plan.outputs)


def _clone(value: object) -> torch.Tensor:
    assert isinstance(value, torch.Tensor)
    return value.clone()


def _materialize(
    value: object, values: list[object], program: Program, arenas: list[torch.Tensor]
) -> object:
    if isinstance(value, Tensor):
        return _tensor(value, program, arenas)
    if isinstance(value, (Int, Bool, Double)):
        return value.int_val if isinstance(value, Int) else _scalar(value)
    if isinstance(value, Null):
        return None
    if isinstance(value, String):
        return value.string_val
    if isinstance(value, (IntList, TensorList)):
        return [values[index] for index in value.items]
    if isinstance(value, (BoolList, DoubleList)):
        return list(value.items)
    raise ExportError(f"cannot emulate a value of type {type(value).__name__}")


def _scalar(value: Bool | Double) -> object:
    return value.bool_val if isinstance(value, Bool) else value.double_val


def _tensor(spec: Tensor, program: Program, arenas: list[torch.Tensor]) -> torch.Tensor:
    dtype = get_scalar_type(spec.scalar_type)
    count = 1
    for size in spec.sizes:
        count *= size
    nbytes = count * torch.empty((), dtype=dtype).element_size()
    if spec.allocation_info is not None:
        offset = spec.allocation_info.memory_offset
        arena = arenas[spec.allocation_info.memory_id]
        storage = arena[offset : offset + nbytes]
    elif spec.data_buffer_idx > 0:
        raw = program.constant_buffer[spec.data_buffer_idx].storage[:nbytes]
        storage = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    else:
        storage = torch.zeros(nbytes, dtype=torch.uint8)
    # A view in logical order over the physical (dim_order) layout.
    return memory_order.unflatten(storage.view(dtype), spec.sizes, spec.dim_order)


def _call(plan: ExecutionPlan, call: KernelCall, values: list[object]) -> None:
    operator = plan.operators[call.op_index]
    namespace, _, name = operator.name.partition("::")
    packet = getattr(getattr(torch.ops, namespace), name)
    out_overload = getattr(packet, operator.overload)
    schema = out_overload._schema
    if namespace == "aten":
        _check_dim_orders(plan, call, operator.name)
    arguments = [values[index] for index in call.args]
    kwargs = {}
    positional = []
    for argument, value in zip(schema.arguments, arguments):
        value = _typed(argument.type, value)
        if argument.kwarg_only:
            kwargs[argument.name] = value
        else:
            positional.append(value)
    device_kernel = reference.portable_kernel(out_overload)
    if device_kernel is not None:
        out = kwargs.pop("out")
        out.copy_(device_kernel(*positional, **kwargs))
    elif namespace == "cortex_m":
        # Only the functional form has a host implementation: run it, then
        # write the result where the out argument lives.
        out = kwargs.pop("out")
        result = packet.default(*positional, **kwargs)
        out.copy_(result)
    else:
        out_overload(*positional, **kwargs)


def _check_dim_orders(plan: ExecutionPlan, call: KernelCall, name: str) -> None:
    """ATen honours any dim order; most portable kernels index by the default one (a
    channels-last tensor makes them compute other bytes or refuse the call), so a
    tensor in an order its kernel does not take is where the host and the device part."""
    tensors = []
    for index in call.args:
        value = plan.values[index].val
        items = value.items if isinstance(value, TensorList) else [index]
        tensors += [plan.values[i].val for i in items if isinstance(plan.values[i].val, Tensor)]
    if not portable_takes(name, [list(tensor.dim_order) for tensor in tensors]):
        odd = next(t for t in tensors if list(t.dim_order) != sorted(t.dim_order))
        raise ExportError(
            f"{name}: a portable kernel given a tensor of shape {list(odd.sizes)} "
            f"in dim order {list(odd.dim_order)}, which it does not take"
        )


def _typed(kind: torch.Type, value: object) -> object:
    if isinstance(value, int) and str(kind) == "ScalarType":
        return get_scalar_type(ScalarType(value))
    return value
