# SPDX-License-Identifier: Apache-2.0
"""CMSIS-NN's arm_elementwise_add_s16, as the device runs it (additions, and subtractions
as the addition of the second input with its multiplier negated).

Each input is shifted left by 15, requantized by its own multiplier and shift
(arm_nn_requantize, the int8 kernels' requantization), the two summed in 32 bits and the
sum requantized by the output's multiplier and shift, then clamped. The multipliers come
from TensorFlow Lite's 16x8 add (`parameters`), which the kernel was written for.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from executorch.backends.cortex_m.passes.passes_utils import quantize_multiplier_aot

from .fixed_point import requantize, wrap32

LEFT_SHIFT = 15


@dataclass(frozen=True)
class AddParameters:
    input_multipliers: tuple[int, int]
    input_shifts: tuple[int, int]
    output_multiplier: int
    output_shift: int


def parameters(
    scale_a: float, scale_b: float, output_scale: float, subtract: bool = False
) -> AddParameters:
    """Both inputs brought to twice the larger input scale, then to the output's; with
    `subtract`, the second one negated."""
    twice_max = 2.0 * max(scale_a, scale_b)
    a = quantize_multiplier_aot(scale_a / twice_max)
    b = quantize_multiplier_aot(scale_b / twice_max)
    out = quantize_multiplier_aot(twice_max / ((1 << LEFT_SHIFT) * output_scale))
    second = -b[0] if subtract else b[0]
    return AddParameters((a[0], second), (a[1], b[1]), out[0], out[1])


def add_s16(
    a: torch.Tensor,
    b: torch.Tensor,
    input_multipliers: list[int],
    input_shifts: list[int],
    output_multiplier: int,
    output_shift: int,
    activation_min: int,
    activation_max: int,
) -> torch.Tensor:
    """int16 a + b of one shape, in the output's steps."""
    scaled = [
        requantize(x.to(torch.int64) << LEFT_SHIFT, multiplier, shift)
        for x, multiplier, shift in zip((a, b), input_multipliers, input_shifts)
    ]
    total = requantize(wrap32(scaled[0] + scaled[1]), output_multiplier, output_shift)
    return total.clamp(activation_min, activation_max).to(torch.int16)
