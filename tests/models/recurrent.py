# SPDX-License-Identifier: Apache-2.0
"""Recurrent keyword models (nn.GRU, nn.LSTM, nn.RNN over MFCC frames, one direction or
both), for the device = host tests.

Each factory returns (model, example input, calibration samples): frames of 10 MFCC
coefficients into a GRU or LSTM, the last step's hidden state into a 12-class linear.
The short ones fit qemu_cortex_m3's 64 KB of RAM; `lstm_kws` runs KWS's 49 frames.
"""

from __future__ import annotations

import torch
from torch import nn


class RecurrentKws(nn.Module):
    def __init__(
        self, cell: type[nn.Module], hidden: int, layers: int, bidirectional: bool = False
    ) -> None:
        super().__init__()
        self.recurrent = cell(
            10, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional
        )
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps, _ = self.recurrent(x)
        return self.head(steps[:, -1])


def _bundle(model: nn.Module, frames: int) -> tuple:
    generator = torch.Generator().manual_seed(1)
    samples = [(torch.randn(1, frames, 10, generator=generator),) for _ in range(24)]
    return model.eval(), samples[0], samples


def gru() -> tuple:
    """One GRU layer of 24 over 12 frames."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.GRU, 24, 1), 12)


def gru2() -> tuple:
    """Two GRU layers of 16 over 8 frames."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.GRU, 16, 2), 8)


def lstm() -> tuple:
    """One LSTM layer of 24 over 12 frames."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.LSTM, 24, 1), 12)


def lstm2() -> tuple:
    """Two LSTM layers of 16 over 8 frames."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.LSTM, 16, 2), 8)


def lstm_kws() -> tuple:
    """One LSTM layer of 32 over KWS's 49 frames."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.LSTM, 32, 1), 49)


def bigru2() -> tuple:
    """Two bidirectional GRU layers of 16 over 8 frames."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.GRU, 16, 2, bidirectional=True), 8)


def birnn() -> tuple:
    """A bidirectional nn.RNN (tanh) of 24 over 12 frames."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.RNN, 24, 1, bidirectional=True), 12)
