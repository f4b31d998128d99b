# SPDX-License-Identifier: Apache-2.0
"""ExecuTorch's CortexMQuantizer, with resizing and channel shuffles kept in INT8,
softmaxes over channels-last channels taken, and whole LSTM and GRU layers' inputs and
outputs quantized.

A nearest resize only copies elements, and a bilinear one takes weighted means whose
weights sum to one: their outputs can share their input's quantization parameters, as
a slice or a concatenation does. Upstream's list of such operators
(SharedQspecQuantizer) lacks them, and every U-Net or YOLO neck then dequantizes,
resizes in float and quantizes again. The portable kernel resizes int8 tensors nearest
in either layout; bilinear ones run on et-zephyr's kernel (passes/resize_kernels.py).

A whole LSTM or GRU layer (passes/recurrent_layers.py) quantizes its weights itself when
it is lowered (per gate, as arm_lstm_unidirectional_s8 takes them): only its input and
output are annotated here.

The quantizer's own graph passes retrace the model, so the softmaxes' layout
(passes/channel_softmax.py) is set after them, before annotation.
"""

from __future__ import annotations

import torch
from executorch.backends.arm.quantizer.arm_quantizer_utils import SharedQspecQuantizer
from executorch.backends.cortex_m.quantizer.quantization_configs import INT8_PER_TENSOR_CONFIG
from executorch.backends.cortex_m.quantizer.quantizer import (
    CortexMQuantizer,
    mark_node_as_annotated,
)
from executorch.backends.cortex_m.quantizer_reporter import QuantizerInfo, QuantizerReporterUser
from torch.fx import GraphModule
from torchao.quantization.pt2e.quantizer import Quantizer

from ..reference import own_ops  # noqa: F401  (defines et_zephyr::channel_shuffle, ::causal_pad)
from .channel_softmax import softmax_in_input_layout
from .recurrent_layers import WHOLE_LAYERS

_aten = torch.ops.aten
# Operators whose outputs are their inputs' elements, or weighted means of them with
# weights summing to one: they keep the input's range and zero point.
SHARE_INPUT_PARAMETERS = (
    _aten.upsample_nearest2d.vec,
    _aten.upsample_nearest2d.default,
    _aten.upsample_bilinear2d.vec,
    _aten.upsample_bilinear2d.default,
    _aten.avg_pool2d.default,
    torch.ops.et_zephyr.channel_shuffle.default,
    torch.ops.et_zephyr.causal_pad.default,
)


class WholeRecurrentQuantizer(Quantizer, QuantizerReporterUser):
    """INT8 per-tensor input and output for each et_zephyr::lstm and et_zephyr::gru."""

    def __init__(self) -> None:
        Quantizer.__init__(self)
        QuantizerReporterUser.__init__(self)

    def annotate(self, model: GraphModule) -> GraphModule:
        for node in model.graph.nodes:
            if node.op != "call_function" or node.target not in WHOLE_LAYERS:
                continue
            input_spec = INT8_PER_TENSOR_CONFIG.get_input_act_qspec()
            output_spec = INT8_PER_TENSOR_CONFIG.get_output_act_qspec()
            mark_node_as_annotated(node, {node.args[0]: input_spec}, output_spec, True)
            self.report_accept([node])
        return model

    def get_quantizer_info(self) -> QuantizerInfo:
        return QuantizerInfo(
            type(self).__name__,
            ", ".join(map(str, WHOLE_LAYERS)),
            INT8_PER_TENSOR_CONFIG.label or "",
            __name__,
        )

    def validate(self, model: GraphModule) -> None:
        return None


class EtZephyrQuantizer(CortexMQuantizer):
    """CortexMQuantizer whose shared-parameter operators include nearest resizing, whose
    softmaxes over channels-last channels keep that layout and which quantizes whole
    recurrent layers' edges."""

    def __init__(self) -> None:
        super().__init__()
        targets = list(SharedQspecQuantizer.SHARED_QSPEC_OPS_DEFAULT) + list(SHARE_INPUT_PARAMETERS)
        self.quantizers = [WholeRecurrentQuantizer()] + [
            SharedQspecQuantizer(targets) if isinstance(q, SharedQspecQuantizer) else q
            for q in self.quantizers
        ]

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        model = super().transform_for_annotation(model)
        softmax_in_input_layout(model)
        return model


def cortex_m_quantizer() -> CortexMQuantizer:
    return EtZephyrQuantizer()
