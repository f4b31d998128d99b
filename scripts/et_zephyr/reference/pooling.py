# SPDX-License-Identifier: Apache-2.0
"""cortex_m::quantized_avg_pool2d as arm_avgpool_s8 computes it.

CMSIS-NN averages the raw int8 values (input and output share their quantization)
and rounds the integer mean half away from zero:
`sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count` with C's truncating
division, `count` being the window's positions inside the input. ExecuTorch's Python
dequantizes, averages in float and requantizes with ties to even around the zero
point, which differs wherever a window's sum is a multiple of count plus count / 2.
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
    del zero_point, multiplier, shift, scratch  # the kernel reads none of them
    kernel, steps, pads = _pair(kernel_size), _pair(stride), _pair(padding)

    def window_sums(x: torch.Tensor) -> torch.Tensor:
        # Sums of small integers are exact in float64.
        return F.avg_pool2d(x, kernel, steps, pads, divisor_override=1)

    sums = window_sums(values.to(torch.float64)).to(torch.int64)
    counts = window_sums(torch.ones_like(values[:1, :1], dtype=torch.float64)).to(torch.int64)
    half = counts // 2
    mean = torch.div(torch.where(sums > 0, sums + half, sums - half), counts, rounding_mode="trunc")
    result = mean.clamp(_ACTIVATION_MIN, _ACTIVATION_MAX).to(torch.int8)
    return result.contiguous(memory_format=torch.channels_last)


def _pair(value: Sequence[int]) -> tuple[int, int]:
    return (value[0], value[0]) if len(value) == 1 else (value[0], value[1])
