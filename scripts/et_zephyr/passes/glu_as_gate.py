# SPDX-License-Identifier: Apache-2.0
"""A GLU as the gate it is: the first half of its input times the sigmoid of the second.

`F.glu` / `nn.GLU` (a conformer's convolution module, gated CNNs) captures as one
aten.glu, which the Cortex-M quantizer does not take; the Edge dialect then splits it
into a slice, a sigmoid and a multiplication left in float. Written as those before
quantization, the slices share their input's parameters, the sigmoid becomes a lookup
table and the product CMSIS-NN's elementwise multiplication.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_nodes import call

aten = torch.ops.aten


def glu_as_gate(graph: GraphModule) -> int:
    """Each aten.glu becomes slice * sigmoid(slice). Returns how many changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target != aten.glu.default:
            continue
        x = node.args[0]
        dim = int(node.args[1]) if len(node.args) > 1 else -1
        rank = x.meta["val"].dim()
        dim %= rank
        half = x.meta["val"].shape[dim] // 2
        with graph.graph.inserting_before(node):
            value = call(graph, node, aten.slice.Tensor, x, dim, 0, half)
            gate = call(graph, node, aten.slice.Tensor, x, dim, half, 2 * half)
            weight = call(graph, node, aten.sigmoid.default, gate)
            result = call(graph, node, aten.mul.Tensor, value, weight)
        node.replace_all_uses_with(result)
        graph.graph.erase_node(node)
        changed += 1
    graph.recompile()
    return changed
