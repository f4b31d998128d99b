# SPDX-License-Identifier: Apache-2.0
"""A PReLU with one slope (nn.PReLU()'s default) as the LeakyReLU it is.

aten.prelu is decomposed in the Edge dialect into a float comparison, product and
select; with its single learned slope as a constant, leaky_relu(x, slope) computes
the same and becomes a lookup table between int8 tensors (lookup_tables.py). A PReLU
with a slope per channel stays float, with the warning that names it.
"""

from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule

from ..fx_nodes import call

aten = torch.ops.aten


def prelu_as_leaky_relu(graph: GraphModule) -> int:
    """Each aten.prelu with one constant slope becomes aten.leaky_relu. Returns how many."""
    changed = 0
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target != aten.prelu.default:
            continue
        weight = node.args[1]
        if getattr(weight, "op", None) != "get_attr":
            continue
        slope = operator.attrgetter(weight.target)(graph)  # type: ignore[union-attr]
        if slope.numel() != 1:
            continue
        with graph.graph.inserting_before(node):
            leaky = call(graph, node, aten.leaky_relu.default, node.args[0], float(slope))
        node.replace_all_uses_with(leaky)
        graph.graph.erase_node(node)
        changed += 1
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return changed
