# SPDX-License-Identifier: Apache-2.0
"""Elementwise float functions between int8 tensors as 256-entry lookup tables.

The Cortex-M quantizer annotates sigmoid, tanh and silu; any other elementwise function
(GELU in a transformer's MLP, ELU, x ** 2, exp, ...) stays a float operator between a
dequantize and a quantize, on a portable kernel whose float math need not match the
host's bit for bit. With an int8 input there are only 256 possible inputs: the whole
`quantize(f(dequantize(x)))` is a table computed here, with the very dequantize, f and
quantize of the fake-quant model, and run by cortex_m::quantized_activation (one load
per element). The host reference then runs the same table as the device.
"""

from __future__ import annotations

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass, PassResult
from torch.export import ExportedProgram
from torch.fx import GraphModule, Node

from .int8_rewrites import add_constant, int8_quantizers, is_int8_dequantize, replace_quantizers

_LOOKUP = exir_ops.edge.cortex_m.quantized_activation.default
_aten = exir_ops.edge.aten

# Functions of one tensor, elementwise, whose other arguments are constants, and that
# the Cortex-M quantizer leaves in float: sigmoid, tanh, silu, hardswish and clamp it
# quantizes itself, and upstream's passes lower them.
ELEMENTWISE: frozenset[object] = frozenset(
    {
        _aten.gelu.default,
        _aten.elu.default,
        _aten.leaky_relu.default,
        _aten.relu.default,
        _aten.softplus.default,
        _aten.exp.default,
        _aten.expm1.default,
        _aten.log.default,
        _aten.log1p.default,
        _aten.sqrt.default,
        _aten.rsqrt.default,
        _aten.reciprocal.default,
        _aten.abs.default,
        _aten.neg.default,
        _aten.erf.default,
        _aten.sin.default,
        _aten.cos.default,
        _aten.pow.Tensor_Scalar,
    }
)


def function_name(op: object) -> str:
    """What `--float-ops` calls an elementwise function: `gelu`, `pow`, ..."""
    return op._op._schema.name.removeprefix("aten::")  # type: ignore[attr-defined]


class ElementwiseToLookupTables(ExportPass):
    """`quantize(f(dequantize(x)))` with int8 on both sides becomes
    `quantized_activation(x, table)`, for each f in `functions`.

    Runs after FoldAndAnnotateQParamsPass, in place: a retrace there would type an int8
    linear's output int32 (see cortex_m_passes.py), which the lookup refuses."""

    functions: frozenset[object] = ELEMENTWISE

    def __init__(self, exported_program: ExportedProgram) -> None:
        super().__init__()
        self.exported_program = exported_program

    def call(self, graph_module: GraphModule) -> PassResult:
        graph = graph_module.graph
        replaced = 0
        for node in list(graph.nodes):
            if node.target not in self.functions:
                continue
            source = node.args[0]
            quantizers = int8_quantizers(node)
            if not is_int8_dequantize(source) or len(source.users) != 1 or quantizers is None:
                continue
            table = lookup_table(node, source, quantizers[0])
            table_node = add_constant(self.exported_program, graph, f"{node.name}_table", table)
            replace_quantizers(graph, quantizers, node, _LOOKUP, (source.args[0], table_node))
            graph.erase_node(node)
            graph.erase_node(source)
            replaced += 1
        graph_module.recompile()
        return PassResult(graph_module, replaced > 0)


def lookup_tables_except(names: frozenset[str]) -> type[ElementwiseToLookupTables]:
    """The pass for every function but those named, which stay in float."""
    kept = frozenset(op for op in ELEMENTWISE if function_name(op) not in names)
    return type(
        ElementwiseToLookupTables.__name__, (ElementwiseToLookupTables,), {"functions": kept}
    )


def lookup_table(function: Node, dequantize: Node, quantize: Node) -> torch.Tensor:
    """The int8 output for each int8 input -128..127, computed as the fake-quant model
    computes it."""
    codes = torch.arange(-128, 128, dtype=torch.int8)
    values = torch.ops.quantized_decomposed.dequantize_per_tensor(codes, *dequantize.args[1:])
    results = function.target(values, *function.args[1:], **function.kwargs)
    return torch.ops.quantized_decomposed.quantize_per_tensor(results, *quantize.args[1:])
