# SPDX-License-Identifier: Apache-2.0
"""16x8 linears (passes/quantizer_int16.py) onto arm_fully_connected_s16.

After FoldAndAnnotateQParamsPass and the activation fusion, a linear whose input and
output are INT16 reads its int16 input and int8 weights directly, its parameters in its
metadata, and its fused clamp in its output's bounds. It becomes
et_zephyr::quantized_linear_s16 in place, its float bias quantized here to the int64
the kernel adds (bias / (input scale * weight scale), rounded to nearest). Before
AtenToCortexMPass, whose INT8 kernels would otherwise take it.
"""

from __future__ import annotations

import torch
from executorch.backends.cortex_m.passes.passes_utils import quantize_multiplier_aot
from executorch.backends.transforms.utils import get_param_tensor
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass, PassResult
from torch.export import ExportedProgram
from torch.fx import GraphModule, Node

from ..errors import ExportError
from ..firmware.kernels import source_line
from ..reference import (
    linear_s16,
    own_ops,  # noqa: F401  (defines et_zephyr::quantized_linear_s16)
)
from .int8_rewrites import add_constant

_LINEAR = exir_ops.edge.aten.linear.default
_KERNEL = exir_ops.edge.et_zephyr.quantized_linear_s16.default


class Int16LinearsToKernel(ExportPass):
    """`linear` on INT16 activations becomes `et_zephyr::quantized_linear_s16`."""

    def __init__(self, exported_program: ExportedProgram) -> None:
        super().__init__()
        self.exported_program = exported_program

    def call(self, graph_module: GraphModule) -> PassResult:
        replaced = 0
        for node in list(graph_module.graph.nodes):
            if node.target == _LINEAR and _int16_input(node):
                self._lower(node)
                replaced += 1
        graph_module.recompile()
        return PassResult(graph_module, replaced > 0)

    def _lower(self, node: Node) -> None:
        input_qparams, weight_qparams = node.meta["input_qparams"][0], node.meta["input_qparams"][1]
        output_qparams = node.meta["output_qparams"][0]
        if not isinstance(weight_qparams.scale, float) or weight_qparams.zp != 0:
            raise ExportError(
                f"{node.name}: a 16x8 linear takes symmetric per-tensor weights "
                f"({source_line(node)})"
            )
        product_scale = float(input_qparams.scale) * weight_qparams.scale
        multiplier, shift = quantize_multiplier_aot(product_scale / float(output_qparams.scale))
        if not linear_s16.MIN_SHIFT <= shift <= linear_s16.MAX_SHIFT:
            raise ExportError(
                f"{node.name}: the 16x8 linear's output scale is {output_qparams.scale:g}, "
                f"{2.0**shift:g} times too small for arm_fully_connected_s16 "
                f"({source_line(node)})"
            )
        graph = node.graph
        biases = None
        if len(node.args) > 2 and node.args[2] is not None:
            bias = get_param_tensor(self.exported_program, node.args[2])
            assert bias is not None
            quantized = torch.round(bias.to(torch.float64) / product_scale).to(torch.int64)
            biases = add_constant(self.exported_program, graph, f"{node.name}_biases", quantized)
        weights = node.args[1]
        node.target = _KERNEL
        node.args = (
            node.args[0],
            weights,
            biases,
            multiplier,
            shift,
            int(output_qparams.qmin),
            int(output_qparams.qmax),
        )
        value = node.meta["val"]
        with value.fake_mode:
            node.meta["val"] = value.new_empty(value.shape, dtype=torch.int16)


def _int16_input(node: Node) -> bool:
    qparams = node.meta.get("input_qparams", {}).get(0)
    return qparams is not None and qparams.dtype == torch.int16
