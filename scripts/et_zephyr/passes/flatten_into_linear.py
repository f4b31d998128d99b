# SPDX-License-Identifier: Apache-2.0
"""A flatten of a channels-last map into linears reads the map's bytes as they are.

PyTorch flattens a [N, C, H, W] map channel by channel, but the map's bytes are
channels-last (pixel by pixel): flattening them for a classifier's linear is a
transpose, a layout copy of the whole map on the device. The linear does not care in
which order it sums: with its weight's columns reordered to (h, w, c) it takes the map
flattened pixel by pixel, the same integer products and sums. The flatten then reads a
permute of the map to [N, H, W, C], whose bytes are the map's own (planning/layout_views.py
serializes it as a view). TensorFlow Lite Micro's models flatten NHWC maps the same way.
The same holds for a [N, C, L] sequence of the 1-D family, whose bytes are NLC.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from ..reference.dim_orders import Order, dim_order_of, reshaped_order, same_bytes
from .fx_nodes import attribute, call, constant

aten = torch.ops.aten
_RESHAPES = {aten.view.default, aten.reshape.default}
_FLATTENS = {aten.flatten.using_ints, *_RESHAPES}
_LINEAR = aten.linear.default


def flatten_into_linear(graph: GraphModule) -> int:
    """Reorder the weights of linears that read a flattened channels-last map, and
    flatten the map pixel by pixel. Returns how many flattens changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        source = _channels_last_source(node)
        if source is None or not _only_linears_read(graph, node):
            continue
        value = source.meta["val"]
        pixels_then_channels = [0, *range(2, value.dim()), 1]
        with graph.graph.inserting_before(node):
            node.replace_input_with(
                source, call(graph, node, aten.permute.default, source, pixels_then_channels)
            )
        for linear in list(node.users):
            _reorder_columns(graph, linear, tuple(value.shape[1:]))
        changed += 1
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return changed


def _channels_last_source(node: Node) -> Node | None:
    """The map a flatten to [N, features] reads, if it is laid out channels-last (a
    3-D sequence NLC) with bytes unlike the default order's."""
    if node.op != "call_function" or node.target not in _FLATTENS:
        return None
    source = node.args[0]
    if not isinstance(source, Node) or not isinstance(source.meta.get("val"), torch.Tensor):
        return None
    value = source.meta["val"]
    result = node.meta.get("val")
    if value.dim() < 3 or not isinstance(result, torch.Tensor) or result.dim() != 2:
        return None
    if result.shape[0] != value.shape[0]:
        return None
    order = _byte_order(source)
    if order != (0, *range(2, value.dim()), 1) or same_bytes(value.shape, order):
        return None
    return source


def _byte_order(node: Node) -> Order | None:
    """The dim order of a value's bytes on the device: its own, or for a reshape of a
    default-order copy of a map (one_d_as_two_d's way from an image back to [N, C, L])
    the map's, as layout_views.py makes that copy and reshape views of the map."""
    copy = node.args[0] if node.target in _RESHAPES else None
    if not isinstance(copy, Node) or copy.target != aten.clone.default or len(copy.users) != 1:
        return dim_order_of(node)
    image = copy.args[0]
    order = dim_order_of(image) if isinstance(image, Node) else None
    if order is None:
        return dim_order_of(node)
    return reshaped_order(image.meta["val"].shape, order, node.meta["val"].shape)


def _only_linears_read(graph: GraphModule, flatten: Node) -> bool:
    """Whether every reader is a linear over the flattened features whose weight is a
    constant no other node reads."""
    for user in flatten.users:
        if user.target != _LINEAR or user.args[0] is not flatten:
            return False
        weight = user.args[1]
        if not isinstance(weight, Node) or weight.op != "get_attr" or len(weight.users) != 1:
            return False
    return bool(flatten.users)


def _reorder_columns(graph: GraphModule, linear: Node, map_shape: tuple[int, ...]) -> None:
    """The linear's weight with its columns in (pixels, channel) order."""
    weight = linear.args[1]
    assert isinstance(weight, Node)
    value = attribute(graph, weight)
    outputs = value.shape[0]
    channels_last = [0, *range(2, len(map_shape) + 1), 1]
    reordered = value.reshape(outputs, *map_shape).permute(channels_last).reshape(outputs, -1)
    with graph.graph.inserting_before(linear):
        linear.replace_input_with(weight, constant(graph, linear, "weight_pixels_first", reordered))
