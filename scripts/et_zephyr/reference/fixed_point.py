# SPDX-License-Identifier: Apache-2.0
"""CMSIS-NN's fixed-point helpers (arm_nnsupportfunctions.h), element-wise on tensors.

Each function computes what the C code computes for every int32 input, overflow
included: C's int32 arithmetic wraps on the Cortex-M, so the results are wrapped
to 32 bits exactly where the C code would wrap. CMSIS-NN is built without
CMSIS_NN_USE_SINGLE_ROUNDING (as ExecuTorch and et-zephyr build it): requantization
rounds twice, as here.
"""

from __future__ import annotations

import torch

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def wrap32(value: torch.Tensor) -> torch.Tensor:
    """An int64 tensor reduced to int32 two's complement, kept in int64."""
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def doubling_high_mult_no_sat(a: torch.Tensor, b: torch.Tensor | int) -> torch.Tensor:
    """arm_nn_doubling_high_mult_no_sat: (a * b + 2^30) >> 31, truncated to int32."""
    return wrap32((a * b + (1 << 30)) >> 31)


def doubling_high_mult(a: torch.Tensor, b: torch.Tensor | int) -> torch.Tensor:
    """arm_nn_doubling_high_mult (MUL_SAT): midpoints away from zero, MIN * MIN saturates."""
    b = torch.as_tensor(b, dtype=torch.int64)
    nudge = torch.where((a < 0) ^ (b < 0), 1 - (1 << 30), 1 << 30)
    result = torch.div(nudge + a * b, 1 << 31, rounding_mode="trunc")
    saturated = (a == INT32_MIN) & (b == INT32_MIN)
    return torch.where(saturated, INT32_MAX, wrap32(result))


def divide_by_power_of_two(dividend: torch.Tensor, exponent: torch.Tensor | int) -> torch.Tensor:
    """arm_nn_divide_by_power_of_two (DIV_POW2): a rounding shift, midpoints away from zero."""
    exponent = torch.as_tensor(exponent, dtype=torch.int64)
    mask = (torch.ones_like(exponent) << exponent) - 1
    remainder = dividend & mask
    result = dividend >> exponent
    threshold = (mask >> 1) + (result < 0).to(torch.int64)
    return result + (remainder > threshold).to(torch.int64)


def requantize(value: torch.Tensor, multiplier: torch.Tensor | int, shift: torch.Tensor | int):
    """arm_nn_requantize: value * multiplier * 2^shift / 2^31 with CMSIS-NN's two roundings.

    The left shift (`val * (1 << LEFT_SHIFT(shift))`) is an int32 product in C and
    wraps there; multiplier and shift may be per-channel tensors that broadcast.
    """
    value = value.to(torch.int64)
    shift = torch.as_tensor(shift, dtype=torch.int64)
    multiplier = torch.as_tensor(multiplier, dtype=torch.int64)
    shifted = wrap32(value << shift.clamp(min=0))
    return divide_by_power_of_two(
        doubling_high_mult_no_sat(shifted, multiplier), (-shift).clamp(min=0)
    )


def mult_by_power_of_two(value: torch.Tensor, exponent: int) -> torch.Tensor:
    """arm_nn_mult_by_power_of_two (MUL_POW2): a saturating left shift."""
    threshold = (1 << (31 - exponent)) - 1
    result = wrap32(value << exponent)
    result = torch.where(value > threshold, INT32_MAX, result)
    return torch.where(value < -threshold, INT32_MIN, result)


# exp(-1/4 * 2^k) in Q0.31 for k = 0..6: arm_nn_exp_on_negative_values' factors.
_EXP_FACTORS = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)


def exp_on_negative_values(value: torch.Tensor) -> torch.Tensor:
    """arm_nn_exp_on_negative_values: exp(x) for x <= 0 in Q5.26, result in Q0.31."""
    mul, div = doubling_high_mult, divide_by_power_of_two
    minus_quarter = (value & ((1 << 24) - 1)) - (1 << 24)
    remainder = minus_quarter - value
    x = wrap32((minus_quarter << 5) + (1 << 28))
    x2 = mul(x, x)
    polynomial = wrap32(div(mul(x2, x2), 2) + mul(x2, x))
    polynomial = wrap32(x + div(wrap32(mul(polynomial, 715827883) + x2), 1))
    result = wrap32(1895147668 + mul(torch.full_like(x, 1895147668), polynomial))
    for bit, factor in enumerate(_EXP_FACTORS, start=24):
        result = torch.where((remainder & (1 << bit)) != 0, mul(result, factor), result)
    return torch.where(value == 0, INT32_MAX, result)


def one_over_one_plus_x(value: torch.Tensor) -> torch.Tensor:
    """arm_nn_one_over_one_plus_x_for_x_in_0_1: 1 / (1 + x) for x in [0, 1) in Q0.31,
    by three Newton-Raphson steps."""
    mul = doubling_high_mult
    total = value + INT32_MAX
    half_denominator = torch.div(total + torch.where(total >= 0, 1, -1), 2, rounding_mode="trunc")
    x = wrap32(1515870810 + mul(half_denominator, -1010580540))
    for _ in range(3):
        step = wrap32((1 << 29) - mul(half_denominator, x))
        x = wrap32(x + mult_by_power_of_two(mul(x, step), 2))
    return mult_by_power_of_two(x, 1)


def count_leading_zeros(value: torch.Tensor) -> torch.Tensor:
    """CLZ of non-negative int32 values (32 for zero)."""
    zeros = torch.full_like(value, 32)
    for bit in range(31, -1, -1):
        zeros = torch.where((zeros == 32) & ((value >> bit) & 1 == 1), 31 - bit, zeros)
    return zeros
