# SPDX-License-Identifier: Apache-2.0
"""Test inputs the firmware makes itself: many vectors at no flash cost.

A generated input is a recipe of three numbers: a xorshift32 seed, an integer
offset and a float32 step. Element k of the input's device buffer (memory order)
is `(float)(code_k + offset) * step`, code_k the top 16 bits of the k-th
xorshift32 state minus 32768: uniform over [centre - amplitude, centre + amplitude].
One integer-to-float conversion (exact below 2^24) and one float32 multiply: the
device (hardware or soft float) and numpy round them alike, so the host computes
the very floats the firmware feeds the model. samples/kws/src/main.c holds the C.

The amplitudes sweep the calibration data's range and go past it, so the
quantizer's saturation and the kernels' clamps are exercised too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import ExportError
from ..frontend.loading import Inputs
from ..reference import memory_order

# Multiples of the calibration range: mostly inside it, then past it (saturation).
AMPLITUDES = (1.0, 0.5, 1.0, 0.25, 1.0, 2.0, 1.0, 4.0, 0.75, 16.0)
_CODE_RANGE = 1 << 15
_OFFSET_LIMIT = (1 << 23) - _CODE_RANGE  # keeps every code + offset exact in float32


@dataclass(frozen=True)
class Recipe:
    """How the firmware makes one generated input."""

    seed: int
    offset: int
    step: float  # a float32 value

    def as_words(self) -> tuple[int, int, int]:
        """(seed, offset, step) as uint32 words: offset two's complement, step's bits."""
        step_bits = int(np.array(self.step, dtype=np.float32).view(np.uint32))
        return self.seed, self.offset & 0xFFFFFFFF, step_bits


def xorshift_codes(seed: int, count: int) -> np.ndarray:
    """code_k for k < count: the top 16 bits of successive xorshift32 states, centred."""
    codes = np.empty(count, dtype=np.int64)
    state = seed
    for k in range(count):
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        codes[k] = (state >> 16) - _CODE_RANGE
    return codes


def values(recipe: Recipe, count: int) -> np.ndarray:
    """The float32 elements the firmware writes, in memory order."""
    codes = (xorshift_codes(recipe.seed, count) + recipe.offset).astype(np.float32)
    return codes * np.float32(recipe.step)


def recipes(calibration: list[Inputs], count: int, seed: int) -> list[tuple[Recipe, ...]]:
    """`count` vectors of recipes, one per input, scaled to the calibration data."""
    if count == 0:
        return []
    if not calibration:
        raise ExportError("generated test vectors need calibration data to scale to")
    lows, highs = [], []
    for index, example in enumerate(calibration[0]):
        if example.dtype != torch.float32:
            raise ExportError(
                f"generated test vectors need float32 inputs; input {index} is "
                f"{str(example.dtype).removeprefix('torch.')}"
            )
        samples = torch.stack([sample[index].float() for sample in calibration])
        lows.append(float(samples.min()))
        highs.append(float(samples.max()))
    result = []
    for vector in range(count):
        row = []
        for index, (low, high) in enumerate(zip(lows, highs)):
            centre = (low + high) / 2
            amplitude = max((high - low) / 2, 1e-3) * AMPLITUDES[vector % len(AMPLITUDES)]
            step = float(np.float32(amplitude / _CODE_RANGE))
            offset = int(np.clip(round(centre / step), -_OFFSET_LIMIT, _OFFSET_LIMIT))
            row.append(Recipe(_seed(seed, vector, index), offset, step))
        result.append(tuple(row))
    return result


def _seed(seed: int, vector: int, index: int) -> int:
    mixed = (seed * 0x2545F491 + (vector + 1) * 0x9E3779B9 + index * 0x85EBCA6B) & 0xFFFFFFFF
    return mixed or 1  # xorshift32 never leaves zero


def materialize(
    recipe_row: tuple[Recipe, ...], examples: Inputs, orders: Sequence[Sequence[int]]
) -> Inputs:
    """The generated inputs as tensors of the example inputs' shapes whose elements, in
    the program's dim order of each input (`orders`: the device's memory order), are
    the ones the firmware writes."""
    return tuple(
        memory_order.unflatten(
            torch.from_numpy(values(recipe, example.numel())), example.shape, list(order)
        )
        for recipe, example, order in zip(recipe_row, examples, orders)
    )
