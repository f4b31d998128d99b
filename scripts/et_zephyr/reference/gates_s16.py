# SPDX-License-Identifier: Apache-2.0
"""The int16 gate arithmetic of CMSIS-NN's recurrent kernels, which et-zephyr's LSTM
(arm_lstm_unidirectional_s8) and GRU (lib/src/kernels/quantized_gru.cpp) both run.

A gate's pre-activation is an int16 in Q3.12: each side (input x, hidden state h) an
int8 vector times int8 weights plus an int32 bias, requantized and added, saturating
(arm_nn_vec_mat_mul_result_acc_s8_s16); sigmoid and tanh are arm_nn_activation_s16's
interpolation of a 256-entry table, to Q0.15. Weights are quantized per gate and per
side, symmetric, as TFLite quantizes an LSTM's.
"""

from __future__ import annotations

import torch
from executorch.backends.cortex_m.passes.passes_utils import quantize_multiplier_aot

from .fixed_point import requantize

# sigmoid(i / 24) in 0.16, CMSIS-NN's sigmoid_table_uint16 (arm_nntables.c); tanh reads it
# too (tanh(x) = 2 sigmoid(2x) - 1). TFLite's values, not a rounding of the formula.
SIGMOID_TABLE = torch.tensor(
    [
        32768,
        33451,
        34133,
        34813,
        35493,
        36169,
        36843,
        37513,
        38180,
        38841,
        39498,
        40149,
        40794,
        41432,
        42064,
        42688,
        43304,
        43912,
        44511,
        45102,
        45683,
        46255,
        46817,
        47369,
        47911,
        48443,
        48964,
        49475,
        49975,
        50464,
        50942,
        51409,
        51865,
        52311,
        52745,
        53169,
        53581,
        53983,
        54374,
        54755,
        55125,
        55485,
        55834,
        56174,
        56503,
        56823,
        57133,
        57433,
        57724,
        58007,
        58280,
        58544,
        58800,
        59048,
        59288,
        59519,
        59743,
        59959,
        60168,
        60370,
        60565,
        60753,
        60935,
        61110,
        61279,
        61441,
        61599,
        61750,
        61896,
        62036,
        62172,
        62302,
        62428,
        62549,
        62666,
        62778,
        62886,
        62990,
        63090,
        63186,
        63279,
        63368,
        63454,
        63536,
        63615,
        63691,
        63765,
        63835,
        63903,
        63968,
        64030,
        64090,
        64148,
        64204,
        64257,
        64308,
        64357,
        64405,
        64450,
        64494,
        64536,
        64576,
        64614,
        64652,
        64687,
        64721,
        64754,
        64786,
        64816,
        64845,
        64873,
        64900,
        64926,
        64950,
        64974,
        64997,
        65019,
        65039,
        65060,
        65079,
        65097,
        65115,
        65132,
        65149,
        65164,
        65179,
        65194,
        65208,
        65221,
        65234,
        65246,
        65258,
        65269,
        65280,
        65291,
        65301,
        65310,
        65319,
        65328,
        65337,
        65345,
        65352,
        65360,
        65367,
        65374,
        65381,
        65387,
        65393,
        65399,
        65404,
        65410,
        65415,
        65420,
        65425,
        65429,
        65433,
        65438,
        65442,
        65445,
        65449,
        65453,
        65456,
        65459,
        65462,
        65465,
        65468,
        65471,
        65474,
        65476,
        65479,
        65481,
        65483,
        65485,
        65488,
        65489,
        65491,
        65493,
        65495,
        65497,
        65498,
        65500,
        65501,
        65503,
        65504,
        65505,
        65507,
        65508,
        65509,
        65510,
        65511,
        65512,
        65513,
        65514,
        65515,
        65516,
        65517,
        65517,
        65518,
        65519,
        65520,
        65520,
        65521,
        65522,
        65522,
        65523,
        65523,
        65524,
        65524,
        65525,
        65525,
        65526,
        65526,
        65526,
        65527,
        65527,
        65528,
        65528,
        65528,
        65529,
        65529,
        65529,
        65529,
        65530,
        65530,
        65530,
        65530,
        65531,
        65531,
        65531,
        65531,
        65531,
        65532,
        65532,
        65532,
        65532,
        65532,
        65532,
        65533,
        65533,
        65533,
        65533,
        65533,
        65533,
        65533,
        65533,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65534,
        65535,
    ],
    dtype=torch.int64,
)
SIGMOID, TANH = "sigmoid", "tanh"
GATE_FRACTION_BITS = 12  # pre-activations in Q3.12
STATE_FRACTION_BITS = 15  # gate outputs in Q0.15
GATE_UNIT = 2.0**-GATE_FRACTION_BITS
STATE_UNIT = 2.0**-STATE_FRACTION_BITS
INT16_MIN, INT16_MAX = -32768, 32767


