# SPDX-License-Identifier: Apache-2.0
"""MFCCs of 16 kHz PCM in integers: the arithmetic of lib/src/audio/mfcc.cpp, step by step.

A keyword model fed from a microphone needs its features computed on the device, and
the same features in training and in the host reference. This is both: the device's
fixed-point front end, written from its C, run on numpy int64 arrays. Per frame of
480 int16 samples (30 ms; frames every 320 samples, 20 ms, as samples/kws/features.py):

1. Hann window in Q15: ``(x * w + 2^14) >> 15``, zero-padded to 512 samples.
2. The 512-point spectrum of the real frame through a 256-point complex FFT of
   ``z[m] = x[2m] + j x[2m+1]`` (radix 2, decimation in time, bit-reversed input),
   int32 data and Q15 twiddles ``c - j s`` of 2 pi k / 512; every product rounded
   ``(a c + b s + 2^14) >> 15``, no scaling between stages (|Z| < 2^24). Then, per bin
   k <= 256, with A = Z[k mod 256] and C = Z[(256 - k) mod 256], twice the bin:
   ``2 X = (A_re + C_re, A_im - C_im) + W^k (A_im + C_im, C_re - A_re)``, the product
   rounded the same way (|2 X| < 2^26).
3. Power ``((2 X_re)^2 + (2 X_im)^2) >> 17``, that is |X|^2 >> 15, of bins 0 to 256.
4. 40 triangular mel filters (HTK mel, 20 to 4,000 Hz, as the float features), each
   bin's Q15 weights into at most two filters; ``sum >> 15``.
5. ``log2(mel + 1)`` in Q10: the leading bit's position and a 256-entry table of the
   next 8 bits' fraction.
6. DCT-II (``sqrt(2/40) cos(pi k (2n + 1) / 80)`` in Q15) to 10 coefficients,
   ``(sum + 2^14) >> 15``: int32 in Q10, log2 units of power.

A keyword model's input is ``coefficients / 2^12`` (features(): an exact conversion).
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16_000
FRAME_LENGTH = 480
FRAME_STEP = 320
FFT_LENGTH = 512
COMPLEX_LENGTH = FFT_LENGTH // 2  # the complex FFT of the real frame's sample pairs
BINS = FFT_LENGTH // 2 + 1
MEL_BINS = 40
LOWER_HZ = 20.0
UPPER_HZ = 4_000.0
COEFFICIENTS = 10
FRACTION_BITS = 10  # of the log2 values and the coefficients
FEATURE_SHIFT = 2  # features() divides the coefficients by 2^(10 + 2)
Q15 = 32767
ROUND15 = 1 << 14
LOG2_TABLE_BITS = 8


def _q15(values: np.ndarray) -> np.ndarray:
    return np.round(Q15 * values).astype(np.int64)


def _window() -> np.ndarray:
    """Periodic Hann window of FRAME_LENGTH in Q15."""
    n = np.arange(FRAME_LENGTH)
    return _q15(0.5 - 0.5 * np.cos(2 * np.pi * n / FRAME_LENGTH))


def _twiddles() -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2 pi j / 512 for j <= 256, in Q15: the complex FFT's and the
    split's twiddles."""
    angle = 2 * np.pi * np.arange(BINS) / FFT_LENGTH
    return _q15(np.cos(angle)), _q15(np.sin(angle))


def _bit_reversal() -> np.ndarray:
    """Where z[m] goes in the complex FFT's input, m < COMPLEX_LENGTH."""
    bits = COMPLEX_LENGTH.bit_length() - 1
    return np.array([int(f"{m:0{bits}b}"[::-1], 2) for m in range(COMPLEX_LENGTH)])


