# SPDX-License-Identifier: Apache-2.0
"""nn.GRU, nn.LSTM and nn.RNN unrolled into the operators the Cortex-M quantizer annotates.

torch.export captures a recurrent layer as one aten.gru / aten.lstm / aten.rnn_tanh,
which the quantizer
does not annotate and to_edge unrolls into float addmm, sigmoid, tanh and mul on
portable kernels. Unrolled here, before quantization, each time step is linears,
adds, muls, sigmoids and tanhs, all quantized: the input projection of the first layer
one linear over the whole sequence, the recurrent projection one linear a step. GRU's
update gate interpolates as sigmoid(-a) * n + sigmoid(a) * h (1 - sigmoid(a) is
sigmoid(-a)); the negation becomes a lookup table. A layer's outputs are stacked only
if the model reads more than single steps of them (`y[:, -1]` reads the last h).

Batch-first or not, one or more layers, with or without biases, one direction or both
(the reverse direction runs over the steps from the last; each step's output is the two
directions' h side by side, as PyTorch's); projections (proj_size) and nn.RNN with
nonlinearity="relu" stay whole (its first step's ReLU would follow no layer the
quantizer fuses it into).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
from torch.fx import GraphModule, Node

from .fx_nodes import call, constant

aten = torch.ops.aten
_RECURRENT = {
    aten.gru.input: "gru",
    aten.lstm.input: "lstm",
    aten.rnn_tanh.input: "rnn_tanh",
}
_GATES = {"gru": 3, "lstm": 4, "rnn_tanh": 1}


@dataclass
class _Layer:
    weight_ih: Node
    weight_hh: Node
    bias_ih: Node | None  # with the recurrent bias where it only adds (merged here)
    bias_hh: Node | None  # what stays of the recurrent bias: GRU's candidate part
    # That part alone as a diagonal matrix, for a first step from a zero state: reset *
    # bias as a linear, which the quantizer quantizes (a product with a constant it
    # leaves in float).
    candidate_bias: Node | None


def unroll_recurrent(graph: GraphModule) -> int:
    """Each aten.gru / aten.lstm / aten.rnn_tanh becomes its time steps. Returns how many."""
    changed = 0
    for node in list(graph.graph.nodes):
        kind = _RECURRENT.get(node.target) if node.op == "call_function" else None
        if kind is None or not _supported(node, kind):
            continue
        with graph.graph.inserting_before(node):
            outputs, finals = _Unroller(graph, node, kind).run()
        _replace_uses(graph, node, outputs, finals)
        changed += 1
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return changed


def _supported(node: Node, kind: str) -> bool:
    x, _, params, has_biases, layers, _, _, bidirectional, _ = node.args
    per_layer = (4 if has_biases else 2) * (2 if bidirectional else 1)
    if len(params) != per_layer * layers:
        return False  # proj_size adds a weight per layer
    if any(p.op != "get_attr" for p in params):
        return False
    return all(user.target == operator.getitem for user in node.users)


class _Unroller:
    """The steps of one recurrent node. A zero initial state (the model passed none) is
    not computed with: the first step skips the recurrent linear and the products with
    zero, so no constant zero tensor reaches a quantized kernel."""

    def __init__(self, graph: GraphModule, node: Node, kind: str) -> None:
        self.graph, self.node, self.kind = graph, node, kind
        self.hidden = graph.get_parameter(node.args[2][1].target).shape[1]
        initial = node.args[1]
        states = list(initial) if kind == "lstm" else [initial]
        self.zero_state = all(s.target == aten.zeros.default for s in states)
        self.initial = states

    def op(self, target: object, *args: object) -> Node:
        return call(self.graph, self.node, target, *args)

    def constant(self, name: str, value: torch.Tensor) -> Node:
        return constant(self.graph, self.node, name, value)

    def run(self) -> tuple[list[Node], list[list[Node]]]:
        x, _, params, has_biases, layers, _, _, bidirectional, batch_first = self.node.args
        directions = 2 if bidirectional else 1
        time_dim = 1 if batch_first else 0
        steps = x.meta["val"].shape[time_dim]
        finals: list[list[Node]] = []  # per layer and direction, as PyTorch stacks them
        inputs: list[Node] | None = None  # the layer below's output of each step
        for index in range(layers):
            per_direction = []
            for direction in range(directions):
                flat = index * directions + direction
                outputs, states = self._direction(x, inputs, params, flat, has_biases, time_dim)
                if direction:
                    outputs.reverse()
                per_direction.append(outputs)
                finals.append(states)
            if directions == 1:
                inputs = per_direction[0]
            else:
                inputs = [self.op(aten.cat.default, list(pair), -1) for pair in zip(*per_direction)]
            assert len(inputs) == steps
        assert inputs is not None
        return inputs, finals

    def _direction(
        self,
        x: Node,
        inputs: list[Node] | None,
        params: list[Node],
        flat: int,
        has_biases: bool,
        time_dim: int,
    ) -> tuple[list[Node], list[Node]]:
        """One direction of one layer (`flat` = layer * directions + direction): its h of
        each step in the order it runs them, and its final states."""
        layer = self._layer(params, flat, has_biases)
        reverse = bool(self.node.args[7]) and flat % 2 == 1
        if inputs is None:
            projected = self.op(aten.linear.default, x, layer.weight_ih, layer.bias_ih)
            steps = x.meta["val"].shape[time_dim]
            step_inputs = [self.op(aten.select.int, projected, time_dim, t) for t in range(steps)]
        else:
            step_inputs = [
                self.op(aten.linear.default, h, layer.weight_ih, layer.bias_ih) for h in inputs
            ]
        if reverse:
            step_inputs.reverse()
        states: list[Node] | None = None
        if not self.zero_state:
            states = [self.op(aten.select.int, state, 0, flat) for state in self.initial]
        outputs = []
        for projected_input in step_inputs:
            states = self._step(projected_input, layer, states)
            outputs.append(states[0])
        assert states is not None
        return outputs, states

    def _layer(self, params: list[Node], index: int, has_biases: bool) -> _Layer:
        if not has_biases:
            return _Layer(params[2 * index], params[2 * index + 1], None, None, None)
        weight_ih, weight_hh, bias_ih, bias_hh = params[4 * index : 4 * index + 4]
        b_ih, b_hh = (self.graph.get_parameter(b.target) for b in (bias_ih, bias_hh))
        # The recurrent bias adds to the input's wherever no gate multiplies it: all of
        # LSTM's and RNN's, GRU's reset and update parts (its candidate part is scaled by
        # the reset).
        merged = b_hh.clone()
        if self.kind == "gru":
            merged[2 * self.hidden :] = 0
        bias = self.constant(f"l{index}_bias", b_ih + merged)
        if self.kind != "gru":
            return _Layer(weight_ih, weight_hh, bias, None, None)
        remaining = torch.zeros_like(b_hh)
        remaining[2 * self.hidden :] = b_hh[2 * self.hidden :]
        return _Layer(
            weight_ih,
            weight_hh,
            bias,
            self.constant(f"l{index}_recurrent_bias", remaining),
            self.constant(f"l{index}_candidate_bias", torch.diag(b_hh[2 * self.hidden :])),
        )

    def _step(self, x: Node, layer: _Layer, states: list[Node] | None) -> list[Node]:
        gates = _GATES[self.kind]
        recurrent = None
        if states is not None:
            recurrent = self.op(aten.linear.default, states[0], layer.weight_hh, layer.bias_hh)
        if self.kind == "rnn_tanh":
            total = x if recurrent is None else self.op(aten.add.Tensor, x, recurrent)
            return [self.op(aten.tanh.default, total)]
        if self.kind == "lstm":
            total = x if recurrent is None else self.op(aten.add.Tensor, x, recurrent)
            i, f, g, o = self._split(total, gates)
            i, f, o = (self.op(aten.sigmoid.default, z) for z in (i, f, o))
            g = self.op(aten.tanh.default, g)
            cell = self.op(aten.mul.Tensor, i, g)
            if states is not None:
                cell = self.op(aten.add.Tensor, self.op(aten.mul.Tensor, f, states[1]), cell)
            return [self.op(aten.mul.Tensor, o, self.op(aten.tanh.default, cell)), cell]
        x_r, x_z, x_n = self._split(x, gates)
        if recurrent is None:
            reset_in, update_in = x_r, x_z
            if layer.candidate_bias is None:
                candidate_in = x_n
            else:
                reset = self.op(aten.sigmoid.default, reset_in)
                scaled = self.op(aten.linear.default, reset, layer.candidate_bias)
                candidate_in = self.op(aten.add.Tensor, x_n, scaled)
        else:
            h_r, h_z, h_n = self._split(recurrent, gates)
            reset_in = self.op(aten.add.Tensor, x_r, h_r)
            update_in = self.op(aten.add.Tensor, x_z, h_z)
            reset = self.op(aten.sigmoid.default, reset_in)
            candidate_in = self.op(aten.add.Tensor, x_n, self.op(aten.mul.Tensor, reset, h_n))
        new = self.op(aten.tanh.default, candidate_in)
        keep_new = self.op(aten.sigmoid.default, self.op(aten.neg.default, update_in))
        h = self.op(aten.mul.Tensor, keep_new, new)
        if states is not None:
            update = self.op(aten.sigmoid.default, update_in)
            h = self.op(aten.add.Tensor, h, self.op(aten.mul.Tensor, update, states[0]))
        return [h]

    def _split(self, x: Node, gates: int) -> list[Node]:
        parts = self.op(aten.split.Tensor, x, self.hidden, -1)
        return [self.op(operator.getitem, parts, gate) for gate in range(gates)]


def _replace_uses(
    graph: GraphModule, node: Node, outputs: list[Node], finals: list[list[Node]]
) -> None:
    batch_first = node.args[8]
    time_dim = 1 if batch_first else 0
    sequence: Node | None = None
    for user in list(node.users):
        index = user.args[1]
        if index == 0:
            for reader in list(user.users):
                step = single_step(reader, time_dim, len(outputs))
                if step is not None:
                    reader.replace_all_uses_with(outputs[step])
                    graph.graph.erase_node(reader)
            if user.users:
                with graph.graph.inserting_before(node):
                    sequence = sequence or call(graph, node, aten.stack.default, outputs, time_dim)
                user.replace_all_uses_with(sequence)
        else:
            # The final states: GRU's and RNN's h, LSTM's h then c, each stacked over the
            # layers and directions.
            with graph.graph.inserting_before(node):
                states = [layer[index - 1] for layer in finals]
                stacked = call(graph, node, aten.stack.default, states, 0)
            user.replace_all_uses_with(stacked)
        if not user.users:
            graph.graph.erase_node(user)
    if not node.users:
        graph.graph.erase_node(node)


def single_step(reader: Node, time_dim: int, steps: int) -> int | None:
    """The step a `select(y, time_dim, t)` reads, or None for any other reader."""
    if reader.op != "call_function" or reader.target != aten.select.int:
        return None
    if reader.args[1] % reader.args[0].meta["val"].dim() != time_dim:
        return None
    return reader.args[2] % steps
