# SPDX-License-Identifier: Apache-2.0
"""et_zephyr::quantized_gru: a whole GRU layer, every time step, in integers: the
arithmetic of lib/src/kernels/quantized_gru.cpp, written once more in Python.

CMSIS-NN has no GRU; the kernel is built from the pieces of its LSTM (reference/
gates_s16.py): int8 x and h, int8 weights per gate and side, gates in Q3.12 -> Q0.15.
PyTorch's GRU, gates in its order (reset r, update z, candidate n):

    r = sigmoid(W_r x + b_ir + R_r h + b_hr)       z = sigmoid(W_z x + b_iz + R_z h + b_hz)
    n = tanh(W_n x + b_in + r * (R_n h + b_hn))
    h = (1 - z) * n + z * h

b_hr and b_hz add to the input side's biases; b_hn stays on the hidden side (r scales
it). r * (R_n h + b_hn) is requantized from Q0.15 x Q3.12 into Q3.12 and added to the
input side, saturating (arm_elementwise_mul_acc_s16); the new h is
requantize((32768 - z) * n) + requantize(z * (h - z_h)) + z_h in the output's
quantization. Every step computes the recurrent side, the first from h = z_h (zero):
its products are then exactly zero, and b_hn remains.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .fixed_point import requantize
from .gates_s16 import (
    GATE_UNIT,
    SIGMOID,
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

GATES = ("reset", "update", "candidate")
_RESET, _UPDATE, _CANDIDATE = range(3)
_ONE = 1 << 15  # 1.0 in Q0.15, for 1 - z


@dataclass(frozen=True)
class GruParameters:
    """One layer's operands, as the kernel takes them."""

    input_weights: torch.Tensor  # int8 [3, H, I], gates in GATES order
    hidden_weights: torch.Tensor  # int8 [3, H, H]
    # int32 [3, H]: b_i (+ b_h for r and z) - z_x * row sums of input_weights
    input_biases: torch.Tensor
    # int32 [3, H]: (b_hn for n) - z_h * row sums of hidden_weights
    hidden_biases: torch.Tensor
    gate_scales: torch.Tensor  # int32 [3, 4]: per gate input side, then hidden side
    # int32 [6]: r * (R_n h + b_hn) -> Q3.12, (1 - z) * n -> h, z * h -> h
    state_scales: torch.Tensor


def parameters(
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias_ih: torch.Tensor | None,
    bias_hh: torch.Tensor | None,
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
) -> GruParameters:
    """The kernel's operands for float weights ([3H, I], [3H, H]; PyTorch's layout), the
    biases ([3H] each, or None) and the quantization of x and h."""
    hidden = weight_hh.shape[1]
    zeros = torch.zeros(3 * hidden, dtype=torch.float64)
    b_i = zeros if bias_ih is None else bias_ih.double()
    b_h = zeros if bias_hh is None else bias_hh.double()
    input_weights, hidden_weights, gate_scales, input_biases, hidden_biases = [], [], [], [], []
    for gate in range(3):
        rows = slice(gate * hidden, (gate + 1) * hidden)
        w_in, s_in = symmetric(weight_ih[rows].double())
        w_hid, s_hid = symmetric(weight_hh[rows].double())
        input_weights.append(w_in)
        hidden_weights.append(w_hid)
        gate_scales.append(
            scale_words(input_scale * s_in / GATE_UNIT)
            + scale_words(output_scale * s_hid / GATE_UNIT)
        )
        recurrent_bias = b_h[rows] if gate == _CANDIDATE else torch.zeros(hidden).double()
        summed = b_i[rows] + (b_h[rows] if gate != _CANDIDATE else 0)
        input_biases.append(torch.round(summed / (input_scale * s_in)).clamp(-(2**31), 2**31 - 1))
        hidden_biases.append(
            torch.round(recurrent_bias / (output_scale * s_hid)).clamp(-(2**31), 2**31 - 1)
        )
    w_i, w_h = torch.stack(input_weights), torch.stack(hidden_weights)
    effective_input = torch.stack(input_biases).to(torch.int64) - input_zero_point * row_sums(w_i)
    effective_hidden = torch.stack(hidden_biases).to(torch.int64) - output_zero_point * row_sums(
        w_h
    )
    state_scales = (
        scale_words(STATE_UNIT)  # r (Q0.15) * Q3.12 -> Q3.12
        + scale_words(STATE_UNIT * STATE_UNIT / output_scale)  # (1 - z) * n -> h
        + scale_words(STATE_UNIT)  # z (Q0.15) * (h - z_h) -> h
    )
    return GruParameters(
        input_weights=w_i,
        hidden_weights=w_h,
        input_biases=clamp_int32(effective_input),
        hidden_biases=clamp_int32(effective_hidden),
        gate_scales=torch.tensor(gate_scales, dtype=torch.int32),
        state_scales=torch.tensor(state_scales, dtype=torch.int32),
    )


