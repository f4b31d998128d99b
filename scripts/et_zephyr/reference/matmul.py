# SPDX-License-Identifier: Apache-2.0
"""cortex_m::quantized_batch_matmul as arm_batch_matmul_s8 computes it.

ExecuTorch's Python multiplies in float32, which is not exact once a dot product
passes 2^24; the kernel accumulates (lhs + lhs_offset) * (rhs + rhs_offset) in
int32 and requantizes with arm_nn_requantize.
"""

from __future__ import annotations

import torch

from .fixed_point import requantize, wrap32


def batch_matmul(
    lhs: torch.Tensor,
    lhs_offset: int,
    rhs_transposed: torch.Tensor,
    rhs_offset: int,
    output_offset: int,
    output_multiplier: int,
    output_shift: int,
    scratch: torch.Tensor,
) -> torch.Tensor:
    del scratch
    left = lhs.to(torch.int64) + lhs_offset
    right = rhs_transposed.to(torch.int64) + rhs_offset
    sums = wrap32(torch.bmm(left, right.transpose(1, 2)))
    result = requantize(sums, output_multiplier, output_shift) + output_offset
    return result.clamp(-128, 127).to(torch.int8)
