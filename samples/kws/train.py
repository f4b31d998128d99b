# SPDX-License-Identifier: Apache-2.0
"""Train the KWS DS-CNN on keywords spoken by espeak-ng and write what the sample ships.

    python samples/kws/train.py [--out-dir build/kws-data] [--epochs N]

Writes, beside model.py: kws_weights.pt (float32 state_dict), calibration.npz (training
features for et-export's INT8 calibration) and test_clips.npz (one test-split clip per
class, with its label, for the device sample). The generated audio is cached in
--out-dir, outside the repository.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from classify import predict
from dataset import Split, features
from model import DSCNN, LABELS, WEIGHTS
from shipping import train_and_ship
from torch import nn

EPOCHS = 16
BATCH = 128
LEARNING_RATE = 3e-3


def main(argv: list[str] | None = None) -> None:
    train_and_ship(
        argv, __doc__.splitlines()[0], _fit, EPOCHS, WEIGHTS.parent, WEIGHTS, len(LABELS)
    )


def _fit(
    train: Split, validation: tuple[np.ndarray, np.ndarray], epochs: int, seed: int
) -> nn.Module:
    """Adam with a cosine learning rate; the epoch with the best validation accuracy wins."""
    # channels_last makes the depthwise convolutions several times faster on CPU.
    model = DSCNN().to(memory_format=torch.channels_last)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * _steps(train))
    rng = np.random.default_rng(seed)
    best, best_accuracy = copy.deepcopy(model.state_dict()), -1.0
    for epoch in range(epochs):
        # Fresh noise, shift and loudness every epoch.
        inputs = torch.from_numpy(features(train.clean, rng))
        labels = torch.from_numpy(train.labels)
        order = torch.from_numpy(rng.permutation(len(labels)))
        model.train()
        losses = []
        for batch in order.split(BATCH):
            loss = nn.functional.cross_entropy(model(inputs[batch]), labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        accuracy = float(np.mean(predict(model, validation[0]) == validation[1]))
        print(
            f"epoch {epoch + 1:2}/{epochs}: training loss {np.mean(losses):.3f}, "
            f"validation accuracy {accuracy:.1%}"
        )
        if accuracy > best_accuracy:
            best, best_accuracy = copy.deepcopy(model.state_dict()), accuracy
    model.load_state_dict(best)
    return model.to(memory_format=torch.contiguous_format)


def _steps(train: Split) -> int:
    return -(-len(train.labels) // BATCH)


if __name__ == "__main__":
    main()
