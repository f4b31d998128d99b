# SPDX-License-Identifier: Apache-2.0
"""The scalar kernels' matrix product equals the host reference's, on a Cortex-M3.

lib/src/kernels/rows_times_weights_scalar.cpp (with its assembly loop
linear_sums_scalar.S) computes the scalar tier's pointwise convolutions and linears:
rows of an int8 input times int8 weight rows, CMSIS-NN's requantization, output offset
and clamp. rows_scalar/rows_cases.cpp runs it on QEMU's mps2-an385 (Cortex-M3) over the
cases written here: depths of 1 to 700 values (every remainder of the loop's 4, one and
several 128-value chunks), 1 to 70 channels (every remainder of 4 rows, one and several
32-channel chunks), 1 to 5 rows, input offsets at both ends of an int8 zero point's
range, per-tensor and per-channel requantization, narrow activation ranges, saturating
and random bytes; every output is compared with the host reference's arithmetic
(reference/fixed_point.py), and the cases the kernel must refuse (an input offset
outside an int8 zero point's, sums past the short requantization's bound) are refused.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from conftest import REPO, build_semihosted, need_tools, run_semihosted
from et_zephyr.reference import fixed_point

SOURCES = (
    Path(__file__).parent / "rows_scalar" / "rows_cases.cpp",
    REPO / "lib/src/kernels/rows_times_weights_scalar.cpp",
    REPO / "lib/src/kernels/linear_sums_scalar.S",
)
TOOLS = ("arm-none-eabi-g++", "qemu-system-arm")


@dataclass
class Case:
    x: np.ndarray  # rows x depth, int8
    w: np.ndarray  # channels x depth, int8
    bias: np.ndarray | None  # channels, int32
    multipliers: np.ndarray  # channels or 1, int32
    shifts: np.ndarray  # as multipliers
    input_offset: int
    output_offset: int
    activation: tuple[int, int]
    taken: bool  # whether the kernel must take it

    def pack(self) -> bytes:
        rows, depth = self.x.shape
        header = struct.pack(
            "<9i", rows, depth, len(self.w), self.input_offset, self.output_offset,
            *self.activation, len(self.multipliers) > 1, self.bias is not None,
        )  # fmt: skip
        bias = b"" if self.bias is None else self.bias.astype("<i4").tobytes()
        return (
            header + self.x.tobytes() + self.w.tobytes() + bias
            + self.multipliers.astype("<i4").tobytes() + self.shifts.astype("<i4").tobytes()
        )  # fmt: skip

    def expected(self) -> bytes:
        """bias + (x + input offset) . w, requantized as CMSIS-NN does, offset, clamped."""
        sums = (self.x.astype(np.int64) + self.input_offset) @ self.w.astype(np.int64).T
        if self.bias is not None:
            sums = sums + self.bias
        values = fixed_point.requantize(
            torch.from_numpy(sums),
            torch.from_numpy(self.multipliers.astype(np.int64)),
            torch.from_numpy(self.shifts.astype(np.int64)),
        )
        values = values + self.output_offset
        return values.clamp(*self.activation).to(torch.int8).numpy().tobytes()


def cases() -> list[Case]:
    rng = np.random.default_rng(11)
    out = []
    shapes = [(1, d, c) for d in (1, 2, 3, 4, 5, 7, 8, 12, 64, 127, 128, 129, 131, 256, 640, 700)
              for c in (1, 3, 4, 5, 8, 10, 33, 64)]  # fmt: skip
    shapes += [(r, d, c) for r in (2, 3, 5) for d in (3, 16, 130) for c in (6, 70)]
    for index, (rows, depth, channels) in enumerate(shapes):
        if channels * depth > 65536:
            continue
        per_channel = index % 2 == 0
        terms = channels if per_channel else 1
        input_offset = int((-127, 128, 0, 1, -1, rng.integers(-127, 129))[index % 6])
        output_offset = int((-128, 127, 0, rng.integers(-128, 128))[index % 4])
        if index % 5 == 4:
            # The largest products of both signs: the sums' bounds.
            x = np.full((rows, depth), 127 if input_offset >= 0 else -128, np.int8)
            w = np.full((channels, depth), -128, np.int8)
            w[1::2] = 127
        else:
            x = rng.integers(-128, 128, (rows, depth), dtype=np.int8)
            w = rng.integers(-128, 128, (channels, depth), dtype=np.int8)
        bias = rng.integers(-(1 << 18), 1 << 18, channels, dtype=np.int32)
        multipliers = rng.integers(1 << 30, (1 << 31) - 1, terms, dtype=np.int64).astype(np.int32)
        shifts = rng.integers(-14, -5, terms, dtype=np.int32)
        activation = (-128, 127) if index % 3 else (-100, 50)
        out.append(
            Case(x, w, bias if index % 4 else None, multipliers, shifts, input_offset,
                 output_offset, activation, True)
        )  # fmt: skip
    # Refused: an input offset outside an int8 zero point's range; a bias past the
    # short requantization's bound; a left shift.
    x = rng.integers(-128, 128, (1, 8), dtype=np.int8)
    w = rng.integers(-128, 128, (4, 8), dtype=np.int8)
    one = np.array([1 << 30], np.int32)
    refused = [
        (129, None, np.array([-7], np.int32)),
        (-128, None, np.array([-7], np.int32)),
        (0, np.full(4, 1 << 29, np.int32), np.array([-7], np.int32)),
        (0, None, np.array([1], np.int32)),
    ]
    for input_offset, bias, shifts in refused:
        out.append(Case(x, w, bias, one, shifts, input_offset, 0, (-128, 127), False))
    return out


def test_the_products_are_the_host_references(tmp_path: Path) -> None:
    need_tools(*TOOLS)
    all_cases = cases()
    (tmp_path / "cases.bin").write_bytes(b"".join(case.pack() for case in all_cases))
    elf = tmp_path / "rows_cases.elf"
    build_semihosted(elf, list(SOURCES), ["-mcpu=cortex-m3"], REPO / "lib/src", ram_size=0x400000)
    run_semihosted(elf, "mps2-an385", "cortex-m3", tmp_path)
    device = (tmp_path / "results.bin").read_bytes()
    at = 0
    for index, case in enumerate(all_cases):
        taken, at = device[at] == 1, at + 1
        rows, depth = case.x.shape
        name = f"case {index} ({rows} x {depth} by {len(case.w)}, offset {case.input_offset})"
        assert taken == case.taken, f"{name}: taken {taken}, expected {case.taken}"
        if not taken:
            continue
        expected = case.expected()
        outputs, at = device[at : at + len(expected)], at + len(expected)
        assert outputs == expected, f"{name}: {list(outputs)} != {list(expected)}"
    assert at == len(device)
