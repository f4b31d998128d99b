# SPDX-License-Identifier: Apache-2.0
"""49x10 MFCC features of 1 s of 16 kHz audio, as the MLPerf Tiny KWS benchmark computes them.

MLPerf Tiny's TensorFlow pipeline, mirrored step by step in numpy:

1. ``tf.signal.stft(frame_length=480, frame_step=320, fft_length=512)``: 30 ms periodic
   Hann windows every 20 ms, no end padding, so 16,000 samples give 49 frames; each
   frame is zero-padded to 512 points and its 257-bin magnitude spectrum taken.
2. ``tf.signal.linear_to_mel_weight_matrix(40, 257, 16000, 20, 4000)``: 40 triangular
   filters evenly spaced on the HTK mel scale (1127 ln(1 + f/700)) between 20 and
   4,000 Hz; the DC bin gets no weight.
3. ``log(mel + 1e-6)``.
4. ``tf.signal.mfccs_from_log_mel_spectrograms``: TF's unnormalised DCT-II
   (2 sum x_n cos(pi k (2n+1) / 2N)) times 1/sqrt(2N), that is sqrt(2/N) sum x_n cos(...)
   for every k. This is the orthonormal DCT-II except for coefficient 0, which is
   sqrt(2) larger than the orthonormal one; TF does it that way, so we do too.
5. The first 10 coefficients.

The arithmetic is float64, rounded to float32 once at the end, so that the features
hardly depend on how the FFT and BLAS libraries order their float32 sums.
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16_000
CLIP_SAMPLES = SAMPLE_RATE
FRAME_LENGTH = 480
FRAME_STEP = 320
FFT_LENGTH = 512
MEL_BINS = 40
LOWER_HZ = 20.0
UPPER_HZ = 4_000.0
LOG_OFFSET = 1e-6
COEFFICIENTS = 10
FRAMES = 1 + (CLIP_SAMPLES - FRAME_LENGTH) // FRAME_STEP


def _hertz_to_mel(hertz: np.ndarray) -> np.ndarray:
    return 1127.0 * np.log1p(hertz / 700.0)


def _mel_weights() -> np.ndarray:
    """tf.signal.linear_to_mel_weight_matrix: (257 spectrum bins, 40 mel bins)."""
    bins = FFT_LENGTH // 2 + 1
    bin_mels = _hertz_to_mel(np.linspace(0.0, SAMPLE_RATE / 2, bins))[1:, np.newaxis]
    edges = np.linspace(_hertz_to_mel(LOWER_HZ), _hertz_to_mel(UPPER_HZ), MEL_BINS + 2)
    lower, center, upper = edges[:-2], edges[1:-1], edges[2:]
    rising = (bin_mels - lower) / (center - lower)
    falling = (upper - bin_mels) / (upper - center)
    weights = np.maximum(0.0, np.minimum(rising, falling))
    return np.pad(weights, ((1, 0), (0, 0)))


def _dct_matrix() -> np.ndarray:
    """TF's MFCC DCT-II as a (40 mel bins, 10 coefficients) matrix."""
    n = np.arange(MEL_BINS)[:, np.newaxis]
    k = np.arange(COEFFICIENTS)[np.newaxis, :]
    return np.sqrt(2.0 / MEL_BINS) * np.cos(np.pi * k * (2 * n + 1) / (2 * MEL_BINS))


_WINDOW = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME_LENGTH) / FRAME_LENGTH)
_MEL_WEIGHTS = _mel_weights()
_DCT = _dct_matrix()


def log_mel(audio: np.ndarray) -> np.ndarray:
    """Log mel spectrogram (steps 1 to 3): shape (..., 16000) -> (..., 49, 40) float64."""
    if audio.shape[-1] != CLIP_SAMPLES:
        raise ValueError(f"expected {CLIP_SAMPLES} samples, got {audio.shape[-1]}")
    starts = np.arange(FRAMES)[:, np.newaxis] * FRAME_STEP
    frames = audio.astype(np.float64)[..., starts + np.arange(FRAME_LENGTH)] * _WINDOW
    # One 2-D matrix product: numpy's stacked matmul is several times slower.
    spectrum = np.abs(np.fft.rfft(frames, n=FFT_LENGTH)).reshape(-1, _MEL_WEIGHTS.shape[0])
    mel = np.log(spectrum @ _MEL_WEIGHTS + LOG_OFFSET)
    return mel.reshape(*audio.shape[:-1], FRAMES, MEL_BINS)


def mfcc(audio: np.ndarray) -> np.ndarray:
    """MFCCs of 16 kHz audio in [-1, 1]: shape (..., 16000) -> (..., 49, 10) float32.

    Leading dimensions are a batch, so a whole dataset is one call.
    """
    return (log_mel(audio) @ _DCT).astype(np.float32)
