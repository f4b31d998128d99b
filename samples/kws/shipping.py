# SPDX-License-Identifier: Apache-2.0
"""A keyword sample's training run and what it ships: weights, calibration features and
test clips, and with --qat the state after quantization-aware fine-tuning. Shared by
samples/kws/train.py and samples/kwt/train.py, which bring the model and how to fit it.
"""

from __future__ import annotations

import argparse
import copy
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from classify import predict, set_training
from dataset import CACHE_DIR, CLIPS_PER_CLASS, SEED, Split, evaluation_features, features, load
from et_zephyr.api import prepare_qat
from torch import nn
from torch.fx import GraphModule

# Fits a model on the training split, given the validation features and labels, the
# epochs and the seed.
Fit = Callable[[Split, tuple[np.ndarray, np.ndarray], int, int], nn.Module]

# et-export calibrates on the first three quarters of a factory's calibration samples
# and checks INT8 against float on the last quarter (at least 4). 16 makes that 12 to
# calibrate on, one of each class, and the 4 held-out samples et-export's tests expect.
CALIBRATION_SAMPLES = 16
# Offset from --seed of the calibration clips' augmentation; dataset.py uses 1 and 2.
CALIBRATION_SEED = 3
# Two threads on the two-core machine this was made on; a fixed count also keeps the
# order of float sums, and so the trained weights, the same from run to run.
THREADS = 2
# Quantization-aware fine-tuning (--qat) of the trained float model, through et-export's
# INT8 fake quantization: Adam at a small constant learning rate.
QAT_LEARNING_RATE = 1e-4
QAT_BATCH = 64


def train_and_ship(
    argv: list[str] | None,
    description: str,
    fit: Fit,
    epochs: int,
    sample: Path,
    weights: Path,
    classes: int,
    qat_state: Path,
) -> None:
    """Parse the command line, fit the model and write weights, calibration.npz and
    test_clips.npz into the sample's folder; with --qat, fine-tune it quantization-aware
    and write its state to qat_state too."""
    args = _parse(argv, description, epochs)
    torch.set_num_threads(THREADS)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)

    started = time.monotonic()
    splits = load(args.out_dir, args.clips_per_class, args.seed)
    sizes = ", ".join(f"{name} {len(split.labels)}" for name, split in splits.items())
    print(f"data: {sizes} clips ({time.monotonic() - started:.0f} s)")

    started = time.monotonic()
    validation = evaluation_features(splits["validation"], "validation", args.seed)
    model = fit(splits["train"], validation, args.epochs, args.seed)
    print(f"training: {time.monotonic() - started:.0f} s")

    test = evaluation_features(splits["test"], "test", args.seed)
    accuracy = np.mean(predict(model, test[0]) == test[1])
    print(f"float accuracy on the test split: {accuracy:.1%} of {len(test[1])} clips")

    torch.save(model.state_dict(), weights)
    write_calibration(sample / "calibration.npz", splits["train"], classes, args.seed)
    write_test_clips(sample / "test_clips.npz", *test, classes)
    print(f"wrote {weights.name}, calibration.npz and test_clips.npz")
    if not args.qat:
        return
    started = time.monotonic()
    example = (torch.from_numpy(test[0][:1]).clone(),)
    qat_model = fine_tune_qat(model, splits["train"], validation, args.qat, args.seed, example)
    accuracy = np.mean(predict(qat_model, test[0]) == test[1])
    print(
        f"quantization-aware fine-tuning: {time.monotonic() - started:.0f} s; INT8 "
        f"(fake-quant) accuracy on the test split: {accuracy:.1%} of {len(test[1])} clips"
    )
    torch.save(qat_model.state_dict(), qat_state)
    print(f"wrote {qat_state.name}")


