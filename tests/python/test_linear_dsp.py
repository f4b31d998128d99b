# SPDX-License-Identifier: Apache-2.0
"""The DSP linear kernel's assembly loop computes the exact sums, on a Cortex-M4.

lib/src/kernels/linear_sums_dsp.S writes the bias plus the dot products of one input
row, its offset added and extended once into int16 pairs (input_pairs_dsp.h), with
groups of 4 weight rows. linear_dsp/linear_cases.cpp runs both on QEMU's mps2-an386
(Cortex-M4) over the cases written here: depths of one step to 1,024 values (every
remainder of the loop's 8 steps an iteration), 1 to 16 groups of rows, input offsets at
both ends of their range, saturating and random bytes, with and without a bias (or the
bias started in the sums), rows longer than the values summed (the recurrent kernels'
gate products over the first multiple of 4 of their columns); every sum is compared with
the same integer arithmetic in Python. The requantization that
follows is test_requantize_fast.py's; the kernel as a whole is compared with the host
reference on the DSP boards by tests/kernels.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from conftest import REPO, build_semihosted, need_tools, run_semihosted

SOURCES = (
    Path(__file__).parent / "linear_dsp" / "linear_cases.cpp",
    REPO / "lib/src/kernels/linear_sums_dsp.S",
)
TOOLS = ("arm-none-eabi-g++", "qemu-system-arm")


def expected_sums(
    x: np.ndarray, weights: np.ndarray, offset: int, bias: np.ndarray | None
) -> np.ndarray:
    """linear_sums_dsp.S's arithmetic: bias + sum over the depth of (x + offset) * w."""
    sums = weights[:, : x.size].astype(np.int64) @ (x.astype(np.int64) + offset)
    return sums if bias is None else sums + bias


NO_BIAS, OWN_BIAS, BIAS_IN_SUMS = 0, 1, 2


def cases() -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray | None]]:
    """(input offset, input, weight rows, bias or None) each; rows may be longer than the
    input, their values past it not summed."""
    rng = np.random.default_rng(7)
    out = []
    for steps in (1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 160, 256):
        depth = 4 * steps
        for channels in (4, 12, 64):
            for offset in (-255, -128, 0, 1, 127, 255, int(rng.integers(-255, 256))):
                for fill in ("random", "extremes"):
                    if fill == "random":
                        x = rng.integers(-128, 128, depth, dtype=np.int8)
                        w = rng.integers(-128, 128, (channels, depth), dtype=np.int8)
                    else:
                        # The largest products of both signs: the sums' bounds.
                        x = np.full(depth, 127 if offset >= 0 else -128, np.int8)
                        w = np.full((channels, depth), -128, np.int8)
                        w[1::2] = 127
                    bias = rng.integers(-(1 << 20), 1 << 20, channels, dtype=np.int32)
                    out.append((offset, x, w, bias if len(out) % 3 else None))
    for depth, extra in ((4, 1), (8, 2), (28, 3), (32, 7), (36, 4), (124, 2)):
        # Rows of depth + extra values, as a gate's columns not a multiple of 4.
        for channels in (4, 8, 32):
            x = rng.integers(-128, 128, depth, dtype=np.int8)
            w = rng.integers(-128, 128, (channels, depth + extra), dtype=np.int8)
            bias = rng.integers(-(1 << 20), 1 << 20, channels, dtype=np.int32)
            out.append((0, x, w, bias))
    return out


def test_the_loop_sums_are_the_exact_integer_sums(tmp_path: Path) -> None:
    need_tools(*TOOLS)
    all_cases = cases()
    with open(tmp_path / "cases.bin", "wb") as f:
        for index, (offset, x, w, bias) in enumerate(all_cases):
            kind = NO_BIAS if bias is None else (BIAS_IN_SUMS if index % 2 else OWN_BIAS)
            f.write(struct.pack("<5i", x.size // 4, len(w), offset, kind, w.shape[1]))
            f.write(x.tobytes() + w.tobytes())
            if bias is not None:
                f.write(bias.astype("<i4").tobytes())
    elf = tmp_path / "linear_cases.elf"
    build_semihosted(elf, list(SOURCES), ["-mcpu=cortex-m4"], REPO / "lib/src", ram_size=0x400000)
    run_semihosted(elf, "mps2-an386", "cortex-m4", tmp_path)
    device = np.frombuffer((tmp_path / "results.bin").read_bytes(), "<i4")
    assert len(device) == sum(len(w) for _, _, w, _ in all_cases)
    start = 0
    for index, (offset, x, w, bias) in enumerate(all_cases):
        sums, start = device[start : start + len(w)], start + len(w)
        expected = expected_sums(x, w, offset, bias)
        assert np.array_equal(sums, expected), (
            f"case {index} (depth {x.size}, {w.shape} rows, offset {offset}, "
            f"bias {bias is not None}): {sums.tolist()} != {expected.tolist()}"
        )
