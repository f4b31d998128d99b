# SPDX-License-Identifier: Apache-2.0
"""The program's inputs and outputs as the device sees them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.schema import ExecutionPlan
from torch.export import ExportedProgram
from torch.fx import Node

from ..passes.int8_edges import EdgeQuantization

_QUANTIZE = exir_ops.edge.cortex_m.quantize_per_tensor.default
_DEQUANTIZE = exir_ops.edge.cortex_m.dequantize_per_tensor.default


@dataclass(frozen=True)
class TensorIO:
    """Shape, dtype, memory order and quantization of one input or output.

    `scale`/`zero_point` are those of the INT8 tensor the program converts the
    value to (inputs) or from (outputs), or of the INT8 value itself where the
    program takes or gives it (`--io int8`), so an application can quantize
    its own data; None for any other value.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    dim_order: tuple[int, ...]
    scale: float | None
    zero_point: int | None

    def to_json(self) -> dict[str, object]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def program_io(
    program: ExportedProgram, int8_edges: EdgeQuantization
) -> tuple[list[TensorIO], list[TensorIO]]:
    """Inputs and outputs with the quantization of the INT8 tensor each one is converted
    to or from, in the program (float edges) or by the application (`int8_edges`)."""
    graph = program.graph_module.graph
    user_inputs = set(program.graph_signature.user_inputs)
    placeholders = [
        node for node in graph.nodes if node.op == "placeholder" and node.name in user_inputs
    ]
    inputs = [
        _describe(node, int8_edges.inputs.get(index) or _quantization(node.users, _QUANTIZE))
        for index, node in enumerate(placeholders)
    ]
    outputs = [
        _describe(node, int8_edges.outputs.get(index) or _quantization([node], _DEQUANTIZE))
        for index, node in enumerate(graph.output_node().args[0])
    ]
    return inputs, outputs


def without_states(
    io: tuple[list[TensorIO], list[TensorIO]], states: int
) -> tuple[list[TensorIO], list[TensorIO]]:
    """The inputs and outputs the application gives and reads: a stateful program's last
    `states` inputs and outputs are its recurrent states, which the runtime keeps."""
    inputs, outputs = io
    return (inputs[:-states], outputs[:-states]) if states else io


def with_program_dim_orders(
    io: tuple[list[TensorIO], list[TensorIO]], plan: ExecutionPlan
) -> tuple[list[TensorIO], list[TensorIO]]:
    """Take the dim orders the serialized program holds.

    Where a dimension has size 1, several orders give the same bytes and
    the program may state another one than PyTorch's strides suggest.
    """
    inputs, outputs = io

    def restated(specs: list[TensorIO], indices: list[int]) -> list[TensorIO]:
        return [
            replace(spec, dim_order=tuple(plan.values[index].val.dim_order))
            for spec, index in zip(specs, indices)
        ]

    return restated(inputs, plan.inputs), restated(outputs, plan.outputs)


def _quantization(nodes: Iterable[Node], conversion: object) -> tuple[float, int] | None:
    """Scale and zero point of the first of `nodes` that is the conversion operator."""
    node = next((node for node in nodes if node.target == conversion), None)
    return (float(node.args[1]), int(node.args[2])) if node is not None else None


def _describe(node: Node, quantization: tuple[float, int] | None) -> TensorIO:
    value: torch.Tensor = node.meta["val"]
    dim_order = tuple(int(d) for d in value.dim_order())
    scale, zero_point = quantization if quantization is not None else (None, None)
    dtype = str(value.dtype).removeprefix("torch.")
    return TensorIO(node.name, tuple(value.shape), dtype, dim_order, scale, zero_point)


def device_bytes(tensor: torch.Tensor, io: TensorIO) -> bytes:
    """The tensor's bytes in the memory order the device holds it in."""
    return tensor.permute(io.dim_order).contiguous().numpy().tobytes()
