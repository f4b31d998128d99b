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

from .gates_s16 import (
    GATE_FRACTION_BITS,
    GATE_UNIT,
    SIGMOID,
    STATE_FRACTION_BITS,
    STATE_UNIT,
    TANH,
    activation_s16,
    clamp_int32,
    product,
    row_sums,
    saturate16,
    scale_words,
    side,
    symmetric,
)

# PyTorch's gate order in weight_ih / weight_hh / biases, and the kernel's.
GATES = ("input", "forget", "cell", "output")
_ACTIVATIONS = (SIGMOID, SIGMOID, TANH, SIGMOID)
CELL_CLIP = 32767  # no clipping: PyTorch has none; arm_elementwise_mul_acc_s16 clamps here


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
        w_in, s_in = symmetric(weight_ih[rows].double())
        w_hid, s_hid = symmetric(weight_hh[rows].double())
        input_weights.append(w_in)
        hidden_weights.append(w_hid)
        gate_scales.append(
            scale_words(input_scale * s_in / GATE_UNIT)
            + scale_words(output_scale * s_hid / GATE_UNIT)
        )
        quantized_bias = torch.zeros(hidden, dtype=torch.float64)
        if bias is not None:
            quantized_bias = torch.round(bias[rows].double() / (input_scale * s_in))
        input_biases.append(quantized_bias.clamp(-(2**31), 2**31 - 1).to(torch.int64))
    w_i, w_h = torch.stack(input_weights), torch.stack(hidden_weights)
    effective_input = torch.stack(input_biases) - input_zero_point * row_sums(w_i)
    effective_hidden = -output_zero_point * row_sums(w_h)
    state_scales = (
        scale_words(STATE_UNIT)  # f (Q0.15) * c (2^p) -> c
        + scale_words(STATE_UNIT * STATE_UNIT / 2.0**cell_power)  # i * g -> c
        + scale_words(STATE_UNIT * STATE_UNIT / output_scale)  # o * tanh(c) -> h
    )
    return LstmParameters(
        input_weights=w_i,
        hidden_weights=w_h,
        input_biases=clamp_int32(effective_input),
        hidden_biases=clamp_int32(effective_hidden),
        gate_scales=torch.tensor(gate_scales, dtype=torch.int32),
        state_scales=torch.tensor(state_scales, dtype=torch.int32),
        cell_scale_power=cell_power,
    )


def float_lstm(
    input: torch.Tensor,
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias: torch.Tensor | None,
    batch_first: bool,
    state: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, float, tuple[torch.Tensor, torch.Tensor]]:
    """The float layer (PyTorch's nn.LSTM from `state`, (h, c) each [B, H], or a zero
    one), the largest |c| it reached, which sets the cell state's scale, and its final
    (h, c)."""
    steps = input.transpose(0, 1) if batch_first else input
    hidden = weight_hh.shape[1]
    h = steps.new_zeros(steps.shape[1], hidden)
    c = torch.zeros_like(h)
    if state is not None:
        h, c = state
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
    return (result.transpose(0, 1) if batch_first else result).contiguous(), largest, (h, c)


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
    hidden_in: torch.Tensor | None = None,
    cell_in: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """arm_lstm_unidirectional_s8's arithmetic: the layer's int8 outputs h for every step
    ([B, T, H] or [T, B, H] like the input), its final int8 h and final int16 cell state
    ([B, H] each), from the given state (`hidden_in` int8 and `cell_in` int16, [B, H]; a
    carried one, et-export --stateful) or a zero one. A given first h takes the recurrent products a
    zero state skips: from h = z_h they are zero, and the step the same."""
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
    if cell_in is not None:
        cell = cell_in.reshape(batch, hidden).to(torch.int64)
    h = None if hidden_in is None else hidden_in.reshape(batch, hidden).to(torch.int64)
    outputs = []

    def gate(index: int, x_t: torch.Tensor) -> torch.Tensor:
        # arm_nn_lstm_calculate_gate_s8_s16: each side requantized, added, saturated.
        m_in, s_in, m_hid, s_hid = (int(v) for v in scales[index])
        total = saturate16(side(x_t, w_in[index], b_in[index], (m_in, s_in)))
        if h is not None:
            total = saturate16(side(h, w_hid[index], b_hid[index], (m_hid, s_hid)) + total)
        return activation_s16(total, 0, _ACTIVATIONS[index])

    for x_t in steps:
        forget = gate(1, x_t)
        cell = saturate16(product(forget, cell, forget_to_cell))
        input_gate, cell_gate = gate(0, x_t), gate(2, x_t)
        cell = (product(input_gate, cell_gate, input_to_cell) + cell).clamp(-CELL_CLIP, CELL_CLIP)
        output_gate = gate(3, x_t)
        squashed = activation_s16(cell, cell_power + GATE_FRACTION_BITS, TANH)
        h = (product(output_gate, squashed, to_output) + output_zero_point).clamp(-128, 127)
        outputs.append(h)
    result = torch.stack(outputs)
    assert h is not None, "an LSTM layer of no steps"
    return (
        (result.transpose(0, 1) if batch_first else result).to(torch.int8),
        h.to(torch.int8),
        cell.to(torch.int16),
    )
