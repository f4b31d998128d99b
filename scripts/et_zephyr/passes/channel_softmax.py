# SPDX-License-Identifier: Apache-2.0
"""A softmax over the channels of a channels-last image, computed in that layout.

`torch.softmax(x, dim=1)` over a detector's class map (FOMO) reads each pixel's channels,
which channels-last lays out contiguously: the rows CMSIS-NN's softmax takes. torch
gives the result the default layout, so the Cortex-M quantizer's check (channels-last
softmax over channels, or the last dimension) refused it and the softmax stayed float.
The node's value here takes its input's layout, the one et-zephyr's softmax kernel
writes (lib/src/kernels/softmax_table.cpp; dim_order_kernels.py keeps it after lowering).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule

aten = torch.ops.aten
_SOFTMAXES = (aten.softmax.int, aten._softmax.default)


def softmax_in_input_layout(graph: GraphModule) -> int:
    """Each softmax along the innermost dimension of a channels-last input gets that
    layout for its output. Returns how many changed."""
    changed = 0
    for node in graph.graph.nodes:
        if node.op != "call_function" or node.target not in _SOFTMAXES:
            continue
        source, value = node.args[0].meta["val"], node.meta["val"]
        dim = int(node.args[1]) % value.dim()
        if value.dim() != 4 or dim != 1 or source.stride() == value.stride():
            continue
        if not source.is_contiguous(memory_format=torch.channels_last):
            continue
        node.meta["val"] = value.new_empty_strided(value.shape, source.stride())
        changed += 1
    return changed
