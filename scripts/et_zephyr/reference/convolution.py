# SPDX-License-Identifier: Apache-2.0
"""cortex_m::quantized_conv2d, quantized_depthwise_conv2d and quantized_transpose_conv2d
as CMSIS-NN computes them.

Each output is the int32 sum of (input + input_offset) * weight plus the bias, then
arm_nn_requantize with the channel's multiplier and shift, the output offset and the
activation clamp. ExecuTorch's Python sums with an int32 convolution, which PyTorch
has no dilated form of; here the sums are taken in float64 (exact: they stay far below
2^53) and wrapped to int32 where the device's would wrap.

arm_transpose_conv_s8 scatters each input pixel's (input + input_offset) * weight
products into an int32 row buffer that starts from the bias, and requantizes the rows
`padding` below and right of the full output's corner: PyTorch's conv_transpose2d
with that padding, its output_padding rows and columns at the far edges. ExecuTorch's
Python sums in float32, which rounds once a sum passes 2^24.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from .fixed_point import requantize, wrap32

# CMSIS-NN's REVERSE_TCOL_EFFICIENT_THRESHOLD: above it (and stride <= 2), the reverse
# convolution runs.
_REVERSE_CONVOLUTION_CHANNELS = 16


def conv2d(
    values: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    input_offset: int,
    output_offset: int,
    multipliers: torch.Tensor,
    shifts: torch.Tensor,
    activation_min: int,
    activation_max: int,
    scratch: torch.Tensor,
) -> torch.Tensor:
    """Weights OHWI; a weight of fewer input channels than the input is a grouped one."""
    del scratch
    groups = values.shape[1] // weight.shape[3]
    sums = _sums(
        values, weight.permute(0, 3, 1, 2), bias, stride, padding, dilation, groups, input_offset
    )
    return _output(sums, multipliers, shifts, output_offset, activation_min, activation_max)


def depthwise_conv2d(
    values: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    depth_multiplier: int,
    input_offset: int,
    output_offset: int,
    multipliers: torch.Tensor,
    shifts: torch.Tensor,
    activation_min: int,
    activation_max: int,
    scratch: torch.Tensor,
) -> torch.Tensor:
    """Weights [1, H, W, C * depth_multiplier]: output channel c * multiplier + m reads
    input channel c."""
    del scratch, depth_multiplier
    sums = _sums(
        values,
        weight.permute(3, 0, 1, 2),
        bias,
        stride,
        padding,
        dilation,
        values.shape[1],
        input_offset,
    )
    return _output(sums, multipliers, shifts, output_offset, activation_min, activation_max)


def transpose_conv2d(
    values: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
    input_offset: int,
    output_offset: int,
    multipliers: torch.Tensor,
    shifts: torch.Tensor,
    activation_min: int,
    activation_max: int,
    scratch: torch.Tensor,
    output_scratch: torch.Tensor,
) -> torch.Tensor:
    """Weights OHWI (output channels first); no groups or dilation (CMSIS-NN has none).
    Refuses the top paddings CMSIS-NN's direct kernel places wrongly (passes/
    transpose_conv_rows.py keeps them from the device)."""
    del scratch, output_scratch
    if tuple(dilation) != (1, 1) or values.shape[1] != weight.shape[3]:
        raise ValueError("quantized_transpose_conv2d: no dilation or groups on CMSIS-NN")
    if direct_kernel_misplaces_rows(values.shape[1], list(stride), padding[0], weight.shape[1]):
        raise ValueError(
            "quantized_transpose_conv2d: arm_transpose_conv_s8 misplaces rows for a top "
            f"padding of {padding[0]} and a kernel height of {weight.shape[1]} at stride "
            f"{stride[0]}"
        )
    sums = F.conv_transpose2d(
        values.to(torch.float64) + input_offset,
        weight.permute(3, 0, 1, 2).to(torch.float64),
        None,
        tuple(stride),
        tuple(padding),
        tuple(output_padding),
    )
    return _output(
        _biased(sums, bias), multipliers, shifts, output_offset, activation_min, activation_max
    )


def _sums(
    values: torch.Tensor,
    weight_oihw: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    input_offset: int,
) -> torch.Tensor:
    # Padding adds zeros to the offset input, as CMSIS-NN skips padded positions.
    shifted = values.to(torch.float64) + input_offset
    sums = F.conv2d(
        shifted,
        weight_oihw.to(torch.float64),
        None,
        tuple(stride),
        tuple(padding),
        tuple(dilation),
        groups,
    )
    return _biased(sums, bias)


def _biased(sums: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """Exact float64 sums as int32 with the bias added, wrapping as the device's do."""
    sums = sums.to(torch.int64)
    if bias is not None:
        sums = sums + bias.to(torch.int64).view(1, -1, 1, 1)
    return wrap32(sums)


def _output(
    sums: torch.Tensor,
    multipliers: torch.Tensor,
    shifts: torch.Tensor,
    output_offset: int,
    activation_min: int,
    activation_max: int,
) -> torch.Tensor:
    per_channel = (1, -1, 1, 1)
    result = requantize(sums, multipliers.view(per_channel), shifts.view(per_channel))
    result = (result + output_offset).clamp(activation_min, activation_max)
    return result.to(torch.int8).contiguous(memory_format=torch.channels_last)


def direct_kernel_misplaces_rows(
    channels: int, stride: list[int], top_padding: int, kernel_height: int
) -> bool:
    """Whether arm_transpose_conv_wrapper_s8 takes its direct kernel for this layer and
    that kernel writes rows where they do not belong (no output padding)."""
    reverse = max(stride) <= 2 and channels > _REVERSE_CONVOLUTION_CHANNELS
    return not reverse and (top_padding % stride[0] != 0 or kernel_height < stride[0])
