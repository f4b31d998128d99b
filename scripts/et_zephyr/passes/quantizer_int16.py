# SPDX-License-Identifier: Apache-2.0
"""16x8 quantization (`--activations int16`): INT16 activations and INT8 weights, as
CMSIS-NN's s16 kernels take them.

Activations are symmetric, zero point 0, in [-32767, 32767]: the s16 kernels have no
input or output offsets. Ranges come from the calibration's minimum and maximum (a
histogram's clipping buys little with 65,535 steps, and costs saturation on the inputs
the calibration missed). Weights are INT8, symmetric in [-127, 127]: per tensor for
linears, as arm_fully_connected_s16 takes them, per output channel for convolutions; with
them and inputs within ±32767 a linear's 32-bit partial sums (the first 512 columns of a
row) cannot wrap (a convolution's bound is checked per layer when it is lowered). Biases
are left in float here: the lowering quantizes them to the 64-bit integers the kernels
add (passes/int16_lowering.py).

Only the operators with an s16 kernel in et-zephyr are annotated (linears, plain and
depthwise convolutions, average and max pools, additions, with a fused ReLU or clamp);
the others keep their float inputs and outputs and stay in float, and the export report
names them. Whole LSTM and GRU layers keep their INT8 kernels, their edges converted
through float.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import cast

import torch
from executorch.backends.arm._passes.arm_pass_utils import get_first_fake_tensor
from executorch.backends.arm.quantizer.arm_quantizer_utils import (
    PatternCheck,
    PatternQuantizer,
    SharedQspecQuantizer,
)
from executorch.backends.arm.quantizer.quantization_config import QuantizationConfig
from executorch.backends.cortex_m.passes.passes_utils import is_channels_last
from executorch.backends.cortex_m.quantizer.node_finders import NodeTargetNodeFinder
from executorch.backends.cortex_m.quantizer.pattern_matcher import PatternMatcher
from executorch.backends.cortex_m.quantizer.quantization_configs import (
    CortexMQuantizationConfig,
)
from executorch.backends.cortex_m.quantizer.quantizer import mark_node_as_annotated
from executorch.backends.cortex_m.quantizer.quantizer_support import (
    CONV_OP_PATTERNS,
    LINEAR_OP_PATTERNS,
)
from torch._ops import OpOverload
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e import MinMaxObserver, PerChannelMinMaxObserver
from torchao.quantization.pt2e.quantizer import ComposableQuantizer, QuantizationSpec, Quantizer

from .quantizer import EtZephyrQuantizer, WholeRecurrentQuantizer

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
INT8_SYMMETRIC_PER_CHANNEL_WEIGHT_QSPEC = QuantizationSpec(
    dtype=torch.int8,
    quant_min=WEIGHT_MIN,
    quant_max=WEIGHT_MAX,
    qscheme=torch.per_channel_symmetric,
    ch_axis=0,
    observer_or_fake_quant_ctr=PerChannelMinMaxObserver,
)
INT16_CONFIG = CortexMQuantizationConfig(
    INT16_ACTIVATION_QSPEC,
    INT16_ACTIVATION_QSPEC,
    INT8_SYMMETRIC_WEIGHT_QSPEC,
    None,
    f"{__name__}.INT16_CONFIG",
)
# Convolutions: weights per output channel, as the s16 convolutions take them.
INT16_PER_CHANNEL_CONFIG = CortexMQuantizationConfig(
    INT16_ACTIVATION_QSPEC,
    INT16_ACTIVATION_QSPEC,
    INT8_SYMMETRIC_PER_CHANNEL_WEIGHT_QSPEC,
    None,
    f"{__name__}.INT16_PER_CHANNEL_CONFIG",
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


class Int16ConvolutionCheck(Int16PerTensorCheck):
    """A channels-last convolution the s16 kernels run: plain (one group) or depthwise."""

    @classmethod
    def check_pattern(cls, pattern: list[Node]) -> bool:
        convolution = pattern[0]
        groups = convolution.args[6] if len(convolution.args) > 6 else 1
        value = get_first_fake_tensor(convolution.args[0])
        return (
            all(is_channels_last(get_first_fake_tensor(node)) for node in pattern)
            and value.dim() == 4
            and (groups == 1 or groups == value.shape[1])
        )


class Int16AvgPoolCheck(Int16PerTensorCheck):
    """An average pool arm_avgpool_s16 runs: floor mode, the divisor the window's
    positions inside the input (no padding, or padding left out of the count)."""

    @classmethod
    def check_pattern(cls, pattern: list[Node]) -> bool:
        pool = pattern[0]
        args = [*pool.args, *[None] * 7][:7]
        padding, ceil_mode, count_include_pad, divisor = args[3] or [0], args[4], args[5], args[6]
        padded = any(padding)
        return (
            not ceil_mode
            and divisor is None
            and (not padded or count_include_pad is False)
            and is_channels_last(get_first_fake_tensor(pool.args[0]))
        )


class Int16MaxPoolCheck(Int16PerTensorCheck):
    """A max pool arm_max_pool_s16 runs: floor mode, no dilation."""

    @classmethod
    def check_pattern(cls, pattern: list[Node]) -> bool:
        pool = pattern[0]
        args = [*pool.args, *[None] * 6][:6]
        dilation, ceil_mode = args[4] or [1], args[5]
        return (
            not ceil_mode
            and all(d == 1 for d in dilation)
            and is_channels_last(get_first_fake_tensor(pool.args[0]))
        )


class Int16AddCheck(Int16PerTensorCheck):
    """Two tensors of one shape: arm_elementwise_add_s16 does not broadcast."""

    @classmethod
    def check_pattern(cls, pattern: list[Node]) -> bool:
        inputs = pattern[0].all_input_nodes
        if len(inputs) != 2:
            return False
        a, b = (get_first_fake_tensor(node) for node in inputs)
        return a.shape == b.shape and a.stride() == b.stride()


_HARDSIGMOIDS = {torch.ops.aten.hardsigmoid.default, torch.ops.aten.hardsigmoid_.default}
_aten = torch.ops.aten
_ACTIVATIONS = (
    _aten.relu.default,
    _aten.relu_.default,
    _aten.hardtanh.default,
    _aten.clamp.default,
)
# A linear or convolution and the clamp fused into it. Not a hard sigmoid: fused, it
# moves the output's zero point, and the s16 kernels have none.
LINEAR_PATTERNS: dict[tuple[OpOverload, ...], type[PatternCheck]] = {
    pattern: Int16PerTensorCheck
    for pattern in LINEAR_OP_PATTERNS
    if not _HARDSIGMOIDS.intersection(pattern)
}
CONVOLUTION_PATTERNS: dict[tuple[OpOverload, ...], type[PatternCheck]] = {
    pattern: Int16ConvolutionCheck
    for pattern in CONV_OP_PATTERNS
    if not _HARDSIGMOIDS.intersection(pattern)
}
# Pools keep their input's parameters (CortexMQuantizationConfig shares them).
POOL_PATTERNS: dict[tuple[OpOverload, ...], type[PatternCheck]] = {
    (_aten.avg_pool2d.default,): Int16AvgPoolCheck,
    (_aten.max_pool2d.default,): Int16MaxPoolCheck,
    **{(_aten.max_pool2d.default, activation): Int16MaxPoolCheck for activation in _ACTIVATIONS},
}
ADD_PATTERNS: dict[tuple[OpOverload, ...], type[PatternCheck]] = {
    (_aten.add.Tensor,): Int16AddCheck,
    **{(_aten.add.Tensor, activation): Int16AddCheck for activation in _ACTIVATIONS},
}
INT16_PATTERNS = LINEAR_PATTERNS | CONVOLUTION_PATTERNS | POOL_PATTERNS | ADD_PATTERNS


class Int16Quantizer(ComposableQuantizer):
    """INT16 activations and INT8 weights on the operators with s16 kernels, and the
    operators that only move their input's values (reshapes, slices, concatenations)
    sharing their neighbours' parameters; the rest left in float."""

    def __init__(self) -> None:
        matcher = PatternMatcher(
            cast(dict[tuple[OpOverload, ...], type[PatternCheck] | None], INT16_PATTERNS),
            support_dict_name=f"{__name__}.INT16_PATTERNS",
        )
        # Whole LSTM and GRU layers stay INT8 (CMSIS-NN's s8 LSTM, et-zephyr's GRU).
        super().__init__(
            [WholeRecurrentQuantizer()]
            + [
                PatternQuantizer(config, node_finder=_first_of(patterns), pattern_matcher=matcher)
                for config, patterns in (
                    (INT16_PER_CHANNEL_CONFIG, CONVOLUTION_PATTERNS),
                    (INT16_CONFIG, LINEAR_PATTERNS | POOL_PATTERNS | ADD_PATTERNS),
                )
            ]
            + [SharedQspecQuantizer()]
        )

    def validate(self, model: GraphModule) -> None:
        return None