def float_gru(
    input: torch.Tensor,
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias_ih: torch.Tensor | None,
    bias_hh: torch.Tensor | None,
    batch_first: bool,
    state: torch.Tensor | None = None,
) -> torch.Tensor:
    """The float layer: PyTorch's nn.GRU from `state` ([B, H]) or a zero one."""
    steps = input.transpose(0, 1) if batch_first else input
    hidden = weight_hh.shape[1]
    h = steps.new_zeros(steps.shape[1], hidden) if state is None else state
    outputs = []
    for x_t in steps:
        x_side = x_t @ weight_ih.T + (0 if bias_ih is None else bias_ih)
        h_side = h @ weight_hh.T + (0 if bias_hh is None else bias_hh)
        x_r, x_z, x_n = x_side.split(hidden, -1)
        h_r, h_z, h_n = h_side.split(hidden, -1)
        r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        h = (1 - z) * n + z * h
        outputs.append(h)
    result = torch.stack(outputs)
    return (result.transpose(0, 1) if batch_first else result).contiguous()


def gru(
    input: torch.Tensor,
    input_weights: torch.Tensor,
    hidden_weights: torch.Tensor,
    input_biases: torch.Tensor,
    hidden_biases: torch.Tensor,
    gate_scales: torch.Tensor,
    state_scales: torch.Tensor,
    output_zero_point: int,
    batch_first: bool,
    hidden_in: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """quantized_gru.cpp's arithmetic: the layer's int8 outputs h for every step ([B, T, H]
    or [T, B, H] like the input) and its final h ([B, H]), from `hidden_in` (int8 [B, H];
    a carried state, et-export --stateful) or a zero one (h = z_h)."""
    x = input.to(torch.int64)
    steps = x.transpose(0, 1) if batch_first else x  # [T, B, I]
    w_in, w_hid = input_weights.to(torch.int64), hidden_weights.to(torch.int64)
    b_in, b_hid = input_biases.to(torch.int64), hidden_biases.to(torch.int64)
    scales = [[int(v) for v in row] for row in gate_scales.to(torch.int64)]
    reset_scale, keep_scale, update_scale = state_scales.to(torch.int64).view(3, 2)
    batch, hidden = steps.shape[1], w_hid.shape[1]
    h = torch.full((batch, hidden), output_zero_point, dtype=torch.int64)
    if hidden_in is not None:
        h = hidden_in.reshape(batch, hidden).to(torch.int64)
    outputs = []

    def pre_activation(gate: int, x_t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m_in, s_in, m_hid, s_hid = scales[gate]
        x_side = saturate16(side(x_t, w_in[gate], b_in[gate], (m_in, s_in)))
        h_side = side(h, w_hid[gate], b_hid[gate], (m_hid, s_hid))
        return x_side, h_side

    for x_t in steps:
        gates = []
        for gate in (_RESET, _UPDATE):
            x_side, h_side = pre_activation(gate, x_t)
            gates.append(activation_s16(saturate16(h_side + x_side), 0, SIGMOID))
        reset, update = gates
        x_side, h_side = pre_activation(_CANDIDATE, x_t)
        scaled = product(reset, saturate16(h_side), reset_scale)
        candidate = activation_s16(saturate16(scaled + x_side), 0, TANH)
        kept = requantize((_ONE - update) * candidate, int(keep_scale[0]), int(keep_scale[1]))
        carried = product(update, h - output_zero_point, update_scale)
        h = (kept + carried + output_zero_point).clamp(-128, 127)
        outputs.append(h)
    result = torch.stack(outputs)
    return (result.transpose(0, 1) if batch_first else result).to(torch.int8), h.to(torch.int8)
