# SPDX-License-Identifier: Apache-2.0
"""`--fast-arena BYTES`: activations planned across two memory regions.

Memory id 1 is for a small fast region (DTCM, or the part of the default RAM the
application gives the model), memory id 2 for the rest (SRAM). The largest tensors go to
memory id 1 first, each one kept there only if the planners (planning/offset_planner.py) still
fit memory id 1 into BYTES with it; the others go to memory id 2. The firmware places each
memory id's buffer in the region Kconfig names (CONFIG_ET_ZEPHYR_PLANNED_REGION_1/_2).
"""

from __future__ import annotations

from executorch.exir.tensor import TensorSpec
from torch.export import ExportGraphSignature
from torch.fx import GraphModule

from .offset_planner import algorithms, planning_suite

FAST, REST = 1, 2


class FastFirstPlanner:
    """A memory planning algorithm for ExecuTorch's MemoryPlanningPass: the largest
    tensors in memory id 1 while it fits `fast_bytes`, the rest in memory id 2."""

    def __init__(self, fast_bytes: int, isa: str | None = None) -> None:
        self.fast_bytes = fast_bytes
        self.isa = isa

    def __call__(
        self,
        alignment: int,
        specs: set[TensorSpec],
        graph_module: GraphModule,
        graph_signature: ExportGraphSignature,
        extra_padding: int,
    ) -> list[int]:
        def fast_size(fast: set[TensorSpec]) -> int:
            for spec in specs:
                spec.mem_id = FAST if spec in fast else REST
            sizes = [
                algorithm(alignment, specs, graph_module, graph_signature, extra_padding).bufsizes
                for algorithm in algorithms(self.isa)
            ]
            return min(size[FAST] if len(size) > FAST else 0 for size in sizes)

        fast: set[TensorSpec] = set()
        # Tensors that share storage (in-place views) follow their base's memory id.
        owners = [spec for spec in specs if spec.inplace_base is None]
        for spec in sorted(owners, key=lambda s: s.allocated_memory, reverse=True):
            if fast_size(fast | {spec}) <= self.fast_bytes:
                fast.add(spec)
        for spec in specs:
            spec.mem_id = FAST if spec in fast else REST
        suite = planning_suite(self.isa)
        return suite(alignment, specs, graph_module, graph_signature, extra_padding)
