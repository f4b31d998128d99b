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
from executorch.backends.transforms.utils import create_constant_placeholder, get_param_tensor
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass, PassResult
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx import GraphModule, Node

from . import own_ops  # noqa: F401  (defines et_zephyr::quantized_layer_norm)
from .reference import layer_norm

_QUANTIZE = exir_ops.edge.quantized_decomposed.quantize_per_tensor.default
_DEQUANTIZE = exir_ops.edge.quantized_decomposed.dequantize_per_tensor.default
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
            first_placeholder = next(n for n in graph.nodes if n.op == "placeholder")
            with graph.inserting_before(first_placeholder):
                multipliers, biases = (
                    create_constant_placeholder(
                        self.exported_program, graph, f"{node.name}_{kind}", InputKind.PARAMETER, t
                    )
                    for kind, t in (("multipliers", params.multipliers), ("biases", params.biases))
                )
            # The first quantize becomes the kernel: a graph output keeps its node's name.
            kernel, *others = quantizers
            kernel.target = _KERNEL
            kernel.args = (
                dequantize.args[0],
                multipliers,
                biases,
                int(dequantize.args[2]),
                int(quantizers[0].args[2]),
                params.epsilon,
                params.shift,
            )
            kernel.meta = {**node.meta, "val": kernel.meta["val"]}
            for quantizer in others:
                quantizer.replace_all_uses_with(kernel)
                graph.erase_node(quantizer)
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
        if not _is_int8(dequantize, _DEQUANTIZE):
            return None
        if prod(node.args[1]) > layer_norm.MAX_CHANNELS:
            return None
        if len(node.args[1]) != 1 or not all(self._constant(a) for a in node.args[2:4]):
            return None
        outputs = list(node.users)
        # Only the normalized output (the mean and rstd outputs unused).
        if len(outputs) != 1 or outputs[0].target != operator.getitem or outputs[0].args[1] != 0:
            return None
        quantizers = list(outputs[0].users)
        if not quantizers or not all(_is_int8(q, _QUANTIZE) for q in quantizers):
            return None
        if any(q.args[1:] != quantizers[0].args[1:] for q in quantizers):
            return None
        return dequantize, outputs[0], quantizers

    def _constant(self, node: object) -> bool:
        return node is None or (
            isinstance(node, Node) and get_param_tensor(self.exported_program, node) is not None
        )

    def _tensor(self, node: Node | None) -> torch.Tensor | None:
        return None if node is None else get_param_tensor(self.exported_program, node)


def _is_int8(node: object, target: object) -> bool:
    return isinstance(node, Node) and node.target == target and node.args[5] == torch.int8
