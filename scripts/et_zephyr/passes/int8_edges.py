# SPDX-License-Identifier: Apache-2.0
"""The `--io int8` / `--io int16` step: the program takes and gives the integer tensors
at its edges (INT16 those of a 16x8 program).

Before lowering, ExecuTorch's own QuantizeInputs/QuantizeOutputs passes drop the quantize
after each input and the dequantize before each output; what they recorded (scale, zero
point) goes to the manifest and the model's generated config. The host reference then
feeds the program integer inputs quantized as the device's application does with the C
API's et_zephyr_quantize_int8() or et_zephyr_quantize_int16().
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from executorch.exir import EdgeProgramManager
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs

from ..errors import ExportError
from ..frontend.io_mode import IOMode
from ..frontend.loading import Inputs
from ..reference import edges
from .quantizer_int16 import INT16_MAX, INT16_MIN

_QUANTIZE = exir_ops.edge.quantized_decomposed.quantize_per_tensor.default
_DEQUANTIZE = exir_ops.edge.quantized_decomposed.dequantize_per_tensor.default


@dataclass(frozen=True)
class EdgeQuantization:
    """Scale and zero point of each input and output that the program takes or gives as
    an integer tensor, by index, and which inputs are INT16 (the others INT8)."""

    inputs: dict[int, tuple[float, int]] = field(default_factory=dict)
    outputs: dict[int, tuple[float, int]] = field(default_factory=dict)
    int16_inputs: frozenset[int] = frozenset()


def take_int8_edges(
    edge: EdgeProgramManager, mode: IOMode
) -> tuple[EdgeProgramManager, EdgeQuantization]:
    """Drop the quantize at each input and the dequantize at each output that `mode` makes
    INT8, with ExecuTorch's own QuantizeInputs/QuantizeOutputs passes; before lowering,
    where they are still quantized_decomposed operators."""
    program = edge.exported_program()
    graph = program.graph_module.graph
    inputs = list(range(len(program.graph_signature.user_inputs))) if mode.inputs != "float" else []
    outputs = list(range(len(graph.output_node().args[0]))) if mode.outputs != "float" else []
    if not inputs and not outputs:
        return edge, EdgeQuantization()
    placeholders = {node.name: node for node in graph.nodes if node.op == "placeholder"}
    for index in inputs:
        name = program.graph_signature.user_inputs[index]
        users = list(placeholders[name].users)
        if len(users) != 1 or users[0].target != _QUANTIZE:
            used_by = ", ".join(str(user.target) for user in users) or "nothing"
            raise ExportError(
                f"--io {mode}: input {index} ('{name}') is not quantized first thing in the "
                f"program (it goes to {used_by}); keep it float with --io input=float"
            )
    for index in outputs:
        node = graph.output_node().args[0][index]
        if getattr(node, "target", None) != _DEQUANTIZE:
            raise ExportError(
                f"--io {mode}: output {index} ('{node}') is not a dequantized INT8 tensor; "
                "keep it float with --io output=float"
            )
    quantize_inputs = QuantizeInputs(edge, inputs)
    quantize_outputs = QuantizeOutputs(edge, outputs)
    edge = edge.transform([quantize_inputs, quantize_outputs])
    return edge, EdgeQuantization(
        {
            i: _scale_and_zero_point(args, mode, "input", i)
            for i, args in quantize_inputs.quant_args.items()
        },
        {
            i: _scale_and_zero_point(args, mode, "output", i)
            for i, args in quantize_outputs.dequant_args.items()
        },
        frozenset(inputs) if mode.inputs == "int16" else frozenset(),
    )


# What each --io type takes: the quantization an edge must have.
_RANGES = {"int8": (torch.int8, -128, 127), "int16": (torch.int16, INT16_MIN, INT16_MAX)}


def _scale_and_zero_point(args: tuple, mode: IOMode, side: str, index: int) -> tuple[float, int]:
    scale, zero_point, quant_min, quant_max, dtype = args[:5]
    asked = mode.inputs if side == "input" else mode.outputs
    if (dtype, quant_min, quant_max) != _RANGES[asked]:
        width = "INT16 (16x8)" if dtype == torch.int16 else "INT8"
        other = "int16" if dtype == torch.int16 else "int8"
        raise ExportError(
            f"--io {mode}: {side} {index} is {width} in the program, not {asked.upper()}: "
            f"use --io {side}={other}, or {side}=float"
        )
    return float(scale), int(zero_point)


def program_inputs(sample: Inputs, quantization: EdgeQuantization) -> Inputs:
    """A float sample as the program takes it: integer inputs quantized as the C API's
    et_zephyr_quantize_int8() or et_zephyr_quantize_int16() does on the device."""
    return tuple(
        (
            edges.quantize_int16(value, *quantization.inputs[index])
            if index in quantization.int16_inputs
            else edges.quantize_int8(value, *quantization.inputs[index])
        )
        if index in quantization.inputs
        else value
        for index, value in enumerate(sample)
    )


def float_outputs(
    outputs: tuple[torch.Tensor, ...], quantization: EdgeQuantization
) -> tuple[torch.Tensor, ...]:
    """The program's outputs as floats: integer outputs dequantized."""
    return tuple(
        edges.dequantize_per_tensor(value, *quantization.outputs[index])
        if index in quantization.outputs
        else value
        for index, value in enumerate(outputs)
    )
