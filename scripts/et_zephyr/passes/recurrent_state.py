# SPDX-License-Identifier: Apache-2.0
"""`et-export --stateful`: each whole recurrent layer's state carried from one run to the
next, so that a run takes one frame (or a hop of frames) of an endless stream.

Each et_zephyr::quantized_lstm (h int8, c int16) and et_zephyr::quantized_gru (h int8)
gets its state as program inputs it starts from and program outputs it writes its final
state to, [B, H] each, after every other input and output: the runtime
(`struct et_zephyr_state`) copies each output to a buffer of the application's after a
run and back into the input before the next, and et_zephyr_reset_state() sets the
buffer to the state a run from nothing starts from (h = the output's zero point, c = 0,
which give the very arithmetic of a zero state). The outputs are planned allocations the
kernel writes, as its scratch is.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from executorch.exir.passes import make_alloc_node
from torch.export import ExportedProgram
from torch.export.graph_signature import (
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from torch.fx import Node
from torch.utils import _pytree as pytree

from ..errors import ExportError
from .recurrent_kernels import GRU_KERNEL, LSTM_KERNEL

_STATES = {
    LSTM_KERNEL: (("hidden", torch.int8), ("cell", torch.int16)),
    GRU_KERNEL: (("hidden", torch.int8),),
}


@dataclass(frozen=True)
class RecurrentState:
    """One carried state: a layer's h or c, the program input and output it is."""

    name: str  # e.g. "lstm_default_hidden"
    shape: tuple[int, int]  # [B, H]
    dtype: torch.dtype
    reset_value: int  # every element's value in a state from nothing

    def reset(self) -> torch.Tensor:
        return torch.full(self.shape, self.reset_value, dtype=self.dtype)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": str(self.dtype).removeprefix("torch."),
            "nbytes": self.shape[0] * self.shape[1] * self.dtype.itemsize,
            "reset_value": self.reset_value,
        }


def carry_recurrent_state(program: ExportedProgram) -> list[RecurrentState]:
    """Give every whole recurrent layer its state as program inputs and outputs, after
    the others, in the layers' order. Returns the states."""
    graph_module = program.graph_module
    graph = graph_module.graph
    layers = [n for n in graph.nodes if n.op == "call_function" and n.target in _STATES]
    if not layers:
        raise ExportError(
            "--stateful: the model has no whole LSTM or GRU layer whose state could be "
            "carried (unrolled layers and other models run from nothing every time)"
        )
    states: list[RecurrentState] = []
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    last_input = placeholders[-1]
    written: list[Node] = []
    for layer in layers:
        inputs, outputs = [], []
        for kind, dtype in _STATES[layer.target]:
            state = _state(layer, kind, dtype)
            with graph.inserting_after(last_input):
                placeholder = graph.placeholder(state.name)
            placeholder.meta["val"] = layer.meta["val"].new_empty(state.shape, dtype=dtype)
            last_input = placeholder
            with graph.inserting_before(layer):
                written_state = make_alloc_node(
                    graph_module, layer.meta["val"].new_empty(state.shape, dtype=dtype), None
                )
            inputs.append(placeholder)
            outputs.append(written_state)
            states.append(state)
            program.graph_signature.input_specs.append(
                InputSpec(InputKind.USER_INPUT, TensorArgument(name=placeholder.name), None)
            )
        # hidden_in(, cell_in), hidden_out(, cell_out), in the kernel's schema's order.
        first = _argument_index(layer, "hidden_in")
        args = list(layer.args)
        args[first : first + 2 * len(inputs)] = [*inputs, *outputs]
        layer.args = tuple(args)
        written += outputs
    output = graph.output_node()
    output.args = (tuple(output.args[0]) + tuple(written),)
    for node in written:
        spec = OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(name=node.name), target=None)
        program.graph_signature.output_specs.append(spec)
    signature = program.module_call_graph[0].signature
    assert signature is not None
    user_inputs = [n for n in graph.nodes if n.op == "placeholder"][-_user_input_count(program) :]
    signature.in_spec = pytree.tree_structure((tuple(user_inputs), {}))
    signature.out_spec = pytree.tree_structure(tuple(output.args[0]))
    graph_module.recompile()
    return states


def _argument_index(layer: Node, name: str) -> int:
    """Where the kernel's schema (reference/own_ops.py) has the argument."""
    names = [argument.name for argument in layer.target._schema.arguments]  # type: ignore[union-attr]
    return names.index(name)


def _argument(layer: Node, name: str) -> object:
    return layer.args[_argument_index(layer, name)]


def _state(layer: Node, kind: str, dtype: torch.dtype) -> RecurrentState:
    hidden_weights = _argument(layer, "hidden_weights")  # [gates, H, H]
    x = _argument(layer, "input")
    assert isinstance(hidden_weights, Node) and isinstance(x, Node)
    hidden = int(hidden_weights.meta["val"].shape[-1])
    batch = int(x.meta["val"].shape[0 if _argument(layer, "batch_first") else 1])
    # A run from nothing: h at the output's zero point (real zero), c at zero.
    reset = int(_argument(layer, "output_zero_point")) if kind == "hidden" else 0  # type: ignore[arg-type]
    return RecurrentState(f"{layer.name}_{kind}", (batch, hidden), dtype, reset)


def _user_input_count(program: ExportedProgram) -> int:
    return sum(spec.kind == InputKind.USER_INPUT for spec in program.graph_signature.input_specs)
