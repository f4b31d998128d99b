# SPDX-License-Identifier: Apache-2.0
"""Concatenations and slices of int8 tensors in another dim order onto et-zephyr's
kernels, and softmaxes over channels-last channels in that order.

ExecuTorch's portable aten::cat and aten::slice_copy index by the default dim order,
so a channels-last concatenation (a U-Net's skip connection, a fire module's two
expands) or cut (a GLU's halves, a crop, a chunk, a time step) would make dim_orders.py
copy every input to the default order and the output back. The module's et_zephyr::concatenate
(lib/src/kernels/concatenate.cpp, on CMSIS-NN's arm_concatenation_s8_y) and
et_zephyr::slice (slice.cpp) move the bytes in the dim order the tensors share: no
copy. Those in the default order, of float tensors, of tensors in different dim orders
or beyond the kernels' sizes stay on the portable kernels. A softmax along the
innermost dimension of a channels-last input (passes/channel_softmax.py) writes its
output channels-last: et-zephyr's softmax kernel reads and writes contiguous rows.
"""

from __future__ import annotations

import operator
from math import prod

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.tensor import dim_order_from_stride
from torch.export import ExportedProgram
from torch.fx import Node

from ..reference import own_ops  # noqa: F401  (defines et_zephyr::concatenate and ::slice)
from ..reference.dim_orders import with_dim_order

_CAT = exir_ops.edge.aten.cat.default
_SLICE = exir_ops.edge.aten.slice_copy.Tensor
_SPLIT = exir_ops.edge.aten.split_with_sizes_copy.default
_SELECT = exir_ops.edge.aten.select_copy.int
_VIEW = exir_ops.edge.aten.view_copy.default
_CONCATENATE = exir_ops.edge.et_zephyr.concatenate.default
_SLICE_KERNEL = exir_ops.edge.et_zephyr.slice.default
_SOFTMAX = exir_ops.edge.cortex_m.softmax.default
_CHANNEL_SHUFFLE = exir_ops.edge.et_zephyr.channel_shuffle.default
# arm_concatenation_s8_y's sizes are uint16_t.
_LARGEST_JOIN = 0xFFFF


def kernels_in_dim_order(program: ExportedProgram) -> int:
    """Give each int8 concatenation, slice, split and time step in a shared non-default dim
    order to the module's kernels, and keep softmaxes and channel shuffles in their input's
    order. Returns how many it changed."""
    rewrites = {
        _SPLIT: _split,
        _CAT: _concatenate,
        _SLICE: _slice,
        _SELECT: _select,
        _SOFTMAX: _softmax,
        _CHANNEL_SHUFFLE: _in_input_order,
    }
    given = 0
    for node in list(program.graph_module.graph.nodes):
        rewrite = rewrites.get(node.target)
        if rewrite is not None:
            given += rewrite(node)
    program.graph_module.recompile()
    return given


def _concatenate(node: Node) -> bool:
    tensors = list(node.args[0])  # type: ignore[arg-type]
    output = node.meta["val"]
    dim = int(node.args[1]) % output.dim() if len(node.args) > 1 else 0  # type: ignore[arg-type]
    order = _shared_dim_order(tensors)
    if order is None or not _int8(node):
        return False
    place = order.index(dim)
    outer = prod(output.shape[d] for d in order[:place])
    inner = prod(output.shape[d] for d in order[place + 1 :])
    if max(outer, inner, output.shape[dim]) > _LARGEST_JOIN:
        return False
    node.target = _CONCATENATE
    node.args = (tensors, dim)
    node.meta["val"] = with_dim_order(output, order)
    return True


def _slice(node: Node) -> bool:
    source = node.args[0]
    assert isinstance(source, Node)
    order = _shared_dim_order([source])
    if order is None or not _int8(node):
        return False
    size = source.meta["val"].shape
    dim, start, end, step = (list(node.args[1:]) + [0, None, None, 1][len(node.args) - 1 :])[:4]
    dim = int(dim) % len(size)  # type: ignore[call-overload]
    # PyTorch's clamping of the bounds.
    start, end, _ = slice(start, end, int(step)).indices(int(size[dim]))  # type: ignore[call-overload]
    node.target = _SLICE_KERNEL
    node.args = (source, dim, start, max(start, end), int(step))  # type: ignore[call-overload]
    node.meta["val"] = with_dim_order(node.meta["val"], order)
    return True


