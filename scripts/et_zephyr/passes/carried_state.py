# SPDX-License-Identifier: Apache-2.0
"""`et-export --stateful`: what a model carries from one run to the next, so that a run
takes one frame (or a hop of frames) of an endless stream.

Each et_zephyr::quantized_lstm (h int8, c int16) and et_zephyr::quantized_gru (h int8)
gets its state as program inputs it starts from and program outputs it writes its final
state to, [B, H] each; each et_zephyr::causal_pad (passes/causal_pads.py) becomes the
concatenation of its carried frames and its input, whose last frames are its next state.
The states come after every other input and output: the runtime (`struct
et_zephyr_state`) copies each output to a buffer of the application's after a run and
back into the input before the next, and et_zephyr_reset_state() sets the buffer to the
state a run from nothing starts from (h = the output's zero point, c = 0, a padding's
frames the input's zero point: the very arithmetic of a zero state). A recurrent layer's
outputs are planned allocations the kernel writes, as its scratch is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.passes import make_alloc_node
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, InputSpec, TensorArgument
from torch.fx import Node
from torch.utils import _pytree as pytree

from ..errors import ExportError
from ..firmware.kernels import source_line
from .fx_nodes import append_outputs
from .recurrent_kernels import GRU_KERNEL, LSTM_KERNEL

_CAUSAL_PAD = exir_ops.edge.et_zephyr.causal_pad.default
_CONCATENATE = exir_ops.edge.et_zephyr.concatenate.default
_SLICE = exir_ops.edge.et_zephyr.slice.default

_STATES = {
    LSTM_KERNEL: (("hidden", torch.int8), ("cell", torch.int16)),
    GRU_KERNEL: (("hidden", torch.int8),),
}


@dataclass(frozen=True)
class CarriedState:
    """One carried state: a layer's h or c or a causal padding's frames, the program input
    and output it is."""

    name: str  # e.g. "lstm_default_hidden"
    shape: tuple[int, ...]  # [B, H], or a padding's [N, C, frames]
    dtype: torch.dtype
    reset_value: int  # every element's value in a state from nothing

    def reset(self) -> torch.Tensor:
        return torch.full(self.shape, self.reset_value, dtype=self.dtype)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": str(self.dtype).removeprefix("torch."),
            "nbytes": math.prod(self.shape) * self.dtype.itemsize,
            "reset_value": self.reset_value,
        }


def carry_states(program: ExportedProgram) -> list[CarriedState]:
    """Give every whole recurrent layer and causal padding its state as program inputs
    and outputs, after the others, in the graph's order. Returns the states."""
    graph_module = program.graph_module
    graph = graph_module.graph
    carriers = [
        n
        for n in graph.nodes
        if n.op == "call_function" and (n.target in _STATES or n.target == _CAUSAL_PAD)
    ]
    if not carriers:
        raise ExportError(
            "--stateful: the model has no whole LSTM or GRU layer and no causal padding "
            "(F.pad(x, (p, 0)) before a Conv1d) whose state could be carried"
        )
    states: list[CarriedState] = []
    last_input = [n for n in graph.nodes if n.op == "placeholder"][-1]
    written: list[Node] = []
    for node in carriers:
        kinds = _STATES.get(node.target, (("frames", torch.int8),))
        inputs = []
        for kind, dtype in kinds:
            state = _state(node, kind, dtype)
            with graph.inserting_after(last_input):
                placeholder = graph.placeholder(state.name)
            placeholder.meta["val"] = node.meta["val"].new_empty(state.shape, dtype=dtype)
            last_input = placeholder
            inputs.append(placeholder)
            states.append(state)
            program.graph_signature.input_specs.append(
                InputSpec(InputKind.USER_INPUT, TensorArgument(name=placeholder.name), None)
            )
        if node.target == _CAUSAL_PAD:
            written.append(_concatenate_frames(node, inputs[0]))
        else:
            written += _run_from(graph_module, node, inputs)
    append_outputs(program, written)
    signature = program.module_call_graph[0].signature
    assert signature is not None
    user_inputs = [n for n in graph.nodes if n.op == "placeholder"][-_user_input_count(program) :]
    signature.in_spec = pytree.tree_structure((tuple(user_inputs), {}))
    graph.eliminate_dead_code()
    graph_module.recompile()
    return states


