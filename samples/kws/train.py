# SPDX-License-Identifier: Apache-2.0
"""Train the KWS DS-CNN on keywords spoken by espeak-ng and write what the sample ships.

    python samples/kws/train.py [--out-dir build/kws-data] [--epochs N]

Writes, beside model.py: kws_weights.pt (float32 state_dict), calibration.npz (training
features for et-export's INT8 calibration) and test_clips.npz (one test-split clip per
class, with its label, for the device sample). The generated audio is cached in
--out-dir, outside the repository.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import numpy as np
import torch
from classify import predict
from dataset import CACHE_DIR, CLIPS_PER_CLASS, SEED, Split, evaluation_features, features, load
from model import CALIBRATION, DSCNN, LABELS, TEST_CLIPS, WEIGHTS
from torch import nn

# et-export calibrates on the first three quarters of a factory's calibration samples
# and checks INT8 against float on the last quarter (at least 4). 16 makes that 12 to
# calibrate on, one of each class, and the 4 held-out samples et-export's tests expect.
CALIBRATION_SAMPLES = 16
EPOCHS = 16
BATCH = 128
LEARNING_RATE = 3e-3
# Two threads on the two-core machine this was made on; a fixed count also keeps the
# order of float sums, and so the trained weights, the same from run to run.
THREADS = 2
# Offset from --seed of the calibration clips' augmentation; dataset.py uses 1 and 2.
CALIBRATION_SEED = 3


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    torch.set_num_threads(THREADS)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)

    started = time.monotonic()
    splits = load(args.out_dir, args.clips_per_class, args.seed)
    sizes = ", ".join(f"{name} {len(split.labels)}" for name, split in splits.items())
    print(f"data: {sizes} clips ({time.monotonic() - started:.0f} s)")

    started = time.monotonic()
    validation = evaluation_features(splits["validation"], "validation", args.seed)
    model = _fit(splits["train"], validation, args.epochs, args.seed)
    print(f"training: {time.monotonic() - started:.0f} s")

    test = evaluation_features(splits["test"], "test", args.seed)
    accuracy = np.mean(predict(model, test[0]) == test[1])
    print(f"float accuracy on the test split: {accuracy:.1%} of {len(test[1])} clips")

    torch.save(model.state_dict(), WEIGHTS)
    _write_calibration(splits["train"], args.seed)
    _write_test_clips(*test)
    print(f"wrote {WEIGHTS.name}, {CALIBRATION.name} and {TEST_CLIPS.name}")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out-dir", type=Path, default=CACHE_DIR)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--clips-per-class", type=int, default=CLIPS_PER_CLASS)
    parser.add_argument("--seed", type=int, default=SEED)
    return parser.parse_args(argv)


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


def _write_calibration(train: Split, seed: int) -> None:
    rng = np.random.default_rng(seed + CALIBRATION_SEED)
    order = rng.permutation(len(train.labels))
    one_per_class = [order[train.labels[order] == index][0] for index in range(len(LABELS))]
    others = [index for index in order if index not in one_per_class]
    chosen = one_per_class + others[: CALIBRATION_SAMPLES - len(one_per_class)]
    np.savez_compressed(CALIBRATION, features=features(train.clean[chosen], rng))


def _write_test_clips(test_features: np.ndarray, labels: np.ndarray) -> None:
    # The first test clip of each class, chosen without looking at the model's answer.
    chosen = [int(np.flatnonzero(labels == index)[0]) for index in range(len(LABELS))]
    np.savez_compressed(TEST_CLIPS, features=test_features[chosen], labels=labels[chosen])


if __name__ == "__main__":
    main()
