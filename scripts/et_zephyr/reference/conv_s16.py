# SPDX-License-Identifier: Apache-2.0
"""CMSIS-NN's 16x8 convolutions, as the device runs them: arm_convolve_wrapper_s16 with
int64 biases and arm_depthwise_conv_wrapper_s16.

Each output is the exact sum of its window's products plus the channel's int64 bias,
requantized per channel by arm_nn_requantize_s64 with the multiplier reduced to Q15, then
clamped. The kernels sum in 32 bits before adding the bias (all or the first 512 columns
of a patch, by path); passes/int16_lowering.py accepts a layer only where no channel's
sum can pass 2^31 (the sum of its weights' magnitudes times 32,767), so every path and
tier computes the exact sum, as here. Zero padding: the s16 kernels have no offsets.
"""

from __future__ import annotations

import torch

from .linear_s16 import requantize_s64


def conv2d_s16(
    input: torch.Tensor,
    weights: torch.Tensor,
    biases: torch.Tensor | None,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    multipliers: torch.Tensor,
    shifts: torch.Tensor,
    activation_min: int,
    activation_max: int,
) -> torch.Tensor:
    """int16 input [N, C_in, H, W], int8 weights OHWI [C_out, kH, kW, C_in]."""
    oihw = weights.permute(0, 3, 1, 2)
    return _convolve(
        input, oihw, 1, biases, stride, padding, dilation, multipliers, shifts,
        activation_min, activation_max,
    )  # fmt: skip


def depthwise_conv2d_s16(
    input: torch.Tensor,
    weights: torch.Tensor,
    biases: torch.Tensor | None,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    depth_multiplier: int,
    multipliers: torch.Tensor,
    shifts: torch.Tensor,
    activation_min: int,
    activation_max: int,
) -> torch.Tensor:
    """int16 input [N, C_in, H, W], int8 weights [1, kH, kW, C_in * depth_multiplier]:
    output channel c reads input channel c // depth_multiplier."""
    del depth_multiplier  # the weights' channels say it
    oihw = weights.permute(3, 0, 1, 2)
    return _convolve(
        input, oihw, input.shape[1], biases, stride, padding, dilation, multipliers, shifts,
        activation_min, activation_max,
    )  # fmt: skip


def _convolve(
    input: torch.Tensor,
    oihw: torch.Tensor,
    groups: int,
    biases: torch.Tensor | None,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    multipliers: torch.Tensor,
    shifts: torch.Tensor,
    activation_min: int,
    activation_max: int,
) -> torch.Tensor:
    # Products below 2^22, sums below 2^53: exact in float64.
    sums = torch.nn.functional.conv2d(
        input.to(torch.float64),
        oihw.to(torch.float64),
        None,
        list(stride),
        list(padding),
        list(dilation),
        groups,
    ).to(torch.int64)
    if biases is not None:
        sums = sums + biases.to(torch.int64).view(1, -1, 1, 1)
    per_channel = (1, -1, 1, 1)
    result = requantize_s64(
        sums,
        multipliers.to(torch.int64).view(per_channel),
        shifts.to(torch.int64).view(per_channel),
    )
    return result.clamp(activation_min, activation_max).to(torch.int16)
