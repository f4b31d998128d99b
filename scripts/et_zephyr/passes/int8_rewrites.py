# SPDX-License-Identifier: Apache-2.0
"""What et-export's passes share when they turn `quantize(f(dequantize(x)))` with int8 on
both sides into one integer operator, in place after FoldAndAnnotateQParamsPass."""

from __future__ import annotations

import torch
from executorch.backends.cortex_m.passes.passes_utils import to_physical_order
from executorch.backends.transforms.utils import create_constant_placeholder
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.tensor import dim_order_from_stride
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx import Graph, Node

from ..reference.dim_orders import with_dim_order

_QUANTIZE = exir_ops.edge.quantized_decomposed.quantize_per_tensor.default
DEQUANTIZE = exir_ops.edge.quantized_decomposed.dequantize_per_tensor.default


def is_int8_dequantize(node: object) -> bool:
    return isinstance(node, Node) and node.target == DEQUANTIZE and node.args[5] == torch.int8


def int8_quantizers(node: Node) -> list[Node] | None:
    """The node's users when they are int8 quantizes, all with the same parameters."""
    users = list(node.users)
    if not users or not all(u.target == _QUANTIZE and u.args[5] == torch.int8 for u in users):
        return None
    if any(u.args[1:] != users[0].args[1:] for u in users):
        return None
    return users


def add_constant(program: ExportedProgram, graph: Graph, name: str, value: torch.Tensor) -> Node:
    """A constant parameter of the program. Constant placeholders must come before the
    user inputs: it goes in front of the first placeholder."""
    first_placeholder = next(n for n in graph.nodes if n.op == "placeholder")
    with graph.inserting_before(first_placeholder):
        return create_constant_placeholder(program, graph, name, InputKind.PARAMETER, value)


def replace_quantizers(
    graph: Graph, quantizers: list[Node], replaced: Node, target: object, args: tuple
) -> None:
    """The first quantize becomes `target(*args)`, with `replaced`'s metadata (its source
    line) and its own int8 value; the other quantizes' readers read it. In place: a
    graph output keeps its node's name."""
    kernel, *others = quantizers
    kernel.target = target
    kernel.args = args
    kernel.meta = {**replaced.meta, "val": kernel.meta["val"]}
    for quantizer in others:
        quantizer.replace_all_uses_with(kernel)
        graph.erase_node(quantizer)


def is_int8_map(node: object) -> bool:
    """Whether the node's value is a 4-D int8 tensor."""
    value = node.meta.get("val") if isinstance(node, Node) else None
    return isinstance(value, torch.Tensor) and value.dtype == torch.int8 and value.dim() == 4


def padded_map(
    source: Node, before: tuple[int, int], after: tuple[int, int], fill: int, origin: Node
) -> Node:
    """cortex_m::pad of a map's rows and columns, `before` above and left and `after`
    below and right, with `fill`, in the map's layout; reports point at `origin`."""
    value = source.meta["val"]
    graph = source.graph
    with graph.inserting_after(source):
        padded = graph.call_function(
            exir_ops.edge.cortex_m.pad.default,
            (
                source,
                to_physical_order([0, 0, *before], value),
                to_physical_order([0, 0, *after], value),
                fill,
            ),
        )
    shape = [
        *value.shape[:2],
        value.shape[2] + before[0] + after[0],
        value.shape[3] + before[1] + after[1],
    ]
    padded.meta = {k: v for k, v in origin.meta.items() if k in ("stack_trace", "nn_module_stack")}
    padded.meta["val"] = with_dim_order(
        value.new_empty(shape), dim_order_from_stride(value.stride())
    )
    return padded
