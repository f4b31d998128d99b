# SPDX-License-Identifier: Apache-2.0
"""ShuffleNet's channel shuffle as one operator, et-zephyr's kernel.

`x.view(n, g, c // g, h, w).transpose(1, 2).reshape(n, c, h, w)` (and
`nn.ChannelShuffle`) interleaves the channels of g groups. On a channels-last image
the 5-D view and the transpose are layout copies on portable kernels, three an
inference; as et_zephyr::channel_shuffle (lib/src/kernels/channel_shuffle.cpp) each
pixel's channels are gathered in place of one copy, and the quantizer gives the output
the input's parameters (passes/quantizer.py).
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..reference import own_ops  # noqa: F401  (defines et_zephyr::channel_shuffle)
from .fx_nodes import call

aten = torch.ops.aten
_RESHAPES = (aten.view.default, aten.reshape.default, aten._unsafe_view.default)
_SWAPS = (aten.transpose.int, aten.permute.default)


def channel_shuffles(graph: GraphModule) -> int:
    """Each channel shuffle becomes et_zephyr::channel_shuffle. Returns how many."""
    changed = 0
    for node in list(graph.graph.nodes):
        match = _shuffle(node)
        if match is None:
            continue
        source, groups = match
        with graph.graph.inserting_before(node):
            shuffled = call(
                graph, node, torch.ops.et_zephyr.channel_shuffle.default, source, groups
            )
        node.replace_all_uses_with(shuffled)
        changed += 1
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return changed


def _shuffle(node: Node) -> tuple[Node, int] | None:
    """(input, groups) where the node ends a channel shuffle of a 4-D input."""
    if node.op != "call_function":
        return None
    if node.target in (aten.channel_shuffle.default, aten.native_channel_shuffle.default):
        source = node.args[0]
        return (source, int(node.args[1])) if _image(source) else None  # type: ignore[arg-type]
    if node.target not in _RESHAPES:
        return None
    swap = node.args[0]
    if not isinstance(swap, Node) or swap.op != "call_function" or swap.target not in _SWAPS:
        return None
    if not _swaps_groups(swap):
        return None
    split = swap.args[0]
    if not isinstance(split, Node) or split.target not in _RESHAPES:
        return None
    source = split.args[0]
    if not isinstance(source, Node) or not _image(source):
        return None
    n, c, h, w = source.meta["val"].shape
    grouped = tuple(split.meta["val"].shape)
    if len(grouped) != 5 or grouped[0] != n or grouped[3:] != (h, w):
        return None
    if grouped[1] * grouped[2] != c or tuple(node.meta["val"].shape) != (n, c, h, w):
        return None
    return source, int(grouped[1])


def _swaps_groups(swap: Node) -> bool:
    """transpose(1, 2) or permute(0, 2, 1, 3, 4) of a 5-D tensor."""
    if swap.target == aten.transpose.int:
        return sorted(int(d) % 5 for d in swap.args[1:3]) == [1, 2]  # type: ignore[call-overload]
    return [int(d) % 5 for d in swap.args[1]] == [0, 2, 1, 3, 4]  # type: ignore[union-attr]


def _image(node: object) -> bool:
    return (
        isinstance(node, Node)
        and isinstance(node.meta.get("val"), torch.Tensor)
        and (node.meta["val"].dim() == 4)
    )