def _select(node: Node) -> bool:
    """`x[:, :, t]`: a slice of one index, then a view without that dimension where its
    bytes are already in the default order (a TCN's last time step)."""
    source = node.args[0]
    assert isinstance(source, Node)
    order = _shared_dim_order([source])
    if order is None or not _int8(node):
        return False
    shape = list(source.meta["val"].shape)
    dim = int(node.args[1]) % len(shape)  # type: ignore[call-overload]
    index = int(node.args[2]) % shape[dim]  # type: ignore[call-overload]
    shape[dim] = 1
    if [d for d in order if shape[d] != 1] != [d for d in range(len(shape)) if shape[d] != 1]:
        return False
    graph = node.graph
    with graph.inserting_before(node):
        cut = graph.call_function(_SLICE_KERNEL, (source, dim, index, index + 1, 1))
    value = node.meta["val"]
    cut.meta = dict(node.meta)
    cut.meta["val"] = with_dim_order(value.new_empty(shape), order)
    node.target = _VIEW
    node.args = (cut, list(value.shape))
    return True


def _split(node: Node) -> bool:
    """A split (chunk) into slices, one per piece used."""
    source = node.args[0]
    assert isinstance(source, Node)
    order = _shared_dim_order([source])
    pieces = list(node.users)
    if order is None or not all(p.target is operator.getitem for p in pieces):
        return False
    sizes = [int(s) for s in node.args[1]]  # type: ignore[union-attr]
    dim = int(node.args[2] if len(node.args) > 2 else 0) % source.meta["val"].dim()  # type: ignore[call-overload]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    graph = node.graph
    for piece in pieces:
        index = int(piece.args[1])  # type: ignore[call-overload]
        start = starts[index]
        with graph.inserting_before(piece):
            cut = graph.call_function(_SLICE_KERNEL, (source, dim, start, start + sizes[index], 1))
        cut.meta = dict(piece.meta)
        cut.meta["val"] = with_dim_order(piece.meta["val"], order)
        piece.replace_all_uses_with(cut)
        graph.erase_node(piece)
    graph.erase_node(node)
    return True


def _in_input_order(node: Node) -> bool:
    """A kernel that writes its output in its input's dim order (channel_shuffle.cpp):
    the value says so, now that the input's order is final."""
    source = node.args[0]
    assert isinstance(source, Node)
    order = _shared_dim_order([source])
    if order is None:
        return False
    node.meta["val"] = with_dim_order(node.meta["val"], order)
    return True


def _softmax(node: Node) -> bool:
    """A softmax along the innermost dimension of its input's dim order (channels of a
    channels-last image) writes its output in that order (softmax_table.cpp)."""
    source = node.args[0]
    assert isinstance(source, Node)
    order = _shared_dim_order([source])
    value = node.meta["val"]
    if order is None or order[-1] != int(node.args[1]) % value.dim():  # type: ignore[call-overload]
        return False
    node.meta["val"] = with_dim_order(value, order)
    return True


def _int8(node: Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.dtype == torch.int8


def _shared_dim_order(nodes: list[Node]) -> tuple[int, ...] | None:
    """The non-default dim order these int8 tensors' bytes share, if they share one: the
    kernel writes its output in it too. A dimension of size 1 may sit anywhere in a
    tensor's order (its strides tie), so the tensor with the fewest decides."""
    if not all(_int8(node) for node in nodes):
        return None
    values = [node.meta["val"] for node in nodes]
    orders = [tuple(int(d) for d in dim_order_from_stride(v.stride())) for v in values]
    chosen = min(zip(values, orders), key=lambda pair: list(pair[0].shape).count(1))[1]
    for value, order in zip(values, orders):
        shape = value.shape
        if [d for d in order if shape[d] != 1] != [d for d in chosen if shape[d] != 1]:
            return None
    return None if chosen == tuple(range(len(chosen))) else chosen
