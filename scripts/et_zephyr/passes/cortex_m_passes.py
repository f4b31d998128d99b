# SPDX-License-Identifier: Apache-2.0
"""ExecuTorch's Cortex-M pass list, with the two passes that retrace the graph replaced.

After FoldAndAnnotateQParamsPass the graph computes on int8 tensors, but its aten
operators are still the float ones: retracing them re-derives every dtype by type
promotion, and an int8 linear (int8 input and weight, int32 bias) comes out int32.
The first operator that checks its inputs' dtypes then fails: attention's
`softmax(...) @ v` is a bmm of an int8 and an int32 tensor ("expected scalar type
torch.int8 but found torch.int32", in ReplaceScalarWithTensorArgPass and, without it,
ReplaceQuantNodesPass). Both replacements edit the nodes in place instead.
"""

from __future__ import annotations

import torch
from executorch.backends.arm._passes import FoldAndAnnotateQParamsPass
from executorch.backends.cortex_m.passes.activation_fusion_pass import ActivationFusionPass
from executorch.backends.cortex_m.passes.aten_to_cortex_m_pass import AtenToCortexMPass
from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
from executorch.backends.cortex_m.passes.replace_quant_nodes_pass import ReplaceQuantNodesPass
from executorch.backends.transforms.replace_scalar_with_tensor import (
    ReplaceScalarWithTensorArgPass,
)
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass, PassResult
from torch.fx import GraphModule, Node

from .activation_bounds import ActivationFusionWithinRange
from .ceil_mode_pools import CeilModeMaxPoolsPadded
from .int16_lowering import Int16LayersToKernels
from .layer_norm_lowering import LayerNormToKernel
from .lookup_tables import ELEMENTWISE, function_name, lookup_tables_except

_QUANTIZE = exir_ops.edge.quantized_decomposed.quantize_per_tensor.default
_DEQUANTIZE = exir_ops.edge.quantized_decomposed.dequantize_per_tensor.default
_CORTEX_M_EDGES = {
    _QUANTIZE: exir_ops.edge.cortex_m.quantize_per_tensor.default,
    _DEQUANTIZE: exir_ops.edge.cortex_m.dequantize_per_tensor.default,
}
# arm_transpose_s8 takes up to four dimensions.
_TRANSPOSE_MAX_RANK = 4
_SCALAR_TO_TENSOR = {
    exir_ops.edge.aten.add.Scalar: exir_ops.edge.aten.add.Tensor,
    exir_ops.edge.aten.sub.Scalar: exir_ops.edge.aten.sub.Tensor,
    exir_ops.edge.aten.mul.Scalar: exir_ops.edge.aten.mul.Tensor,
    exir_ops.edge.aten.div.Scalar: exir_ops.edge.aten.div.Tensor,
}


class QuantNodesToCortexMInPlace(ExportPass):
    """ReplaceQuantNodesPass without the retrace: int8/int16 per-tensor quantize and
    dequantize nodes become cortex_m's, and nothing else is touched."""

    def call(self, graph_module: GraphModule) -> PassResult:
        modified = False
        for node in graph_module.graph.nodes:
            if node.target in _CORTEX_M_EDGES and ReplaceQuantNodesPass._is_qualified_node(
                node.args
            ):
                node.target = _CORTEX_M_EDGES[node.target]
                modified = True
        graph_module.recompile()
        return PassResult(graph_module, modified)


class ScalarArgsToTensorsInPlace(ExportPass):
    """ReplaceScalarWithTensorArgPass without the retrace: `add.Scalar(x, c)` (sub, mul,
    div) becomes `add.Tensor(x, full([1], c))`, the constant in x's dtype."""

    def call(self, graph_module: GraphModule) -> PassResult:
        graph = graph_module.graph
        modified = False
        for node in list(graph.nodes):
            if node.target not in _SCALAR_TO_TENSOR or "alpha" in node.kwargs:
                continue
            operand = node.args[0]
            assert isinstance(operand, Node)
            value = operand.meta["val"]
            with graph.inserting_before(node):
                constant = graph.call_function(
                    exir_ops.edge.aten.full.default,
                    ((1,), float(node.args[1])),
                    {"dtype": value.dtype, "device": value.device},
                )
            with value.fake_mode:
                constant.meta["val"] = torch.full((1,), float(node.args[1]), dtype=value.dtype)
            constant.meta["stack_trace"] = node.meta.get("stack_trace")
            node.target = _SCALAR_TO_TENSOR[node.target]
            node.args = (operand, constant, *node.args[2:])
            modified = True
        graph_module.recompile()
        return PassResult(graph_module, modified)


