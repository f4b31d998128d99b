# SPDX-License-Identifier: Apache-2.0
"""A mean over an image's height and width as the global average pool it is.

`x.mean((2, 3))` (or `(-2, -1)`, keepdim or not), ShuffleNet's and many a hand-written
classifier's pooling, captures as aten.mean.dim, which neither the Cortex-M quantizer
nor mean_as_matmul.py (1-D to 3-D tensors) takes: it stayed a float mean on a portable
kernel. As adaptive_avg_pool2d(x, 1) it lowers to CMSIS-NN's average pool, as
nn.AdaptiveAvgPool2d(1) does; a reshape gives the mean's shape (a 1x1 image's bytes
are the same in every layout).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_nodes import call

aten = torch.ops.aten


def spatial_means_as_pools(graph: GraphModule) -> int:
    """Each mean of a 4-D tensor over exactly its last two dimensions becomes a global
    average pool. Returns how many changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target != aten.mean.dim:
            continue
        x, dims = node.args[0], node.args[1]
        if x.meta["val"].dim() != 4 or sorted(d % 4 for d in dims) != [2, 3]:
            continue
        if node.kwargs.get("dtype") is not None:
            continue
        with graph.graph.inserting_before(node):
            pooled = call(graph, node, aten.adaptive_avg_pool2d.default, x, [1, 1])
            result = call(graph, node, aten.reshape.default, pooled, list(node.meta["val"].shape))
        node.replace_all_uses_with(result)
        graph.graph.erase_node(node)
        changed += 1
    graph.recompile()
    return changed
