# SPDX-License-Identifier: Apache-2.0
"""The program's inputs and outputs as the device sees them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.schema import ExecutionPlan
from torch.export import ExportedProgram
from torch.fx import Node

_QUANTIZE = exir_ops.edge.cortex_m.quantize_per_tensor.default
_DEQUANTIZE = exir_ops.edge.cortex_m.dequantize_per_tensor.default


@dataclass(frozen=True)
class TensorIO:
    """Shape, dtype, memory order and quantization of one input or output.

    `scale`/`zero_point` are those of the INT8 tensor the program converts the
    value to (inputs) or from (outputs), so an application can quantize
    its own data; None when the value is not converted.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    dim_order: tuple[int, ...]
    scale: float | None
    zero_point: int | None

    def to_json(self) -> dict[str, object]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def program_io(program: ExportedProgram) -> tuple[list[TensorIO], list[TensorIO]]:
    graph = program.graph_module.graph
    user_inputs = set(program.graph_signature.user_inputs)
    inputs = [
        _describe(node, _converted_by(node.users, _QUANTIZE))
        for node in graph.nodes
        if node.op == "placeholder" and node.name in user_inputs
    ]
    output_node = next(node for node in graph.nodes if node.op == "output")
    outputs = [
        _describe(node, node if node.target == _DEQUANTIZE else None)
        for node in output_node.args[0]
    ]
    return inputs, outputs


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


def _converted_by(users: dict[Node, None], target: object) -> Node | None:
    return next((user for user in users if user.target == target), None)


def _describe(node: Node, conversion: Node | None) -> TensorIO:
    value: torch.Tensor = node.meta["val"]
    dim_order = tuple(int(d) for d in value.dim_order())
    scale = float(conversion.args[1]) if conversion is not None else None
    zero_point = int(conversion.args[2]) if conversion is not None else None
    dtype = str(value.dtype).removeprefix("torch.")
    return TensorIO(node.name, tuple(value.shape), dtype, dim_order, scale, zero_point)


def device_bytes(tensor: torch.Tensor, io: TensorIO) -> bytes:
    """The tensor's bytes in the memory order the device holds it in."""
    return tensor.permute(io.dim_order).contiguous().numpy().tobytes()
