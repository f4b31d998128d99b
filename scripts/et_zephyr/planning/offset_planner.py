# SPDX-License-Identifier: Apache-2.0
"""A memory planning algorithm that places each tensor at an offset of its own.

ExecuTorch's `greedy` reuses whole shared objects: a tensor takes over the slot of one
that died, so a slot is as large as the largest tensor it ever holds, and the buffer is
the sum of the slots. Placing tensors at free offsets instead (largest first, at the
lowest offset no tensor alive at the same time occupies: the greedy-by-size planner
TFLite Micro uses) reaches the lower bound on chains such as MobileNetV1's, where
`greedy` plans a third more. Both run in ExecuTorch's MemoryPlanningAlgorithmSuite,
which keeps the smaller plan. An operator's output may overlap the input it consumes
where the kernel's order allows it (planning/overlap.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import torch
from executorch.exir.memory_planning import (
    MemoryAlgoResult,
    MemoryPlanningAlgorithmSuite,
    SpecAllocResult,
    greedy,
)
from executorch.exir.tensor import TensorSpec
from torch.export import ExportGraphSignature

from .overlap import Overlap, lower_bound_savings, output_overlaps


def offset_first_fit(
    alignment: int,
    specs: set[TensorSpec],
    graph_module: torch.fx.GraphModule,
    graph_signature: ExportGraphSignature,
    extra_padding: int = 0,
    isa: str | None = None,
) -> MemoryAlgoResult:
    """Each memory id planned on its own: tensors by size (largest first), each at the
    lowest aligned offset free during its whole lifetime. A tensor computed in place
    (`inplace_base`) shares its base's bytes; the base is kept for both lifetimes. With
    the ISA tier the kernels are built for, an output may overlap the input it is
    computed from as far as its kernel allows (planning/overlap.py)."""
    groups: dict[TensorSpec, list[TensorSpec]] = {}
    for spec in specs:
        spec.realign(alignment)
        groups.setdefault(_root(spec), []).append(spec)
    base_sizes = getattr(graph_module, "input_mem_buffer_sizes", None) or []
    overlaps = output_overlaps(graph_module, isa) if isa is not None else []
    offsets = _overlap_offsets(overlaps, groups)
    pressure, lower_bound = _pressure(groups, lower_bound_savings(overlaps))
    orders = [*_ORDERS, lambda g: (-pressure[g[0]], -g[0].allocated_memory)]
    # Then the pressure order with ties and near-ties broken at random (seeded: the same
    # plan every export), while the plan is above the lower bound.
    rng = random.Random(0)
    for _ in range(_restarts(len(groups))):
        noise = {root: rng.random() for root in groups}
        orders.append(lambda g, n=noise: (-pressure[g[0]] * (1 + 0.1 * n[g[0]]),))
    best: MemoryAlgoResult | None = None
    for order in orders:
        result = _place(
            sorted(groups.items(), key=order), base_sizes, alignment, extra_padding, offsets
        )
        if best is None or sum(result.bufsizes) < sum(best.bufsizes):
            best = result
        if sum(best.bufsizes) <= lower_bound + extra_padding * (len(best.bufsizes) - 1):
            break
    assert best is not None
    _number_shared_storage(best)
    return best


def _restarts(count: int) -> int:
    """Random orders to try: more for small graphs, each costs count^2 steps."""
    return max(4, min(64, 400_000 // max(1, count * count)))


Group = tuple[TensorSpec, list[TensorSpec]]
# Orders to place in, the best plan kept: by size (TFLite Micro's), by how long a tensor
# lives (long-lived ones pinned low first), by size times lifetime; and (offset_first_fit)
# by the memory pressure during its life.
_ORDERS: list[Callable[[Group], tuple[int, ...]]] = [
    lambda g: (-g[0].allocated_memory, _lifetime(g[1])[0]),
    lambda g: (_lifetime(g[1])[0] - _lifetime(g[1])[1], -g[0].allocated_memory),
    lambda g: (-g[0].allocated_memory * (_lifetime(g[1])[1] - _lifetime(g[1])[0] + 1),),
]


def _overlap_offsets(
    overlaps: list[Overlap], groups: dict[TensorSpec, list[TensorSpec]]
) -> dict[tuple[int, int], int]:
    """(id of the input, id of the output): how far below the input the output may start.
    Only tensors that plan as themselves (no in-place members) take part."""
    alone = {id(root) for root, members in groups.items() if members == [root]}
    return {
        (id(o.input), id(o.output)): o.offset
        for o in overlaps
        if id(o.input) in alone and id(o.output) in alone and o.input.mem_id == o.output.mem_id
    }


def _pressure(
    groups: dict[TensorSpec, list[TensorSpec]], savings: list[tuple[int, int, int, int]]
) -> tuple[dict[TensorSpec, int], int]:
    """For each tensor, the most bytes alive at once during its life: tensors where memory
    is tightest go first, so the peak's tensors are packed before any other can split them
    (TFLite's "greedy by breadth" idea). Also the sum over memory ids of their most bytes
    alive at once, less what overlapping outputs and inputs save, which no plan can beat."""
    spans = {root: _lifetime(members) for root, members in groups.items()}
    points = sorted({point for first, last in spans.values() for point in (first, last)})
    live: dict[tuple[int, int], int] = {}
    for root, (first, last) in spans.items():
        for t in points:
            if first <= t <= last:
                key = (root.mem_id or 1, t)
                live[key] = live.get(key, 0) + root.allocated_memory
    for first, last, saved, mem_id in savings:
        for t in points:
            if first <= t <= last and (mem_id, t) in live:
                live[(mem_id, t)] -= saved
    pressure = {
        root: max(live[(root.mem_id or 1, t)] for t in points if first <= t <= last)
        for root, (first, last) in spans.items()
    }
    peaks: dict[int, int] = {}
    for (mem_id, _), size in live.items():
        peaks[mem_id] = max(peaks.get(mem_id, 0), size)
    return pressure, sum(peaks.values())


def _place(
    ordered: list[Group],
    base_sizes: list[int],
    alignment: int,
    extra_padding: int,
    offsets: dict[tuple[int, int], int],
) -> MemoryAlgoResult:
    result = MemoryAlgoResult({}, [])
    placed: dict[int, list[Block]] = {}
    for root, members in ordered:
        mem_id = root.mem_id or 1
        first, last = _lifetime(members)
        start = base_sizes[mem_id] if mem_id < len(base_sizes) else 0
        size = root.allocated_memory
        forbidden = [_forbidden(block, root, size, offsets) for block in placed.get(mem_id, [])
                     if block.first <= last and first <= block.last]  # fmt: skip
        offset = _lowest_free(forbidden, start, alignment)
        placed.setdefault(mem_id, []).append(Block(offset, offset + size, first, last, root))
        for spec in members:
            result.spec_dict[spec] = SpecAllocResult(mem_id, 0, offset)
    sizes = [0] * max(2, max(placed, default=1) + 1)
    for mem_id, blocks in placed.items():
        sizes[mem_id] = max(block.end for block in blocks) + extra_padding
    result.bufsizes = sizes
    return result


def _root(spec: TensorSpec) -> TensorSpec:
    while spec.inplace_base is not None:
        spec = spec.inplace_base
    return spec


def _lifetime(specs: list[TensorSpec]) -> tuple[int, int]:
    return min(s.lifetime[0] for s in specs), max(s.lifetime[1] for s in specs)


@dataclass(frozen=True)
class Block:
    """A placed tensor: its bytes, its lifetime, its spec."""

    offset: int
    end: int
    first: int
    last: int
    spec: TensorSpec


def _forbidden(
    block: Block, spec: TensorSpec, size: int, offsets: dict[tuple[int, int], int]
) -> tuple[int, int]:
    """The open interval of offsets where `size` bytes of `spec` would clash with a block
    alive at the same time: any overlap, or less than its kernel allows (planning/overlap.py)."""
    below = offsets.get((id(block.spec), id(spec)))  # spec is written from block
    if below is not None:
        return block.offset - min(below, size), block.end
    above = offsets.get((id(spec), id(block.spec)))  # block is written from spec
    if above is not None:
        return block.offset - size, block.offset + min(above, block.end - block.offset)
    return block.offset - size, block.end


def _lowest_free(forbidden: list[tuple[int, int]], start: int, alignment: int) -> int:
    """The lowest aligned offset from `start` inside none of the open intervals."""
    candidate = start
    for low, high in sorted(forbidden):
        if low < candidate < high:
            candidate = -(-high // alignment) * alignment
    return candidate


def _number_shared_storage(result: MemoryAlgoResult) -> None:
    """mem_obj_id: one number per group of tensors whose bytes overlap (transitively), as
    ExecuTorch's verifier expects of tensors sharing storage."""
    specs = list(result.spec_dict)
    parent = list(range(len(specs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    spans = [(result.spec_dict[s].mem_id, result.spec_dict[s].mem_offset, s) for s in specs]
    for i, (mem_i, off_i, spec_i) in enumerate(spans):
        for j in range(i + 1, len(spans)):
            mem_j, off_j, spec_j = spans[j]
            end_i, end_j = off_i + spec_i.allocated_memory, off_j + spec_j.allocated_memory
            if mem_i == mem_j and off_i < end_j and off_j < end_i:
                parent[find(i)] = find(j)
    for i, spec in enumerate(specs):
        result.spec_dict[spec].mem_obj_id = find(i)


def algorithms(isa: str | None) -> list[Callable[..., MemoryAlgoResult]]:
    """ExecuTorch's greedy planner and this one, told the ISA tier of the kernels."""

    def offset_first_fit_overlapping(*args: object, **kwargs: object) -> MemoryAlgoResult:
        return offset_first_fit(*args, **kwargs, isa=isa)  # type: ignore[arg-type]

    return [greedy, offset_first_fit_overlapping]


def planning_suite(isa: str | None) -> MemoryPlanningAlgorithmSuite:
    """ExecuTorch's suite over its greedy planner and this one: the smaller plan wins."""
    return MemoryPlanningAlgorithmSuite(algorithms(isa))
