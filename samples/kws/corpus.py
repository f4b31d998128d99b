# SPDX-License-Identifier: Apache-2.0
"""What the synthetic KWS dataset says, in which voice, and which split each clip belongs to.

Splits are by espeak-ng voice variant (the timbre: formants, pitch range, breathiness):
a variant is in exactly one split, so validation and test voices were never heard in
training. Every split uses every accent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from model import LABELS

SILENCE = "_silence_"
UNKNOWN = "_unknown_"
KEYWORDS = tuple(label for label in LABELS if label not in (SILENCE, UNKNOWN))

ACCENTS = (
    "en-us",
    "en-us-nyc",
    "en-gb",
    "en-gb-x-rp",
    "en-gb-scotland",
    "en-gb-x-gbclan",
    "en-gb-x-gbcwmd",
    "en-029",
)
SPLIT_VARIANTS = {
    "train": (
        "m1", "m2", "m4", "m7", "f1", "f2", "f5", "klatt", "klatt2", "Andy", "Annie",
        "david", "edward", "iven", "john", "max", "michel", "robert", "steph", "travis",
    ),
    "validation": ("m6", "f4", "klatt4", "ed"),
    "test": ("m3", "f3", "klatt3", "linda", "paul"),
}  # fmt: skip

# Words that are not keywords. The Speech Commands auxiliary words, digits and common
# words; homophones of keywords ("know", "write") are left out, they would be mislabeled.
UNKNOWN_WORDS = (
    "bed", "bird", "cat", "dog", "happy", "house", "marvin", "sheila", "tree", "wow",
    "backward", "forward", "follow", "learn", "visual", "zero", "one", "two", "three",
    "five", "six", "seven", "eight", "nine", "apple", "banana", "water", "window", "table",
    "chair", "green", "blue", "yellow", "music", "light", "door", "open", "close", "begin",
    "finish", "hello", "please", "thanks", "maybe", "never", "always", "today", "morning",
    "coffee", "paper", "pencil", "garden", "river", "mountain", "summer", "winter", "money",
    "number", "people", "little", "small", "fast", "slow", "car", "train", "phone", "home",
    "work", "play", "jump", "walk", "sit", "stand", "button", "kitchen", "zebra", "tiger",
    "doctor", "silver", "basket",
)  # fmt: skip

SPEED_WPM = (110, 240)
PITCH = (15, 85)
AMPLITUDE = (60, 180)


@dataclass(frozen=True)
class ClipSpec:
    """One clip: its label, the word spoken (empty for silence) and the voice."""

    label: str
    word: str
    accent: str
    variant: str
    speed: int
    pitch: int
    amplitude: int

    @property
    def voice(self) -> str:
        return f"{self.accent}+{self.variant}"

    @property
    def split(self) -> str:
        return next(name for name, variants in SPLIT_VARIANTS.items() if self.variant in variants)


def plan(clips_per_class: int, seed: int) -> list[ClipSpec]:
    """The whole dataset, deterministic in (clips_per_class, seed)."""
    rng = np.random.default_rng(seed)
    variants = [variant for group in SPLIT_VARIANTS.values() for variant in group]
    specs = []
    for label in LABELS:
        for _ in range(clips_per_class):
            if label == SILENCE:
                word = ""
            elif label == UNKNOWN:
                word = str(rng.choice(UNKNOWN_WORDS))
            else:
                word = label
            specs.append(
                ClipSpec(
                    label=label,
                    word=word,
                    accent=str(rng.choice(ACCENTS)),
                    variant=str(rng.choice(variants)),
                    speed=int(rng.integers(*SPEED_WPM, endpoint=True)),
                    pitch=int(rng.integers(*PITCH, endpoint=True)),
                    amplitude=int(rng.integers(*AMPLITUDE, endpoint=True)),
                )
            )
    return specs
