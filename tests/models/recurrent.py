# SPDX-License-Identifier: Apache-2.0
"""Recurrent keyword models (nn.GRU, nn.LSTM, nn.RNN over MFCC frames, one direction or
both), for the device = host tests.

Each factory returns (model, example input, calibration samples): frames of 10 MFCC
coefficients into a GRU or LSTM, the last step's hidden state into a 12-class linear.
The short ones fit qemu_cortex_m3's 64 KB of RAM; `lstm_kws` runs KWS's 49 frames.
`lstm_tagger` and `gru_tagger` (time-major, every step read) and `lstm_final_state`
(several sequences, h_n read) cover the whole-layer kernels' other forms.
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


class Tagger(nn.Module):
    """A label for every frame of two sequences at once, time-major: the whole output
    sequence of a two-layer LSTM or GRU into a linear."""

    def __init__(self, cell: type[nn.Module] = nn.LSTM) -> None:
        super().__init__()
        self.recurrent = cell(10, 20, num_layers=2)
        self.head = nn.Linear(20, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps, _ = self.recurrent(x)
        return self.head(steps)


def _tagger(cell: type[nn.Module]) -> tuple:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    samples = [(torch.randn(10, 2, 10, generator=generator),) for _ in range(24)]
    return Tagger(cell).eval(), samples[0], samples


def lstm_tagger() -> tuple:
    """Two LSTM layers of 20, time-major, over 10 frames of 2 sequences, every step read."""
    return _tagger(nn.LSTM)


def gru_tagger() -> tuple:
    """Two GRU layers of 20, time-major, over 10 frames of 2 sequences, every step read."""
    return _tagger(nn.GRU)


def gru_kws() -> tuple:
    """One GRU layer of 32 over KWS's 49 frames: lstm_kws's size."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.GRU, 32, 1), 49)


def gru2_kws() -> tuple:
    """Two GRU layers of 48 over KWS's 49 frames (23,340 weights): unrolled, its program
    did not fit the Corstone-300's 512 KB of code memory."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.GRU, 48, 2), 49)


class FinalState(nn.Module):
    """The final hidden state (h_n) of a batch-first LSTM over 3 sequences into a linear."""

    def __init__(self) -> None:
        super().__init__()
        self.recurrent = nn.LSTM(10, 24, batch_first=True, bias=False)
        self.head = nn.Linear(24, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, (h, _) = self.recurrent(x)
        return self.head(h[-1])


def lstm_final_state() -> tuple:
    """One LSTM layer of 24 without biases over 16 frames of 3 sequences, read by h_n."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    samples = [(torch.randn(3, 16, 10, generator=generator),) for _ in range(24)]
    return FinalState().eval(), samples[0], samples


def bigru2() -> tuple:
    """Two bidirectional GRU layers of 16 over 8 frames."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.GRU, 16, 2, bidirectional=True), 8)


def birnn() -> tuple:
    """A bidirectional nn.RNN (tanh) of 24 over 12 frames."""
    torch.manual_seed(0)
    return _bundle(RecurrentKws(nn.RNN, 24, 1, bidirectional=True), 12)


def _stream_bundle(model: nn.Module, hop: tuple[int, ...], sequence: tuple[int, ...]) -> tuple:
    """For et-export --stateful: an example input of one hop and whole sequences (a
    whole number of hops) to calibrate on."""
    generator = torch.Generator().manual_seed(1)
    samples = [(torch.randn(*sequence, generator=generator),) for _ in range(16)]
    return model.eval(), (torch.randn(*hop, generator=generator),), samples


def lstm_kws_stream() -> tuple:
    """`lstm_kws` fed one frame a run (--stateful), calibrated on 49-frame sequences."""
    torch.manual_seed(0)
    return _stream_bundle(RecurrentKws(nn.LSTM, 32, 1), (1, 1, 10), (1, 49, 10))


def gru2_stream() -> tuple:
    """Two GRU layers of 16 fed a hop of 4 frames a run (--stateful)."""
    torch.manual_seed(0)
    return _stream_bundle(RecurrentKws(nn.GRU, 16, 2), (1, 4, 10), (1, 24, 10))


def lstm_tagger_stream() -> tuple:
    """`lstm_tagger` (time-major, two sequences, every step labelled) fed 3 frames a run
    (--stateful)."""
    torch.manual_seed(0)
    return _stream_bundle(Tagger(nn.LSTM), (3, 2, 10), (12, 2, 10))
