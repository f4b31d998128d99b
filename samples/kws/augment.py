# SPDX-License-Identifier: Apache-2.0
"""Random time shift, loudness and background noise for 1 s clips of clean speech.

Applied afresh every training epoch, and once with a fixed seed to the validation and
test clips, so that no two epochs see the same noise.
"""

from __future__ import annotations

import numpy as np
from features import CLIP_SAMPLES, SAMPLE_RATE

SHIFT_SAMPLES = SAMPLE_RATE // 10  # +-100 ms, MLPerf Tiny's time_shift_ms
PEAK = (0.05, 0.9)  # loudness of the speech, log-uniform
NOISY_FRACTION = 0.8  # of speech clips; the rest stay clean
SNR_DB = (5.0, 35.0)
SILENCE_RMS = (1e-5, 0.05)  # from near digital silence to a loud room, log-uniform


def center(speech: np.ndarray) -> np.ndarray:
    """Pad (or crop) speech to exactly 1 s, centred."""
    clip = np.zeros(CLIP_SAMPLES, dtype=np.float32)
    if speech.size >= CLIP_SAMPLES:
        start = (speech.size - CLIP_SAMPLES) // 2
        return speech[start : start + CLIP_SAMPLES].astype(np.float32)
    start = (CLIP_SAMPLES - speech.size) // 2
    clip[start : start + speech.size] = speech
    return clip


def augment(clean: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Noisy versions of clips (N, 16000); all-zero clips are silence and get noise only."""
    count = clean.shape[0]
    shifts = rng.integers(-SHIFT_SAMPLES, SHIFT_SAMPLES, count, endpoint=True)
    speech = np.stack([_shift(clip, int(shift)) for clip, shift in zip(clean, shifts)])
    peak = np.abs(speech).max(axis=1)
    is_speech = peak > 0
    target_peak = np.exp(rng.uniform(*np.log(PEAK), count))
    speech *= np.where(is_speech, target_peak / np.maximum(peak, 1e-9), 0.0)[:, np.newaxis]

    speech_rms = np.sqrt(np.mean(speech**2, axis=1))
    snr = rng.uniform(*SNR_DB, count)
    noisy = rng.uniform(size=count) < NOISY_FRACTION
    silence_rms = np.exp(rng.uniform(*np.log(SILENCE_RMS), count))
    speech_noise_rms = np.where(noisy, speech_rms * 10 ** (-snr / 20), 0.0)
    noise_rms = np.where(is_speech, speech_noise_rms, silence_rms)
    noise = _colored_noise(rng, count) * noise_rms[:, np.newaxis]
    return np.clip(speech + noise, -1.0, 1.0).astype(np.float32)


def _shift(clip: np.ndarray, samples: int) -> np.ndarray:
    shifted = np.zeros_like(clip)
    if samples >= 0:
        shifted[samples:] = clip[: clip.size - samples]
    else:
        shifted[:samples] = clip[-samples:]
    return shifted


def _colored_noise(rng: np.random.Generator, count: int) -> np.ndarray:
    """Unit-RMS noise with a 1/f^alpha power spectrum, alpha uniform in [0, 2]:
    from white through pink to brown, like fans, traffic and rumble."""
    spectrum = np.fft.rfft(rng.standard_normal((count, CLIP_SAMPLES)), axis=1)
    frequency = np.maximum(np.fft.rfftfreq(CLIP_SAMPLES, 1 / SAMPLE_RATE), 1.0)
    alpha = rng.uniform(0.0, 2.0, count)[:, np.newaxis]
    noise = np.fft.irfft(spectrum * frequency ** (-alpha / 2), n=CLIP_SAMPLES, axis=1)
    return noise / np.sqrt(np.mean(noise**2, axis=1, keepdims=True))