def _first_of(patterns: dict[tuple[OpOverload, ...], type[PatternCheck]]) -> NodeTargetNodeFinder:
    return NodeTargetNodeFinder(sorted({pattern[0] for pattern in patterns}, key=str))

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return EtZephyrQuantizer().transform_for_annotation(model)


class MixedPrecisionQuantizer(ComposableQuantizer):
    """16x8 on the named linears and convolutions (`--precision auto`), INT8 on the rest
    as EtZephyrQuantizer quantizes it; where the two meet, the tensor is converted
    through float."""

    def __init__(self, int16_layers: Iterable[str]) -> None:
        names = set(int16_layers)
        matcher = PatternMatcher(
            cast(dict[tuple[OpOverload, ...], type[PatternCheck] | None], INT16_PATTERNS),
            support_dict_name=f"{__name__}.INT16_PATTERNS",
        )
        int16 = [
            PatternQuantizer(config, node_finder=_named(names, patterns), pattern_matcher=matcher)
            for config, patterns in (
                (INT16_PER_CHANNEL_CONFIG, CONVOLUTION_PATTERNS),
                (INT16_CONFIG, LINEAR_PATTERNS),
            )
        ]
        # The named layers and their edges first: the INT8 quantizers leave a matched node
        # alone.
        super().__init__([_Int16Edges(names)] + int16 + EtZephyrQuantizer().quantizers)

    def validate(self, model: GraphModule) -> None:
        return None

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return EtZephyrQuantizer().transform_for_annotation(model)


