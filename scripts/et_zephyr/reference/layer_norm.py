# SPDX-License-Identifier: Apache-2.0
"""et_zephyr::quantized_layer_norm: LayerNorm over the last dimension, in integers.

The arithmetic of lib/src/kernels/layer_norm.h, written once more in Python. For a row
x of C int8 values with zero point z (d = x - z):

    c_i = C * d_i - sum(d)              C times the deviation from the mean, exact
    D   = sum(c_i^2) + E                C^3 * (variance + eps) / s_x^2, E = eps * C^3 / s_x^2
    y_i = c_i * sqrt(C) / sqrt(D)       the normalized value (s_x cancels)
    q_i = round(y_i * gamma_i / s_y + beta_i / s_y) + z_y

sqrt(D) is an integer square root of D * 4^s, s as large as int64 allows, so it keeps
about 30 significant bits; gamma_i * sqrt(C) / s_y and beta_i / s_y are fixed-point
numbers with F fractional bits (int32, F chosen per layer). Division rounds half away
from zero, the final shift rounds half up. Every product fits int64 for C <= MAX_CHANNELS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

MAX_CHANNELS = 8192
_INT64_BITS = 62  # the largest D * 4^s and |c_i * M_i * 2^s| stay below 2^62


@dataclass(frozen=True)
class LayerNormParameters:
    """What et-export computes once per layer from gamma, beta, eps and the scales."""

    multipliers: torch.Tensor  # int32 [C]: round(gamma_i * sqrt(C) / s_y * 2^shift)
    biases: torch.Tensor  # int32 [C]: round(beta_i / s_y * 2^shift)
    epsilon: int  # round(eps * C^3 / s_x^2)
    shift: int  # F


def parameters(
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
    input_scale: float,
    output_scale: float,
    channels: int,
) -> LayerNormParameters:
    gamma = (
        torch.ones(channels, dtype=torch.float64) if weight is None else weight.detach().double()
    )
    beta = torch.zeros(channels, dtype=torch.float64) if bias is None else bias.detach().double()
    gains = gamma * math.sqrt(channels) / output_scale
    offsets = beta / output_scale
    largest = max(float(gains.abs().max()), float(offsets.abs().max()), 2.0**-16)
    # Both fit int32: largest * 2^shift < 2^31.
    shift = max(1, min(46, 30 - math.floor(math.log2(largest))))
    epsilon = min(round(eps * channels**3 / input_scale**2), 1 << 61)
    return LayerNormParameters(
        multipliers=torch.round(gains * 2.0**shift).to(torch.int32),
        biases=torch.round(offsets * 2.0**shift).to(torch.int32),
        epsilon=int(epsilon),
        shift=shift,
    )


def root_shift_limit(channels: int) -> int:
    """The largest s for which |c_i * M_i| * 2^s < 2^62: |c_i| < 2^b, |M_i| < 2^31."""
    return _INT64_BITS - 31 - (2 * 255 * channels).bit_length()


def layer_norm(
    values: torch.Tensor,
    multipliers: torch.Tensor,
    biases: torch.Tensor,
    input_zero_point: int,
    output_zero_point: int,
    epsilon: int,
    shift: int,
) -> torch.Tensor:
    channels = multipliers.numel()
    rows = values.reshape(-1, channels).to(torch.int64) - input_zero_point
    centred = channels * rows - rows.sum(dim=1, keepdim=True)
    denominators = (centred * centred).sum(dim=1) + epsilon
    limit = root_shift_limit(channels)
    roots, shifts = [], []
    for denominator in denominators.tolist():
        denominator = max(denominator, 1)
        s = min(limit, (_INT64_BITS - denominator.bit_length()) // 2)
        roots.append(math.isqrt(denominator << (2 * s)))
        shifts.append(s)
    root = torch.tensor(roots, dtype=torch.int64).unsqueeze(1)
    scaled = (centred * multipliers.to(torch.int64)) << torch.tensor(shifts).unsqueeze(1)
    quotient = (scaled.abs() + root // 2) // root
    normalized = torch.where(scaled < 0, -quotient, quotient)
    total = normalized + biases.to(torch.int64)
    result = ((total + (1 << (shift - 1))) >> shift) + output_zero_point
    return result.clamp(-128, 127).to(torch.int8).reshape(values.shape)
