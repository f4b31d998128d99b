# SPDX-License-Identifier: Apache-2.0
"""CMSIS-NN's arm_fully_connected_s16 (arm_nn_vec_mat_mult_t_s16), as the device runs it.

Each output is sum(input * weight) + bias in 64 bits, requantized by
arm_nn_requantize_s64 with the multiplier reduced to 16 bits (REDUCE_MULTIPLIER), then
clamped to the activation's bounds. The DSP and Helium loops sum the first 512 columns of
a row in 32 bits; with INT8 weights in [-127, 127] and inputs in [-32767, 32767] (what
passes/quantizer_int16.py makes) those partial sums stay below 2^31, so every ISA tier
computes the exact sum, as here.
"""

from __future__ import annotations

import torch

from .fixed_point import wrap32

# arm_nn_requantize_s64 shifts right by 14 - shift: a larger shift is undefined in C.
MAX_SHIFT = 14
MIN_SHIFT = 14 - 63
MULTIPLIER_LIMIT = 0x7FFF0000


def reduce_multiplier(multiplier: torch.Tensor | int) -> torch.Tensor:
    """REDUCE_MULTIPLIER: a Q31 multiplier rounded to Q15 (per channel, for a tensor)."""
    multiplier = torch.as_tensor(multiplier, dtype=torch.int64)
    return torch.where(multiplier < MULTIPLIER_LIMIT, (multiplier + (1 << 15)) >> 16, 0x7FFF)


def requantize_s64(
    sums: torch.Tensor, multiplier: torch.Tensor | int, shift: torch.Tensor | int
) -> torch.Tensor:
    """arm_nn_requantize_s64 with REDUCE_MULTIPLIER's multiplier:
    (int32)((sum * multiplier) >> (14 - shift)), then one more halving with its rounding.
    Multiplier and shift broadcast (per channel)."""
    shift = torch.as_tensor(shift, dtype=torch.int64)
    result = wrap32((sums * reduce_multiplier(multiplier)) >> (MAX_SHIFT - shift))
    return wrap32(result + 1) >> 1


def fully_connected_s16(
    input: torch.Tensor,
    weights: torch.Tensor,
    biases: torch.Tensor | None,
    multiplier: int,
    shift: int,
    activation_min: int,
    activation_max: int,
) -> torch.Tensor:
    """int16 input [..., columns], int8 weights [rows, columns], int64 biases [rows]:
    the int16 output [..., rows]."""
    columns = weights.shape[1]
    vectors = input.reshape(-1, columns).to(torch.int64)
    # Integer matmul in int64: exact.
    sums = vectors @ weights.to(torch.int64).t()
    if biases is not None:
        sums = sums + biases.to(torch.int64)
    result = requantize_s64(sums, multiplier, shift)
    result = result.clamp(activation_min, activation_max).to(torch.int16)
    return result.reshape(*input.shape[:-1], weights.shape[0])
