# SPDX-License-Identifier: Apache-2.0
"""MLPerf Tiny keyword spotting DS-CNN, the built-in default model of et-export.

Input: 49x10 MFCC features (one channel). Output: 12 logits (10 keywords,
silence, unknown). 2,656,768 MACs, about 22.6 K parameters after BatchNorm
folding: the reference architecture of the MLPerf Tiny KWS benchmark.
The shipped weights and calibration features come from train.py, which trains on
keywords spoken by espeak-ng (features.py computes the MFCCs).
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
INPUT_SHAPE = (1, 1, 49, 10)
CHANNELS = 64
BLOCKS = 4
WEIGHTS = Path(__file__).with_name("kws_weights.pt")
# The state after train.py --qat (quantization-aware fine-tuning), for kws_qat().
QAT_STATE = Path(__file__).with_name("kws_qat.pt")
# Written by train.py: MFCCs of training clips, and of test clips with their labels.
CALIBRATION = Path(__file__).with_name("calibration.npz")
TEST_CLIPS = Path(__file__).with_name("test_clips.npz")


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


def _training_features() -> list[tuple[torch.Tensor]]:
    """MFCCs of training clips, written by train.py."""
    with np.load(CALIBRATION) as data:
        features = torch.from_numpy(data["features"])
    # split() keeps ordinary strides. A numpy newaxis gives the batch dimension a stride
    # of 0, and then et-export's manifest and program disagree on the input dim_order.
    return [(sample,) for sample in features.split(1)]


def kws() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: the model, example inputs and calibration inputs.

    Uses the trained weights and calibration features shipped beside this file when
    present, and a seeded initialisation and random calibration otherwise.
    """
    torch.manual_seed(0)
    model = DSCNN()
    if WEIGHTS.exists():
        model.load_state_dict(torch.load(WEIGHTS, weights_only=True))
    # Real speech features give the INT8 scales the range speech needs; random ones
    # only keep the export working before train.py has run.
    calibration = _training_features() if CALIBRATION.exists() else _calibration_inputs(16)
    return model, calibration[0], calibration


def kws_qat() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: the model after train.py --qat EPOCHS, INT8 with the ranges it
    learned; the calibration inputs only check it against its fake quantization."""
    from et_zephyr.api import load_qat

    if not QAT_STATE.exists():
        raise FileNotFoundError(f"no {QAT_STATE.name}: run train.py --qat EPOCHS first")
    model, example, calibration = kws()
    return load_qat(model, example, QAT_STATE), example, calibration
