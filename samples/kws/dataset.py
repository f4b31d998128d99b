# SPDX-License-Identifier: Apache-2.0
"""The synthetic KWS dataset: clean clips generated once into a cache, features on demand."""

from __future__ import annotations

import hashlib
import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from augment import augment, center
from corpus import ClipSpec, plan
from features import mfcc
from model import LABELS
from speech import synthesize

REPO = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO / "build/kws-data"
CLIPS_PER_CLASS = 300
SEED = 0
SPLITS = ("train", "validation", "test")
# The validation and test clips get one fixed augmentation: these seeds, offset by the
# dataset's seed, make train.py and evaluate.py score the very same features.
EVALUATION_SEEDS = {"validation": 1, "test": 2}
# Features are computed this many clips at a time: all at once needs gigabytes.
CHUNK = 256


@dataclass(frozen=True)
class Split:
    """Clean 1 s clips, silence being all zeros, and their label indices."""

    clean: np.ndarray  # (N, 16000) float32
    labels: np.ndarray  # (N,) int64


def load(cache_dir: Path, clips_per_class: int, seed: int) -> dict[str, Split]:
    """The train, validation and test splits, generating the clips on first use."""
    specs = plan(clips_per_class, seed)
    # The cache is named after its specs, so a change to the corpus regenerates it.
    digest = hashlib.sha256(repr(specs).encode()).hexdigest()[:16]
    path = cache_dir / f"clean-{digest}.npy"
    if path.exists():
        clips = np.load(path)
    else:
        clips = _generate(specs)
        cache_dir.mkdir(parents=True, exist_ok=True)
        np.save(path, clips)
    audio = clips.astype(np.float32) / 32768.0
    labels = np.array([LABELS.index(spec.label) for spec in specs], dtype=np.int64)
    in_split = np.array([spec.split for spec in specs])
    return {name: Split(audio[in_split == name], labels[in_split == name]) for name in SPLITS}


# Features of augmented float audio (N, 16000) -> (N, 49, 10): MLPerf Tiny's float MFCCs
# unless a sample sets its own (samples/kws_stream: the device's fixed-point front end).
_front_end: Callable[[np.ndarray], np.ndarray] = mfcc


def use_front_end(front_end: Callable[[np.ndarray], np.ndarray]) -> None:
    """Make features() compute front_end(audio) for every split, epoch and file written."""
    global _front_end
    _front_end = front_end


def features(clean: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Augmented MFCCs of clean clips, shaped as DSCNN inputs (N, 1, 49, 10)."""
    chunks = [_front_end(augment(clean[i : i + CHUNK], rng)) for i in range(0, len(clean), CHUNK)]
    return np.concatenate(chunks)[:, np.newaxis]


def evaluation_features(split: Split, name: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed features and labels of the validation or test split."""
    rng = np.random.default_rng(seed + EVALUATION_SEEDS[name])
    return features(split.clean, rng), split.labels


def _generate(specs: list[ClipSpec]) -> np.ndarray:
    with multiprocessing.Pool() as pool:
        clips = pool.map(_clip, specs, chunksize=16)
    return np.stack(clips)


def _clip(spec: ClipSpec) -> np.ndarray:
    # sox wrote 16-bit samples, so int16 stores them without loss in half the space.
    return np.round(center(synthesize(spec)) * 32768.0).astype(np.int16)