def fine_tune_qat(
    model: nn.Module,
    train: Split,
    validation: tuple[np.ndarray, np.ndarray],
    epochs: int,
    seed: int,
    example_inputs: tuple[torch.Tensor, ...],
) -> GraphModule:
    """The trained model through et_zephyr.api.prepare_qat (et-export's INT8 quantizer),
    fine-tuned; the epoch with the best validation accuracy wins."""
    set_training(model, False)  # BatchNorm folds with its running statistics
    prepared = prepare_qat(model, example_inputs)
    optimizer = torch.optim.Adam(prepared.parameters(), lr=QAT_LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.ConstantLR(optimizer, factor=1.0)
    return fit_best_epoch(prepared, optimizer, schedule, train, validation, epochs, seed, QAT_BATCH)


def _parse(argv: list[str] | None, description: str, epochs: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=CACHE_DIR,
        help="where the spoken clips are cached (default: %(default)s)",
    )
    parser.add_argument("--epochs", type=int, default=epochs, help="default: %(default)s")
    parser.add_argument(
        "--qat",
        type=int,
        default=0,
        metavar="EPOCHS",
        help="then fine-tune the trained model quantization-aware for EPOCHS epochs and "
        "write its state for the model's *_qat factory (default: no fine-tuning)",
    )
    parser.add_argument(
        "--clips-per-class",
        type=int,
        default=CLIPS_PER_CLASS,
        help="clips spoken per class, over the three splits (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=SEED, help="of the corpus, augmentation and initialisation"
    )
    return parser.parse_args(argv)


def write_calibration(path: Path, train: Split, classes: int, seed: int) -> None:
    """Augmented features of CALIBRATION_SAMPLES training clips, one of each class first."""
    rng = np.random.default_rng(seed + CALIBRATION_SEED)
    order = rng.permutation(len(train.labels))
    one_per_class = [order[train.labels[order] == index][0] for index in range(classes)]
    others = [index for index in order if index not in one_per_class]
    chosen = one_per_class + others[: CALIBRATION_SAMPLES - len(one_per_class)]
    np.savez_compressed(path, features=features(train.clean[chosen], rng))


def write_test_clips(
    path: Path, test_features: np.ndarray, labels: np.ndarray, classes: int
) -> None:
    """The first test clip of each class, chosen without looking at the model's answer."""
    chosen = [int(np.flatnonzero(labels == index)[0]) for index in range(classes)]
    np.savez_compressed(path, features=test_features[chosen], labels=labels[chosen])


def fit_best_epoch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
    train: Split,
    validation: tuple[np.ndarray, np.ndarray],
    epochs: int,
    seed: int,
    batch: int,
    label_smoothing: float = 0.0,
) -> nn.Module:
    """Minibatch cross-entropy training, fresh noise, shift and loudness every epoch;
    the epoch with the best validation accuracy wins, its weights loaded into model."""

    def clip_epoch(rng: np.random.Generator) -> list[float]:
        inputs = torch.from_numpy(features(train.clean, rng))
        labels = torch.from_numpy(train.labels)
        order = torch.from_numpy(rng.permutation(len(labels)))
        losses = []
        for indices in order.split(batch):
            loss = nn.functional.cross_entropy(
                model(inputs[indices]), labels[indices], label_smoothing=label_smoothing
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        return losses

    return best_of_epochs(model, validation, epochs, seed, clip_epoch)


def best_of_epochs(
    model: nn.Module,
    validation: tuple[np.ndarray, np.ndarray],
    epochs: int,
    seed: int,
    train_epoch: Callable[[np.random.Generator], list[float]],
) -> nn.Module:
    """Run train_epoch (one epoch in training mode, drawing its randomness from the
    generator seeded with `seed`; returns its losses) `epochs` times; the epoch with the
    best validation accuracy wins, its weights loaded into model."""
    rng = np.random.default_rng(seed)
    best, best_accuracy = copy.deepcopy(model.state_dict()), -1.0
    for epoch in range(epochs):
        set_training(model, True)
        losses = train_epoch(rng)
        accuracy = float(np.mean(predict(model, validation[0]) == validation[1]))
        print(
            f"epoch {epoch + 1:2}/{epochs}: training loss {np.mean(losses):.3f}, "
            f"validation accuracy {accuracy:.1%}"
        )
        if accuracy > best_accuracy:
            best, best_accuracy = copy.deepcopy(model.state_dict()), accuracy
    model.load_state_dict(best)
    return model
