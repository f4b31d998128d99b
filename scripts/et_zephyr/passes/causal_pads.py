# SPDX-License-Identifier: Apache-2.0
"""Causal 1-D convolutions that stream (`et-export --stateful`): a model opts in by
padding the time axis on the left only, `F.pad(x, (p, 0))` or `nn.ConstantPad1d((p, 0),
0)` before its Conv1d, the usual causal form (p = dilation * (kernel - 1)).

Fed a hop of frames a run, such a convolution needs the p frames before the hop, not
zeros: each left padding of a [N, C, T] tensor becomes et_zephyr::causal_pad, whose
float form carries its last p frames from call to call while states are carried (the
calibration and the verification feed whole sequences a hop at a time), and which the
lowered program runs as a concatenation of a carried state (passes/carried_state.py).
Padding with zeros from nothing, it is the model's own padding on a stream's first run.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..reference import own_ops  # noqa: F401  (defines et_zephyr::causal_pad)
from .fx_nodes import call

aten = torch.ops.aten
CAUSAL_PAD = torch.ops.et_zephyr.causal_pad.default


def causal_pads(graph: GraphModule) -> int:
    """Each zero left padding of a 3-D tensor's last dimension becomes
    et_zephyr::causal_pad. Returns how many."""
    changed = 0
    for node in list(graph.graph.nodes):
        frames = _left_frames(node)
        if frames is None:
            continue
        with graph.graph.inserting_before(node):
            padded = call(graph, node, CAUSAL_PAD, node.args[0], frames, changed)
        node.replace_all_uses_with(padded)
        graph.graph.erase_node(node)
        changed += 1
    graph.recompile()
    return changed


def _left_frames(node: Node) -> int | None:
    """p where the node pads its 3-D input's last dimension by p zeros on the left only."""
    if node.op != "call_function":
        return None
    if node.target == aten.pad.default:
        mode = node.args[2] if len(node.args) > 2 else node.kwargs.get("mode", "constant")
        value = node.args[3] if len(node.args) > 3 else node.kwargs.get("value")
    elif node.target == aten.constant_pad_nd.default:
        mode = "constant"
        value = node.args[2] if len(node.args) > 2 else node.kwargs.get("value", 0)
    else:
        return None
    x, pads = node.args[0], list(node.args[1])
    if not isinstance(x, Node) or x.meta["val"].dim() != 3 or mode != "constant":
        return None
    if value not in (None, 0, 0.0) or len(pads) != 2 or pads[1] != 0 or pads[0] <= 0:
        return None
    return int(pads[0])