class QuantizedConstantsInPlace(ExportPass):
    """A constant `full` (a recurrent model's zero initial state) whose quantize
    FoldAndAnnotateQParamsPass folded away makes its int8 value directly: left a float
    full, its consumers' kernels would get float where they read int8."""

    def call(self, graph_module: GraphModule) -> PassResult:
        modified = False
        for node in graph_module.graph.nodes:
            output = node.meta.get("output_qparams", {}).get(0)
            if node.target != exir_ops.edge.aten.full.default or output is None:
                continue
            if node.kwargs.get("dtype") == output.dtype:
                continue
            value = round(float(node.args[1]) / output.scale) + output.zp
            value = max(output.qmin, min(output.qmax, value))
            node.args = (node.args[0], value)
            node.kwargs = {**node.kwargs, "dtype": output.dtype}
            fake = node.meta["val"]
            with fake.fake_mode:
                node.meta["val"] = torch.full(fake.shape, value, dtype=output.dtype)
            modified = True
        graph_module.recompile()
        return PassResult(graph_module, modified)


class PermutesToTransposesInPlace(ExportPass):
    """An int8 permute_copy onto CMSIS-NN's transpose (cortex_m::transpose), after
    AtenToCortexMPass. That pass does the same, but decides by the dtype a retrace
    left on the node, and a permute of an int8 linear's output (attention's head
    split) was typed int32 then: it stayed a portable permute, an index computation
    per byte. After AtenToCortexMPass's own retrace the dtypes are right."""

    def call(self, graph_module: GraphModule) -> PassResult:
        modified = False
        for node in graph_module.graph.nodes:
            if node.target != exir_ops.edge.aten.permute_copy.default:
                continue
            value = node.args[0].meta["val"]
            if value.dtype != torch.int8 or not 1 <= value.dim() <= _TRANSPOSE_MAX_RANK:
                continue
            node.target = exir_ops.edge.cortex_m.transpose.default
            node.args = (node.args[0], [p % value.dim() for p in node.args[1]])
            modified = True
        graph_module.recompile()
        return PassResult(graph_module, modified)


# What `--float-ops` can keep in float: the operators this pass list computes in
# integers where upstream's leaves them to portable float kernels.
LAYER_NORM = "layer_norm"
FLOAT_OPS: tuple[str, ...] = (LAYER_NORM, *sorted({function_name(op) for op in ELEMENTWISE}))


def pass_list(float_ops: frozenset[str] = frozenset()) -> list[type]:
    """Upstream's order, each retracing pass in its place; the lookup tables and
    LayerNorm once the quantization parameters are folded, except for `float_ops`; 16x8
    linears before upstream's INT8 lowering."""
    folded = [
        FoldAndAnnotateQParamsPass,
        QuantizedConstantsInPlace,
        lookup_tables_except(float_ops),
    ]
    if LAYER_NORM not in float_ops:
        folded.append(LayerNormToKernel)
    replacements: dict[type, list[type]] = {
        FoldAndAnnotateQParamsPass: folded,
        ReplaceScalarWithTensorArgPass: [ScalarArgsToTensorsInPlace],
        ReplaceQuantNodesPass: [QuantNodesToCortexMInPlace],
        AtenToCortexMPass: [
            CeilModeMaxPoolsPadded,
            Int16LayersToKernels,
            AtenToCortexMPass,
            PermutesToTransposesInPlace,
        ],
        ActivationFusionPass: [ActivationFusionWithinRange],
    }
    return [
        replacement
        for upstream in CortexMPassManager.pass_list
        for replacement in replacements.get(upstream, [upstream])
    ]
