# SPDX-License-Identifier: Apache-2.0
"""What et-export's passes share when they turn `quantize(f(dequantize(x)))` with int8 on
both sides into one integer operator, in place after FoldAndAnnotateQParamsPass."""

from __future__ import annotations

import torch
from executorch.backends.transforms.utils import create_constant_placeholder
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx import Graph, Node

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
