# SPDX-License-Identifier: Apache-2.0
"""Convolutions and linear layers must not compute their weights from the model's inputs.

The Cortex-M quantizer quantizes a layer's weights per channel at export and the lowering
reads them as constants; a weight the model computes at run time (a dynamic filter, a
hypernetwork) makes ExecuTorch's lowering fail with "unsupported param type". Refused
here instead, naming the layer and the model's line.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..errors import ExportError
from ..firmware.kernels import source_line

aten = torch.ops.aten
_WEIGHTED = {
    aten.conv1d.default: "conv1d",
    aten.conv1d.padding: "conv1d",
    aten.conv2d.default: "conv2d",
    aten.conv2d.padding: "conv2d",
    aten.conv_transpose1d.default: "conv_transpose1d",
    aten.conv_transpose2d.input: "conv_transpose2d",
    aten.linear.default: "linear",
}


def _computed_from_inputs(node: Node) -> bool:
    """Whether the value depends on the model's inputs (not only on its constants)."""
    seen: set[Node] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if current.op == "placeholder":
            return True
        for source in current.all_input_nodes:
            if source not in seen:
                seen.add(source)
                pending.append(source)
    return False


def check_constant_weights(graph: GraphModule) -> None:
    """Raise ExportError at the first convolution or linear layer whose weight the model
    computes from its inputs."""
    for node in graph.graph.nodes:
        if node.op != "call_function" or node.target not in _WEIGHTED:
            continue
        weight = node.args[1]
        if isinstance(weight, Node) and _computed_from_inputs(weight):
            raise ExportError(
                f"operator aten::{_WEIGHTED[node.target]} (node '{node.name}'"
                f"{source_line(node)}) takes weights the model computes; et-export "
                "quantizes and lowers convolutions and linear layers with constant weights"
            )
