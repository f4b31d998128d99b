# SPDX-License-Identifier: Apache-2.0
"""A keyword transformer (KWT) on the KWS sample's features.

Input: the same 49x10 MFCC features as samples/kws (one channel). Each of the 49
frames is a token: a linear embedding to 32 values plus a learned position, two
pre-norm encoder blocks (LayerNorm, two-head scaled_dot_product_attention, LayerNorm,
a GELU MLP of 64), a final LayerNorm, the mean over the tokens and a 12-class linear
head. About 19 K parameters. train.py trains it on keywords spoken by espeak-ng with
samples/kws's data pipeline and writes the weights and calibration features it ships.
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
FRAMES, COEFFICIENTS = INPUT_SHAPE[2:]
WIDTH = 32
HEADS = 2
DEPTH = 2
MLP = 64
WEIGHTS = Path(__file__).with_name("kwt_weights.pt")
# The state after train.py --qat (quantization-aware fine-tuning), for kwt_qat().
QAT_STATE = Path(__file__).with_name("kwt_qat.pt")
# Written by train.py: MFCCs of training clips, and of test clips with their labels.
CALIBRATION = Path(__file__).with_name("calibration.npz")
TEST_CLIPS = Path(__file__).with_name("test_clips.npz")


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        y = nn.functional.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.attention = Attention()
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, MLP), nn.GELU(), nn.Linear(MLP, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class KWT(nn.Module):
    def __init__(self, num_classes: int = len(LABELS)) -> None:
        super().__init__()
        self.embed = nn.Linear(COEFFICIENTS, WIDTH)
        self.position = nn.Parameter(torch.randn(1, FRAMES, WIDTH) * 0.02)
        self.blocks = nn.Sequential(*(Block() for _ in range(DEPTH)))
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x.flatten(1, 2)) + self.position
        return self.head(self.norm(self.blocks(tokens)).mean(dim=1))


def _calibration_inputs(count: int) -> list[tuple[torch.Tensor]]:
    # MFCC-like value range; a fixed generator keeps exports reproducible.
    generator = torch.Generator().manual_seed(0)
    return [(torch.randn(INPUT_SHAPE, generator=generator) * 8.0,) for _ in range(count)]


def _training_features() -> list[tuple[torch.Tensor]]:
    """MFCCs of training clips, written by train.py."""
    with np.load(CALIBRATION) as data:
        features = torch.from_numpy(data["features"])
    return [(sample,) for sample in features.split(1)]


def kwt() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: the model, example inputs and calibration inputs.

    Uses the trained weights and calibration features shipped beside this file when
    present, and a seeded initialisation and random calibration otherwise.
    """
    torch.manual_seed(0)
    model = KWT()
    if WEIGHTS.exists():
        model.load_state_dict(torch.load(WEIGHTS, weights_only=True))
    calibration = _training_features() if CALIBRATION.exists() else _calibration_inputs(16)
    return model, calibration[0], calibration


def kwt_qat() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: the model after train.py --qat EPOCHS, INT8 with the ranges it
    learned; the calibration inputs only check it against its fake quantization."""
    from et_zephyr.api import load_qat

    if not QAT_STATE.exists():
        raise FileNotFoundError(f"no {QAT_STATE.name}: run train.py --qat EPOCHS first")
    model, example, calibration = kwt()
    return load_qat(model, example, QAT_STATE), example, calibration
