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

Only the operators with an s16 kernel in et-zephyr are annotated 16x8 (linears, plain
and depthwise convolutions, average and max pools, additions and subtractions, with a
fused ReLU or clamp); the others (LayerNorm, softmax, GELU, attention's matmuls, whole
LSTM and GRU layers, ...) are quantized INT8 as EtZephyrQuantizer quantizes them, so that
every operator runs on an integer kernel whose arithmetic the host reference shares (a
float fallback would be neither fast nor bit-exact), and the export report names them.
Where an INT16 and an INT8 tensor meet, the value is converted through float.
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
    INT8_PER_TENSOR_CONFIG,
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

from .lookup_tables import ELEMENTWISE
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
    """Two tensors of one shape and memory order (arm_elementwise_add_s16 does not
    broadcast); a dimension of size 1 has no order to differ in."""

    @classmethod
    def check_pattern(cls, pattern: list[Node]) -> bool:
        inputs = pattern[0].all_input_nodes
        if len(inputs) != 2:
            return False
        a, b = (get_first_fake_tensor(node) for node in inputs)
        return a.shape == b.shape and all(
            size == 1 or a.stride(d) == b.stride(d) for d, size in enumerate(a.shape)
        )


_HARDSIGMOIDS = {torch.ops.aten.hardsigmoid.default, torch.ops.aten.hardsigmoid_.default}
_aten = torch.ops.aten
# A standing ReLU keeps its input's INT16 (a clamp, passes/int16_lowering.py).
_INT8_ISLANDS = {_aten.layer_norm.default} | {
    op._op for op in ELEMENTWISE if op._op is not _aten.relu.default
}
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
    (operator,): Int16AddCheck for operator in (_aten.add.Tensor, _aten.sub.Tensor)
} | {
    (operator, activation): Int16AddCheck
    for operator in (_aten.add.Tensor, _aten.sub.Tensor)
    for activation in _ACTIVATIONS
}
INT16_PATTERNS = LINEAR_PATTERNS | CONVOLUTION_PATTERNS | POOL_PATTERNS | ADD_PATTERNS


class Int16Quantizer(ComposableQuantizer):
    """16x8 on the operators with an s16 kernel (`--activations int16`), or only on the
    named ones of them (`--precision auto`); INT8 on the rest as
    EtZephyrQuantizer quantizes it. Where the two meet, the tensor is converted through
    float."""

    def __init__(self, int16_layers: Iterable[str] | None = None) -> None:
        matcher = PatternMatcher(
            cast(dict[tuple[OpOverload, ...], type[PatternCheck] | None], INT16_PATTERNS),
            support_dict_name=f"{__name__}.INT16_PATTERNS",
        )
        groups = (
            (INT16_PER_CHANNEL_CONFIG, CONVOLUTION_PATTERNS),
            (INT16_CONFIG, LINEAR_PATTERNS | POOL_PATTERNS | ADD_PATTERNS),
        )
        names = None if int16_layers is None else set(int16_layers)
        int16 = [
            PatternQuantizer(config, node_finder=_finder(names, patterns), pattern_matcher=matcher)
            for config, patterns in groups
        ]
        int8 = EtZephyrQuantizer().quantizers
        shared = next(q for q in int8 if isinstance(q, SharedQspecQuantizer))
        # 16x8 first: the INT8 quantizers leave a matched node alone.
        super().__init__(
            int16 + [_Int16Neighbourhoods(shared.targets), _Int16Edges(), _Int8Islands()] + int8
        )

    def validate(self, model: GraphModule) -> None:
        return None

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return EtZephyrQuantizer().transform_for_annotation(model)


