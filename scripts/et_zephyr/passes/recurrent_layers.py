# SPDX-License-Identifier: Apache-2.0
"""nn.LSTM and nn.GRU layers kept whole: one et_zephyr::lstm or et_zephyr::gru a layer,
lowered after quantization to arm_lstm_unidirectional_s8 or et-zephyr's GRU kernel
(passes/recurrent_kernels.py), the time loop inside the kernel.

Unrolled (passes/recurrent.py), every step is its own linears, adds, muls and tables,
and the program and its arena grow with the sequence: `lstm_kws` (6,028 parameters,
49 steps) took a 218,800-byte program and a 110,096-byte arena. Whole, each layer's
weights are in the program once and its arena holds the input, the output and three
int16 vectors of the hidden size.

A layer stays whole when it runs one direction without projections from a zero state
(the model passes no initial state) and the model reads its outputs and final hidden
states, not an LSTM's final cell states; any other is unrolled. Where the model reads
only the last step's h (`y[:, -1]`, h_n), the last layer keeps no other step's. An
LSTM's cell state's int16 scale is a power of two that holds the largest |c| the
calibration data reach (`calibrate_cell_states`), as TFLite's converter chooses it.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx import GraphModule, Interpreter, Node
from torch.fx.node import Argument
from torch.fx.node import Target as CallTarget

from ..errors import ExportError
from ..firmware.kernels import source_line
from ..frontend.streams import Stream
from ..reference import gates_s16, own_ops
from ..reference import lstm as lstm_reference
from .fx_nodes import attribute, call, constant
from .recurrent import single_step

aten = torch.ops.aten
WHOLE_LSTM = torch.ops.et_zephyr.lstm.default
WHOLE_GRU = torch.ops.et_zephyr.gru.default
WHOLE_LAYERS = (WHOLE_LSTM, WHOLE_GRU)
_RECURRENT = (aten.lstm.input, aten.gru.input)
_UNROLLED_ONLY = (aten.rnn_tanh.input, aten.rnn_relu.input)


def recurrent_layers_whole(graph: GraphModule, stateful: bool = False) -> int:
    """Each eligible aten.lstm and aten.gru becomes one et_zephyr::lstm or et_zephyr::gru
    a layer. Returns how many changed. `stateful` (et-export --stateful): a recurrent
    layer that cannot stay whole, whose state could then not be carried, is an error."""
    changed = 0
    for node in list(graph.graph.nodes):
        if node.op != "call_function" or node.target not in _RECURRENT + _UNROLLED_ONLY:
            continue
        reason = _not_whole(node)
        if reason is not None and stateful:
            raise ExportError(
                f"--stateful: the recurrent layer '{node.name}'{source_line(node)} cannot "
                f"carry its state: {reason}"
            )
        if reason is not None:
            continue
        last_step = _reads_last_step_only(node)
        with graph.graph.inserting_before(node):
            layers = _layers(graph, node, last_step)
        _replace_uses(graph, node, layers, last_step)
        changed += 1
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return changed


def _not_whole(node: Node) -> str | None:
    """Why the layer cannot stay whole (it is then unrolled), or None."""
    if node.target in _UNROLLED_ONLY:
        return "nn.RNN layers run unrolled; carry an LSTM's or a GRU's"
    _, initial, params, has_biases, layers, _, _, bidirectional, _ = node.args
    if bidirectional:
        return "it runs both directions"
    if len(params) != (4 if has_biases else 2) * layers:
        return "it has projections (proj_size)"
    if any(p.op != "get_attr" for p in params):
        return "its weights are computed in the model"
    states = initial if node.target == aten.lstm.input else [initial]
    if not all(s.target == aten.zeros.default for s in states):
        return "the model passes it an initial state"
    # The outputs (0) and final hidden states (1); an LSTM's int16 cell states stay inside.
    if not all(
        u.target == operator.getitem and (u.args[1] in (0, 1) or not u.users) for u in node.users
    ):
        return "the model reads its final cell state"
    return None


def _reads_last_step_only(node: Node) -> bool:
    """Whether the model reads the outputs' last step only (`y[:, -1]`): the last layer
    then keeps no other step's h."""
    x, time_dim = node.args[0], 1 if node.args[8] else 0
    steps = x.meta["val"].shape[time_dim]
    readers = [r for user in node.users if user.args[1] == 0 for r in user.users]
    return all(single_step(r, time_dim, steps) == steps - 1 for r in readers)


