# SPDX-License-Identifier: Apache-2.0
"""16x8 quantization (`--activations int16`): INT16 activations and INT8 weights, as
CMSIS-NN's s16 kernels take them.

Activations are symmetric, zero point 0, in [-32767, 32767]: the s16 kernels have no
input or output offsets. Ranges come from the calibration's minimum and maximum (a
histogram's clipping buys little with 65,535 steps, and costs saturation on the inputs
the calibration missed). Weights are INT8, symmetric in [-127, 127] and per tensor, as
arm_fully_connected_s16 takes them; with them and inputs within ±32767 the s16 kernels'
32-bit partial sums (the first 512 columns of a row) cannot wrap. Biases are left in
float here: the lowering quantizes them to the 64-bit integers the kernels add
(passes/int16_lowering.py).

Only the operators with an s16 kernel in et-zephyr are annotated; the others keep their
float inputs and outputs and stay in float, and the export report names them.
"""

from __future__ import annotations

from typing import cast

import torch
from executorch.backends.arm.quantizer.arm_quantizer_utils import (
    PatternCheck,
    PatternQuantizer,
    SharedQspecQuantizer,
)
from executorch.backends.arm.quantizer.quantization_config import QuantizationConfig
from executorch.backends.cortex_m.quantizer.node_finders import NodeTargetNodeFinder
from executorch.backends.cortex_m.quantizer.pattern_matcher import PatternMatcher
from executorch.backends.cortex_m.quantizer.quantization_configs import (
    CortexMQuantizationConfig,
)
from executorch.backends.cortex_m.quantizer.quantizer_support import LINEAR_OP_PATTERNS
from torch._ops import OpOverload
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e import MinMaxObserver
from torchao.quantization.pt2e.quantizer import ComposableQuantizer, QuantizationSpec

from .quantizer import EtZephyrQuantizer

INT16_MIN = -32767
INT16_MAX = 32767
WEIGHT_MIN = -127
WEIGHT_MAX = 127

INT16_ACTIVATION_QSPEC = QuantizationSpec(
    dtype=torch.int16,
    quant_min=INT16_MIN,
    quant_max=INT16_MAX,
    qscheme=torch.per_tensor_symmetric,
    observer_or_fake_quant_ctr=MinMaxObserver,
)
INT8_SYMMETRIC_WEIGHT_QSPEC = QuantizationSpec(
    dtype=torch.int8,
    quant_min=WEIGHT_MIN,
    quant_max=WEIGHT_MAX,
    qscheme=torch.per_tensor_symmetric,
    observer_or_fake_quant_ctr=MinMaxObserver,
)
INT16_CONFIG = CortexMQuantizationConfig(
    INT16_ACTIVATION_QSPEC,
    INT16_ACTIVATION_QSPEC,
    INT8_SYMMETRIC_WEIGHT_QSPEC,
    None,
    f"{__name__}.INT16_CONFIG",
)


class Int16PerTensorCheck(PatternCheck):
    """Upstream's checks accept INT8 configurations only."""

    @classmethod
    def check_quantization_config(
        cls, pattern: list[Node], quantization_config: QuantizationConfig
    ) -> bool:
        spec = quantization_config.get_input_act_qspec()
        return (
            isinstance(spec, QuantizationSpec)
            and spec.dtype == torch.int16
            and spec.qscheme == torch.per_tensor_symmetric
        )


_HARDSIGMOIDS = {torch.ops.aten.hardsigmoid.default, torch.ops.aten.hardsigmoid_.default}
# A linear and the clamp fused into it. Not a hard sigmoid: fused, it moves the
# output's zero point, and the s16 kernels have none.
INT16_PATTERNS: dict[tuple[OpOverload, ...], type[PatternCheck]] = {
    pattern: Int16PerTensorCheck
    for pattern in LINEAR_OP_PATTERNS
    if not _HARDSIGMOIDS.intersection(pattern)
}


class Int16Quantizer(ComposableQuantizer):
    """INT16 activations and INT8 weights on the operators with s16 kernels, and the
    operators that only move their input's values (reshapes, slices, concatenations)
    sharing their neighbours' parameters; the rest left in float."""

    def __init__(self) -> None:
        targets = sorted({pattern[0] for pattern in INT16_PATTERNS}, key=str)
        matcher = PatternMatcher(
            cast(dict[tuple[OpOverload, ...], type[PatternCheck] | None], INT16_PATTERNS),
            support_dict_name=f"{__name__}.INT16_PATTERNS",
        )
        super().__init__(
            [
                PatternQuantizer(
                    INT16_CONFIG,
                    node_finder=NodeTargetNodeFinder(targets),
                    pattern_matcher=matcher,
                ),
                SharedQspecQuantizer(),
            ]
        )

    def validate(self, model: GraphModule) -> None:
        return None

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return EtZephyrQuantizer().transform_for_annotation(model)
