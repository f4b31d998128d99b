# SPDX-License-Identifier: Apache-2.0
"""ReLU, ReLU6 and clamps fused into the layer before them, even where their output's
quantization reaches past their bounds.

ExecuTorch's ActivationFusionPass fuses an activation by clamping the layer's output to
the activation's quantized bounds, and only where those bounds are the ends of the
output's int8 range. An activation whose output shares its parameters with a
concatenation (a YOLO neck joins a ReLU's output with signed values) has a range below
zero, so upstream leaves the ReLU unfused and the convolution before it unlowered: an
int8 aten::convolution on a portable kernel, which computes nonsense. The clamp is
the activation whatever the range: the output simply never takes the values past it.
"""

from __future__ import annotations

from executorch.backends.cortex_m.passes.activation_fusion_pass import ActivationFusionPass
from executorch.backends.cortex_m.passes.passes_utils import get_activation_bounds, quantize_val
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Node

_CLAMPS = {
    exir_ops.edge.aten.relu.default,
    exir_ops.edge.aten.hardtanh.default,
    exir_ops.edge.aten.clamp.default,
}


class ActivationFusionWithinRange(ActivationFusionPass):
    """ActivationFusionPass whose clamp bounds may lie inside the output's int8 range."""

    def _get_validated_qparams(self, node: Node, input_node: Node):  # type: ignore[no-untyped-def]
        if node.target in _CLAMPS and "output_qparams" in node.meta:
            _narrow_to_bounds(node)
        return super()._get_validated_qparams(node, input_node)


def _narrow_to_bounds(node: Node) -> None:
    """Make the output's int8 range the activation's quantized bounds, where they lie
    inside it."""
    qparams = node.meta["output_qparams"][0]
    bounds = get_activation_bounds(node)
    if bounds is None or not isinstance(qparams.scale, float) or not isinstance(qparams.zp, int):
        return
    low, high = bounds
    args = (qparams.scale, qparams.zp, qparams.qmin, qparams.qmax)
    qmin = int(quantize_val(low, *args)) if low is not None else qparams.qmin
    qmax = int(quantize_val(high, *args)) if high is not None else qparams.qmax
    if qparams.qmin <= qmin <= qmax <= qparams.qmax:
        node.meta["output_qparams"][0] = qparams._replace(qmin=qmin, qmax=qmax)