def _layers(graph: GraphModule, node: Node, last_step: bool) -> list[Node]:
    x, _, params, has_biases, layers, _, _, _, batch_first = node.args
    per_layer = 4 if has_biases else 2
    outputs = []
    for index in range(layers):
        weight_ih, weight_hh, *biases = params[per_layer * index : per_layer * (index + 1)]
        last = last_step and index == layers - 1
        if node.target == aten.gru.input:
            bias_ih, bias_hh = biases or (None, None)
            x = call(
                graph, node, WHOLE_GRU, x, weight_ih, weight_hh, bias_ih, bias_hh, batch_first, last
            )
        else:
            bias = None
            if biases:
                # An LSTM's two biases only add.
                summed = sum(attribute(graph, b) for b in biases)
                assert isinstance(summed, torch.Tensor)
                bias = constant(graph, node, f"l{index}_bias", summed)
            x = call(graph, node, WHOLE_LSTM, x, weight_ih, weight_hh, bias, batch_first, last, 0)
        outputs.append(x)
    return outputs


def _replace_uses(graph: GraphModule, node: Node, layers: list[Node], last_step: bool) -> None:
    time_dim = 1 if node.args[8] else 0
    for user in list(node.users):
        if not user.users:
            pass
        elif user.args[1] == 0 and last_step:
            for reader in list(user.users):
                reader.replace_all_uses_with(layers[-1])
                graph.graph.erase_node(reader)
        elif user.args[1] == 0:
            user.replace_all_uses_with(layers[-1])
        else:
            # h_n: each layer's last output, stacked over the layers.
            with graph.graph.inserting_before(user):
                finals = [call(graph, node, aten.select.int, y, time_dim, -1) for y in layers]
                if last_step:
                    finals[-1] = layers[-1]
                stacked = call(graph, node, aten.stack.default, finals, 0)
            user.replace_all_uses_with(stacked)
        graph.graph.erase_node(user)
    graph.graph.erase_node(node)


def calibrate_cell_states(graph: GraphModule, calibration: list[Stream]) -> None:
    """Run the float graph on the calibration data, each stream's hops in order with the
    state carried, and give each et_zephyr::lstm the power of two of its cell state's
    scale."""
    layers = [n for n in graph.graph.nodes if n.op == "call_function" and n.target == WHOLE_LSTM]
    if not layers:
        return
    recorder = _CellRanges(graph)
    with torch.no_grad():
        for stream in calibration:
            with own_ops.carried_float_states(len(stream) > 1):
                for hop in stream:
                    recorder.run(*hop)
    for node in layers:
        power = lstm_reference.cell_scale_power(recorder.largest.get(node.name, 0.0))
        node.args = (*node.args[:6], power)
    graph.recompile()


class _CellRanges(Interpreter):
    """The float graph, recording the largest |c| of each whole LSTM layer."""

    def __init__(self, graph: GraphModule) -> None:
        super().__init__(graph)
        self.largest: dict[str, float] = {}

    def run_node(self, n: Node) -> Any:
        self._current = n
        return super().run_node(n)

    def call_function(
        self, target: CallTarget, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        if target != WHOLE_LSTM:
            return super().call_function(target, args, kwargs)
        x, weight_ih, weight_hh, bias, batch_first, last_step, _ = args
        state = own_ops.carried_state(weight_ih)  # type: ignore[arg-type]
        output, largest, final = lstm_reference.float_lstm(
            x,  # type: ignore[arg-type]
            weight_ih,  # type: ignore[arg-type]
            weight_hh,  # type: ignore[arg-type]
            bias,  # type: ignore[arg-type]
            bool(batch_first),
            state,  # type: ignore[arg-type]
        )
        own_ops.carry_state(weight_ih, final)  # type: ignore[arg-type]
        if last_step:
            output = gates_s16.last_of(output, bool(batch_first))
        name = self._current.name
        self.largest[name] = max(self.largest.get(name, 0.0), largest)
        return output
