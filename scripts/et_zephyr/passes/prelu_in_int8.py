# SPDX-License-Identifier: Apache-2.0
"""PReLU in forms the Cortex-M quantizer takes.

aten.prelu is decomposed in the Edge dialect into a float comparison, product and
select. With its learned slopes as constants it has exact quantizable forms:
- one slope (nn.PReLU()'s default): leaky_relu(x, slope), a lookup table between int8
  tensors (passes/lookup_tables.py);
- a slope per channel: relu(x) + (-slope) * relu(-x), the slopes broadcast over the
  channel dimension: a negation table, two clamps, CMSIS-NN's elementwise product with a
  per-channel constant and its addition.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_nodes import attribute, call, constant

aten = torch.ops.aten


def prelu_in_int8(graph: GraphModule) -> int:
    """Each aten.prelu with constant slopes becomes a leaky_relu (one slope) or the
    per-channel form. Returns how many changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target != aten.prelu.default:
            continue
        x, weight = node.args[0], node.args[1]
        if getattr(weight, "op", None) != "get_attr":
            continue
        slopes = attribute(graph, weight)  # type: ignore[arg-type]
        rank = x.meta["val"].dim()
        with graph.graph.inserting_before(node):
            if slopes.numel() == 1:
                result = call(graph, node, aten.leaky_relu.default, x, float(slopes))
            elif rank >= 2 and slopes.numel() == x.meta["val"].shape[1]:
                shape = [1, slopes.numel()] + [1] * (rank - 2)
                negated = constant(graph, node, "negated_slopes", -slopes.detach().view(shape))
                positive = call(graph, node, aten.relu.default, x)
                negative = call(
                    graph, node, aten.relu.default, call(graph, node, aten.neg.default, x)
                )
                scaled = call(graph, node, aten.mul.Tensor, negative, negated)
                result = call(graph, node, aten.add.Tensor, positive, scaled)
            else:
                continue
        node.replace_all_uses_with(result)
        graph.graph.erase_node(node)
        changed += 1
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return changed
