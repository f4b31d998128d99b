# SPDX-License-Identifier: Apache-2.0
"""Train the keyword transformer on samples/kws's espeak-ng keywords and write what it ships.

    python samples/kwt/train.py [--out-dir build/kws-data] [--epochs N] [--qat EPOCHS]

The data, features and augmentation are samples/kws's (the clips cached in --out-dir
are shared with it). Writes, beside model.py: kwt_weights.pt (float32 state_dict),
calibration.npz (training features for et-export's INT8 calibration) and
test_clips.npz (one test-split clip per class, with its label, for the device sample).
With --qat EPOCHS it then fine-tunes the trained model through et-export's INT8 fake
quantization and writes kwt_qat.pt, for `et-export samples/kwt/model.py:kwt_qat`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

# samples/kws's data pipeline; its modules read LABELS from this folder's model.py
# (the same labels), which comes first on the path.
sys.path.append(str(Path(__file__).resolve().parents[1] / "kws"))

from dataset import Split  # noqa: E402
from model import KWT, LABELS, QAT_STATE, WEIGHTS  # noqa: E402
from shipping import fit_best_epoch, train_and_ship  # noqa: E402

EPOCHS = 40
BATCH = 64
LEARNING_RATE = 2e-3
WEIGHT_DECAY = 0.05


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
    """AdamW with a cosine learning rate; the epoch with the best validation accuracy wins."""
    model = KWT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    steps = -(-len(train.labels) // BATCH)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=LEARNING_RATE, total_steps=epochs * steps, pct_start=0.1
    )
    return fit_best_epoch(
        model, optimizer, schedule, train, validation, epochs, seed, BATCH, label_smoothing=0.1
    )


if __name__ == "__main__":
    main()
