# SPDX-License-Identifier: Apache-2.0
"""Portable operators see only tensors in the default dim order.

A model that convolves is exported channels-last, and the operators around its
Cortex-M kernels keep that dim order: a concatenation of channels-last tensors is
channels-last. ExecuTorch 1.4's portable kernels index by the default (row-major)
order: `aten::cat` and `aten::slice_copy` copy blocks of getLeadingDims/getTrailingDims
of the logical sizes, so on channels-last tensors they either compute other bytes
than the operator means (cat) or refuse the call (slice_copy, whose output the graph
gives the default dim order: "2 input tensors have different dim orders", 0x12).
Upstream's own fix (pytorch/executorch#21865) makes those kernels refuse non-default
dim orders; it does not make them compute.

The host reference runs ATen, which honours strides, so it computes the operator's
true (eager PyTorch) result. This step makes the device compute it too: each portable
operator that meets a tensor in another dim order gets default-order copies of its
inputs (dim_order_ops::_to_dim_order_copy, which copies by strides), writes a
default-order output, and a copy puts that back in the layout the graph uses
(channels-last, which the Cortex-M kernels require) where the bytes differ.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.tensor import dim_order_from_stride, stride_from_dim_order
from torch.export import ExportedProgram
from torch.fx import Graph, Node
from torch.fx.node import map_arg

_TO_DIM_ORDER_COPY = exir_ops.edge.dim_order_ops._to_dim_order_copy.default
# Namespaces whose kernels take the dim orders they are given: Cortex-M's (channels-last
# by design) and the dim-order conversions themselves.
_LAYOUT_AWARE = ("cortex_m", "dim_order_ops")
# The module's kernels that, like Cortex-M's, take channels-last maps.
_CHANNELS_LAST_OWN = frozenset(
    {
        "et_zephyr::avg_pool2d_clipped",
        "et_zephyr::quantized_conv2d_s16",
        "et_zephyr::quantized_depthwise_conv2d_s16",
        "et_zephyr::avg_pool2d_s16",
        "et_zephyr::max_pool2d_s16",
    }
)
# The module's kernels that take tensors in any dim order they share.
_ANY_DIM_ORDER = frozenset(
    {
        "et_zephyr::concatenate",
        "et_zephyr::slice",
        "et_zephyr::channel_shuffle",
        "et_zephyr::resize_bilinear",
        "et_zephyr::add_s16",
        "et_zephyr::pad_s16",
    }
)
# Portable kernels that read and write all their tensors in one memory order, whichever
# it is (unary elementwise ones: apply_unitensor_elementwise_fn runs over the bytes).
_ANY_SHARED_ORDER_PORTABLE = frozenset({"aten::clamp", "aten::relu", "aten::hardtanh"})
# Portable kernels that index a 4-D channels-last tensor by its dim order too, all their
# tensors in the same one (the resizes: kernels/portable/cpu/util/upsample_util.cpp).
_CHANNELS_LAST_PORTABLE = frozenset({"aten::upsample_nearest2d"})
_CHANNELS_LAST = (0, 2, 3, 1)
Order = tuple[int, ...]


def portable_takes(name: str, orders: Sequence[Sequence[int]]) -> bool:
    """Whether the portable kernel of operator `name` ("aten::clamp") computes what the
    operator means on tensors in these dim orders."""
    distinct = {tuple(order) for order in orders}
    if all(order == tuple(range(len(order))) for order in distinct):
        return True
    if len(distinct) != 1:
        return False
    return name in _ANY_SHARED_ORDER_PORTABLE or (
        name in _CHANNELS_LAST_PORTABLE and distinct == {_CHANNELS_LAST}
    )


def default_dim_order_for_portable(program: ExportedProgram) -> int:
    """Give every portable operator its tensors in the default dim order, converting
    around it where the graph has them in another. Returns how many copies it added."""
    graph = program.graph_module.graph
    # A tensor's default-order copy, made once for all the portable operators reading it.
    default_copies: dict[Node, Node] = {}
    # A copy back to the graph's layout -> the default-order tensor it copies.
    restored: dict[Node, Node] = {}
    added = 0
    for node in list(graph.nodes):
        if not _runs_portable(node):
            continue
        operands = [arg for arg in node.all_input_nodes if dim_order_of(arg) is not None]
        tensors = operands + _outputs(node)
        foreign = [arg for arg in tensors if not _in_default_order(arg, node)]
        if not foreign:
            continue
        layout = dim_order_of(foreign[0])
        assert layout is not None
        for arg in operands:
            order = dim_order_of(arg)
            if order is None or _in_default_order(arg, node) or arg in default_copies:
                continue
            if arg in restored:
                default_copies[arg] = restored[arg]
                continue
            with graph.inserting_before(node):
                default_copies[arg] = _copy(graph, arg, range(len(order)), node)
            added += 1
        node.args = map_arg(node.args, lambda arg: default_copies.get(arg, arg))
        node.kwargs = map_arg(node.kwargs, lambda arg: default_copies.get(arg, arg))
        value = node.meta.get("val")
        if isinstance(value, (list, tuple)):
            node.meta["val"] = type(value)(with_dim_order(v, range(v.dim())) for v in value)
        for output in _outputs(node):
            back = _restore(graph, output, layout)
            if back is not None:
                restored[back] = output
                added += 1
    for back in restored:
        # A copy back that only other portable operators read (they read its source).
        if not back.users:
            graph.erase_node(back)
            added -= 1
    program.graph_module.recompile()
    return added


def _runs_portable(node: Node) -> bool:
    """Whether the node's kernel needs its tensors in the default dim order."""
    name = _op_name(node)
    if name is None or name.partition("::")[0] in _LAYOUT_AWARE:
        return False
    if name in _ANY_DIM_ORDER or name in _CHANNELS_LAST_OWN:
        return False
    tensors = [arg for arg in node.all_input_nodes if dim_order_of(arg) is not None]
    orders = [dim_order_of(tensor) for tensor in [*tensors, *_outputs(node)]]
    return not portable_takes(name, [order for order in orders if order is not None])


