# SPDX-License-Identifier: Apache-2.0
"""MLPerf Tiny keyword spotting DS-CNN, the built-in default model of et-export.

Input: 49x10 MFCC features (one channel). Output: 12 logits (10 keywords,
silence, unknown). 2,656,768 MACs, about 22.6 K parameters after BatchNorm
folding: the reference architecture of the MLPerf Tiny KWS benchmark.
"""

from __future__ import annotations

from pathlib import Path

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
INPUT_SHAPE = (1, 1, 49, 10)
CHANNELS = 64
BLOCKS = 4
WEIGHTS = Path(__file__).with_name("kws_weights.pt")


class DSCNN(nn.Module):
    """Depthwise-separable CNN of the MLPerf Tiny KWS reference."""

    def __init__(self, num_classes: int = len(LABELS)) -> None:
        super().__init__()
        # TF's "same" padding for a 10x4 kernel at stride 2 on 49x10 pads
        # 4 rows above, 5 below and 1 column each side: asymmetric, so it is
        # an explicit pad rather than the convolution's own padding.
        self.pad = nn.ZeroPad2d((1, 1, 4, 5))
        self.conv = nn.Conv2d(1, CHANNELS, (10, 4), stride=2, bias=False)
        self.bn = nn.BatchNorm2d(CHANNELS)
        blocks: list[nn.Module] = []
        for _ in range(BLOCKS):
            blocks += [
                nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1, groups=CHANNELS, bias=False),
                nn.BatchNorm2d(CHANNELS),
                nn.ReLU(),
                nn.Conv2d(CHANNELS, CHANNELS, 1, bias=False),
                nn.BatchNorm2d(CHANNELS),
                nn.ReLU(),
            ]
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AvgPool2d((25, 5))
        self.fc = nn.Linear(CHANNELS, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.conv(self.pad(x))))
        x = self.blocks(x)
        x = self.pool(x)
        return self.fc(torch.flatten(x, 1))


def _calibration_inputs(count: int) -> list[tuple[torch.Tensor]]:
    # MFCC-like value range; a fixed generator keeps exports reproducible.
    generator = torch.Generator().manual_seed(0)
    return [(torch.randn(INPUT_SHAPE, generator=generator) * 8.0,) for _ in range(count)]


def kws() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: the model, example inputs and calibration inputs.

    Uses the trained weights shipped beside this file when present, and a
    seeded initialisation otherwise.
    """
    torch.manual_seed(0)
    model = DSCNN()
    if WEIGHTS.exists():
        model.load_state_dict(torch.load(WEIGHTS, weights_only=True))
    calibration = _calibration_inputs(16)
    return model, calibration[0], calibration