class _Int16Neighbourhoods(SharedQspecQuantizer):
    """The operators that only move values (a pad, a reshape) between 16x8 operators, or
    between one and the model's input or output, share their INT16 parameters, before the
    INT8 quantizers could claim them (a pad before a first 16x8 convolution would have
    been INT8). A cluster with any neighbour not yet quantized is left to them: that
    neighbour may fuse it (a linear and the ReLU after it)."""

    def annotate(self, model: GraphModule) -> GraphModule:
        for node in model.graph.nodes:
            if node.target not in self.targets or self._is_annotated(node):
                continue
            cluster, qspecs, _, _ = self._get_shared_clique(node)
            neighbours = {n for c in cluster for n in (*c.all_input_nodes, *c.users)} - cluster
            if (
                qspecs
                and all(map(_is_int16, qspecs))
                and all(
                    n.op in ("placeholder", "output", "get_attr") or self._is_annotated(n)
                    for n in neighbours
                )
            ):
                self._annotate_shared_cluster(node)
        return model


class _Int16Edges(Quantizer):
    """A model input read only by 16x8 operators is quantized to INT16 once, not to INT8
    and then to INT16; the outputs keep their producers' quantization (an INT16 layer's
    output is not squeezed into INT8 on its way out)."""

    def annotate(self, model: GraphModule) -> GraphModule:
        for node in model.graph.nodes:
            if node.op == "output":
                node.meta[PatternMatcher.Q_PATTERN_MATCHED_KEY] = True
            elif node.op == "placeholder" and node.users and all(map(_reads_int16, node.users)):
                mark_node_as_annotated(node, {}, INT16_ACTIVATION_QSPEC, True)
                node.meta[PatternMatcher.Q_PATTERN_MATCHED_KEY] = True
        return model

    def validate(self, model: GraphModule) -> None:
        return None


class _Int8Islands(Quantizer):
    """LayerNorm and the elementwise functions et-zephyr runs as tables get INT8 on both
    sides, as their integer lowerings need (passes/layer_norm_lowering.py,
    passes/lookup_tables.py): in an INT8 model their neighbours give them that, next to
    16x8 operators they would otherwise stay in float."""

    def annotate(self, model: GraphModule) -> GraphModule:
        for node in model.graph.nodes:
            if node.target not in _INT8_ISLANDS or not isinstance(node.args[0], Node):
                continue
            if node.meta.get(PatternMatcher.Q_PATTERN_MATCHED_KEY):
                continue
            mark_node_as_annotated(
                node,
                {node.args[0]: INT8_PER_TENSOR_CONFIG.get_input_act_qspec()},
                INT8_PER_TENSOR_CONFIG.get_output_act_qspec(),
                False,  # INT8 around a float operator, which the lowering replaces
            )
            node.meta[PatternMatcher.Q_PATTERN_MATCHED_KEY] = True
        return model

    def validate(self, model: GraphModule) -> None:
        return None


def _reads_int16(node: Node) -> bool:
    annotation = node.meta.get("quantization_annotation")
    specs = annotation.input_qspec_map.values() if annotation is not None else ()
    return any(map(_is_int16, specs))


def _is_int16(spec: object) -> bool:
    return getattr(spec, "dtype", None) == torch.int16


class _NamedNodes(NodeTargetNodeFinder):
    """The nodes of these targets with one of these names."""

    def __init__(self, names: set[str], targets: list[OpOverload]) -> None:
        super().__init__(targets)
        self.names = names

    def find_nodes(self, model: GraphModule) -> Iterator[Node]:
        return (node for node in super().find_nodes(model) if node.name in self.names)


def _finder(
    names: set[str] | None, patterns: dict[tuple[OpOverload, ...], type[PatternCheck]]
) -> NodeTargetNodeFinder:
    """The nodes that start one of `patterns` (with these names, if given)."""
    targets = sorted({pattern[0] for pattern in patterns}, key=str)
    return NodeTargetNodeFinder(targets) if names is None else _NamedNodes(names, targets)


def mixed_precision_candidates(model: GraphModule) -> list[Node]:
    """The operators an s16 kernel could take (linears, convolutions, pools, additions),
    in graph order (`model` already through transform_for_annotation)."""
    targets = {pattern[0] for pattern in INT16_PATTERNS}
    return [node for node in model.graph.nodes if node.target in targets]
