# SPDX-License-Identifier: Apache-2.0
"""Layout copies that move no byte become views of the memory they copy.

A sequence model changes rank and dimension order at its edges: a [N, C, L] input
becomes the channels-last [N, C, 1, L] image the 2-D kernels take, a conformer's
[N, T, C] tensor is transposed to [N, C, T] for its Conv1d and back. Each step is a
dim-order copy, a transpose or a reshape, and ExecuTorch copies at every one. Yet a
channels-last [N, C, 1, T] image has the bytes of the row-major [N, T, C] tensor: in a
chain of such steps the first tensor's bytes are the last one's, when each step keeps
its input's memory and states the dim order that reads it (a transpose of a
row-major [N, T, C] is a [N, C, T] in dim order (0, 2, 1)). ExecuTorch's view
(memory.view) shares its base's memory but states the default dim order; this module
gives it the one that reads the shared bytes.

It works in two halves. `plan_layout_views` finds, on the functional program the host
reference runs, each chain of layout steps around a dim-order copy whose end can read
its start's bytes, and records on every node of it the dim order that does
(meta[LAYOUT]). A chain may start at a program input (through its quantize): there the
input is declared in the dim order that needs no copy (a [N, C, L] sequence in
(0, 2, 1): NLC, the interleaved samples a sensor delivers). It may end at a program
output (through its dequantize), which is then declared in the order of its bytes.
The host reference is unchanged: every step still computes its logical result.
At serialization (`as_view_copies`, then `LayoutViewsPlanning`) the recorded steps
become ExecuTorch views, and after ExecuTorch's spec propagation their specs, and those
of the input, quantize, dequantize and output they reach, get the recorded dim orders.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.passes.memory_planning_pass import MemoryPlanningPass
from executorch.exir.tensor import dim_order_from_stride, stride_from_dim_order
from torch._guards import detect_fake_mode
from torch.export import ExportedProgram
from torch.fx import GraphModule, Interpreter, Node

from ..reference.dim_orders import Order, dim_order_of, reshaped_order

# The dim order a node's tensor is serialized with (a tuple of ints).
LAYOUT = "et_zephyr_layout"
# Marks the layout steps that become views at serialization.
_AS_VIEW = "et_zephyr_as_view"

_VIEW = exir_ops.edge.aten.view_copy.default
_RESHAPES = frozenset(
    {
        exir_ops.edge.aten.view_copy.default,
        exir_ops.edge.aten.squeeze_copy.dims,
        exir_ops.edge.aten.squeeze_copy.dim,
        exir_ops.edge.aten.squeeze_copy.default,
        exir_ops.edge.aten.unsqueeze_copy.default,
    }
)
_PERMUTES = frozenset(
    {exir_ops.edge.aten.permute_copy.default, exir_ops.edge.cortex_m.transpose.default}
)
_DIM_ORDER_COPIES = frozenset(
    {
        exir_ops.edge.dim_order_ops._clone_dim_order.default,
        exir_ops.edge.dim_order_ops._to_dim_order_copy.default,
    }
)
_QUANTIZE = exir_ops.edge.cortex_m.quantize_per_tensor.default
_DEQUANTIZE = exir_ops.edge.cortex_m.dequantize_per_tensor.default


def plan_layout_views(program: ExportedProgram) -> int:
    """Record the chains of layout steps that can be views (see the module's text).
    Returns how many dim-order copies they remove."""
    graph = program.graph_module.graph
    inputs = {node for node in graph.nodes if node.op == "placeholder"}
    user_inputs = {node for node in inputs if node.name in set(program.graph_signature.user_inputs)}
    orders = _rederived_orders(program)
    if orders is None:
        return 0
    removed = 0
    for node in list(graph.nodes):
        seeds = node.target in _DIM_ORDER_COPIES or node.target in _PERMUTES
        if not seeds or _AS_VIEW in node.meta or not _is_step(node):
            continue
        steps, at = _steps_around(node)
        found = _longest_view_chain(steps, at, user_inputs, orders)
        if found is None:
            continue
        chain, (start_order, chain_orders, end_free) = found
        start = chain[0].args[0]
        assert isinstance(start, Node)
        for step, order in zip(chain, chain_orders):
            step.meta[LAYOUT] = order
            step.meta[_AS_VIEW] = True
        _declare_start(start, start_order, orders)
        if end_free:
            _declare_end(chain[-1], chain_orders[-1])
        removed += sum(step.target in _DIM_ORDER_COPIES for step in chain)
    return removed


def input_dim_orders(program: ExportedProgram) -> list[Order]:
    """The dim order each user input will be serialized with: the device's memory order
    of the data the application (or the firmware's test-input generator) writes."""
    names = set(program.graph_signature.user_inputs)
    placeholders = [n for n in program.graph_module.graph.nodes if n.op == "placeholder"]
    orders = []
    for node in placeholders:
        if node.name in names:
            order = _serialized_order(node, {})
            assert order is not None
            orders.append(order)
    return orders


def as_view_copies(program: ExportedProgram) -> None:
    """On the program to serialize: every recorded layout step becomes a view_copy to
    its output shape, which ExecuTorch turns into a view of the chain's start."""
    for node in program.graph_module.graph.nodes:
        if node.meta.get(_AS_VIEW):
            node.target = _VIEW
            node.args = (node.args[0], list(node.meta["val"].shape))
            node.kwargs = {}
    program.graph_module.recompile()


class LayoutViewsPlanning(MemoryPlanningPass):
    """ExecuTorch's memory planning, after giving the specs the recorded dim orders:
    views and the alloc nodes sharing their op's spec take them from here on."""

    def run(self, graph_module: GraphModule, graph_signature: object = None) -> object:
        for module in graph_module.modules():
            if not isinstance(module, GraphModule):
                continue
            for node in module.graph.nodes:
                order = node.meta.get(LAYOUT)
                spec = node.meta.get("spec")
                if order is None or spec is None:
                    continue
                spec.dim_order = tuple(order)
                spec.stride = tuple(stride_from_dim_order(list(spec.shape), list(order)))
        return super().run(graph_module, graph_signature)  # type: ignore[arg-type]


def _stays_a_kernel(node: Node) -> bool:
    """Whether a step, or a view_copy reading one, has a program output as its result:
    it then stays a kernel, and ExecuTorch's NormalizeViewCopyBasePass has such a
    view_copy read the chain's start instead of its end, in the start's dim order."""
    return _is_step(node) and any(user.op == "output" for user in node.users)


def _serialized_order(node: Node, orders: dict[Node, Order]) -> Order | None:
    """The dim order the node's tensor will be serialized with: another chain's, or a
    view_copy's (a view in the default dim order, whatever its value says), or the one
    its operator gives it (`orders`), or its value's."""
    if LAYOUT in node.meta:
        return tuple(node.meta[LAYOUT])
    if node.target == _VIEW:
        return tuple(range(node.meta["val"].dim()))
    return orders.get(node, dim_order_of(node))


def _rederived_orders(program: ExportedProgram) -> dict[Node, Order] | None:
    """Each node's dim order as ExecuTorch's serialization derives it again: its
    operator's fake implementation run on its inputs. Passes that set a value by hand
    may have recorded another (an int8 product of channels-last slices recorded in the
    default order is written channels-last). None where the graph cannot be run on fake
    tensors: no view is planned then, the copies stay."""
    placeholders = [n for n in program.graph_module.graph.nodes if n.op == "placeholder"]
    values = [n.meta["val"] for n in placeholders]
    mode = detect_fake_mode(values)
    orders: dict[Node, Order] = {}

    class _Orders(Interpreter):
        def run_node(self, node: Node) -> object:
            result = super().run_node(node)
            if isinstance(result, torch.Tensor):
                orders[node] = tuple(int(d) for d in dim_order_from_stride(result.stride()))
            return result

    if mode is None:
        return None
    allowed = mode.allow_non_fake_inputs
    mode.allow_non_fake_inputs = True  # constants read by get_attr are real tensors
    try:
        with mode:
            _Orders(program.graph_module).run(*values)
    except Exception:  # noqa: BLE001 (an operator without a fake kernel: plan no view)
        return None
    finally:
        mode.allow_non_fake_inputs = allowed
    return orders


def _keeps_dtype(node: Node) -> bool:
    dtype = node.kwargs.get("dtype")
    return dtype is None or dtype == node.args[0].meta["val"].dtype  # type: ignore[union-attr]


def _is_step(node: object) -> bool:
    if not isinstance(node, Node) or node.op != "call_function":
        return False
    if node.target in _DIM_ORDER_COPIES:
        return _keeps_dtype(node)
    return node.target in _RESHAPES or node.target in _PERMUTES


def _steps_around(copy: Node) -> tuple[list[Node], int]:
    """The layout steps before and after a dim-order copy that only feed each other,
    and the copy's place among them."""
    steps = [copy]
    source = copy.args[0]
    while _is_step(source) and len(source.users) == 1:  # type: ignore[union-attr]
        steps.insert(0, source)  # type: ignore[arg-type]
        source = source.args[0]  # type: ignore[union-attr]
    at = len(steps) - 1
    while len(steps[-1].users) == 1:
        (user,) = steps[-1].users
        if not _is_step(user):
            break
        steps.append(user)
    return steps, at


def _longest_view_chain(
    steps: list[Node], at: int, user_inputs: set[Node], orders: dict[Node, Order]
) -> tuple[list[Node], tuple[Order, list[Order], bool]] | None:
    """The longest run of the steps through the one at `at` that can be views (a
    transpose that truly moves bytes stays; the no-op copy after it goes), and of no
    other chain's steps."""
    runs = [(first, last) for first in range(at + 1) for last in range(at, len(steps))]
    for first, last in sorted(runs, key=lambda run: run[0] - run[1]):
        chain = steps[first : last + 1]
        if any(_AS_VIEW in step.meta for step in chain):
            continue
        found = _orders_for(chain, chain[0].args[0], user_inputs, orders)  # type: ignore[arg-type]
        if found is not None:
            return chain, found
    return None


def _orders_for(
    chain: list[Node], start: Node, user_inputs: set[Node], serialized: dict[Node, Order]
) -> tuple[Order, list[Order], bool] | None:
    """The start's dim order and each step's that read the start's bytes, and whether
    the end's order is the program's to state; None where no orders do."""
    start_order = _serialized_order(start, serialized)
    end = chain[-1]
    end_order = serialized.get(end, dim_order_of(end))
    if start_order is None or end_order is None:
        return None
    end_free = _ends_at_output(end)
    if any(_stays_a_kernel(node) for step in chain for node in [step, *step.users]):
        return None
    candidates = [start_order]
    if _program_input(start, user_inputs) is not None:
        every = itertools.permutations(range(len(start_order)))
        candidates += [order for order in every if order != start_order]
    for candidate in candidates:
        orders = _propagate(chain, candidate)
        if orders is None:
            continue
        last_shape = end.meta["val"].shape
        if end_free:
            return candidate, orders, True
        if _same_layout(last_shape, orders[-1], end_order):
            return candidate, orders[:-1] + [end_order], False
    return None


def _propagate(chain: list[Node], order: Order) -> list[Order] | None:
    """Each step's dim order that keeps its input's bytes, from the start's order."""
    orders = []
    for step in chain:
        source = step.args[0].meta["val"].shape  # type: ignore[union-attr]
        result = step.meta["val"].shape
        if step.target in _PERMUTES:
            inverse = {axis: k for k, axis in enumerate(_permutation(step))}
            order = tuple(inverse[axis] for axis in order)
        elif step.target in _RESHAPES:
            reshaped = reshaped_order(source, order, result)
            if reshaped is None:
                return None
            order = reshaped
        orders.append(order)
    return orders


def _permutation(step: Node) -> list[int]:
    rank = len(step.meta["val"].shape)
    return [int(axis) % rank for axis in step.args[1]]  # type: ignore[union-attr]


def _same_layout(shape: Sequence[int], first: Order, second: Order) -> bool:
    return [axis for axis in first if shape[axis] != 1] == [
        axis for axis in second if shape[axis] != 1
    ]


def _program_input(start: Node, user_inputs: set[Node]) -> Node | None:
    """The program input a chain starts at, directly or through its quantize alone."""
    if start in user_inputs and len(start.users) == 1:
        return start
    if start.target == _QUANTIZE and len(start.users) == 1:
        source = start.args[0]
        if source in user_inputs and len(source.users) == 1:  # type: ignore[operator]
            return source  # type: ignore[return-value]
    return None


def _ends_at_output(end: Node) -> bool:
    """Whether the chain's end is only dequantized into a program output."""
    users = list(end.users)
    return (
        len(users) == 1
        and users[0].target == _DEQUANTIZE
        and all(user.op == "output" for user in users[0].users)
    )


def _declare_start(start: Node, order: Order, serialized: dict[Node, Order]) -> None:
    if order == serialized.get(start, dim_order_of(start)):
        return
    start.meta[LAYOUT] = order
    if start.target == _QUANTIZE:
        source = start.args[0]
        source.meta[LAYOUT] = order  # type: ignore[union-attr]


def _declare_end(end: Node, order: Order) -> None:
    (dequantize,) = end.users
    dequantize.meta[LAYOUT] = order
