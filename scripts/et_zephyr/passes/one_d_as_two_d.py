# SPDX-License-Identifier: Apache-2.0
"""The 1-D family as 2-D operators of height 1, channels-last from end to end.

The Cortex-M quantizer and CMSIS-NN know 2-D convolutions and pools on NHWC tensors
only: a Conv1d, MaxPool1d or AvgPool1d stays in float. A [N, C, L] sequence is a
[N, C, 1, L] image, and in channels-last that image's bytes are the NWC sequence
TensorFlow Lite Micro runs its 1-D models on. Each 1-D operator becomes its 2-D form
with a (1, k) window on the image; between two of them the sequence stays an image:
the squeeze back to 3-D is pushed past the operators that do not care about rank
(activations, adds, pads and slices along time, concatenations), so a stack of 1-D
layers runs with no layout copy in between. At the edges, the model's [N, C, L]
input laid out channels-last and a 3-D result an operator outside the family reads
are copies in this graph; layout_views.py serializes them as views (the input is
declared NLC), and flatten_into_linear.py has a linear read the image's bytes.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.fx import GraphModule, Node

from .fx_nodes import attribute, call, constant

aten = torch.ops.aten
_HEIGHT = 2  # the image's unit height dimension
_SQUEEZE = aten.squeeze.dim
# Marks the nodes _as_image adds to make a sequence an image.
_MADE_IMAGE = "et_zephyr_made_image"

# Operators that compute element by element on one tensor (their first argument).
_ELEMENTWISE = {
    aten.relu.default,
    aten.relu_.default,
    aten.relu6.default,
    aten.hardtanh.default,
    aten.hardtanh_.default,
    aten.clamp.default,
    aten.clamp_.default,
    aten.sigmoid.default,
    aten.tanh.default,
    aten.gelu.default,
    aten.silu.default,
    aten.silu_.default,
    aten.hardswish.default,
    aten.hardswish_.default,
    aten.hardsigmoid.default,
    aten.hardsigmoid_.default,
    aten.leaky_relu.default,
    aten.leaky_relu_.default,
    aten.elu.default,
    aten.prelu.default,
    aten.dropout.default,
    aten.mul.Scalar,
    aten.add.Scalar,
}
_PADS = {aten.constant_pad_nd.default, aten.pad.default}
_BINARY = {aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.add_.Tensor}


def one_d_as_two_d(graph: GraphModule) -> int:
    """Rewrite every 1-D convolution, transposed convolution and pool as its 2-D form
    of height 1, then push the squeezes back to 3-D as far down as they go. Returns how
    many 1-D operators changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        rewrite = _REWRITES.get(node.target) if node.op == "call_function" else None
        if rewrite is None or node.args[0].meta["val"].dim() != 3:
            continue
        with graph.graph.inserting_before(node):
            image = rewrite(graph, node, _as_image(graph, node, node.args[0]))
            sequence = call(graph, node, _SQUEEZE, image, _HEIGHT)
        node.replace_all_uses_with(sequence)
        graph.graph.erase_node(node)
        changed += 1
    if changed:
        _sink_squeezes(graph)
        graph.graph.eliminate_dead_code()
    graph.recompile()
    return changed


def _as_image(graph: GraphModule, source: Node, sequence: Node) -> Node:
    """[N, C, L] as a channels-last [N, C, 1, L]: the image a squeeze made it from, or
    the sequence reshaped (a view) and, with more than one channel, laid out
    channels-last (a copy). One channel's bytes are the same in both layouts; its image
    keeps the default dim order, which the Cortex-M kernels take for one channel (a
    channels-last clone of it would be serialized with an order they refuse), and the
    channels-last 2-D kernel makes the layer's output channels-last."""
    if _squeezed_image(sequence) is not None:
        return sequence.args[0]
    batch, channels, length = sequence.meta["val"].shape
    image = call(graph, source, aten.reshape.default, sequence, [batch, channels, 1, length])
    image.meta[_MADE_IMAGE] = True
    if channels != 1:
        image = call(graph, source, aten.clone.default, image, memory_format=torch.channels_last)
        image.meta[_MADE_IMAGE] = True
    return image


