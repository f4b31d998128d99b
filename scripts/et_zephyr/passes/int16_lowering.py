# SPDX-License-Identifier: Apache-2.0
"""16x8 linears and convolutions (passes/quantizer_int16.py) onto CMSIS-NN's s16 kernels.

After FoldAndAnnotateQParamsPass and the activation fusion, a linear or convolution whose
input and output are INT16 reads its int16 input and int8 weights directly, its
parameters in its metadata, and its fused clamp in its output's bounds. It becomes
et_zephyr::quantized_linear_s16, ::quantized_conv2d_s16 or
::quantized_depthwise_conv2d_s16 in place (and an INT16 pad before one, ::pad_s16), its
float bias quantized here to the int64 the kernel adds (bias / (input scale * weight
scale), rounded to nearest); INT16 pools and additions become ::avg_pool2d_s16,
::max_pool2d_s16 and ::add_s16, and a standing ReLU or clamp on INT16 values a clamp to
its bounds in steps. Before AtenToCortexMPass, whose INT8 kernels would otherwise take
them.
"""

from __future__ import annotations

import torch
from executorch.backends.cortex_m.library import cmsis_nn
from executorch.backends.cortex_m.passes.passes_utils import (
    get_activation_bounds,
    quantize_multiplier_aot,
    quantize_val,
)
from executorch.backends.cortex_m.target_config import CortexMTargetConfig
from executorch.backends.transforms.utils import get_param_tensor
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass, PassResult
from executorch.exir.passes import make_alloc_node
from torch.export import ExportedProgram
from torch.fx import GraphModule, Node

from ..errors import ExportError
from ..firmware.kernels import source_line
from ..reference import (
    add_s16,
    linear_s16,
    own_ops,  # noqa: F401  (defines et_zephyr's s16 operators)
)
from .int8_rewrites import add_constant

_LINEAR = exir_ops.edge.aten.linear.default
_CONVOLUTION = exir_ops.edge.aten.convolution.default
_CONSTANT_PAD = exir_ops.edge.aten.constant_pad_nd.default
_CLAMP = exir_ops.edge.aten.clamp.default
_AVG_POOL = exir_ops.edge.aten.avg_pool2d.default
_MAX_POOL = exir_ops.edge.aten.max_pool2d.default
_ADD = exir_ops.edge.aten.add.Tensor
_SUB = exir_ops.edge.aten.sub.Tensor
_AVG_POOL_KERNEL = exir_ops.edge.et_zephyr.avg_pool2d_s16.default
_MAX_POOL_KERNEL = exir_ops.edge.et_zephyr.max_pool2d_s16.default
_ADD_KERNEL = exir_ops.edge.et_zephyr.add_s16.default
# Activations left standing (not fused into the layer before them): upstream's
# QuantizedClampActivationPass quantizes their bounds for INT8 tensors only.
_CLAMPS = {
    exir_ops.edge.aten.relu.default,
    exir_ops.edge.aten.relu_.default,
    exir_ops.edge.aten.hardtanh.default,
    exir_ops.edge.aten.hardtanh_.default,
    _CLAMP,
}
_PAD_KERNEL = exir_ops.edge.et_zephyr.pad_s16.default
_LINEAR_KERNEL = exir_ops.edge.et_zephyr.quantized_linear_s16.default
_CONV_KERNEL = exir_ops.edge.et_zephyr.quantized_conv2d_s16.default
_DEPTHWISE_KERNEL = exir_ops.edge.et_zephyr.quantized_depthwise_conv2d_s16.default
# A channel's 32-bit sums stay exact while the sum of its weights' magnitudes times the
# largest int16 magnitude is below 2^31.
_SUM_LIMIT = (1 << 31) // 32767
# CMSIS-NN's fast depthwise s16 kernel (USE_FAST_DW_CONV_S16_FUNCTION) takes windows of
# fewer elements.
_FAST_DEPTHWISE_WINDOW = 512


