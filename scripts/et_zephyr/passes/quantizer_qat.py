# SPDX-License-Identifier: Apache-2.0
"""The quantizer quantization-aware training prepares with: et-zephyr's INT8 one, each
observer replaced by a fake quantizer of the same dtype, range and scheme.

CortexMQuantizer's specifications observe only (a histogram of the activations, the
weights' min and max): trained through them, a model never sees the rounding and
clamping the Cortex-M kernels apply, and "QAT" is float fine-tuning. As torchao's QAT
configurations do, each range here is a moving average of the batches' min and max
(per channel for per-channel weights), and every forward pass rounds to it.
"""

from __future__ import annotations

import dataclasses

import torch
from torch.fx import GraphModule
from torchao.quantization.pt2e import (
    FusedMovingAvgObsFakeQuantize,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
)
from torchao.quantization.pt2e.quantizer import (
    QuantizationSpec,
    QuantizationSpecBase,
    Quantizer,
)
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

_PER_CHANNEL = (torch.per_channel_symmetric, torch.per_channel_affine)


class QatQuantizer(Quantizer):
    """Annotates as `quantizer` does, with fake quantizers for its observers."""

    def __init__(self, quantizer: Quantizer) -> None:
        super().__init__()
        self.quantizer = quantizer

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return self.quantizer.transform_for_annotation(model)

    def annotate(self, model: GraphModule) -> GraphModule:
        model = self.quantizer.annotate(model)
        for node in model.graph.nodes:
            annotation = node.meta.get(Q_ANNOTATION_KEY)
            if annotation is None:
                continue
            annotation.input_qspec_map = {
                edge: fake_quantized(spec) for edge, spec in annotation.input_qspec_map.items()
            }
            annotation.output_qspec = fake_quantized(annotation.output_qspec)
        return model

    def validate(self, model: GraphModule) -> None:
        self.quantizer.validate(model)


def fake_quantized(spec: QuantizationSpecBase | None) -> QuantizationSpecBase | None:
    """An observing spec as a fake-quantizing one. Shared, derived (biases) and fixed
    specs follow the ones they name or fake-quantize already in QAT."""
    if not isinstance(spec, QuantizationSpec):
        return spec
    observer = (
        MovingAveragePerChannelMinMaxObserver
        if spec.qscheme in _PER_CHANNEL
        else MovingAverageMinMaxObserver
    )
    fake_quant = FusedMovingAvgObsFakeQuantize.with_args(observer=observer)
    return dataclasses.replace(spec, observer_or_fake_quant_ctr=fake_quant)