def _weight_image(graph: GraphModule, node: Node, weight: Node) -> Node:
    """A 1-D kernel [O, I, K] as the 2-D kernel [O, I, 1, K], a channels-last constant of
    its own (as model.to(channels_last) makes a Conv2d's: the convolution's output
    follows its layout)."""
    if weight.op != "get_attr":
        return call(graph, node, aten.unsqueeze.default, weight, _HEIGHT)
    value = attribute(graph, weight)
    return constant(graph, node, "weight_2d", value.unsqueeze(_HEIGHT), torch.channels_last)


def _one(values: object, default: int) -> int:
    """A 1-D operator's stride, padding or dilation: a one-element list or an int."""
    if values is None or values == []:
        return default
    return int(values[0]) if isinstance(values, (list, tuple)) else int(values)


def _args(node: Node, defaults: list) -> list:
    return list(node.args) + defaults[len(node.args) :]


def _conv1d(graph: GraphModule, node: Node, image: Node) -> Node:
    _, weight, bias, stride, padding, dilation, groups = _args(
        node, [None, None, None, [1], [0], [1], 1]
    )
    return call(
        graph,
        node,
        aten.conv2d.default,
        image,
        _weight_image(graph, node, weight),
        bias,
        [1, _one(stride, 1)],
        [0, _one(padding, 0)],
        [1, _one(dilation, 1)],
        groups,
    )


def _conv_transpose1d(graph: GraphModule, node: Node, image: Node) -> Node:
    _, weight, bias, stride, padding, output_padding, groups, dilation = _args(
        node, [None, None, None, [1], [0], [0], 1, [1]]
    )
    return call(
        graph,
        node,
        aten.conv_transpose2d.input,
        image,
        _weight_image(graph, node, weight),
        bias,
        [1, _one(stride, 1)],
        [0, _one(padding, 0)],
        [0, _one(output_padding, 0)],
        groups,
        [1, _one(dilation, 1)],
    )


def _max_pool1d(graph: GraphModule, node: Node, image: Node) -> Node:
    _, kernel, stride, padding, dilation, ceil_mode = _args(node, [None, None, [], [0], [1], False])
    kernel = _one(kernel, 1)
    return call(
        graph,
        node,
        aten.max_pool2d.default,
        image,
        [1, kernel],
        [1, _one(stride, kernel)],
        [0, _one(padding, 0)],
        [1, _one(dilation, 1)],
        ceil_mode,
    )


def _avg_pool1d(graph: GraphModule, node: Node, image: Node) -> Node:
    _, kernel, stride, padding, ceil_mode, count_include_pad = _args(
        node, [None, None, [], [0], False, True]
    )
    kernel = _one(kernel, 1)
    return call(
        graph,
        node,
        aten.avg_pool2d.default,
        image,
        [1, kernel],
        [1, _one(stride, kernel)],
        [0, _one(padding, 0)],
        ceil_mode,
        count_include_pad,
    )


def _adaptive_avg_pool1d(graph: GraphModule, node: Node, image: Node) -> Node:
    return call(graph, node, aten.adaptive_avg_pool2d.default, image, [1, _one(node.args[1], 1)])


_REWRITES: dict[object, Callable[[GraphModule, Node, Node], Node]] = {
    aten.conv1d.default: _conv1d,
    aten.conv_transpose1d.default: _conv_transpose1d,
    aten.max_pool1d.default: _max_pool1d,
    aten.avg_pool1d.default: _avg_pool1d,
    aten.adaptive_avg_pool1d.default: _adaptive_avg_pool1d,
}


def _sink_squeezes(graph: GraphModule) -> None:
    """Move each squeeze(image, 2) below the operators that read only it (or other
    squeezed images) and mean the same on the image, until none moves; the squeezes
    left (before an operator outside the family, or the output) become one copy to the
    [N, C, L] order (none where C or L is 1) and a reshape, a view."""
    moved = True
    while moved:
        moved = False
        for node in list(graph.graph.nodes):
            if _squeezed_image(node) is None:
                continue
            for user in list(node.users):
                moved |= _lift(graph, user)
    for node in list(graph.graph.nodes):
        image = _squeezed_image(node)
        if image is None:
            continue
        with graph.graph.inserting_before(node):
            batch, channels, length = node.meta["val"].shape
            if channels != 1 and length != 1:
                # The one copy back to [N, C, L] order; the reshape is then a view.
                image = call(
                    graph, node, aten.clone.default, image, memory_format=torch.contiguous_format
                )
            sequence = call(graph, node, aten.reshape.default, image, [batch, channels, length])
        node.replace_all_uses_with(sequence)
        graph.graph.erase_node(node)