def _run_from(graph_module: torch.fx.GraphModule, layer: Node, inputs: list[Node]) -> list[Node]:
    """The recurrent kernel starts from the state inputs and writes its final state to
    planned allocations, which it returns."""
    outputs = []
    for placeholder in inputs:
        with graph_module.graph.inserting_before(layer):
            outputs.append(make_alloc_node(graph_module, placeholder.meta["val"], None))
    # hidden_in(, cell_in), hidden_out(, cell_out), in the kernel's schema's order.
    first = _argument_index(layer, "hidden_in")
    args = list(layer.args)
    args[first : first + 2 * len(inputs)] = [*inputs, *outputs]
    layer.args = tuple(args)
    return outputs


def _concatenate_frames(pad: Node, frames: Node) -> Node:
    """The padding as the carried frames and its input side by side; returns the last
    frames of that, the next run's."""
    x = pad.args[0]
    assert isinstance(x, Node)
    graph = pad.graph
    count = int(frames.meta["val"].shape[-1])
    steps = int(x.meta["val"].shape[-1])
    with graph.inserting_before(pad):
        joined = graph.call_function(_CONCATENATE, ([frames, x], 2))
        joined.meta = {**pad.meta, "val": pad.meta["val"].to(torch.int8)}
        with graph.inserting_after(joined):
            kept = graph.call_function(_SLICE, (joined, 2, steps, steps + count, 1))
        kept.meta = {**pad.meta, "val": frames.meta["val"].new_empty(frames.meta["val"].shape)}
    pad.replace_all_uses_with(joined)
    graph.erase_node(pad)
    return kept


def _argument_index(layer: Node, name: str) -> int:
    """Where the kernel's schema (reference/own_ops.py) has the argument."""
    names = [argument.name for argument in layer.target._schema.arguments]  # type: ignore[union-attr]
    return names.index(name)


def _argument(layer: Node, name: str) -> object:
    return layer.args[_argument_index(layer, name)]


def _state(layer: Node, kind: str, dtype: torch.dtype) -> CarriedState:
    if layer.target == _CAUSAL_PAD:
        x, frames, _ = layer.args
        assert isinstance(x, Node)
        quantization = (layer.meta.get("input_qparams") or {}).get(0)
        if quantization is None or quantization.dtype != torch.int8:
            raise ExportError(
                f"--stateful: the causal padding '{layer.name}'{source_line(layer)} is not "
                "between int8 tensors"
            )
        shape = (*x.meta["val"].shape[:-1], int(frames))  # type: ignore[arg-type]
        return CarriedState(f"{layer.name}_{kind}", shape, dtype, int(quantization.zp))
    hidden_weights = _argument(layer, "hidden_weights")  # [gates, H, H]
    x = _argument(layer, "input")
    assert isinstance(hidden_weights, Node) and isinstance(x, Node)
    hidden = int(hidden_weights.meta["val"].shape[-1])
    batch = int(x.meta["val"].shape[0 if _argument(layer, "batch_first") else 1])
    # A run from nothing: h at the output's zero point (real zero), c at zero.
    reset = int(_argument(layer, "output_zero_point")) if kind == "hidden" else 0  # type: ignore[arg-type]
    return CarriedState(f"{layer.name}_{kind}", (batch, hidden), dtype, reset)


def _user_input_count(program: ExportedProgram) -> int:
    return sum(spec.kind == InputKind.USER_INPUT for spec in program.graph_signature.input_specs)