def _op_name(node: Node) -> str | None:
    """`namespace::name` of the operator a call_function node calls, if it is one."""
    if node.op != "call_function":
        return None
    target = getattr(node.target, "_op", node.target)
    if not isinstance(target, torch._ops.OpOverload):
        return None
    return target._schema.name


def dim_order_of(node: Node) -> tuple[int, ...] | None:
    """The dim order the program will give this node's tensor (None: not one tensor)."""
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor):
        return None
    return tuple(int(d) for d in dim_order_from_stride(value.stride()))


def _in_default_order(tensor: Node, user: Node) -> bool:
    """Whether the portable operator `user` can take this tensor as it is. A view_copy
    becomes a view of its input's memory (ExecutorchBackendConfig.remove_view_copy), no
    kernel: it needs the input's bytes in the default order, not its dim order's name.
    Not one whose result is a program output (an INT8 output with --io int8): that stays
    a kernel call, and the portable kernel checks the dim orders' names."""
    order = dim_order_of(tensor)
    if order is None or tuple(order) == tuple(range(len(order))):
        return True
    value = tensor.meta["val"]
    is_output = any(consumer.op == "output" for consumer in user.users)
    return _op_name(user) == "aten::view_copy" and not is_output and same_bytes(value.shape, order)


def _outputs(node: Node) -> list[Node]:
    """The nodes holding the operator's output tensors: itself, or its getitems."""
    if isinstance(node.meta.get("val"), torch.Tensor):
        return [node]
    return [user for user in node.users if user.target is operator.getitem]


def _restore(graph: Graph, output: Node, layout: tuple[int, ...]) -> Node | None:
    """Make the output default-order; return a copy of it in `layout` for its users,
    or None where the two orders lay the same bytes out (a dimension of size 1 apart)
    or only the program's outputs use it (their dim order is the program's to state)."""
    value = output.meta["val"]
    output.meta["val"] = with_dim_order(value, range(value.dim()))
    users = [user for user in output.users if user.op != "output"]
    if not users or value.dim() != len(layout) or same_bytes(value.shape, layout):
        return None
    with graph.inserting_after(output):
        back = _copy(graph, output, layout, output)
    for user in users:
        user.replace_input_with(output, back)
    return back


def _copy(graph: Graph, source: Node, order: Sequence[int], origin: Node) -> Node:
    copy = graph.call_function(_TO_DIM_ORDER_COPY, (source,), {"dim_order": list(order)})
    copy.meta = {
        key: origin.meta[key] for key in ("stack_trace", "nn_module_stack") if key in origin.meta
    }
    copy.meta["val"] = with_dim_order(source.meta["val"], order)
    return copy


def with_dim_order(value: torch.Tensor, order: Sequence[int]) -> torch.Tensor:
    shape = list(value.shape)
    return value.new_empty_strided(shape, stride_from_dim_order(shape, list(order)))


def same_bytes(shape: Sequence[int], order: Sequence[int]) -> bool:
    """Whether a tensor of this shape has the same memory in `order` as in the default."""
    return [d for d in order if shape[d] != 1] == [d for d in range(len(shape)) if shape[d] != 1]


def reshaped_order(source: Sequence[int], order: Order, result: Sequence[int]) -> Order | None:
    """The dim order of a reshape's result that reads the source's bytes in `order`:
    any reshape of a tensor whose bytes are row-major, else one that only adds or drops
    dimensions of size 1 (its result then keeps the source's order of the others)."""
    rank = len(result)
    if same_bytes(source, order):
        return tuple(range(rank))
    kept = [axis for axis in range(len(source)) if source[axis] != 1]
    placed = [axis for axis in range(rank) if result[axis] != 1]
    if [source[axis] for axis in kept] != [result[axis] for axis in placed]:
        return None
    to_result = dict(zip(kept, placed))
    ordered = [to_result[axis] for axis in order if source[axis] != 1]
    ones = [axis for axis in range(rank) if result[axis] == 1]
    return _with_ones(ordered, ones)


def _with_ones(ordered: list[int], ones: list[int]) -> Order:
    """Size-1 dimensions placed by their index among the others (any place reads the
    same bytes; this one gives a [N, C, 1, L] image the channels-last order)."""
    result = list(ordered)
    for axis in ones:
        position = next((k for k, other in enumerate(result) if other > axis), len(result))
        result.insert(position, axis)
    return tuple(result)
