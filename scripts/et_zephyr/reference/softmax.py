# SPDX-License-Identifier: Apache-2.0
"""cortex_m::softmax as arm_softmax_s8 computes it (arm_nn_softmax_common_s8).

ExecuTorch's Python computes a float softmax and rounds it; the kernel works in
fixed point: exp of each difference to the row's maximum in Q5.26 (input scaled by
`mult`, `shift`), the sum of the exponentials in Q12.19, its reciprocal by
Newton-Raphson, and the output in steps of 1/256 from -128. Differences below
`diff_min` give -128. With GCC 12.2 CMSIS-NN compiles its Helium variant out
(ARM_GCC_12_2_ICE), so every tier runs this code.
"""

from __future__ import annotations

import torch

from .fixed_point import (
    count_leading_zeros,
    divide_by_power_of_two,
    doubling_high_mult,
    exp_on_negative_values,
    one_over_one_plus_x,
    wrap32,
)

_ACCUM_BITS = 12


def softmax(
    values: torch.Tensor,
    dim: int,
    input_zero_point: int,
    output_zero_point: int,
    input_multiplier: int,
    input_shift: int,
    diff_min: int,
) -> torch.Tensor:
    del input_zero_point, output_zero_point  # the kernel reads neither (zero point -128 out)
    # Along the dimension laid out innermost (the last, or channels-last channels).
    rows = values.movedim(dim, -1).to(torch.int64)
    diff = rows - rows.amax(dim=-1, keepdim=True)
    inside = diff >= diff_min
    scaled = doubling_high_mult(wrap32(diff * (1 << input_shift)), input_multiplier)
    exps = exp_on_negative_values(scaled)
    terms = torch.where(inside, divide_by_power_of_two(exps, _ACCUM_BITS), 0)
    total = terms.sum(dim=-1, keepdim=True)
    headroom = count_leading_zeros(total)
    normalised = torch.where(total > 0, wrap32(total << headroom), 0) + (1 << 31)
    shifted_scale = one_over_one_plus_x(wrap32(normalised))
    bits_over_unit = _ACCUM_BITS - headroom + 23
    probabilities = divide_by_power_of_two(doubling_high_mult(shifted_scale, exps), bits_over_unit)
    result = (probabilities - 128).clamp(-128, 127)
    return torch.where(inside, result, -128).to(torch.int8).movedim(-1, dim)
