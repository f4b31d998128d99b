# SPDX-License-Identifier: Apache-2.0
"""Transpose convolutions CMSIS-NN's direct kernel gets wrong, as ones it gets right and
a crop of rows.

arm_transpose_conv_wrapper_s8 runs a reverse convolution when the stride is at most 2
and the input has more than 16 channels, and otherwise arm_transpose_conv_s8, which
scatters each input row into a ring of int32 rows and writes `stride` output rows per
input row. Two cases go wrong there (checked against CMSIS-NN's C in
tests/python/test_reference_cmsis_nn.py):
- where padding cuts kernel rows off the top, it skips them but keeps writing at the
  ring's current row, so the rows land one place off unless the padding is a multiple
  of the stride (padding 1 at stride 2, the usual upsampling, gives wrong rows);
- where the kernel is shorter than the stride (a 1x1 kernel at stride 2), it writes
  `stride` rows for the last input row too: past the end of the output.
Such a layer becomes the same transpose convolution with no top or bottom padding and
its kernel given zero rows at the bottom up to the stride (they add nothing), then the
rows PyTorch keeps (a slice of the height): the same values, computed where the kernel
is right. Padding of the width is exact in both kernels and stays.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.fx import GraphModule, Node

from ..reference.convolution import direct_kernel_misplaces_rows
from .fx_nodes import attribute, call, constant, pair

aten = torch.ops.aten
_ACTIVATIONS = {
    aten.relu.default,
    aten.relu_.default,
    aten.hardtanh.default,
    aten.hardtanh_.default,
    aten.clamp.default,
    aten.clamp_.default,
}


def crop_transpose_conv_rows(graph: GraphModule) -> int:
    """Each transpose convolution the direct kernel would get wrong becomes an unpadded
    one, at least a stride tall, and a crop of its rows. Returns how many changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target != aten.conv_transpose2d.input:
            continue
        x, weight, bias, stride, padding, output_padding, groups, dilation = (
            transpose_conv_arguments(node)
        )
        stride, padding = pair(stride), pair(padding)
        if any(pair(output_padding)) or groups != 1 or weight.op != "get_attr":
            continue
        channels, _, kernel_height, _ = weight.meta["val"].shape
        if not direct_kernel_misplaces_rows(channels, stride, padding[0], kernel_height):
            continue
        height = node.meta["val"].shape[2]
        with graph.graph.inserting_before(node):
            value = attribute(graph, weight)
            taller = F.pad(value, (0, 0, 0, max(0, stride[0] - kernel_height)))
            full = call(
                graph,
                node,
                aten.conv_transpose2d.input,
                x,
                constant(graph, node, "weight_rows", taller),
                bias,
                stride,
                [0, padding[1]],
                [0, 0],
                groups,
                pair(dilation),
            )
            # An activation right after the layer goes before the crop, where the
            # quantizer fuses it into the convolution (it is elementwise: the same rows).
            (activation,) = node.users if len(node.users) == 1 else (None,)
            if activation is not None and activation.target in _ACTIVATIONS:
                full = call(graph, activation, activation.target, full, *activation.args[1:])
                replaced = [activation, node]
            else:
                replaced = [node]
            rows = call(graph, node, aten.slice.Tensor, full, 2, padding[0], padding[0] + height)
        replaced[0].replace_all_uses_with(rows)
        for old in replaced:
            graph.graph.erase_node(old)
        changed += 1
    graph.recompile()
    return changed


def transpose_conv_arguments(node: Node) -> list[object]:
    """aten.conv_transpose2d.input's arguments, the omitted ones at their defaults: input,
    weight, bias, stride, padding, output_padding, groups, dilation."""
    defaults = [None, None, None, [1, 1], [0, 0], [0, 0], 1, [1, 1]]
    return list(node.args) + defaults[len(node.args) :]
