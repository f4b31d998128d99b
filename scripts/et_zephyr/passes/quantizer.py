# SPDX-License-Identifier: Apache-2.0
"""ExecuTorch's CortexMQuantizer, with resizing and channel shuffles kept in INT8 and
softmaxes over channels-last channels taken.

A nearest resize only copies elements, and a bilinear one takes weighted means whose
weights sum to one: their outputs can share their input's quantization parameters, as
a slice or a concatenation does. Upstream's list of such operators
(SharedQspecQuantizer) lacks them, and every U-Net or YOLO neck then dequantizes,
resizes in float and quantizes again. The portable kernel resizes int8 tensors nearest
in either layout; bilinear ones run on et-zephyr's kernel (passes/resize_kernels.py).

The quantizer's own graph passes retrace the model, so the softmaxes' layout
(passes/channel_softmax.py) is set after them, before annotation.
"""

from __future__ import annotations

import torch
from executorch.backends.arm.quantizer.arm_quantizer_utils import SharedQspecQuantizer
from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
from torch.fx import GraphModule

from ..reference import own_ops  # noqa: F401  (defines et_zephyr::channel_shuffle)
from .channel_softmax import softmax_in_input_layout

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
)


class EtZephyrQuantizer(CortexMQuantizer):
    """CortexMQuantizer whose shared-parameter operators include nearest resizing and
    whose softmaxes over channels-last channels keep that layout."""

    def __init__(self) -> None:
        super().__init__()
        targets = list(SharedQspecQuantizer.SHARED_QSPEC_OPS_DEFAULT) + list(SHARE_INPUT_PARAMETERS)
        self.quantizers = [
            SharedQspecQuantizer(targets) if isinstance(q, SharedQspecQuantizer) else q
            for q in self.quantizers
        ]

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        model = super().transform_for_annotation(model)
        softmax_in_input_layout(model)
        return model


def cortex_m_quantizer() -> CortexMQuantizer:
    return EtZephyrQuantizer()