def symmetric(weights: torch.Tensor) -> tuple[torch.Tensor, float]:
    """int8 weights in [-127, 127] and their scale."""
    largest = float(weights.abs().max())
    scale = largest / 127 if largest > 0 else 1.0
    return torch.clamp(torch.round(weights / scale), -127, 127).to(torch.int8), scale


def scale_words(value: float) -> list[int]:
    """A real scale as CMSIS-NN's multiplier and shift."""
    multiplier, shift = quantize_multiplier_aot(value)
    return [multiplier, shift]


def clamp_int32(values: torch.Tensor) -> torch.Tensor:
    return values.clamp(-(2**31), 2**31 - 1).to(torch.int32)


def row_sums(weights: torch.Tensor) -> torch.Tensor:
    return weights.to(torch.int64).sum(-1)


def activation_s16(values: torch.Tensor, left_shift: int, kind: str) -> torch.Tensor:
    """arm_nn_activation_s16: sigmoid or tanh of int16 values in Q3.12 (after a left
    shift by `left_shift`, which may be negative), to Q0.15, by interpolating the table."""
    sigmoid = kind == SIGMOID
    abs_shift = 9 if sigmoid else 8
    saturated = (0x7FFF << 10) if sigmoid else (0xFFFF << 8)
    multiplier = 3 if left_shift < 0 else 3 << left_shift
    right_shift = -left_shift if left_shift < 0 else 0
    rounding = (1 << (right_shift - 1)) if right_shift > 0 else 0
    x = (values.to(torch.int64) * multiplier + rounding) >> right_shift
    magnitude = x.abs()
    index = magnitude >> abs_shift
    inside = index < 255
    safe = torch.where(inside, index, torch.zeros_like(index))
    low, high = SIGMOID_TABLE[safe], SIGMOID_TABLE[safe + 1]
    fraction = magnitude & ((1 << abs_shift) - 1)
    result = torch.where(inside, (low << abs_shift) + fraction * (high - low), saturated)
    if sigmoid:
        result = torch.where(x >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1) >> 10
    else:
        result = torch.where(x >= 0, result - (1 << 23) + (1 << 7), (1 << 23) - result + 127)
        result = (result & 0xFFFFFFFF) >> 8  # uint32 in C: the negative side wraps
    return ((result + 32768) & 0xFFFF) - 32768  # the int16 store


def saturate16(values: torch.Tensor) -> torch.Tensor:
    return values.clamp(INT16_MIN, INT16_MAX)


def product(a: torch.Tensor, b: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """arm_nn_requantize of an elementwise product, scale = (multiplier, shift)."""
    return requantize(a * b, int(scale[0]), int(scale[1]))


def side(
    x: torch.Tensor, weights: torch.Tensor, biases: torch.Tensor, scale: tuple[int, int]
) -> torch.Tensor:
    """One side of a gate: x @ weights.T + biases, requantized (not yet saturated)."""
    return requantize(x @ weights.T + biases, scale[0], scale[1])


def last_of(output: torch.Tensor, batch_first: bool) -> torch.Tensor:
    """The last step's h of a layer's outputs ([B, H])."""
    return (output[:, -1] if batch_first else output[-1]).contiguous()
