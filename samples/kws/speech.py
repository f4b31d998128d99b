# SPDX-License-Identifier: Apache-2.0
"""A word spoken by espeak-ng, as 16 kHz float audio with the silence around it trimmed."""

from __future__ import annotations

import subprocess

import numpy as np
from corpus import ClipSpec
from features import SAMPLE_RATE

# Samples quieter than this fraction of the peak count as the silence espeak-ng
# leaves before and after a word.
TRIM_THRESHOLD = 0.02


def synthesize(spec: ClipSpec) -> np.ndarray:
    """The spoken word, float32 in [-1, 1]; empty for a silence clip."""
    if not spec.word:
        return np.zeros(0, dtype=np.float32)
    wav = subprocess.run(
        [
            "espeak-ng",
            "-v", spec.voice,
            "-s", str(spec.speed),
            "-p", str(spec.pitch),
            "-a", str(spec.amplitude),
            "--stdout",
            spec.word,
        ],
        check=True,
        capture_output=True,
    ).stdout  # fmt: skip
    # espeak-ng speaks at 22,050 Hz. sox resamples; -D turns dither off, which would
    # otherwise add random noise and make the data differ from run to run.
    raw = subprocess.run(
        ["sox", "-D", "-t", "wav", "-", "-t", "raw", "-e", "signed-integer", "-b", "16",
         "-c", "1", "-", "rate", str(SAMPLE_RATE)],
        input=wav,
        check=True,
        capture_output=True,
    ).stdout  # fmt: skip
    audio = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    return _trim(audio)


def _trim(audio: np.ndarray) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > TRIM_THRESHOLD * np.abs(audio).max(initial=0.0))
    if loud.size == 0:
        return audio[:0]
    return audio[loud[0] : loud[-1] + 1]
