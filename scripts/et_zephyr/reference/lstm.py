# SPDX-License-Identifier: Apache-2.0
"""et_zephyr::quantized_lstm: a whole LSTM layer, every time step, on CMSIS-NN's
arm_lstm_unidirectional_s8 (lib/src/kernels/quantized_lstm.cpp), written once more in
Python from its C (arm_nn_lstm_step_s8.c and the functions it calls).

The arithmetic TensorFlow Lite Micro and CMSIS-NN share for an int8 LSTM: int8 input x
and hidden state h (the layer's output quantization), int8 weights quantized per gate
and per operand (one symmetric scale for each of the 8 matrices), int32 biases on the
input side, each gate's pre-activation an int16 in Q3.12 (saturating), the gates int16
in Q0.15, the cell state an int16 scaled by 2^cell_scale_power. Per step:

    f = sigmoid(Wf x + Rf h + bf)     i = sigmoid(...)     g = tanh(...)     o = sigmoid(...)
    c = sat16(f * c) + i * g          (within +-cell_clip)
    h = o * tanh(c) + z_h             (int8)

each product requantized by arm_nn_requantize, each activation arm_nn_activation_s16's
table interpolation. From a zero state the first step skips the recurrent products.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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
# PyTorch's gate order in weight_ih / weight_hh / biases, and the kernel's.
GATES = ("input", "forget", "cell", "output")
_SIGMOID, _TANH = "sigmoid", "tanh"
_ACTIVATIONS = (_SIGMOID, _SIGMOID, _TANH, _SIGMOID)
GATE_FRACTION_BITS = 12  # pre-activations in Q3.12
STATE_FRACTION_BITS = 15  # gate outputs and tanh(c) in Q0.15
CELL_CLIP = 32767  # no clipping: PyTorch has none; arm_elementwise_mul_acc_s16 clamps here
INT16_MIN, INT16_MAX = -32768, 32767


@dataclass(frozen=True)
class LstmParameters:
    """One layer's operands, as the kernel takes them."""

    input_weights: torch.Tensor  # int8 [4, H, I], gates in GATES order
    hidden_weights: torch.Tensor  # int8 [4, H, H]
    input_biases: torch.Tensor  # int32 [4, H]: bias - z_x * row sums of input_weights
    hidden_biases: torch.Tensor  # int32 [4, H]: -z_h * row sums of hidden_weights
    # int32 [4, 4]: per gate the input side's multiplier and shift, then the hidden side's.
    gate_scales: torch.Tensor
    # int32 [6]: forget * cell, input * cell gate, output * tanh(cell): multiplier, shift.
    state_scales: torch.Tensor
    cell_scale_power: int


def cell_scale_power(largest_cell: float) -> int:
    """The power of two of the cell state's int16 scale: the smallest whose range holds
    the largest |c| seen in calibration (TFLite's choice), that range within [2^-12, 2^8]."""
    exponent = math.ceil(math.log2(max(largest_cell, 2.0**-12)))
    return min(exponent, 8) - STATE_FRACTION_BITS


def _symmetric(weights: torch.Tensor) -> tuple[torch.Tensor, float]:
    largest = float(weights.abs().max())
    scale = largest / 127 if largest > 0 else 1.0
    return torch.clamp(torch.round(weights / scale), -127, 127).to(torch.int8), scale


def _scale(value: float) -> list[int]:
    multiplier, shift = quantize_multiplier_aot(value)
    return [multiplier, shift]


def parameters(
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias: torch.Tensor | None,
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
    cell_power: int,
) -> LstmParameters:
    """The kernel's operands for float weights ([4H, I], [4H, H]; PyTorch's layout), the
    summed biases ([4H], or None) and the quantization of x, h and c."""
    hidden = weight_hh.shape[1]
    input_weights, hidden_weights, gate_scales, input_biases = [], [], [], []
    for gate in range(4):
        rows = slice(gate * hidden, (gate + 1) * hidden)
        w_in, s_in = _symmetric(weight_ih[rows].double())
        w_hid, s_hid = _symmetric(weight_hh[rows].double())
        input_weights.append(w_in)
        hidden_weights.append(w_hid)
        gate_unit = 2.0**-GATE_FRACTION_BITS
        gate_scales.append(
            _scale(input_scale * s_in / gate_unit) + _scale(output_scale * s_hid / gate_unit)
        )
        quantized_bias = torch.zeros(hidden, dtype=torch.float64)
        if bias is not None:
            quantized_bias = torch.round(bias[rows].double() / (input_scale * s_in))
        input_biases.append(quantized_bias.clamp(-(2**31), 2**31 - 1).to(torch.int64))
    w_i, w_h = torch.stack(input_weights), torch.stack(hidden_weights)
    effective_input = torch.stack(input_biases) - input_zero_point * w_i.to(torch.int64).sum(-1)
    effective_hidden = -output_zero_point * w_h.to(torch.int64).sum(-1)
    state_unit = 2.0**-STATE_FRACTION_BITS
    state_scales = (
        _scale(state_unit)  # f (Q0.15) * c (2^p) -> c
        + _scale(state_unit * state_unit / 2.0**cell_power)  # i * g -> c
        + _scale(state_unit * state_unit / output_scale)  # o * tanh(c) -> h
    )
    return LstmParameters(
        input_weights=w_i,
        hidden_weights=w_h,
        input_biases=effective_input.clamp(-(2**31), 2**31 - 1).to(torch.int32),
        hidden_biases=effective_hidden.clamp(-(2**31), 2**31 - 1).to(torch.int32),
        gate_scales=torch.tensor(gate_scales, dtype=torch.int32),
        state_scales=torch.tensor(state_scales, dtype=torch.int32),
        cell_scale_power=cell_power,
    )