class _Int16Edges(Quantizer):
    """A model input read only by 16x8 layers is quantized to INT16 once, not to INT8 and
    then to INT16; the outputs keep their producers' quantization (an INT16 layer's output
    is not squeezed into INT8 on its way out)."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names

    def annotate(self, model: GraphModule) -> GraphModule:
        for node in model.graph.nodes:
            if node.op == "output":
                node.meta[PatternMatcher.Q_PATTERN_MATCHED_KEY] = True
            elif (
                node.op == "placeholder"
                and node.users
                and all(user.name in self.names for user in node.users)
            ):
                mark_node_as_annotated(node, {}, INT16_ACTIVATION_QSPEC, True)
                node.meta[PatternMatcher.Q_PATTERN_MATCHED_KEY] = True
        return model

    def validate(self, model: GraphModule) -> None:
        return None


class _NamedNodes(NodeTargetNodeFinder):
    """The nodes of these targets with one of these names."""

    def __init__(self, names: set[str], targets: list[OpOverload]) -> None:
        super().__init__(targets)
        self.names = names

    def find_nodes(self, model: GraphModule) -> Iterator[Node]:
        return (node for node in super().find_nodes(model) if node.name in self.names)


def _named(names: set[str], patterns: dict[tuple[OpOverload, ...], type[PatternCheck]]):
    return _NamedNodes(names, sorted({pattern[0] for pattern in patterns}, key=str))


def mixed_precision_candidates(model: GraphModule) -> list[Node]:
    """The linears and convolutions a 16x8 kernel could take, in graph order (`model`
    already through transform_for_annotation)."""
    targets = {pattern[0] for pattern in LINEAR_PATTERNS | CONVOLUTION_PATTERNS}
    return [node for node in model.graph.nodes if node.target in targets]
