# SPDX-License-Identifier: Apache-2.0
"""The audio front end: lib/src/audio/mfcc.cpp on a Cortex-M equals et_zephyr.audio.mfcc.

The device computes a keyword model's features from PCM (samples/kws_stream), training
and the host reference compute them with the Python twin: both must give the same
integers for any sound, from silence to a full-scale square wave. The twin itself must
be an MFCC: close to the same steps in float64.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, build_semihosted, need_tools, run_semihosted
from et_zephyr.audio import c_tables, mfcc

TOOLS = ("arm-none-eabi-g++", "qemu-system-arm")
RECORD = 1 + mfcc.COEFFICIENTS  # status and coefficients, int32


def frames() -> np.ndarray:
    """Frames from silence to saturation: zeros, one-sample impulses at both ends,
    full-scale DC of both signs and square waves (the FFT's largest values), tones at
    bin centres and between them, white noise at every level from 1 LSB to full scale,
    speech-like bursts, and random frames of every amplitude."""
    rng = np.random.default_rng(38)
    n = np.arange(mfcc.FRAME_LENGTH)
    out = [np.zeros(mfcc.FRAME_LENGTH), np.full(mfcc.FRAME_LENGTH, 32767.0),
           np.full(mfcc.FRAME_LENGTH, -32768.0),
           np.where(n % 2 == 0, 32767.0, -32768.0),  # Nyquist
           np.where(n % 32 < 16, 32767.0, -32768.0)]  # fmt: skip
    for at in (0, 1, 239, 240, 478, 479):
        impulse = np.zeros(mfcc.FRAME_LENGTH)
        impulse[at] = -32768.0 if at % 2 else 32767.0
        out.append(impulse)
    for hertz in (20.0, 100.0, 440.0, 1000.0, 1031.25, 3999.0, 4000.0, 7999.0, 8000.0):
        for amplitude in (1.0, 300.0, 32767.0):
            out.append(np.round(amplitude * np.sin(2 * np.pi * hertz * n / mfcc.SAMPLE_RATE)))
    for bits in range(0, 16):
        out.append(rng.integers(-(1 << bits), 1 << bits, mfcc.FRAME_LENGTH))
    envelope = np.exp(-(((n - 240) / 90.0) ** 2))
    for pitch in (110.0, 220.0, 330.0):
        voiced = sum(np.sin(2 * np.pi * pitch * h * n / mfcc.SAMPLE_RATE) / h for h in range(1, 12))
        out.append(np.round(12000.0 * envelope * voiced))
    for _ in range(40):
        amplitude = 2.0 ** rng.uniform(0, 15)
        out.append(np.round(amplitude * rng.standard_normal(mfcc.FRAME_LENGTH)))
    return np.clip(np.array(out), -32768, 32767).astype(np.int16)


def test_the_committed_tables_are_the_twins() -> None:
    assert c_tables.HEADER.read_text() == c_tables.header(), (
        "lib/src/audio/mfcc_tables.h is stale: python -m et_zephyr.audio.c_tables"
    )


@pytest.mark.parametrize(
    ("cpu", "machine"),
    [("cortex-m55", "mps3-an547"), ("cortex-m4", "mps2-an386"), ("cortex-m3", "mps2-an385")],
)
def test_device_front_end_is_the_twin(cpu: str, machine: str, tmp_path: Path) -> None:
    need_tools(*TOOLS)
    cases = frames()
    (tmp_path / "cases.bin").write_bytes(cases.astype("<i2").tobytes())
    elf = tmp_path / "mfcc_frames.elf"
    sources = [Path(__file__).parent / "mfcc" / "mfcc_frames.cpp", REPO / "lib/src/audio/mfcc.cpp"]
    build_semihosted(
        elf, sources, [f"-mcpu={cpu}", f"-I{REPO / 'lib/include'}"], REPO / "lib/src/audio"
    )
    run_semihosted(elf, machine, cpu, tmp_path)
    device = np.frombuffer((tmp_path / "results.bin").read_bytes(), "<i4")
    assert len(device) == len(cases) * RECORD + 1
    records = device[:-1].reshape(len(cases), RECORD)
    assert np.all(records[:, 0] == 0)
    expected = mfcc.frame_coefficients(cases)
    for index, (got, want) in enumerate(zip(records[:, 1:], expected, strict=True)):
        assert np.array_equal(got, want), f"frame {index}: {got} != {want}"
    assert device[-1] == 1  # ET_ZEPHYR_ERR_INVALID_ARGUMENT for a NULL scratch


def _float_log_mel(frames: np.ndarray) -> np.ndarray:
    """Steps 1 to 4 in float64 with the exact window, the same filters: power >> 30 units."""
    n = np.arange(mfcc.FRAME_LENGTH)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * n / mfcc.FRAME_LENGTH)
    spectrum = np.fft.rfft(frames * window, n=mfcc.FFT_LENGTH)
    weights = np.zeros((mfcc.BINS, mfcc.MEL_BINS + 1))
    for k in range(mfcc.BINS):
        weights[k, mfcc.MEL_FIRST[k]] += mfcc.MEL_WEIGHTS[k, 0] / 2**15
        weights[k, min(mfcc.MEL_FIRST[k] + 1, mfcc.MEL_BINS)] += mfcc.MEL_WEIGHTS[k, 1] / 2**15
    return np.abs(spectrum) ** 2 / 2**15 @ weights[:, : mfcc.MEL_BINS]


def test_twin_is_a_log_mel_spectrum() -> None:
    """The integer log mel energies are within 0.02 log2 units (1.4 %) of float64's
    wherever the energy stands above the fixed-point noise floor (a pure tone's far
    filters do not: their float energy is below the FFT's rounding)."""
    cases = frames()
    mel = _float_log_mel(cases.astype(np.float64))
    got = mfcc.log_mel_q10(cases) / (1 << mfcc.FRACTION_BITS)
    above = mel >= 1 << 10
    error = np.abs(got - np.log2(mel + 1))[above].max()
    assert error < 0.02, error
    assert above.sum() > 0.25 * above.size


def test_twin_coefficients_are_the_dct_of_its_log_mel() -> None:
    """Step 6: within 0.03 log2 units of float64's DCT-II of the same log energies."""
    cases = frames()
    logs = mfcc.log_mel_q10(cases).astype(np.float64)
    m = np.arange(mfcc.MEL_BINS)[np.newaxis, :]
    k = np.arange(mfcc.COEFFICIENTS)[:, np.newaxis]
    dct = np.sqrt(2.0 / mfcc.MEL_BINS) * np.cos(np.pi * k * (2 * m + 1) / (2 * mfcc.MEL_BINS))
    error = np.abs(mfcc.frame_coefficients(cases) - logs @ dct.T).max()
    assert error / (1 << mfcc.FRACTION_BITS) < 0.03, error


def test_stream_framing() -> None:
    """One second gives 49 frames, 320 samples apart, as the float features."""
    pcm = np.random.default_rng(1).integers(-3000, 3000, 16_000).astype(np.int16)
    coefficients = mfcc.coefficients(pcm)
    assert coefficients.shape == (49, mfcc.COEFFICIENTS)
    third = mfcc.frame_coefficients(pcm[2 * 320 : 2 * 320 + 480])
    assert np.array_equal(coefficients[2], third)
    assert np.array_equal(mfcc.features(pcm), coefficients / np.float32(4096))
