# SPDX-License-Identifier: Apache-2.0
"""Transpose convolutions with dilation, groups or output padding as plain ones.

ExecuTorch's Cortex-M lowering takes transpose convolutions with none of the three
(CMSIS-NN's arm_transpose_conv_wrapper_s8 has no dilation or groups), and leaves the
others in float. Each has an exact plain form:
- dilation d: the kernel with d - 1 zero rows and columns between its taps;
- groups g: the input's g channel slices, one transpose convolution each, their
  outputs concatenated (et-zephyr's slice and concatenation kernels, no copies);
- output padding op: PyTorch's output is rows and columns p .. p + its size of the
  layer without padding, a slice of each; where op exceeds the padding p, the rows only
  the bias reaches are those of zero input rows appended (a pad of the zero point).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

from .fx_nodes import attribute, call, constant, pair
from .transpose_conv_rows import transpose_conv_arguments

aten = torch.ops.aten


def plain_transpose_convs(graph: GraphModule) -> int:
    """Each transpose convolution with dilation, groups or an output padding becomes plain
    ones, slices and concatenations. Returns how many changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target != aten.conv_transpose2d.input:
            continue
        x, weight, bias, stride, padding, output_padding, groups, dilation = (
            transpose_conv_arguments(node)
        )
        padding, output_padding, dilation = map(pair, (padding, output_padding, dilation))
        if dilation == [1, 1] and groups == 1 and output_padding == [0, 0]:
            continue
        if weight.op != "get_attr" or (bias is not None and bias.op != "get_attr"):
            continue
        kernel = _dilated(attribute(graph, weight), dilation)
        biases = None if bias is None else attribute(graph, bias)
        # Output padding: no padding, then PyTorch's rows and columns.
        unpadded = output_padding != [0, 0]
        pads = [0, 0] if unpadded else padding
        with graph.graph.inserting_before(node):
            # Rows and columns past the padding only the bias reaches: those of zero
            # input rows and columns appended (the zero point, exactly 0).
            stride = pair(stride)
            extra = [-(-max(0, op - p) // s) for op, p, s in zip(output_padding, padding, stride)]
            if any(extra):
                x = call(graph, node, aten.constant_pad_nd.default, x,
                         [0, extra[1], 0, extra[0]], 0.0)  # fmt: skip
            pieces = []
            per_group_in = kernel.shape[0] // groups
            per_group_out = kernel.shape[1]
            for g in range(groups):
                part = x
                if groups > 1:
                    part = call(graph, node, aten.slice.Tensor, x, 1, g * per_group_in,
                                (g + 1) * per_group_in)  # fmt: skip
                taps = kernel[g * per_group_in : (g + 1) * per_group_in]
                group_bias = None
                if biases is not None:
                    own = biases[g * per_group_out : (g + 1) * per_group_out]
                    group_bias = constant(graph, node, f"bias_{g}", own)
                pieces.append(
                    call(
                        graph,
                        node,
                        aten.conv_transpose2d.input,
                        part,
                        constant(graph, node, f"weight_{g}", taps),
                        group_bias,
                        stride,
                        pads,
                        [0, 0],
                        1,
                        [1, 1],
                    )  # fmt: skip
                )
            result = pieces[0] if groups == 1 else call(graph, node, aten.cat.default, pieces, 1)
            if unpadded:
                height, width = node.meta["val"].shape[2:]
                result = call(graph, node, aten.slice.Tensor, result, 2, padding[0],
                              padding[0] + height)  # fmt: skip
                result = call(graph, node, aten.slice.Tensor, result, 3, padding[1],
                              padding[1] + width)  # fmt: skip
        node.replace_all_uses_with(result)
        graph.graph.erase_node(node)
        changed += 1
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return changed


def _dilated(kernel: torch.Tensor, dilation: list[int]) -> torch.Tensor:
    """The kernel with dilation - 1 zeros between its taps in each direction."""
    if dilation == [1, 1]:
        return kernel
    rows, columns = kernel.shape[2:]
    spread = kernel.new_zeros(
        (*kernel.shape[:2], dilation[0] * (rows - 1) + 1, dilation[1] * (columns - 1) + 1)
    )
    spread[:, :, :: dilation[0], :: dilation[1]] = kernel
    return spread
