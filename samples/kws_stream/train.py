# SPDX-License-Identifier: Apache-2.0
"""Train the streaming keyword LSTM on the device's own features and write what it ships.

    python samples/kws_stream/train.py [--out-dir build/kws-data] [--epochs N]

The clips, augmentation and training loop are samples/kws's (the spoken clips cached in
--out-dir are shared with it); the features are et-zephyr's fixed-point front end
(et_zephyr.audio.mfcc, the arithmetic of lib/src/audio/mfcc.cpp) of the augmented
sound as 16-bit PCM, so training sees what the device computes. Writes, beside model.py:
kws_stream_weights.pt, calibration.npz (front-end features of training clips),
test_clips.npz (one test clip a class, with its label) and stream.npz: six test-split
clips, augmented as the test split is, one after another as 16-bit PCM, with their
labels: the sound the firmware listens to. Each clip is trained on after 0.5 s of the
one before it, so that the LSTM answers for the last second whatever it heard before.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from et_zephyr.audio import mfcc
from torch import nn

# samples/kws's data pipeline; its modules read LABELS from this folder's model.py
# (the same labels), which comes first on the path.
sys.path.append(str(Path(__file__).resolve().parents[1] / "kws"))

import dataset  # noqa: E402
from augment import augment  # noqa: E402
from dataset import Split  # noqa: E402
from model import LABELS, STREAM, WEIGHTS, KeywordLstm  # noqa: E402
from shipping import best_of_epochs, train_and_ship  # noqa: E402

EPOCHS = 30
LEARNING_RATE = 5e-3
# Training streams: this many clips one after another, this many streams a step.
SEQUENCE_CLIPS = 8
SEQUENCE_BATCH = 16
FRAMES_PER_CLIP = mfcc.SAMPLE_RATE // mfcc.FRAME_STEP
# Sound heard before each training clip (0.5 s): the clip before it in the batch.
CONTEXT_SAMPLES = 8000
# The stream: one test clip of each of these classes, in this order.
STREAM_CLASSES = ("yes", "_silence_", "stop", "_unknown_", "go", "no")


def pcm(audio: np.ndarray) -> np.ndarray:
    """Float audio in [-1, 1] as the 16-bit samples a microphone driver gives."""
    return np.clip(np.round(audio * 32768.0), -32768, 32767).astype(np.int16)


def front_end(audio: np.ndarray) -> np.ndarray:
    """(N, 16000) float audio -> (N, 74, 10): the device's MFCCs of its 16-bit PCM, each
    clip after the last CONTEXT_SAMPLES of the one before it in the batch. On the device
    the LSTM never starts from a zero state: it has heard whatever came before, and is
    trained here to answer for the last second all the same."""
    before = np.roll(audio, 1, axis=0)[:, -CONTEXT_SAMPLES:]
    return mfcc.features(pcm(np.concatenate([before, audio], axis=1)))


def main(argv: list[str] | None = None) -> None:
    dataset.use_front_end(front_end)
    train_and_ship(
        argv,
        __doc__.splitlines()[0],
        _fit,
        EPOCHS,
        WEIGHTS.parent,
        WEIGHTS,
        len(LABELS),
        WEIGHTS.with_name("kws_stream_qat.pt"),
    )
    args = sys.argv[1:] if argv is None else argv
    _write_stream(args)


def _fit(
    train: Split, validation: tuple[np.ndarray, np.ndarray], epochs: int, seed: int
) -> nn.Module:
    """Adam with a cosine learning rate on streams of SEQUENCE_CLIPS training clips (new
    noise, shifts and order every epoch), scored at the last frame of every clip, so that
    the state carried through a long stream stays one the model knows; the epoch with the
    best validation accuracy (clips after 0.5 s of another) wins."""
    torch.manual_seed(seed)
    model = KeywordLstm()
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    sequences = len(train.labels) // SEQUENCE_CLIPS
    steps = epochs * -(-sequences // SEQUENCE_BATCH)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    # The last frame of each clip: 16,000 samples a clip, 320 a frame, 480 a window.
    ends = torch.arange(SEQUENCE_CLIPS) * FRAMES_PER_CLIP + FRAMES_PER_CLIP - 2

    def stream_epoch(rng: np.random.Generator) -> list[float]:
        order = rng.permutation(len(train.labels))[: sequences * SEQUENCE_CLIPS]
        order = order.reshape(sequences, SEQUENCE_CLIPS)
        audio = augment(train.clean[order.reshape(-1)], rng).reshape(sequences, -1)
        inputs = torch.from_numpy(mfcc.features(pcm(audio)))
        labels = torch.from_numpy(train.labels[order])
        losses = []
        for batch in torch.randperm(sequences).split(SEQUENCE_BATCH):
            out, _ = model.lstm(inputs[batch])
            logits = model.head(out[:, ends])
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels[batch].flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        return losses

    return best_of_epochs(model, validation, epochs, seed, stream_epoch)


def _write_stream(argv: list[str]) -> None:
    """stream.npz: STREAM_CLASSES' first test clips, augmented with the test split's seed."""
    out_dir = dataset.CACHE_DIR
    if "--out-dir" in argv:
        out_dir = Path(argv[argv.index("--out-dir") + 1])
    test = dataset.load(out_dir, dataset.CLIPS_PER_CLASS, dataset.SEED)["test"]
    chosen = [int(np.flatnonzero(test.labels == LABELS.index(c))[0]) for c in STREAM_CLASSES]
    rng = np.random.default_rng(dataset.SEED + dataset.EVALUATION_SEEDS["test"])
    audio = augment(test.clean[chosen], rng)
    np.savez_compressed(STREAM, pcm=pcm(audio).reshape(-1), labels=test.labels[chosen])
    print(f"wrote {STREAM.name}: {len(chosen)} clips, {STREAM_CLASSES}")


if __name__ == "__main__":
    main()
