# SPDX-License-Identifier: Apache-2.0
"""`padding="same"` and `padding="valid"` convolutions as convolutions with numbers.

PyTorch captures a string padding as aten.conv1d.padding / conv2d.padding, which the
Cortex-M quantizer does not match: the convolution stays in float. The same
convolution with its padding written as numbers quantizes and lowers to CMSIS-NN.
"same" pads dilation * (kernel - 1) in all along each dimension; PyTorch puts the
odd one of an even total after the data (at the bottom or right), and so does this
pass: with a constant_pad_nd of that one row or column before the convolution (a
cortex_m::pad of the zero point on the device), the rest symmetric in the convolution.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from .fx_nodes import call

aten = torch.ops.aten
_STRING_PADDED = {
    aten.conv1d.padding: aten.conv1d.default,
    aten.conv2d.padding: aten.conv2d.default,
}


def explicit_padding(graph: GraphModule) -> int:
    """Each convolution with a string padding gets its padding as numbers. Returns how
    many changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target not in _STRING_PADDED:
            continue
        x, weight, bias, stride, padding, dilation, groups = _arguments(node)
        kernel = weight.meta["val"].shape[2:]
        spatial = len(kernel)
        dilation = _per_dimension(dilation, spatial)
        if padding == "valid":
            before, after = [0] * spatial, [0] * spatial
        else:
            totals = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
            before = [total // 2 for total in totals]
            after = [total - b for total, b in zip(totals, before, strict=True)]
        with graph.graph.inserting_before(node):
            extra = [a - b for a, b in zip(after, before, strict=True)]
            if any(extra):
                # constant_pad_nd lists (before, after) pairs from the last dimension back.
                pads = [v for e in reversed(extra) for v in (0, e)]
                x = call(graph, node, aten.constant_pad_nd.default, x, pads, 0.0)
            convolution = call(
                graph,
                node,
                _STRING_PADDED[node.target],
                x,
                weight,
                bias,
                _per_dimension(stride, spatial),
                before,
                dilation,
                groups,
            )
        node.replace_all_uses_with(convolution)
        graph.graph.erase_node(node)
        changed += 1
    graph.recompile()
    return changed


def _arguments(node: Node) -> list:
    """conv*.padding's arguments with their defaults: input, weight, bias, stride,
    padding, dilation, groups."""
    defaults = [None, None, None, [1], "valid", [1], 1]
    given = list(node.args) + defaults[len(node.args) :]
    names = ["input", "weight", "bias", "stride", "padding", "dilation", "groups"]
    return [node.kwargs.get(name, value) for name, value in zip(names, given, strict=True)]


def _per_dimension(values: object, spatial: int) -> list[int]:
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    return values * spatial if len(values) == 1 else values
