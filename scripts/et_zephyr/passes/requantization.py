# SPDX-License-Identifier: Apache-2.0
"""Fold float arithmetic between quantized operators into their quantization parameters.

Two patterns PT2E leaves in attention, each an extra rounding (and a float operator or
a requantization on the device) where none is needed:

- a constant scale: `(q @ kᵀ) / √d` is dequantize -> div -> quantize. Dividing by c is
  dequantizing with scale s / c, so the division goes into the dequantize.
- a requantize chain: softmax's output has fixed parameters (1/256, -128), the `@ v`
  matmul observes its own (q -> dq -> q -> dq). The matmul reads the softmax's bytes
  with the softmax's parameters instead: no requantization, and no clamp of the
  attention weights to the second observer's range.

An int8 tensor between a quantize with (s, z) and a dequantize with (s / c, z) then
holds both meanings at once, which is what FoldAndAnnotateQParamsPass and the kernels
read: the producer's output parameters from the quantize, the consumer's input
parameters from the dequantize. Both folds run on the fake-quant model, before to_edge,
so that the model the INT8 program is verified against computes what it computes.
"""

from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule, Node

_QUANTIZE = torch.ops.quantized_decomposed.quantize_per_tensor.default
_DEQUANTIZE = torch.ops.quantized_decomposed.dequantize_per_tensor.default
_aten = torch.ops.aten
_DIVISIONS = {_aten.div.Tensor, _aten.div.Scalar}
_SCALINGS = _DIVISIONS | {_aten.mul.Tensor, _aten.mul.Scalar}


def fold_constant_scales(fake_quant: GraphModule) -> int:
    """`dequantize(x, s, z) / c` (or `* c`, c > 0 a constant scalar) becomes
    `dequantize(x, s / c, z)`. Returns how many were folded."""
    graph = fake_quant.graph
    folded = 0
    for node in list(graph.nodes):
        if node.target not in _SCALINGS:
            continue
        dequantized, operand = node.args[0], node.args[1]
        if not _is_dequantize(dequantized) or len(dequantized.users) != 1:
            continue
        factor = _positive_scalar(fake_quant, operand)
        if factor is None:
            continue
        if node.target in _DIVISIONS:
            factor = 1.0 / factor
        # The scaling becomes the dequantize: a graph output keeps its node's name.
        x, scale, *rest = dequantized.args
        node.target = _DEQUANTIZE
        node.args = (x, scale * factor, *rest)
        node.kwargs = {}
        graph.erase_node(dequantized)
        folded += 1
    graph.eliminate_dead_code()
    fake_quant.recompile()
    return folded


def fold_requantize_chains(fake_quant: GraphModule) -> int:
    """`dequantize(quantize(dequantize(x, a), b), b)`: the consumers read x with `a`.
    Returns how many chains went."""
    graph = fake_quant.graph
    folded = 0
    for requantize in list(graph.nodes):
        if requantize.target != _QUANTIZE or not _is_dequantize(requantize.args[0]):
            continue
        first = requantize.args[0]
        readers = list(requantize.users)
        if not readers or not all(
            _is_dequantize(r) and r.args[1:] == requantize.args[1:] for r in readers
        ):
            continue
        if first.args[5] != requantize.args[5]:  # int8 to int16 is a real conversion
            continue
        # Each reader reads x with `a` (in place: a graph output keeps its node's name).
        for reader in readers:
            reader.args = first.args
        graph.erase_node(requantize)
        folded += 1
    graph.eliminate_dead_code()
    fake_quant.recompile()
    return folded


def _is_dequantize(node: object) -> bool:
    return isinstance(node, Node) and node.target == _DEQUANTIZE


def _positive_scalar(fake_quant: GraphModule, operand: object) -> float | None:
    if isinstance(operand, int | float) and not isinstance(operand, bool):
        value = float(operand)
    elif isinstance(operand, Node) and operand.op == "get_attr":
        tensor = operator.attrgetter(operand.target)(fake_quant)
        if not isinstance(tensor, torch.Tensor) or tensor.numel() != 1 or tensor.is_complex():
            return None
        value = float(tensor)
    else:
        return None
    return value if value > 0 and value != float("inf") else None