def _mel_bins() -> tuple[np.ndarray, np.ndarray]:
    """Per FFT bin, the first mel filter it weighs into (MEL_BINS: none) and its Q15
    weights into that filter and the next; the next's is 0 past the last filter."""

    def mel(hertz: np.ndarray) -> np.ndarray:
        return 1127.0 * np.log1p(hertz / 700.0)

    bin_mels = mel(np.linspace(0.0, SAMPLE_RATE / 2, BINS))[:, np.newaxis]
    edges = np.linspace(mel(np.array(LOWER_HZ)), mel(np.array(UPPER_HZ)), MEL_BINS + 2)
    lower, center, upper = edges[:-2], edges[1:-1], edges[2:]
    rising = (bin_mels - lower) / (center - lower)
    falling = (upper - bin_mels) / (upper - center)
    weights = _q15(np.maximum(0.0, np.minimum(rising, falling)))
    weights[0] = 0  # the DC bin, as in the float features
    first = np.full(BINS, MEL_BINS, dtype=np.int64)
    pair = np.zeros((BINS, 2), dtype=np.int64)
    for k in range(BINS):
        filters = np.flatnonzero(weights[k])
        if filters.size == 0:
            continue
        assert filters.size <= 2 and filters[-1] - filters[0] == filters.size - 1
        first[k] = filters[0]
        pair[k, : filters.size] = weights[k, filters]
    return first, pair


def _log2_fractions() -> np.ndarray:
    """round(1024 log2(1 + i / 256)) for i < 256."""
    steps = 1 << LOG2_TABLE_BITS
    return np.round((1 << FRACTION_BITS) * np.log2(1 + np.arange(steps) / steps)).astype(np.int64)


def _dct() -> np.ndarray:
    """(COEFFICIENTS, MEL_BINS) DCT-II rows in Q15, TF's MFCC scaling."""
    n = np.arange(MEL_BINS)[np.newaxis, :]
    k = np.arange(COEFFICIENTS)[:, np.newaxis]
    return _q15(np.sqrt(2.0 / MEL_BINS) * np.cos(np.pi * k * (2 * n + 1) / (2 * MEL_BINS)))


WINDOW = _window()
TWIDDLE_COS, TWIDDLE_SIN = _twiddles()
BIT_REVERSAL = _bit_reversal()
MEL_FIRST, MEL_WEIGHTS = _mel_bins()
LOG2_FRACTIONS = _log2_fractions()
DCT = _dct()


def _mel_matrix() -> np.ndarray:
    """The bins' weight pairs as a dense (BINS, MEL_BINS) matrix: integer sums do not
    depend on their order, so a matrix product adds what the C adds bin by bin."""
    dense = np.zeros((BINS, MEL_BINS + 1), dtype=np.int64)
    for k in range(BINS):
        dense[k, MEL_FIRST[k]] += MEL_WEIGHTS[k, 0]
        dense[k, min(MEL_FIRST[k] + 1, MEL_BINS)] += MEL_WEIGHTS[k, 1]
    return dense[:, :MEL_BINS]


_MEL_MATRIX = _mel_matrix()


