# SPDX-License-Identifier: Apache-2.0
"""How much RAM a lowered program needs on a 32-bit Cortex-M.

Three arenas, matching the runtime's MemoryManager:
- planned: the activations and CMSIS-NN scratch buffers that memory planning
  placed, one buffer per memory id, as serialized in the program;
- method: what `Method::load` allocates for the values table, tensor headers,
  lists and the instruction chains; computed by replaying its allocations with
  32-bit type sizes, in its order, with its alignment;
- temp: what operator resolution borrows while loading (freed after each
  operator) and what kernels ask for at run time: of the Cortex-M kernels only
  et-zephyr's own (firmware/kernel_temp.py); the others' scratch is planned.
"""

from __future__ import annotations

from dataclasses import dataclass

from executorch.exir import memory
from executorch.exir.schema import (
    ExecutionPlan,
    IntList,
    KernelCall,
    OptionalTensorList,
    Tensor,
    TensorList,
    TensorShapeDynamism,
)
from executorch.exir.tensor import TensorSpec
from torch.fx import GraphModule

from ..firmware.kernel_temp import run_time_temp_bytes
from .overlap import lower_bound_savings, output_overlaps

ARENA_ALIGNMENT = 16

# 32-bit layouts of the runtime's types (runtime/core, runtime/executor).
_EVALUE = (16, 8)
_POINTER = (4, 4)
_INT64 = (8, 8)
_TENSOR_IMPL = (32, 4)
_STRIDE = (4, 4)
_SIZE = (4, 4)
_DIM_ORDER = (1, 1)
_BOXED_LIST = (12, 4)
_CHAIN = (16, 4)
_SPAN = (8, 4)
_TENSOR_META = (12, 4)
_BACKEND_DELEGATE = (40, 8)


@dataclass(frozen=True)
class ArenaSizes:
    """Bytes per arena; `planned` holds one entry per memory id from 1."""

    planned: tuple[int, ...]
    method: int
    temp: int

    @property
    def planned_total(self) -> int:
        return sum(align(size) for size in self.planned)


def align(size: int, alignment: int = ARENA_ALIGNMENT) -> int:
    return (size + alignment - 1) // alignment * alignment


class _BumpAllocator:
    """Replays MemoryAllocator::allocate: align the cursor, then advance."""

    def __init__(self) -> None:
        self.used = 0

    def allocate(self, layout: tuple[int, int], count: int = 1) -> None:
        size, alignment = layout
        self.used = align(self.used, alignment) + size * count


def arena_sizes(plan: ExecutionPlan, isa: str) -> ArenaSizes:
    """The arenas one loaded method of `plan`, exported for the CMSIS-NN tier `isa`,
    needs on a 32-bit core."""
    method = _BumpAllocator()
    method.allocate(_EVALUE, len(plan.values))
    method.allocate((1, 1), len(plan.inputs))
    for value in plan.values:
        _allocate_value(method, value.val)
    # Even an empty delegate list aligns the cursor to 8 (a FreeableBuffer
    # holds a uint64_t). A delegate's backend allocates more of its own.
    method.allocate(_BACKEND_DELEGATE, len(plan.delegates))
    method.allocate(_CHAIN, len(plan.chains))
    temp = 0
    for chain in plan.chains:
        method.allocate(_POINTER, len(chain.instructions))
        method.allocate(_SPAN, len(chain.instructions))
        for instruction in chain.instructions:
            call = instruction.instr_args
            if isinstance(call, KernelCall):
                method.allocate(_POINTER, len(call.args))
                temp = max(
                    temp, _tensor_meta_bytes(plan, call), run_time_temp_bytes(plan, call, isa)
                )
    planned = tuple(plan.non_const_buffer_sizes[1:])
    return ArenaSizes(planned=planned, method=align(method.used), temp=align(temp))


def _allocate_value(method: _BumpAllocator, value: object) -> None:
    if isinstance(value, Tensor):
        dims = len(value.sizes)
        if value.shape_dynamism != TensorShapeDynamism.STATIC:
            method.allocate(_SIZE, dims)
            method.allocate(_DIM_ORDER, dims)
        method.allocate(_STRIDE, dims)
        method.allocate(_TENSOR_IMPL)
    elif isinstance(value, IntList):
        method.allocate(_POINTER, len(value.items))
        method.allocate(_INT64, len(value.items))
        method.allocate(_BOXED_LIST)
    elif isinstance(value, (TensorList, OptionalTensorList)):
        method.allocate(_POINTER, len(value.items))
        method.allocate(_EVALUE, len(value.items))
        method.allocate(_BOXED_LIST)


