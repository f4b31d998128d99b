# SPDX-License-Identifier: Apache-2.0
"""scaled_dot_product_attention written out as the operators the Cortex-M passes lower.

`F.scaled_dot_product_attention` and `nn.MultiheadAttention` capture as one
aten.scaled_dot_product_attention, which the quantizer does not annotate and to_edge
decomposes into float matmuls and a masked softmax on portable kernels. Written as
`softmax(q @ kᵀ * scale) @ v` before quantization, the two matmuls become CMSIS-NN
batch matmuls, the softmax CMSIS-NN's, and the scale folds into a dequantize
(passes/requantization.py). Attention with a mask, causal attention and dropout stay as they
are.
"""

from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node

from .fx_nodes import call

aten = torch.ops.aten
_SDPA = aten.scaled_dot_product_attention.default
# The defaults of the arguments after q, k, v, in schema order.
_PLAIN = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False}


def decompose_attention(graph: GraphModule) -> int:
    """Each plain scaled_dot_product_attention becomes matmul, scale, softmax, matmul.
    Returns how many changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target != _SDPA or not _plain(node):
            continue
        q, k, v = node.args[:3]
        scale = node.kwargs.get("scale") or 1.0 / math.sqrt(q.meta["val"].shape[-1])
        with graph.graph.inserting_before(node):
            keys = call(graph, node, aten.transpose.int, k, -2, -1)
            scores = call(graph, node, aten.matmul.default, q, keys)
            scaled = call(graph, node, aten.mul.Tensor, scores, scale)
            weights = call(graph, node, aten.softmax.int, scaled, -1)
            result = call(graph, node, aten.matmul.default, weights, v)
        node.replace_all_uses_with(result)
        graph.graph.erase_node(node)
        changed += 1
    graph.recompile()
    return changed


def _plain(node: Node) -> bool:
    positional = dict(zip(_PLAIN, node.args[3:], strict=False))
    arguments = {**positional, **node.kwargs}
    if arguments.get("enable_gqa", False):
        return False
    if any(arguments.get(name, default) != default for name, default in _PLAIN.items()):
        return False
    q, k = node.args[0], node.args[1]
    return q.meta["val"].shape[:-2] == k.meta["val"].shape[:-2]
