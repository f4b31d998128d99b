# SPDX-License-Identifier: Apache-2.0
"""A mean over one dimension as a batch matmul with a constant 1/N vector.

A transformer's pooling (`x.mean(dim=1)` over tokens) or a mean over features has no
Cortex-M kernel: it would stay a float operator whose float sums the host need not
reproduce bit for bit. A matmul with a row of 1/N is the same mean, and CMSIS-NN's
batch matmul computes it in integers: the int8 sum and one requantization. 1/N
quantizes exactly (it is the constant's only value), so the result is the mean with a
single rounding. Written before quantization, so the quantizer observes the matmul.
"""

from __future__ import annotations

from math import prod

import torch
from torch.fx import GraphModule, Node

from .fx_nodes import call, constant

aten = torch.ops.aten

_MEANS = {aten.mean.dim, aten.mean.default}


def means_to_matmuls(graph: GraphModule) -> int:
    """Each `mean(x, [d], keepdim)` of a rank-1 to rank-3 float tensor becomes a bmm with
    1/N; 4-D (image) means are left to the pooling paths. Returns how many changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        dim = _single_reduced_dim(node)
        if dim is None:
            continue
        x = node.args[0]
        shape = list(x.meta["val"].shape)
        before, count, after = prod(shape[:dim]), shape[dim], prod(shape[dim + 1 :])
        weights = torch.full((1, count), 1.0 / count)
        with graph.graph.inserting_before(node):
            if after == 1:
                # Each row against a constant column: bmm((1, A, N), (1, N, 1)).
                rows = call(graph, node, aten.reshape.default, x, [1, before, count])
                column = constant(graph, node, "weights", weights.reshape(1, count, 1))
                mean = call(graph, node, aten.bmm.default, rows, column)
            else:
                # A constant row against each (N, M) block: bmm((A, 1, N), (A, N, M)).
                blocks = call(graph, node, aten.reshape.default, x, [before, count, after])
                row = constant(
                    graph, node, "weights", weights.reshape(1, 1, count).expand(before, 1, count)
                )
                mean = call(graph, node, aten.bmm.default, row, blocks)
            shape = list(node.meta["val"].shape)
            result = call(graph, node, aten.reshape.default, mean, shape)
        node.replace_all_uses_with(result)
        graph.graph.erase_node(node)
        changed += 1
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return changed


def _single_reduced_dim(node: Node) -> int | None:
    if node.op != "call_function" or node.target not in _MEANS:
        return None
    x = node.args[0]
    value = x.meta.get("val") if isinstance(x, Node) else None
    if value is None or not value.is_floating_point() or not 1 <= value.dim() <= 3:
        return None
    if node.kwargs.get("dtype") is not None:
        return None
    dims = node.args[1] if len(node.args) > 1 else list(range(value.dim()))
    if dims is None or len(dims) != 1:
        if value.dim() != 1:
            return None
        dims = [0]
    return dims[0] % value.dim()
