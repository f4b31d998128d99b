# SPDX-License-Identifier: Apache-2.0
"""The operators whose kernels are et-zephyr's own (lib/src/kernels/NAME.cpp), for the
graph, the fake-tensor tracer and the host reference.

An et_zephyr::NAME.out operator is implemented by et_zephyr::native::NAME_out in
lib/src/kernels/NAME.cpp: that convention is all the firmware build needs
(zephyr/cmake/et_zephyr_gen.py), the schema comes with the exported model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
from executorch.exir.tensor import dim_order_from_stride
from torch.library import Library, impl, register_fake

from . import add_s16, conv_s16, gates_s16, gru, layer_norm, linear_s16, lstm, pooling, resize
from .dim_orders import with_dim_order

NAMESPACE = "et_zephyr"
_library = Library(NAMESPACE, "DEF")

_LAYER_NORM_ARGUMENTS = (
    "Tensor input, Tensor multipliers, Tensor biases, int input_zero_point, "
    "int output_zero_point, int epsilon, int shift"
)
_library.define(f"quantized_layer_norm({_LAYER_NORM_ARGUMENTS}) -> Tensor")
_library.define(
    f"quantized_layer_norm.out({_LAYER_NORM_ARGUMENTS}, *, Tensor(a!) out) -> Tensor(a!)"
)

# int8 tensors joined along a dimension in the dim order they share (concatenate.cpp).
_library.define("concatenate(Tensor[] tensors, int dim) -> Tensor")
_library.define("concatenate.out(Tensor[] tensors, int dim, *, Tensor(a!) out) -> Tensor(a!)")

# Every step-th index of a dimension from start to end (bounds within it), in the input's
# dim order (slice.cpp).
_SLICE_ARGUMENTS = "Tensor input, int dim, int start, int end, int step"
_library.define(f"slice({_SLICE_ARGUMENTS}) -> Tensor")
_library.define(f"slice.out({_SLICE_ARGUMENTS}, *, Tensor(a!) out) -> Tensor(a!)")

# ShuffleNet's channel shuffle: output channel j * groups + i is input channel
# i * (channels / groups) + j, in the input's dim order (channel_shuffle.cpp).
_library.define("channel_shuffle(Tensor input, int groups) -> Tensor")
_library.define("channel_shuffle.out(Tensor input, int groups, *, Tensor(a!) out) -> Tensor(a!)")

# Bilinear resize of an int8 image: taps per output row and column, int32 [size, 3]
# (resize_bilinear.cpp; reference/resize.py).
_library.define("resize_bilinear(Tensor input, Tensor rows, Tensor columns) -> Tensor")
_library.define(
    "resize_bilinear.out(Tensor input, Tensor rows, Tensor columns, *, Tensor(a!) out) "
    "-> Tensor(a!)"
)

# arm_avgpool_s8 with the output's size given: windows past the input's end (PyTorch's
# ceil mode) clipped to it (avg_pool2d_clipped.cpp; reference/pooling.py).
_AVG_POOL_ARGUMENTS = (
    "Tensor input, int[] kernel_size, int[] stride, int[] padding, int[] output_size, "
    "Tensor scratch"
)
_library.define(f"avg_pool2d_clipped({_AVG_POOL_ARGUMENTS}) -> Tensor")
_library.define(f"avg_pool2d_clipped.out({_AVG_POOL_ARGUMENTS}, *, Tensor(a!) out) -> Tensor(a!)")

# A whole LSTM layer in float, from a zero state: what passes/recurrent_layers.py makes of
# nn.LSTM before quantization (the quantizer annotates its input and output only); its
# output every step's h, or with last_step the last one's ([B, H]); the power of two of
# its cell state's scale comes from calibration. No kernel: lowered to quantized_lstm.
_library.define(
    "lstm(Tensor input, Tensor weight_ih, Tensor weight_hh, Tensor? bias, bool batch_first, "
    "bool last_step, int cell_scale_power) -> Tensor"
)

# The same layer in integers on arm_lstm_unidirectional_s8 (quantized_lstm.cpp;
# reference/lstm.py); the scratch holds its two gate buffers and its cell state. With a
# carried state (et-export --stateful, passes/carried_state.py) the layer starts from
# hidden_in (int8) and cell_in (int16), [B, H] each, and writes its final ones to
# hidden_out and cell_out, program inputs and outputs the runtime keeps between runs.
_LSTM_ARGUMENTS = (
    "Tensor input, Tensor input_weights, Tensor hidden_weights, Tensor input_biases, "
    "Tensor hidden_biases, int[] gate_scales, int[] state_scales, int output_zero_point, "
    "int cell_scale_power, bool batch_first, bool last_step, Tensor? hidden_in, "
    "Tensor? cell_in, Tensor? hidden_out, Tensor? cell_out, Tensor scratch"
)
_library.define(f"quantized_lstm({_LSTM_ARGUMENTS}) -> Tensor")
_library.define(f"quantized_lstm.out({_LSTM_ARGUMENTS}, *, Tensor(a!) out) -> Tensor(a!)")

# A whole GRU layer in float and in integers, as the LSTM's (quantized_gru.cpp;
# reference/gru.py); the scratch holds four int16 vectors of the hidden size; its carried
# state is h alone.
_library.define(
    "gru(Tensor input, Tensor weight_ih, Tensor weight_hh, Tensor? bias_ih, Tensor? bias_hh, "
    "bool batch_first, bool last_step) -> Tensor"
)
_GRU_ARGUMENTS = (
    "Tensor input, Tensor input_weights, Tensor hidden_weights, Tensor input_biases, "
    "Tensor hidden_biases, int[] gate_scales, int[] state_scales, int output_zero_point, "
    "bool batch_first, bool last_step, Tensor? hidden_in, Tensor? hidden_out, Tensor scratch"
)
_library.define(f"quantized_gru({_GRU_ARGUMENTS}) -> Tensor")
_library.define(f"quantized_gru.out({_GRU_ARGUMENTS}, *, Tensor(a!) out) -> Tensor(a!)")

# A 16x8 linear on arm_fully_connected_s16 (quantized_linear_s16.cpp; reference/linear_s16.py):
# int16 input and output without offsets, int8 weights [rows, columns] per tensor, int64
# biases, the requantization's Q31 multiplier and shift, the fused activation's bounds.
_LINEAR_S16_ARGUMENTS = (
    "Tensor input, Tensor weights, Tensor? biases, int multiplier, int shift, "
    "int activation_min, int activation_max"
)
_library.define(f"quantized_linear_s16({_LINEAR_S16_ARGUMENTS}) -> Tensor")
_library.define(
    f"quantized_linear_s16.out({_LINEAR_S16_ARGUMENTS}, *, Tensor(a!) out) -> Tensor(a!)"
)

# 16x8 convolutions on arm_convolve_wrapper_s16 and arm_depthwise_conv_wrapper_s16
# (quantized_conv2d_s16.cpp, quantized_depthwise_conv2d_s16.cpp; reference/conv_s16.py):
# channels-last int16 maps without offsets, int8 weights OHWI / [1, kH, kW, C_out] per
# channel, int64 biases, per-channel Q31 multipliers and shifts (int32), the fused
# activation's bounds and CMSIS-NN's scratch.
_CONV_S16_ARGUMENTS = (
    "Tensor input, Tensor weights, Tensor? biases, int[] stride, int[] padding, "
    "int[] dilation, Tensor multipliers, Tensor shifts, int activation_min, "
    "int activation_max, Tensor scratch"
)
_DEPTHWISE_S16_ARGUMENTS = _CONV_S16_ARGUMENTS.replace(
    "int[] dilation, ", "int[] dilation, int depth_multiplier, "
)
for _name, _arguments in (
    ("quantized_conv2d_s16", _CONV_S16_ARGUMENTS),
    ("quantized_depthwise_conv2d_s16", _DEPTHWISE_S16_ARGUMENTS),
):
    _library.define(f"{_name}({_arguments}) -> Tensor")
    _library.define(f"{_name}.out({_arguments}, *, Tensor(a!) out) -> Tensor(a!)")

# A constant pad of an int16 tensor of up to four dimensions (a 16x8 convolution's
# asymmetric padding): pre_pad and post_pad for each dimension, the output in the input's
# dim order (pad_s16.cpp); cortex_m::pad takes int8 only.
_PAD_S16_ARGUMENTS = "Tensor input, int[] pre_pad, int[] post_pad, int value"
_library.define(f"pad_s16({_PAD_S16_ARGUMENTS}) -> Tensor")
_library.define(f"pad_s16.out({_PAD_S16_ARGUMENTS}, *, Tensor(a!) out) -> Tensor(a!)")

# 16x8 pooling on arm_avgpool_s16 and arm_max_pool_s16 (avg_pool2d_s16.cpp,
# max_pool2d_s16.cpp; reference/pooling.py): channels-last int16 maps, the output in the
# input's steps, clamped to the fused activation's bounds; the average pool's windows count
# their positions inside the input, and it takes CMSIS-NN's scratch.
_POOL_S16_ARGUMENTS = (
    "Tensor input, int[] kernel_size, int[] stride, int[] padding, int activation_min, "
    "int activation_max"
)
_library.define(f"max_pool2d_s16({_POOL_S16_ARGUMENTS}) -> Tensor")
_library.define(f"max_pool2d_s16.out({_POOL_S16_ARGUMENTS}, *, Tensor(a!) out) -> Tensor(a!)")
_library.define(f"avg_pool2d_s16({_POOL_S16_ARGUMENTS}, Tensor scratch) -> Tensor")
_library.define(
    f"avg_pool2d_s16.out({_POOL_S16_ARGUMENTS}, Tensor scratch, *, Tensor(a!) out) -> Tensor(a!)"
)

# A 16x8 addition of two int16 tensors of one shape on arm_elementwise_add_s16 (add_s16.cpp;
# reference/add_s16.py): each input's and the sum's Q31 multiplier and shift.
_ADD_S16_ARGUMENTS = (
    "Tensor a, Tensor b, int[] input_multipliers, int[] input_shifts, int output_multiplier, "
    "int output_shift, int activation_min, int activation_max"
)
_library.define(f"add_s16({_ADD_S16_ARGUMENTS}) -> Tensor")
_library.define(f"add_s16.out({_ADD_S16_ARGUMENTS}, *, Tensor(a!) out) -> Tensor(a!)")

# `namespace::name.overload` of each operator with a kernel in lib/src/kernels.
KERNELS: frozenset[str] = frozenset(
    f"{NAMESPACE}::{name}.out"
    for name in (
        "quantized_layer_norm",
        "concatenate",
        "slice",
        "channel_shuffle",
        "resize_bilinear",
        "avg_pool2d_clipped",
        "quantized_lstm",
        "quantized_gru",
        "quantized_linear_s16",
        "quantized_conv2d_s16",
        "quantized_depthwise_conv2d_s16",
        "pad_s16",
        "avg_pool2d_s16",
        "max_pool2d_s16",
        "add_s16",
    )
)


@register_fake(f"{NAMESPACE}::quantized_layer_norm")  # type: ignore[misc]
def _layer_norm_fake(input: torch.Tensor, *args: object) -> torch.Tensor:
    return torch.empty_like(input, dtype=torch.int8)


# The host reference is the operator's implementation.
_library.impl("quantized_layer_norm", layer_norm.layer_norm, "CompositeExplicitAutograd")


@impl(_library, "quantized_layer_norm.out", "CompositeExplicitAutograd")  # type: ignore[misc]
def _layer_norm_out(*args: object, out: torch.Tensor) -> torch.Tensor:
    out.copy_(layer_norm.layer_norm(*args))  # type: ignore[arg-type]
    return out


@register_fake(f"{NAMESPACE}::quantized_linear_s16")  # type: ignore[misc]
def _linear_s16_fake(input: torch.Tensor, weights: torch.Tensor, *args: object) -> torch.Tensor:
    return input.new_empty([*input.shape[:-1], weights.shape[0]], dtype=torch.int16)


_library.impl("quantized_linear_s16", linear_s16.fully_connected_s16, "CompositeExplicitAutograd")


@impl(_library, "quantized_linear_s16.out", "CompositeExplicitAutograd")  # type: ignore[misc]
def _linear_s16_out(*args: object, out: torch.Tensor) -> torch.Tensor:
    out.copy_(linear_s16.fully_connected_s16(*args))  # type: ignore[arg-type]
    return out


# Their kernels write the output in the input's dim order: so do these, for the fake
# tensors that give the program its dim orders (ExecuTorch re-derives them from the
# operator when it serializes) and for the host reference.
def _empty_in_dim_order_of(source: torch.Tensor, shape: list[int]) -> torch.Tensor:
    return with_dim_order(source.new_empty(shape), dim_order_from_stride(source.stride()))


def _in_dim_order_of(source: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    return _empty_in_dim_order_of(source, list(values.shape)).copy_(values)


@register_fake(f"{NAMESPACE}::concatenate")  # type: ignore[misc]
def _concatenate_fake(tensors: list[torch.Tensor], dim: int) -> torch.Tensor:
    shape = list(tensors[0].shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return _empty_in_dim_order_of(tensors[0], shape)


@register_fake(f"{NAMESPACE}::slice")  # type: ignore[misc]
def _slice_fake(input: torch.Tensor, dim: int, start: int, end: int, step: int) -> torch.Tensor:
    shape = list(input.shape)
    shape[dim] = len(range(start, end, step))
    return _empty_in_dim_order_of(input, shape)


@register_fake(f"{NAMESPACE}::channel_shuffle")  # type: ignore[misc]
def _channel_shuffle_fake(input: torch.Tensor, groups: int) -> torch.Tensor:
    return _empty_in_dim_order_of(input, list(input.shape))


# A concatenation only moves bytes: torch's is the device's, in any dim order.
@impl(_library, "concatenate", "CompositeExplicitAutograd")  # type: ignore[misc]
def _concatenate(tensors: list[torch.Tensor], dim: int) -> torch.Tensor:
    return _in_dim_order_of(tensors[0], torch.cat(tensors, dim))


@impl(_library, "concatenate.out", "CompositeExplicitAutograd")  # type: ignore[misc]
def _concatenate_out(tensors: list[torch.Tensor], dim: int, *, out: torch.Tensor) -> torch.Tensor:
    out.copy_(torch.cat(tensors, dim))
    return out


@impl(_library, "slice", "CompositeExplicitAutograd")  # type: ignore[misc]
def _slice(input: torch.Tensor, dim: int, start: int, end: int, step: int) -> torch.Tensor:
    return _in_dim_order_of(input, torch.ops.aten.slice_copy.Tensor(input, dim, start, end, step))


@impl(_library, "slice.out", "CompositeExplicitAutograd")  # type: ignore[misc]
def _slice_out(
    input: torch.Tensor, dim: int, start: int, end: int, step: int, *, out: torch.Tensor
) -> torch.Tensor:
    out.copy_(torch.ops.aten.slice_copy.Tensor(input, dim, start, end, step))
    return out


def shuffled_channels(channels: int, groups: int) -> torch.Tensor:
    """The input channel each output channel of a channel shuffle reads."""
    return torch.arange(channels).view(groups, channels // groups).t().reshape(-1)


@impl(_library, "channel_shuffle", "CompositeExplicitAutograd")  # type: ignore[misc]
def _channel_shuffle(input: torch.Tensor, groups: int) -> torch.Tensor:
    order = shuffled_channels(input.shape[1], groups)
    return _in_dim_order_of(input, input.index_select(1, order))


@impl(_library, "channel_shuffle.out", "CompositeExplicitAutograd")  # type: ignore[misc]
def _channel_shuffle_out(input: torch.Tensor, groups: int, *, out: torch.Tensor) -> torch.Tensor:
    out.copy_(input.index_select(1, shuffled_channels(input.shape[1], groups)))
    return out


@register_fake(f"{NAMESPACE}::resize_bilinear")  # type: ignore[misc]
def _resize_bilinear_fake(
    input: torch.Tensor, rows: torch.Tensor, columns: torch.Tensor
) -> torch.Tensor:
    shape = [*input.shape[:2], rows.shape[0], columns.shape[0]]
    return _empty_in_dim_order_of(input, shape)


@impl(_library, "resize_bilinear", "CompositeExplicitAutograd")  # type: ignore[misc]
def _resize_bilinear(
    input: torch.Tensor, rows: torch.Tensor, columns: torch.Tensor
) -> torch.Tensor:
    return _in_dim_order_of(input, resize.resize_bilinear(input, rows, columns))


@impl(_library, "resize_bilinear.out", "CompositeExplicitAutograd")  # type: ignore[misc]
def _resize_bilinear_out(
    input: torch.Tensor, rows: torch.Tensor, columns: torch.Tensor, *, out: torch.Tensor
) -> torch.Tensor:
    out.copy_(resize.resize_bilinear(input, rows, columns))
    return out


@register_fake(f"{NAMESPACE}::avg_pool2d_clipped")  # type: ignore[misc]
def _avg_pool2d_clipped_fake(input: torch.Tensor, *args: object) -> torch.Tensor:
    output_size = args[3]
    assert isinstance(output_size, (list, tuple))
    return _empty_in_dim_order_of(input, [*input.shape[:2], *output_size])


@impl(_library, "avg_pool2d_clipped", "CompositeExplicitAutograd")  # type: ignore[misc]
def _avg_pool2d_clipped(input: torch.Tensor, *args: object) -> torch.Tensor:
    return _in_dim_order_of(input, pooling.avg_pool2d_clipped(input, *args))  # type: ignore[arg-type]


@impl(_library, "avg_pool2d_clipped.out", "CompositeExplicitAutograd")  # type: ignore[misc]
def _avg_pool2d_clipped_out(input: torch.Tensor, *args: object, out: torch.Tensor) -> torch.Tensor:
    out.copy_(pooling.avg_pool2d_clipped(input, *args))  # type: ignore[arg-type]
    return out


def _padded(
    input: torch.Tensor, pre_pad: list[int], post_pad: list[int], value: int
) -> torch.Tensor:
    """The input padded before and after each dimension, in the input's dim order. Moving
    elements only: torch's pad is the kernel's."""
    pads: list[int] = []
    for before, after in zip(reversed(pre_pad), reversed(post_pad)):
        pads += [before, after]
    return _in_dim_order_of(input, torch.nn.functional.pad(input, pads, value=value))


@register_fake(f"{NAMESPACE}::pad_s16")  # type: ignore[misc]
def _pad_s16_fake(input: torch.Tensor, pre_pad: list[int], post_pad: list[int], value: int):
    shape = [size + a + b for size, a, b in zip(input.shape, pre_pad, post_pad)]
    return _empty_in_dim_order_of(input, shape)


@impl(_library, "pad_s16", "CompositeExplicitAutograd")  # type: ignore[misc]
def _pad_s16(input: torch.Tensor, pre_pad: list[int], post_pad: list[int], value: int):
    return _padded(input, pre_pad, post_pad, value)


@impl(_library, "pad_s16.out", "CompositeExplicitAutograd")  # type: ignore[misc]
def _pad_s16_out(
    input: torch.Tensor, pre_pad: list[int], post_pad: list[int], value: int, *, out: torch.Tensor
) -> torch.Tensor:
    out.copy_(_padded(input, pre_pad, post_pad, value))
    return out


# The s16 convolutions and pools write NHWC whatever the input's dim order says (a map of
# one channel, or of 1x1, is both NCHW and NHWC).
_CHANNELS_LAST = (0, 2, 3, 1)


def _empty_channels_last(input: torch.Tensor, shape: list[int]) -> torch.Tensor:
    return with_dim_order(input.new_empty(shape), _CHANNELS_LAST)


def _pooled_fake(input: torch.Tensor, kernel_size, stride, padding, *args) -> torch.Tensor:
    shape = _convolved_shape(input, input.shape[1], kernel_size, stride, padding, [1, 1])
    return _empty_channels_last(input, shape)


register_fake(f"{NAMESPACE}::max_pool2d_s16")(_pooled_fake)
register_fake(f"{NAMESPACE}::avg_pool2d_s16")(_pooled_fake)


def _register_s16(
    name: str, compute: Callable[..., torch.Tensor], scratch: bool, channels_last: bool
) -> None:
    """The host reference of an int16 operator whose output is channels-last, or keeps its
    first input's dim order; with `scratch`, its last argument is the kernel's alone."""

    def operands(args: tuple) -> tuple:
        return args[:-1] if scratch else args

    def values(input: torch.Tensor, *args: object) -> torch.Tensor:
        result = compute(input, *operands(args))
        if channels_last:
            return _empty_channels_last(input, list(result.shape)).copy_(result)
        return _in_dim_order_of(input, result)

    def out_variant(input: torch.Tensor, *args: object, out: torch.Tensor) -> torch.Tensor:
        out.copy_(compute(input, *operands(args)))
        return out

    _library.impl(name, values, "CompositeExplicitAutograd")
    _library.impl(f"{name}.out", out_variant, "CompositeExplicitAutograd")


_register_s16("max_pool2d_s16", pooling.max_pool2d_s16, scratch=False, channels_last=True)
_register_s16("avg_pool2d_s16", pooling.avg_pool2d_s16, scratch=True, channels_last=True)
_register_s16("add_s16", add_s16.add_s16, scratch=False, channels_last=False)


@register_fake(f"{NAMESPACE}::add_s16")  # type: ignore[misc]
def _add_s16_fake(a: torch.Tensor, b: torch.Tensor, *args: object) -> torch.Tensor:
    return _empty_in_dim_order_of(a, list(a.shape))


def _convolved_shape(
    input: torch.Tensor,
    channels: int,
    kernel: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
) -> list[int]:
    spatial = [
        (size + 2 * pad - rate * (taps - 1) - 1) // step + 1
        for size, taps, step, pad, rate in zip(input.shape[2:], kernel, stride, padding, dilation)
    ]
    return [input.shape[0], channels, *spatial]


@register_fake(f"{NAMESPACE}::quantized_conv2d_s16")  # type: ignore[misc]
def _conv2d_s16_fake(
    input: torch.Tensor, weights: torch.Tensor, biases: object, stride, padding, dilation, *args
) -> torch.Tensor:
    shape = _convolved_shape(
        input, weights.shape[0], list(weights.shape[1:3]), stride, padding, dilation
    )
    return _empty_channels_last(input, shape)


@register_fake(f"{NAMESPACE}::quantized_depthwise_conv2d_s16")  # type: ignore[misc]
def _depthwise_s16_fake(
    input: torch.Tensor, weights: torch.Tensor, biases: object, stride, padding, dilation, *args
) -> torch.Tensor:
    shape = _convolved_shape(
        input, weights.shape[3], list(weights.shape[1:3]), stride, padding, dilation
    )
    return _empty_channels_last(input, shape)


_register_s16("quantized_conv2d_s16", conv_s16.conv2d_s16, scratch=True, channels_last=True)
_register_s16(
    "quantized_depthwise_conv2d_s16",
    conv_s16.depthwise_conv2d_s16,
    scratch=True,
    channels_last=True,
)


def _recurrent_output_shape(
    input: torch.Tensor, hidden_weights: torch.Tensor, batch_first: bool, last_step: bool
) -> list[int]:
    if last_step:
        return [input.shape[0 if batch_first else 1], hidden_weights.shape[-1]]
    return [*input.shape[:2], hidden_weights.shape[-1]]


# Final float states by layer (a whole layer's input weights' storage, a causal pad's
# number) while carried_float_states() is active; None otherwise.
_carried: dict[int, object] | None = None


@contextlib.contextmanager
def carried_float_states(active: bool = True) -> Iterator[None]:
    """While active, each float whole LSTM and GRU layer and causal padding starts from
    the final state its previous call left: a sequence fed a hop at a time, as et-export
    --stateful calibrates and verifies. Enter it once a sequence; a sequence of one hop
    (`active` false) runs from nothing, as a layer the model calls twice must."""
    global _carried
    _carried = {} if active else None
    try:
        yield
    finally:
        _carried = None


def carried_state(layer: torch.Tensor | int) -> object | None:
    """The state a float layer (its input weights, or a causal pad's number) starts
    from: the one it left, while states are carried."""
    return None if _carried is None else _carried.get(_state_key(layer))


def carry_state(layer: torch.Tensor | int, final: object) -> None:
    if _carried is not None:
        _carried[_state_key(layer)] = final


def _state_key(layer: torch.Tensor | int) -> int:
    # Weights by their storage; a causal pad's number, negative, apart from them.
    return layer.data_ptr() if isinstance(layer, torch.Tensor) else -1 - layer


# A causal 1-D convolution's left padding of `frames` frames (the last dimension) where
# the model streams (et-export --stateful, passes/causal_pads.py): zeros from nothing,
# the last frames of the previous run's padded input while states are carried; `layer`
# numbers the pads. No kernel: the lowered program concatenates a carried state.
_library.define("causal_pad(Tensor input, int frames, int layer) -> Tensor")


@register_fake(f"{NAMESPACE}::causal_pad")  # type: ignore[misc]
def _causal_pad_fake(input: torch.Tensor, frames: int, layer: int) -> torch.Tensor:
    return input.new_empty([*input.shape[:-1], input.shape[-1] + frames])


@impl(_library, "causal_pad", "CompositeExplicitAutograd")  # type: ignore[misc]
def _causal_pad(input: torch.Tensor, frames: int, layer: int) -> torch.Tensor:
    past = carried_state(layer)
    if not isinstance(past, torch.Tensor):
        past = input.new_zeros([*input.shape[:-1], frames])
    padded = torch.cat([past, input], -1)
    carry_state(layer, padded[..., -frames:].clone())
    return padded


@register_fake(f"{NAMESPACE}::lstm")  # type: ignore[misc]
def _lstm_fake(
    input: torch.Tensor,
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias: torch.Tensor | None,
    batch_first: bool,
    last_step: bool,
    cell_scale_power: int,
) -> torch.Tensor:
    return input.new_empty(_recurrent_output_shape(input, weight_hh, batch_first, last_step))


@impl(_library, "lstm", "CompositeExplicitAutograd")  # type: ignore[misc]
def _lstm(
    input: torch.Tensor,
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias: torch.Tensor | None,
    batch_first: bool,
    last_step: bool,
    cell_scale_power: int,
) -> torch.Tensor:
    state = carried_state(weight_ih)
    output, _, final = lstm.float_lstm(input, weight_ih, weight_hh, bias, batch_first, state)  # type: ignore[arg-type]
    carry_state(weight_ih, final)
    return gates_s16.last_of(output, batch_first) if last_step else output


@register_fake(f"{NAMESPACE}::gru")  # type: ignore[misc]
def _gru_fake(
    input: torch.Tensor,
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias_ih: torch.Tensor | None,
    bias_hh: torch.Tensor | None,
    batch_first: bool,
    last_step: bool,
) -> torch.Tensor:
    return input.new_empty(_recurrent_output_shape(input, weight_hh, batch_first, last_step))


@impl(_library, "gru", "CompositeExplicitAutograd")  # type: ignore[misc]
def _gru(
    input: torch.Tensor,
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias_ih: torch.Tensor | None,
    bias_hh: torch.Tensor | None,
    batch_first: bool,
    last_step: bool,
) -> torch.Tensor:
    state = carried_state(weight_ih)
    output = gru.float_gru(input, weight_ih, weight_hh, bias_ih, bias_hh, batch_first, state)  # type: ignore[arg-type]
    last = gates_s16.last_of(output, batch_first)
    carry_state(weight_ih, last)
    return last if last_step else output


def _register_quantized_layer(
    name: str, layer: Callable[..., tuple[torch.Tensor, ...]], gates: int, states: int
) -> None:
    """The fake tensor and host reference (functional and out) of a whole quantized
    recurrent layer: `layer` (lstm.lstm, gru.gru) over every step,
    then the last step's h where the operator keeps only that; with a carried state (its
    `states` inputs, then as many outputs, given) its final state written to the outputs,
    as the kernel writes them."""

    def fake(
        input: torch.Tensor,
        input_weights: torch.Tensor,
        hidden_weights: torch.Tensor,
        *args: object,
    ) -> torch.Tensor:
        batch_first, last_step = bool(args[-3 - 2 * states]), bool(args[-2 - 2 * states])
        shape = _recurrent_output_shape(input, hidden_weights, batch_first, last_step)
        return input.new_empty(shape, dtype=torch.int8)

    def values(input: torch.Tensor, *args: object) -> torch.Tensor:
        # Operands, scales, the output's zero point (and an LSTM's cell power), the layout,
        # last_step, the state's inputs and outputs, then the scratch.
        *head, batch_first, last_step = args[: -1 - 2 * states]
        carried = args[-1 - 2 * states : -1]
        state_in, state_out = carried[:states], carried[states:]
        operands, (gate_scales, state_scales), rest = head[:4], head[4:6], head[6:]
        output, *finals = layer(
            input,
            *operands,
            torch.tensor(gate_scales, dtype=torch.int64).view(gates, 4),
            torch.tensor(state_scales, dtype=torch.int64),
            *rest,
            batch_first,
            *state_in,
        )
        for destination, final in zip(state_out, finals):
            if isinstance(destination, torch.Tensor):
                destination.copy_(final.reshape(destination.shape))
        return gates_s16.last_of(output, bool(batch_first)) if last_step else output

    def out_variant(input: torch.Tensor, *args: object, out: torch.Tensor) -> torch.Tensor:
        out.copy_(values(input, *args))
        return out

    register_fake(f"{NAMESPACE}::{name}")(fake)
    _library.impl(name, values, "CompositeExplicitAutograd")
    _library.impl(f"{name}.out", out_variant, "CompositeExplicitAutograd")


_register_quantized_layer("quantized_lstm", lstm.lstm, 4, 2)
_register_quantized_layer("quantized_gru", gru.gru, 3, 1)
