# SPDX-License-Identifier: Apache-2.0
"""LayerNorm between int8 tensors onto et-zephyr's integer kernel.

The Cortex-M quantizer leaves nn.LayerNorm in float (dequantize -> native_layer_norm
-> quantize), and CMSIS-NN has no LayerNorm. A LayerNorm over the last dimension with
int8 on both sides becomes et_zephyr::quantized_layer_norm, its gamma, beta, epsilon
and scales folded into integer parameters here (reference/layer_norm.py).
"""

from __future__ import annotations

import operator
from math import prod

import torch
from executorch.backends.transforms.utils import get_param_tensor
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass, PassResult
from torch.export import ExportedProgram
from torch.fx import GraphModule, Node

from ..reference import (
    layer_norm,
    own_ops,  # noqa: F401  (defines et_zephyr::quantized_layer_norm)
)
from .int8_rewrites import add_constant, int8_quantizers, is_int8_dequantize, replace_quantizers

_NATIVE_LAYER_NORM = exir_ops.edge.aten.native_layer_norm.default
_KERNEL = exir_ops.edge.et_zephyr.quantized_layer_norm.default


class LayerNormToKernel(ExportPass):
    """`quantize(layer_norm(dequantize(x)))[0]` with int8 on both sides becomes
    `et_zephyr::quantized_layer_norm(x, ...)`. In place, after FoldAndAnnotateQParamsPass
    (see cortex_m_passes.py)."""

    def __init__(self, exported_program: ExportedProgram) -> None:
        super().__init__()
        self.exported_program = exported_program

    def call(self, graph_module: GraphModule) -> PassResult:
        graph = graph_module.graph
        replaced = 0
        for node in list(graph.nodes):
            match = self._match(node)
            if match is None:
                continue
            dequantize, normalized, quantizers = match
            _, shape, weight, bias, eps = node.args
            channels = prod(shape)
            params = layer_norm.parameters(
                self._tensor(weight),
                self._tensor(bias),
                float(eps),
                float(dequantize.args[1]),
                float(quantizers[0].args[1]),
                channels,
            )
            # Each constant goes in front of the placeholders: biases first leaves the
            # multipliers before them.
            biases = add_constant(
                self.exported_program, graph, f"{node.name}_biases", params.biases
            )
            multipliers = add_constant(
                self.exported_program, graph, f"{node.name}_multipliers", params.multipliers
            )
            args = (
                dequantize.args[0],
                multipliers,
                biases,
                int(dequantize.args[2]),
                int(quantizers[0].args[2]),
                params.epsilon,
                params.shift,
            )
            replace_quantizers(graph, quantizers, node, _KERNEL, args)
            graph.erase_node(normalized)
            for user in list(node.users):
                graph.erase_node(user)
            graph.erase_node(node)
            if not dequantize.users:
                graph.erase_node(dequantize)
            replaced += 1
        graph_module.recompile()
        return PassResult(graph_module, replaced > 0)

    def _match(self, node: Node) -> tuple[Node, Node, list[Node]] | None:
        if node.target != _NATIVE_LAYER_NORM:
            return None
        dequantize = node.args[0]
        if not is_int8_dequantize(dequantize):
            return None
        if prod(node.args[1]) > layer_norm.MAX_CHANNELS:
            return None
        if len(node.args[1]) != 1 or not all(self._constant(a) for a in node.args[2:4]):
            return None
        outputs = list(node.users)
        # Only the normalized output (the mean and rstd outputs unused).
        if len(outputs) != 1 or outputs[0].target != operator.getitem or outputs[0].args[1] != 0:
            return None
        quantizers = int8_quantizers(outputs[0])
        if quantizers is None:
            return None
        return dequantize, outputs[0], quantizers

    def _constant(self, node: object) -> bool:
        return node is None or (
            isinstance(node, Node) and get_param_tensor(self.exported_program, node) is not None
        )

    def _tensor(self, node: Node | None) -> torch.Tensor | None:
        return None if node is None else get_param_tensor(self.exported_program, node)