def _tensor_meta_bytes(plan: ExecutionPlan, call: KernelCall) -> int:
    temp = _BumpAllocator()
    temp.allocate(_TENSOR_META, len(call.args))
    for arg in call.args:
        value = plan.values[arg].val
        if isinstance(value, Tensor):
            temp.allocate(_DIM_ORDER, len(value.sizes))
    return temp.used


def kconfig_fragment(name: str, sizes: ArenaSizes, kernel_slots: int, header: str) -> str:
    """The arena sizes as a Kconfig fragment for the Zephyr build."""
    return (
        f"# {header}\n"
        f"# Arena sizes of the model '{name}', computed by et-export.\n"
        + _planned_buffer_lines(sizes)
        + f"CONFIG_ET_ZEPHYR_PLANNED_ARENA_SIZE={sizes.planned_total}\n"
        f"CONFIG_ET_ZEPHYR_METHOD_ARENA_SIZE={sizes.method}\n"
        f"CONFIG_ET_ZEPHYR_TEMP_ARENA_SIZE={sizes.temp}\n"
        f"CONFIG_ET_ZEPHYR_KERNEL_SLOTS={kernel_slots}\n"
    )


def _planned_buffer_lines(sizes: ArenaSizes) -> str:
    """With several planned buffers (et-export --fast-arena), the size of each: the
    firmware gives each its own array, in CONFIG_ET_ZEPHYR_PLANNED_REGION_<id>'s region."""
    if len(sizes.planned) < 2:
        return ""
    return "".join(
        f"# memory id {mem_id}: {size} B (CONFIG_ET_ZEPHYR_PLANNED_REGION_{mem_id})\n"
        for mem_id, size in enumerate(sizes.planned, start=1)
    )


def planned_lower_bound(graph: GraphModule, isa: str | None = None) -> int:
    """Largest total of planned tensors alive at once, less what outputs overlapping their
    inputs save where the ISA tier's kernels allow it (overlap.py): no plan can use less."""
    specs = _planned_lifetimes(graph)
    savings = lower_bound_savings(output_overlaps(graph, isa)) if isa is not None else []
    events = sorted({point for first, last, _ in specs for point in (first, last)})
    return max(
        (
            sum(size for first, last, size in specs if first <= t <= last)
            - sum(saved for first, last, saved, _ in savings if first <= t <= last)
            for t in events
        ),
        default=0,
    )


def live_at_peak(graph: GraphModule, isa: str) -> set[str]:
    """The nodes whose planned tensors are alive where the lower bound peaks: what a
    smaller plan must shrink."""
    specs = _planned_lifetimes(graph)
    savings = lower_bound_savings(output_overlaps(graph, isa))
    events = sorted({point for first, last, _ in specs for point in (first, last)})
    if not events:
        return set()

    def total(t: int) -> int:
        live = sum(size for first, last, size in specs if first <= t <= last)
        return live - sum(saved for first, last, saved, _ in savings if first <= t <= last)

    peak = max(events, key=total)
    names = set()
    for node in graph.graph.nodes:
        spec = node.meta.get("spec")
        if isinstance(spec, TensorSpec) and _planned_spec(spec):
            first, last = spec.lifetime
            if first <= peak <= last:
                names.add(node.name)
    return names


def _planned_spec(spec: TensorSpec) -> bool:
    return spec.mem_id is not None and spec.mem_id >= 1 and spec.lifetime[0] is not None


def _planned_lifetimes(graph: GraphModule) -> list[tuple[int, int, int]]:
    """(first use, last use, bytes) of each distinct tensor in planned memory."""
    lifetimes = {}
    for node in graph.graph.nodes:
        spec = node.meta.get("spec")
        # A view shares its base's storage: count the base only.
        if node.target is memory.view or not isinstance(spec, TensorSpec):
            continue
        if _planned_spec(spec):
            first, last = spec.lifetime
            lifetimes[id(spec)] = (first, last, spec.allocated_memory)
    return list(lifetimes.values())
