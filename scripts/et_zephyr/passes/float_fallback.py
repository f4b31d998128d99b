# SPDX-License-Identifier: Apache-2.0
"""Operators kept whole for the Cortex-M passes, decomposed where those left them in float.

to_edge preserves linear, hardsigmoid, hardswish and silu so that the Cortex-M passes can
match them; where a model's quantization did not cover one (a float tail, a pattern the
quantizer skips), it stays an operator that ExecuTorch's portable library has no kernel
for. This pass writes each such leftover as the operators it is made of, all with
portable kernels: linear as a transpose and addmm (or mm), hardsigmoid as
clamp(x + 3, 0, 6) / 6, hardswish as x times that, silu as x * sigmoid(x).
"""

from __future__ import annotations

from math import prod

from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass, NodeMetadata, ProxyValue
from executorch.exir.program._program import _transform
from torch.export import ExportedProgram

_aten = exir_ops.edge.aten
_LINEAR = _aten.linear.default
_HARDSIGMOID = {_aten.hardsigmoid.default, _aten.hardsigmoid_.default}
_HARDSWISH = {_aten.hardswish.default, _aten.hardswish_.default}
_SILU = _aten.silu.default


class DecomposeFloatPreservedOps(ExportPass):
    """One preserved operator at a time into portable ones; everything else unchanged."""

    def call_operator(self, op, args, kwargs, meta: NodeMetadata):  # type: ignore[no-untyped-def]
        if op == _LINEAR:
            return self._linear(*args, meta=meta)
        if op in _HARDSIGMOID:
            return self._hardsigmoid(args[0], meta)
        if op in _HARDSWISH:
            return self._op(_aten.mul.Tensor, (args[0], self._hardsigmoid(args[0], meta)), meta)
        if op == _SILU:
            sigmoid = self._op(_aten.sigmoid.default, (args[0],), meta)
            return self._op(_aten.mul.Tensor, (args[0], sigmoid), meta)
        return super().call_operator(op, args, kwargs, meta)

    def _op(self, op, args, meta):  # type: ignore[no-untyped-def]
        return super().call_operator(op, args, {}, meta)

    def _hardsigmoid(self, x: ProxyValue, meta: NodeMetadata) -> ProxyValue:
        shifted = self._op(_aten.add.Scalar, (x, 3.0), meta)
        clamped = self._op(_aten.clamp.default, (shifted, 0.0, 6.0), meta)
        return self._op(_aten.div.Scalar, (clamped, 6.0), meta)

    def _linear(
        self,
        x: ProxyValue,
        weight: ProxyValue,
        bias: ProxyValue | None = None,
        *,
        meta: NodeMetadata,
    ) -> ProxyValue:
        shape = list(x.to_tensor().shape)
        out_features = weight.to_tensor().shape[0]
        transposed = self._op(_aten.permute_copy.default, (weight, [1, 0]), meta)
        rows = (
            x
            if len(shape) == 2
            else self._op(_aten.view_copy.default, (x, [prod(shape[:-1]), shape[-1]]), meta)
        )
        if bias is None:
            product = self._op(_aten.mm.default, (rows, transposed), meta)
        else:
            product = self._op(_aten.addmm.default, (bias, rows, transposed), meta)
        if len(shape) == 2:
            return product
        return self._op(_aten.view_copy.default, (product, [*shape[:-1], out_features]), meta)


def decompose_float_preserved_ops(program: ExportedProgram) -> ExportedProgram:
    """The program with every preserved operator the Cortex-M passes left in float
    written as portable operators (unchanged when there is none)."""
    targets = {_LINEAR, _SILU, *_HARDSIGMOID, *_HARDSWISH}
    if not any(node.target in targets for node in program.graph_module.graph.nodes):
        return program
    return _transform(program, DecomposeFloatPreservedOps())
