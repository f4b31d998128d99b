# SPDX-License-Identifier: Apache-2.0
"""An always-on keyword detector: an LSTM over MFCCs the device computes from sound.

Input: 10 MFCCs a frame from et-zephyr's fixed-point audio front end (et_zephyr/mfcc.h;
et_zephyr.audio.mfcc is the same arithmetic in Python, which training uses), one frame
every 20 ms. One LSTM layer of 32 and a 12-class linear head on its output, 6,028
parameters. Exported with `et-export --stateful`, the firmware feeds it one frame a run
and the LSTM's state carries on from run to run: a score for every 20 ms of sound, for
about 30,000 instructions on a Cortex-M4 (benchmarks/RESULTS.md, "Streaming").
train.py trains it on 1 s clips of samples/kws's espeak-ng keywords, each heard after
0.5 s of another, and scores it on the clip's last frame.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

LABELS = (
    "down",
    "go",
    "left",
    "no",
    "off",
    "on",
    "right",
    "stop",
    "up",
    "yes",
    "_silence_",
    "_unknown_",
)
COEFFICIENTS = 10
HIDDEN = 32
WEIGHTS = Path(__file__).with_name("kws_stream_weights.pt")
# Written by train.py: front-end features of training clips, and the sound the firmware
# listens to (stream.npz).
CALIBRATION = Path(__file__).with_name("calibration.npz")
STREAM = Path(__file__).with_name("stream.npz")


class KeywordLstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(COEFFICIENTS, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, len(LABELS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Scores after the last frame of x (N, frames, 10); training's (N, 1, frames, 10)
        clips (samples/kws's feature layout) are taken as (N, frames, 10)."""
        if x.dim() == 4:
            x = x.squeeze(1)
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def kws_stream() -> tuple[nn.Module, tuple[torch.Tensor, ...], list[tuple[torch.Tensor, ...]]]:
    """The trained detector for `et-export --stateful`: one frame a run, calibrated on
    whole training sequences (74 frames), which et-export feeds a frame at a time as the
    device will."""
    model = KeywordLstm()
    model.load_state_dict(torch.load(WEIGHTS, weights_only=True))
    with np.load(CALIBRATION) as data:
        clips = torch.from_numpy(data["features"]).squeeze(1)  # (N, 74, 10)
    sequences = [(clip[np.newaxis],) for clip in clips]
    return model.eval(), (sequences[0][0][:, :1].clone(),), sequences
