# SPDX-License-Identifier: Apache-2.0
"""ExecuTorch's CortexMQuantizer, with nearest-neighbour resizing and channel shuffles
kept in INT8 and softmaxes over channels-last channels taken.

A nearest resize only copies elements, so its output can share its input's
quantization parameters exactly as a slice or a concatenation does; upstream's list of
such operators (SharedQspecQuantizer) lacks it, and every U-Net or YOLO neck then
dequantizes, resizes in float and quantizes again. The portable kernel resizes int8
tensors in either layout (reference/resize.py is its arithmetic).

The quantizer's own graph passes retrace the model, so the softmaxes' layout
(passes/channel_softmax.py) is set after them, before annotation.
"""

from __future__ import annotations

import torch
from executorch.backends.arm.quantizer.arm_quantizer_utils import SharedQspecQuantizer
from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
from torch.fx import GraphModule

from . import own_ops  # noqa: F401  (defines et_zephyr::channel_shuffle)
from .passes.channel_softmax import softmax_in_input_layout

_aten = torch.ops.aten
# Operators whose outputs are some of their inputs' elements, unchanged.
COPY_ELEMENTS = (
    _aten.upsample_nearest2d.vec,
    _aten.upsample_nearest2d.default,
    torch.ops.et_zephyr.channel_shuffle.default,
)


class EtZephyrQuantizer(CortexMQuantizer):
    """CortexMQuantizer whose shared-parameter operators include nearest resizing and
    whose softmaxes over channels-last channels keep that layout."""

    def __init__(self) -> None:
        super().__init__()
        targets = list(SharedQspecQuantizer.SHARED_QSPEC_OPS_DEFAULT) + list(COPY_ELEMENTS)
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