def activation_s16(values: torch.Tensor, left_shift: int, kind: str) -> torch.Tensor:
    """arm_nn_activation_s16: sigmoid or tanh of int16 values in Q3.12 (after a left
    shift by `left_shift`, which may be negative), to Q0.15, by interpolating the table."""
    sigmoid = kind == _SIGMOID
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


def float_lstm(
    input: torch.Tensor,
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias: torch.Tensor | None,
    batch_first: bool,
) -> tuple[torch.Tensor, float]:
    """The float layer (PyTorch's nn.LSTM from a zero state) and the largest |c| it
    reached, which sets the cell state's scale."""
    steps = input.transpose(0, 1) if batch_first else input
    hidden = weight_hh.shape[1]
    h = steps.new_zeros(steps.shape[1], hidden)
    c = torch.zeros_like(h)
    largest = 0.0
    outputs = []
    for x_t in steps:
        total = x_t @ weight_ih.T + h @ weight_hh.T
        if bias is not None:
            total = total + bias
        i, f, g, o = total.split(hidden, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        largest = max(largest, float(c.abs().max()))
        outputs.append(h)
    result = torch.stack(outputs)
    return (result.transpose(0, 1) if batch_first else result).contiguous(), largest


def last_of(output: torch.Tensor, batch_first: bool) -> torch.Tensor:
    """The last step's h of a layer's outputs ([B, H])."""
    return (output[:, -1] if batch_first else output[-1]).contiguous()


def _saturate16(values: torch.Tensor) -> torch.Tensor:
    return values.clamp(INT16_MIN, INT16_MAX)


def _product(a: torch.Tensor, b: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return requantize(a * b, int(scale[0]), int(scale[1]))


def lstm(
    input: torch.Tensor,
    input_weights: torch.Tensor,
    hidden_weights: torch.Tensor,
    input_biases: torch.Tensor,
    hidden_biases: torch.Tensor,
    gate_scales: torch.Tensor,
    state_scales: torch.Tensor,
    output_zero_point: int,
    cell_power: int,
    batch_first: bool,
) -> torch.Tensor:
    """The layer's int8 outputs h for every step ([B, T, H] or [T, B, H] like the input)
    from a zero state: arm_lstm_unidirectional_s8's arithmetic."""
    x = input.to(torch.int64)
    steps = x.transpose(0, 1) if batch_first else x  # [T, B, I]
    w_in = input_weights.to(torch.int64)
    w_hid = hidden_weights.to(torch.int64)
    b_in = input_biases.to(torch.int64)
    b_hid = hidden_biases.to(torch.int64)
    scales = gate_scales.to(torch.int64)
    forget_to_cell, input_to_cell, to_output = state_scales.to(torch.int64).view(3, 2)
    batch, hidden = steps.shape[1], w_hid.shape[1]
    cell = torch.zeros(batch, hidden, dtype=torch.int64)
    h: torch.Tensor | None = None
    outputs = []

    def gate(index: int, x_t: torch.Tensor) -> torch.Tensor:
        # arm_nn_lstm_calculate_gate_s8_s16: each side requantized, added, saturated.
        m_in, s_in, m_hid, s_hid = (int(v) for v in scales[index])
        total = _saturate16(requantize(x_t @ w_in[index].T + b_in[index], m_in, s_in))
        if h is not None:
            recurrent = requantize(h @ w_hid[index].T + b_hid[index], m_hid, s_hid)
            total = _saturate16(recurrent + total)
        return activation_s16(total, 0, _ACTIVATIONS[index])

    for x_t in steps:
        forget = gate(1, x_t)
        cell = _saturate16(_product(forget, cell, forget_to_cell))
        input_gate, cell_gate = gate(0, x_t), gate(2, x_t)
        cell = (_product(input_gate, cell_gate, input_to_cell) + cell).clamp(-CELL_CLIP, CELL_CLIP)
        output_gate = gate(3, x_t)
        squashed = activation_s16(cell, cell_power + GATE_FRACTION_BITS, _TANH)
        h = (_product(output_gate, squashed, to_output) + output_zero_point).clamp(-128, 127)
        outputs.append(h)
    result = torch.stack(outputs)
    return (result.transpose(0, 1) if batch_first else result).to(torch.int8)