def _squeezed_image(value: object) -> Node | None:
    if isinstance(value, Node) and value.target == _SQUEEZE and value.args[1] == _HEIGHT:
        return value.args[0]
    return None


def _time_dim(dim: int) -> int | None:
    """A [N, C, L] dimension's index on the [N, C, 1, L] image (None: the batch)."""
    dim = dim % 3
    return {1: 1, 2: 3}.get(dim)


def _lift(graph: GraphModule, user: Node) -> bool:
    """Compute `user` on the image and squeeze its result, where it means the same.
    Returns whether it did."""
    if user.op != "call_function":
        return False
    if user.meta.get(_MADE_IMAGE):
        return _cancel(user)
    if user.meta["val"].dim() != 3:
        return _lift_reduction(graph, user)
    target, args = user.target, list(user.args)
    new_args: list | None = None
    if target in _ELEMENTWISE and _squeezed_image(args[0]) is not None:
        new_args = [_squeezed_image(args[0]), *args[1:]]
    elif target in _BINARY and all(_squeezed_image(a) is not None for a in args[:2]):
        new_args = [_squeezed_image(args[0]), _squeezed_image(args[1]), *args[2:]]
    elif target in _PADS and len(args[1]) == 2 and _constant_mode(user):
        # Padding the last dimension: time, on the sequence and on the image alike.
        new_args = [_squeezed_image(args[0]), *args[1:]]
    elif target == aten.slice.Tensor and len(args) > 1:
        dim = _time_dim(args[1])
        if dim is not None:
            new_args = [_squeezed_image(args[0]), dim, *args[2:]]
    elif target == aten.cat.default:
        images = [_squeezed_image(a) for a in args[0]]
        dim = _time_dim(args[1] if len(args) > 1 else 0)
        if all(i is not None for i in images) and dim is not None:
            new_args = [images, dim]
    if new_args is None or new_args[0] is None:
        return False
    with graph.graph.inserting_before(user):
        image = call(graph, user, target, *new_args, **user.kwargs)
        sequence = call(graph, user, _SQUEEZE, image, _HEIGHT)
    user.replace_all_uses_with(sequence)
    graph.graph.erase_node(user)
    return True


def _constant_mode(pad: Node) -> bool:
    """constant_pad_nd, or F.pad's aten.pad with mode "constant"."""
    if pad.target != aten.pad.default:
        return True
    mode = pad.args[2] if len(pad.args) > 2 else pad.kwargs.get("mode", "constant")
    return mode == "constant"


def _cancel(made: Node) -> bool:
    """The image _as_image made again from a squeezed image: that image itself."""
    image = _squeezed_image(made.args[0])
    assert image is not None
    graph = made.graph
    for user in list(made.users):
        if user.meta.get(_MADE_IMAGE):
            user.replace_all_uses_with(image)
            graph.erase_node(user)
    made.replace_all_uses_with(image)
    graph.erase_node(made)
    return True


def _lift_reduction(graph: GraphModule, user: Node) -> bool:
    """A mean over time (`x.mean(-1)`, keepdim or not) as the image's global average,
    which the pooling path lowers, and one time step (`x[:, :, -1]`) as the image's
    column; reshaped to the result's shape (a 1x1 image's, or a column's, bytes are the
    same in every layout)."""
    image = _squeezed_image(user.args[0]) if user.op == "call_function" else None
    if image is None:
        return False
    if user.target == aten.mean.dim and len(user.args[1]) == 1:
        if _time_dim(user.args[1][0]) != 3:
            return False
        reduce, arguments = aten.adaptive_avg_pool2d.default, ([1, 1],)
    elif user.target == aten.select.int and _time_dim(user.args[1]) == 3:
        reduce, arguments = aten.select.int, (3, user.args[2])
    else:
        return False
    with graph.graph.inserting_before(user):
        reduced = call(graph, user, reduce, image, *arguments)
        result = call(graph, user, aten.reshape.default, reduced, list(user.meta["val"].shape))
    user.replace_all_uses_with(result)
    graph.graph.erase_node(user)
    return True