def _complex_fft(re: np.ndarray, im: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step 2's 256-point FFT of bit-reversed (..., COMPLEX_LENGTH) int64 data."""
    half = 1
    while half < COMPLEX_LENGTH:
        step = COMPLEX_LENGTH // half  # in the 512-point twiddle table
        c = TWIDDLE_COS[: half * step : step]
        s = TWIDDLE_SIN[: half * step : step]
        shape = (*re.shape[:-1], COMPLEX_LENGTH // (2 * half), 2, half)
        re, im = re.reshape(shape), im.reshape(shape)
        even_re, even_im = re[..., 0, :], im[..., 0, :]
        t_re = (re[..., 1, :] * c + im[..., 1, :] * s + ROUND15) >> 15
        t_im = (im[..., 1, :] * c - re[..., 1, :] * s + ROUND15) >> 15
        re = np.stack([even_re + t_re, even_re - t_re], axis=-2).reshape(*shape[:-3], -1)
        im = np.stack([even_im + t_im, even_im - t_im], axis=-2).reshape(*shape[:-3], -1)
        half *= 2
    return re, im


def spectrum(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1 and 2 on (..., FRAME_LENGTH) int16 samples: twice the real frame's
    spectrum, bins 0 to 256, as (..., BINS) int64 real and imaginary parts."""
    windowed = (frames.astype(np.int64) * WINDOW + ROUND15) >> 15
    padded = np.zeros((*frames.shape[:-1], FFT_LENGTH), dtype=np.int64)
    padded[..., :FRAME_LENGTH] = windowed
    z_re, z_im = _complex_fft(
        padded[..., 0::2][..., BIT_REVERSAL], padded[..., 1::2][..., BIT_REVERSAL]
    )
    k = np.arange(BINS)
    a_re, a_im = z_re[..., k % COMPLEX_LENGTH], z_im[..., k % COMPLEX_LENGTH]
    c_re = z_re[..., (COMPLEX_LENGTH - k) % COMPLEX_LENGTH]
    c_im = z_im[..., (COMPLEX_LENGTH - k) % COMPLEX_LENGTH]
    p, q = a_im + c_im, c_re - a_re
    twice_re = a_re + c_re + ((p * TWIDDLE_COS + q * TWIDDLE_SIN + ROUND15) >> 15)
    twice_im = a_im - c_im + ((q * TWIDDLE_COS - p * TWIDDLE_SIN + ROUND15) >> 15)
    return twice_re, twice_im


def log2_q10(values: np.ndarray) -> np.ndarray:
    """Step 5 on positive int64 values: log2 in Q10 from the leading bit and a table."""
    _, exponent = np.frexp(values.astype(np.float64))  # exact below 2^53
    msb = exponent.astype(np.int64) - 1
    right = np.maximum(msb - LOG2_TABLE_BITS, 0)
    left = np.maximum(LOG2_TABLE_BITS - msb, 0)
    top = ((values >> right) << left) & ((1 << LOG2_TABLE_BITS) - 1)
    return (msb << FRACTION_BITS) + LOG2_FRACTIONS[top]


def log_mel_q10(frames: np.ndarray) -> np.ndarray:
    """Steps 1 to 5: (..., FRAME_LENGTH) int16 samples -> (..., MEL_BINS) log2 in Q10."""
    re, im = spectrum(frames)
    power = (re**2 + im**2) >> 17
    mel = (power @ _MEL_MATRIX) >> 15
    return log2_q10(mel + 1)


def frame_coefficients(frames: np.ndarray) -> np.ndarray:
    """(..., FRAME_LENGTH) int16 samples -> (..., COEFFICIENTS) int32 MFCCs in Q10."""
    return ((log_mel_q10(frames) @ DCT.T + ROUND15) >> 15).astype(np.int32)


def frames_of(pcm: np.ndarray) -> np.ndarray:
    """(..., samples) -> (..., frames, FRAME_LENGTH): every whole frame, FRAME_STEP apart."""
    count = 1 + (pcm.shape[-1] - FRAME_LENGTH) // FRAME_STEP
    starts = np.arange(count)[:, np.newaxis] * FRAME_STEP
    return pcm[..., starts + np.arange(FRAME_LENGTH)]


def coefficients(pcm: np.ndarray) -> np.ndarray:
    """int16 PCM (..., samples) -> (..., frames, COEFFICIENTS) int32 MFCCs in Q10; 16,000
    samples give 49 frames."""
    return frame_coefficients(frames_of(pcm))


def features(pcm: np.ndarray) -> np.ndarray:
    """A keyword model's float32 input: coefficients(pcm) / 2^12, exact, as the firmware
    converts them: in units of 4 doublings of power, about the scale of MLPerf Tiny's
    float MFCCs (samples/kws/features.py) on the same sound."""
    return coefficients(pcm).astype(np.float32) / np.float32(1 << (FRACTION_BITS + FEATURE_SHIFT))
