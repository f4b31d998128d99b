# SPDX-License-Identifier: Apache-2.0
"""Train the KWS DS-CNN on keywords spoken by espeak-ng and write what the sample ships.

    python samples/kws/train.py [--out-dir build/kws-data] [--epochs N] [--qat EPOCHS]

Writes, beside model.py: kws_weights.pt (float32 state_dict), calibration.npz (training
features for et-export's INT8 calibration) and test_clips.npz (one test-split clip per
class, with its label, for the device sample). The generated audio is cached in
--out-dir, outside the repository. With --qat EPOCHS it then fine-tunes the trained
model through et-export's INT8 fake quantization and writes kws_qat.pt, which
`et-export samples/kws/model.py:kws_qat` lowers with the ranges it learned.
"""

from __future__ import annotations

import numpy as np
import torch
from dataset import Split
from model import DSCNN, LABELS, QAT_STATE, WEIGHTS
from shipping import fit_best_epoch, train_and_ship
from torch import nn

EPOCHS = 16
BATCH = 128
LEARNING_RATE = 3e-3


def main(argv: list[str] | None = None) -> None:
    train_and_ship(
        argv,
        __doc__.splitlines()[0],
        _fit,
        EPOCHS,
        WEIGHTS.parent,
        WEIGHTS,
        len(LABELS),
        QAT_STATE,
    )


def _fit(
    train: Split, validation: tuple[np.ndarray, np.ndarray], epochs: int, seed: int
) -> nn.Module:
    """Adam with a cosine learning rate; the epoch with the best validation accuracy wins."""
    # channels_last makes the depthwise convolutions several times faster on CPU.
    model = DSCNN().to(memory_format=torch.channels_last)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * _steps(train))
    fit_best_epoch(model, optimizer, schedule, train, validation, epochs, seed, BATCH)
    return model.to(memory_format=torch.contiguous_format)


def _steps(train: Split) -> int:
    return -(-len(train.labels) // BATCH)


if __name__ == "__main__":
    main()