class Int16LayersToKernels(ExportPass):
    """Linears, convolutions, pools, additions, pads and clamps on INT16 activations
    become et-zephyr's s16 operators."""

    def __init__(
        self, exported_program: ExportedProgram, target_config: CortexMTargetConfig
    ) -> None:
        super().__init__()
        self.exported_program = exported_program
        self.backend = target_config.backend

    def call(self, graph_module: GraphModule) -> PassResult:
        replaced = 0
        for node in list(graph_module.graph.nodes):
            if node.target == _LINEAR and _int16_input(node):
                self._lower(node)
                replaced += 1
            elif node.target == _CONVOLUTION and _int16_input(node):
                self._lower_convolution(node)
                replaced += 1
            elif node.target == _CONSTANT_PAD and _int16_input(node):
                _lower_pad(node)
                replaced += 1
            elif node.target in (_AVG_POOL, _MAX_POOL) and _int16_input(node):
                self._lower_pool(node)
                replaced += 1
            elif node.target in (_ADD, _SUB) and _int16_input(node):
                _lower_add(node, subtract=node.target == _SUB)
                replaced += 1
            elif node.target in _CLAMPS and _int16_output(node):
                _clamp_in_steps(node)
                replaced += 1
        graph_module.recompile()
        return PassResult(graph_module, replaced > 0)

    def _lower_convolution(self, node: Node) -> None:
        x, weight, bias, stride, padding, dilation, transposed, _, groups = node.args
        input_qparams, weight_qparams = node.meta["input_qparams"][0], node.meta["input_qparams"][1]
        output_qparams = node.meta["output_qparams"][0]
        weights = get_param_tensor(self.exported_program, weight)
        assert weights is not None and not transposed
        channels = weights.shape[0]
        scales = weight_qparams.scale
        scales = [float(v) for v in (scales if isinstance(scales, list) else [scales] * channels)]
        if torch.as_tensor(weight_qparams.zp).any():
            raise ExportError(
                f"{node.name}: a 16x8 convolution takes symmetric weights{source_line(node)}"
            )
        magnitudes = weights.to(torch.int64).abs().flatten(1).sum(1)
        if int(magnitudes.max()) >= _SUM_LIMIT:
            raise ExportError(
                f"{node.name}: a 16x8 convolution whose sums could pass 32 bits (a channel's "
                f"weights add up to {int(magnitudes.max())} steps; at most {_SUM_LIMIT - 1})"
                f"{source_line(node)}"
            )
        input_scale = float(input_qparams.scale)
        pairs = [
            self._requantization(node, input_scale * scale / float(output_qparams.scale))
            for scale in scales
        ]
        graph = node.graph
        name = node.name
        multipliers = add_constant(
            self.exported_program, graph, f"{name}_multipliers",
            torch.tensor([m for m, _ in pairs], dtype=torch.int32),
        )  # fmt: skip
        shifts = add_constant(
            self.exported_program, graph, f"{name}_shifts",
            torch.tensor([s for _, s in pairs], dtype=torch.int32),
        )  # fmt: skip
        biases = self._biases(node, bias, torch.tensor(scales, dtype=torch.float64) * input_scale)
        in_channels = x.meta["val"].shape[1]
        depthwise = groups != 1
        if depthwise:
            # [C_out, 1, kH, kW] -> [1, kH, kW, C_out]
            layout = weights.permute(1, 2, 3, 0).contiguous()
            scratch_bytes = self._depthwise_scratch(in_channels, weights, dilation, channels)
        else:
            layout = weights.permute(0, 2, 3, 1).contiguous()  # OIHW -> OHWI
            scratch_bytes = self._conv_scratch(in_channels, weights)
        weights_node = add_constant(self.exported_program, graph, f"{name}_weights_s16", layout)
        scratch = _scratch(node, scratch_bytes)
        geometry = (list(stride), list(padding), list(dilation))
        bounds = (int(output_qparams.qmin), int(output_qparams.qmax))
        if depthwise:
            node.target = _DEPTHWISE_KERNEL
            depth_multiplier = channels // in_channels
            node.args = (
                x,
                weights_node,
                biases,
                *geometry,
                depth_multiplier,
                multipliers,
                shifts,
                *bounds,
                scratch,
            )
        else:
            node.target = _CONV_KERNEL
            node.args = (x, weights_node, biases, *geometry, multipliers, shifts, *bounds, scratch)
        _int16_channels_last(node)

    def _lower_pool(self, node: Node) -> None:
        """arm_avgpool_s16 / arm_max_pool_s16: kernel, stride (the kernel's by default) and
        padding; the output keeps the input's steps, clamped to the fused bounds."""
        kernel = list(node.args[1])
        stride = list(node.args[2]) if len(node.args) > 2 and node.args[2] else kernel
        padding = list(node.args[3]) if len(node.args) > 3 else [0, 0]
        output_qparams = node.meta["output_qparams"][0]
        bounds = (int(output_qparams.qmin), int(output_qparams.qmax))
        arguments = (node.args[0], _pair(kernel), _pair(stride), _pair(padding), *bounds)
        if node.target == _AVG_POOL:
            # arm_avgpool_s16_get_buffer_size: a 32-bit sum a channel on a DSP core.
            channels = node.args[0].meta["val"].shape[1]
            scratch_bytes = 4 * channels if self.backend == cmsis_nn.Backend.DSP else 0
            node.target, node.args = _AVG_POOL_KERNEL, (*arguments, _scratch(node, scratch_bytes))
        else:
            node.target, node.args = _MAX_POOL_KERNEL, arguments
        _int16_channels_last(node)

    def _conv_scratch(self, in_channels: int, weights: torch.Tensor) -> int:
        """arm_convolve_wrapper_s16_get_buffer_size: im2col columns of 2 (4 with Helium,
        rounded to 8 values) patches."""
        patch = in_channels * weights.shape[2] * weights.shape[3]
        if self.backend == cmsis_nn.Backend.MVE:
            return 4 * ((patch + 7) // 8) * 8 * 2
        return 2 * patch * 2

    def _depthwise_scratch(
        self, in_channels: int, weights: torch.Tensor, dilation: list[int], channels: int
    ) -> int:
        """arm_depthwise_conv_wrapper_s16_get_buffer_size: only the fast kernel (one
        output channel an input channel, no dilation, windows under 512) on a DSP or
        Helium core takes scratch."""
        window = weights.shape[2] * weights.shape[3]
        fast = (
            channels == in_channels and list(dilation) == [1, 1] and window < _FAST_DEPTHWISE_WINDOW
        )
        if not fast or self.backend == cmsis_nn.Backend.SCALAR:
            return 0
        if self.backend == cmsis_nn.Backend.MVE:
            return 4 * in_channels * window * 2 + 8
        return in_channels * window * 2

    def _requantization(self, node: Node, scale: float) -> tuple[int, int]:
        multiplier, shift = quantize_multiplier_aot(scale)
        if not linear_s16.MIN_SHIFT <= shift <= linear_s16.MAX_SHIFT:
            raise ExportError(
                f"{node.name}: a 16x8 layer's output scale is {2.0**shift:g} times too small "
                f"for CMSIS-NN's s16 requantization{source_line(node)}"
            )
        return multiplier, shift

    def _biases(self, node: Node, bias: object, product_scales: torch.Tensor) -> Node | None:
        if bias is None:
            return None
        assert isinstance(bias, Node)
        values = get_param_tensor(self.exported_program, bias)
        assert values is not None
        quantized = torch.round(values.to(torch.float64) / product_scales).to(torch.int64)
        return add_constant(self.exported_program, node.graph, f"{node.name}_biases", quantized)

    def _lower(self, node: Node) -> None:
        input_qparams, weight_qparams = node.meta["input_qparams"][0], node.meta["input_qparams"][1]
        output_qparams = node.meta["output_qparams"][0]
        if not isinstance(weight_qparams.scale, float) or weight_qparams.zp != 0:
            raise ExportError(
                f"{node.name}: a 16x8 linear takes symmetric per-tensor weights{source_line(node)}"
            )
        product_scale = float(input_qparams.scale) * weight_qparams.scale
        multiplier, shift = self._requantization(node, product_scale / float(output_qparams.scale))
        bias = node.args[2] if len(node.args) > 2 else None
        biases = self._biases(node, bias, torch.tensor(product_scale, dtype=torch.float64))
        weights = node.args[1]
        node.target = _LINEAR_KERNEL
        node.args = (
            node.args[0],
            weights,
            biases,
            multiplier,
            shift,
            int(output_qparams.qmin),
            int(output_qparams.qmax),
        )
        _as_int16(node)


def _lower_pad(node: Node) -> None:
    """An INT16 constant pad (a convolution's asymmetric padding) onto et_zephyr::pad_s16,
    its pads before and after each dimension."""
    qparams = node.meta["input_qparams"][0]
    value = node.args[0].meta["val"]
    padding = list(node.args[1])
    fill = float(node.args[2]) if len(node.args) > 2 else 0.0
    rank = value.dim()
    pre, post = [0] * rank, [0] * rank
    for pair in range(len(padding) // 2):
        pre[rank - 1 - pair], post[rank - 1 - pair] = padding[2 * pair], padding[2 * pair + 1]
    node.target = _PAD_KERNEL
    node.args = (
        node.args[0],
        pre,
        post,
        int(quantize_val(fill, float(qparams.scale), int(qparams.zp), qparams.qmin, qparams.qmax)),
    )
    _as_int16(node)


def _scratch(node: Node, nbytes: int) -> Node:
    """A kernel's scratch allocation before the node, in the graph's own fake mode (the
    pass manager checks that they all agree)."""
    with node.meta["val"].fake_mode:
        allocation = torch.empty((nbytes,), dtype=torch.uint8)
    with node.graph.inserting_before(node):
        return make_alloc_node(node.graph.owning_module, allocation, None)


def _as_int16(node: Node) -> None:
    """The node's value int16, in its layout: what the s16 kernel writes."""
    value = node.meta["val"]
    with value.fake_mode:
        node.meta["val"] = torch.empty_strided(value.shape, value.stride(), dtype=torch.int16)


def _int16_channels_last(node: Node) -> None:
    """The node's value int16 and NHWC, as the s16 convolutions and pools write it (their
    input's dim order may say otherwise where a map of one channel, or of 1x1, is both)."""
    value = node.meta["val"]
    with value.fake_mode:
        node.meta["val"] = torch.empty(value.shape, dtype=torch.int16).to(
            memory_format=torch.channels_last
        )


def _pair(values: list[int]) -> list[int]:
    return values * 2 if len(values) == 1 else values


def _lower_add(node: Node, subtract: bool) -> None:
    """arm_elementwise_add_s16 with TensorFlow Lite's 16x8 parameters (reference/add_s16.py);
    a subtraction with its second input's multiplier negated."""
    first, second = node.meta["input_qparams"][0], node.meta["input_qparams"][1]
    output = node.meta["output_qparams"][0]
    params = add_s16.parameters(
        float(first.scale), float(second.scale), float(output.scale), subtract
    )
    node.target = _ADD_KERNEL
    node.args = (
        node.args[0],
        node.args[1],
        list(params.input_multipliers),
        list(params.input_shifts),
        params.output_multiplier,
        params.output_shift,
        int(output.qmin),
        int(output.qmax),
    )
    _as_int16(node)


def _clamp_in_steps(node: Node) -> None:
    """A standing ReLU, hardtanh or clamp on INT16 values: a clamp to its bounds in output
    steps, on the portable kernel (which clamps the int16 values themselves)."""
    qparams = node.meta["output_qparams"][0]
    bounds = get_activation_bounds(node)
    if bounds is None:
        raise ExportError(
            f"{node.name}: a clamp whose bounds are not constants on INT16 values"
            f"{source_line(node)}"
        )
    steps = [
        None
        if bound is None
        else int(
            quantize_val(bound, float(qparams.scale), int(qparams.zp), qparams.qmin, qparams.qmax)
        )
        for bound in bounds
    ]
    node.target = _CLAMP
    node.args = (node.args[0], *steps)
    _as_int16(node)


def _int16_output(node: Node) -> bool:
    qparams = node.meta.get("output_qparams", {}).get(0)
    return qparams is not None and qparams.dtype == torch.int16


def _int16_input(node: Node) -> bool:
    qparams = node.meta.get("input_qparams", {}).get(0)
    return qparams is not None and qparams.dtype == torch.int16
