# SPDX-License-Identifier: Apache-2.0
"""cortex_m::quantized_avg_pool2d, et_zephyr::avg_pool2d_clipped and
cortex_m::quantized_max_pool2d as arm_avgpool_s8 and arm_max_pool_s8 compute them, and
et_zephyr::avg_pool2d_s16 and ::max_pool2d_s16 as arm_avgpool_s16 and arm_max_pool_s16
(the same arithmetic on int16 values, clamped to the fused activation's bounds).

CMSIS-NN averages the raw int8 values (input and output share their quantization)
and rounds the integer mean half away from zero:
`sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count` with C's truncating
division, `count` being the window's positions inside the input. ExecuTorch's Python
dequantizes, averages in float and requantizes with ties to even around the zero
point, which differs wherever a window's sum is a multiple of count plus count / 2.

arm_max_pool_s8 takes the largest int8 value of each window's positions inside the
input (padding takes no part) and clamps it to the activation range. ExecuTorch's
Python hands the int8 tensor to torch's max_pool2d, whose int8 kernel refuses maps
of 128 pixels or more; here each window offset is one strided slice, any size.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

# ExecuTorch's kernel calls arm_avgpool_s8 with the int8 range as its activation.
_ACTIVATION_MIN, _ACTIVATION_MAX = -128, 127


def avg_pool2d(
    values: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    zero_point: int,
    multiplier: int,
    shift: int,
    scratch: torch.Tensor,
) -> torch.Tensor:
    del zero_point, multiplier, shift  # the kernel reads none of them
    output_size = _floor_output_size(values, kernel_size, stride, padding)
    return avg_pool2d_clipped(values, kernel_size, stride, padding, output_size, scratch)


def avg_pool2d_clipped(
    values: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    output_size: Sequence[int],
    scratch: torch.Tensor,
) -> torch.Tensor:
    """arm_avgpool_s8 with the output's size given: window (i, j) starts at
    (i * stride - padding) and is clipped to the input, wherever it ends (PyTorch's
    ceil mode adds such windows; lib/src/kernels/avg_pool2d_clipped.cpp)."""
    del scratch
    mean = _window_means(values, kernel_size, stride, padding, output_size)
    result = mean.clamp(_ACTIVATION_MIN, _ACTIVATION_MAX).to(torch.int8)
    return result.contiguous(memory_format=torch.channels_last)


def avg_pool2d_s16(
    values: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    activation_min: int,
    activation_max: int,
) -> torch.Tensor:
    """arm_avgpool_s16: each window's positions inside the input averaged as the int8
    kernel does (the DSP loop's saturating 32-bit sums of int16 values cannot saturate
    below 65,536 positions)."""
    output_size = _floor_output_size(values, kernel_size, stride, padding)
    mean = _window_means(values, kernel_size, stride, padding, output_size)
    result = mean.clamp(activation_min, activation_max).to(torch.int16)
    return result.contiguous(memory_format=torch.channels_last)


def _window_means(
    values: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    output_size: Sequence[int],
) -> torch.Tensor:
    """The rounded integer mean of each window's positions inside the input (int64)."""
    kernel, steps, (pad_h, pad_w) = _pair(kernel_size), _pair(stride), _pair(padding)
    out_h, out_w = output_size
    height, width = values.shape[2:]
    # Zeros below and right of the input until every window fits: they add nothing to a
    # sum, and the counts come from ones over the input alone.
    bottom = max(0, (out_h - 1) * steps[0] + kernel[0] - pad_h - height)
    right = max(0, (out_w - 1) * steps[1] + kernel[1] - pad_w - width)

    def window_sums(x: torch.Tensor) -> torch.Tensor:
        # Sums of small integers are exact in float64.
        padded = F.pad(x, (pad_w, right, pad_h, bottom))
        return F.avg_pool2d(padded, kernel, steps, divisor_override=1)[:, :, :out_h, :out_w]

    sums = window_sums(values.to(torch.float64)).to(torch.int64)
    counts = window_sums(torch.ones_like(values[:1, :1], dtype=torch.float64)).to(torch.int64)
    if bool((counts == 0).any()):
        raise ValueError("quantized_avg_pool2d: a window lies wholly outside the input")
    half = counts // 2
    return torch.div(torch.where(sums > 0, sums + half, sums - half), counts, rounding_mode="trunc")


def max_pool2d(
    values: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    input_zero_point: int,
    output_zero_point: int,
    activation_min: int,
    activation_max: int,
) -> torch.Tensor:
    del input_zero_point, output_zero_point  # the kernel compares raw int8 values
    if _pair(dilation) != (1, 1) or ceil_mode:
        # ExecuTorch's kernel refuses both (the lowering never emits them).
        raise ValueError("quantized_max_pool2d: dilation and ceil_mode are not supported")
    result = _window_maxima(values, kernel_size, stride, padding)
    result = result.clamp(activation_min, activation_max).to(torch.int8)
    return result.contiguous(memory_format=torch.channels_last)


def max_pool2d_s16(
    values: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    activation_min: int,
    activation_max: int,
) -> torch.Tensor:
    """arm_max_pool_s16: the largest int16 value of each window's positions inside the
    input, clamped."""
    result = _window_maxima(values, kernel_size, stride, padding)
    result = result.clamp(activation_min, activation_max).to(torch.int16)
    return result.contiguous(memory_format=torch.channels_last)


def _window_maxima(
    values: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int], padding: Sequence[int]
) -> torch.Tensor:
    """The largest value of each window's positions inside the input (int32)."""
    (kernel_h, kernel_w), (stride_h, stride_w) = _pair(kernel_size), _pair(stride)
    pad_h, pad_w = _pair(padding)
    batch, channels, height, width = values.shape
    out_h, out_w = _floor_output_size(values, kernel_size, stride, padding)
    if out_h < 1 or out_w < 1:
        raise ValueError(f"quantized_max_pool2d: a {kernel_h}x{kernel_w} window exceeds the map")
    # Positions outside the input hold a value below every int16: they never win, and a
    # window with no position inside the input (which the kernel leaves unwritten) shows.
    outside = -(1 << 16)
    padded = torch.full(
        (batch, channels, (out_h - 1) * stride_h + kernel_h, (out_w - 1) * stride_w + kernel_w),
        outside,
        dtype=torch.int32,
    )
    rows = min(height, padded.shape[2] - pad_h)
    cols = min(width, padded.shape[3] - pad_w)
    padded[:, :, pad_h : pad_h + rows, pad_w : pad_w + cols] = values[:, :, :rows, :cols]
    result = torch.full((batch, channels, out_h, out_w), outside, dtype=torch.int32)
    for row in range(kernel_h):
        for col in range(kernel_w):
            window = padded[:, :, row::stride_h, col::stride_w][:, :, :out_h, :out_w]
            result = torch.maximum(result, window)
    if bool((result == outside).any()):
        raise ValueError("quantized_max_pool2d: a window lies wholly in the padding")
    return result


def _floor_output_size(
    values: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int], padding: Sequence[int]
) -> list[int]:
    """The pooled map's height and width in floor mode."""
    return [
        (size + 2 * pad - kernel) // step + 1
        for size, kernel, step, pad in zip(
            values.shape[2:], _pair(kernel_size), _pair(stride), _pair(padding)
        )
    ]


def _pair(value: Sequence[int]) -> tuple[int, int]:
    return (value[0], value[0]) if len(value) == 1 else (value[0], value[1])
