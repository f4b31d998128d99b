# SPDX-License-Identifier: Apache-2.0
"""The recurrent kernels' gates equal the host reference's, on a Cortex-M4 and M3.

lib/src/kernels/gate_sides.cpp computes an LSTM or GRU gate's int16 vector from one or
two sides (an int8 vector times int8 weight rows plus an int32 bias, requantized; the
second added to the first's saturated value, saturating: CMSIS-NN's
arm_nn_vec_mat_mul_result_acc_s8_s16 twice, which reference/gates_s16.py mirrors) on the
linear kernels' assembly loops, with the vector extended with zeros past a length that
is not a multiple of 4 and requantize_fast.h's requantization where
exact_requantization() finds it exact. gate_sides/gate_cases.cpp runs it on QEMU's
mps2-an386 (Cortex-M4, DSP extension) and mps2-an385 (Cortex-M3, scalar loop) over the
cases written here: 1 to 300 columns (every remainder of 4, several 128-value chunks),
1 to 70 rows (every remainder of 4, several 32-row chunks), one and two sides, right
and left shifts with the multipliers a quantizer makes, the largest sums of both signs
(saturating gates), and sums past the short forms' bounds, which must be left to
CMSIS-NN; every value is compared with the host reference.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO, build_semihosted, need_tools, run_semihosted
from et_zephyr.reference import gates_s16

KERNELS = REPO / "lib/src/kernels"
TOOLS = ("arm-none-eabi-g++", "qemu-system-arm")
NOT_EXACT, RIGHT, LEFT = 0, 1, 2


@dataclass
class Side:
    x: np.ndarray  # columns, int8
    w: np.ndarray  # rows x columns, int8
    bias: np.ndarray  # rows, int32
    multiplier: int
    shift: int
    how: int  # the requantization exact_requantization() must choose

    def pack(self) -> bytes:
        header = struct.pack("<3i", self.w.shape[1], self.multiplier, self.shift)
        return header + self.x.tobytes() + self.w.tobytes() + self.bias.astype("<i4").tobytes()

    def values(self) -> torch.Tensor:
        return gates_s16.side(
            torch.from_numpy(self.x.astype(np.int64)),
            torch.from_numpy(self.w.astype(np.int64)),
            torch.from_numpy(self.bias.astype(np.int64)),
            (self.multiplier, self.shift),
        )


@dataclass
class Case:
    sides: list[Side]  # the gate's first side, and its second if any

    def pack(self) -> bytes:
        header = struct.pack("<2i", len(self.sides[0].w), len(self.sides))
        return header + b"".join(side.pack() for side in self.sides)

    def expected(self) -> np.ndarray:
        """As arm_nn_vec_mat_mul_result_acc_s8_s16 twice on a zeroed vector."""
        values = gates_s16.saturate16(self.sides[0].values())
        if len(self.sides) == 2:
            values = gates_s16.saturate16(values + self.sides[1].values())
        return values.numpy().astype(np.int16)


def _side(
    rng: np.random.Generator,
    columns: int,
    rows: int,
    shift: int,
    how: int,
    fill: str = "random",
    bias_bits: int = 16,
) -> Side:
    if fill == "random":
        x = rng.integers(-128, 128, columns, dtype=np.int8)
        w = rng.integers(-127, 128, (rows, columns), dtype=np.int8)
    else:  # the largest sums of both signs: saturating gates
        x = np.full(columns, -128, np.int8)
        w = np.full((rows, columns), -127, np.int8)
        w[1::2] = 127
    bias = rng.integers(-(1 << bias_bits), 1 << bias_bits, rows, dtype=np.int32)
    multiplier = int(rng.integers(1 << 30, (1 << 31) - 1))
    return Side(x, w, bias, multiplier, shift, how)


def _how(shift: int) -> int:
    return RIGHT if shift < 0 else LEFT


def cases() -> list[Case]:
    rng = np.random.default_rng(37)
    out = []
    for columns in (1, 2, 3, 4, 5, 7, 10, 12, 31, 32, 33, 64, 127, 128, 129, 131, 300):
        for rows in (1, 3, 4, 5, 8, 31, 32, 33, 64, 70):
            # The shifts of gates in Q3.12 from int8 sides: small left or right ones; an
            # LSTM's hidden side is as long as its rows.
            first = int(rng.integers(-12, 4))
            second = int(rng.integers(-12, 4))
            out.append(Case([_side(rng, columns, rows, first, _how(first))]))
            out.append(
                Case([_side(rng, columns, rows, first, _how(first)),
                      _side(rng, rows, rows, second, _how(second))])
            )  # fmt: skip
    for shift in (-23, -12, -1, 0, 1, 3):
        second = 1 if shift < 0 else -1
        for fill in ("random", "extremes"):
            out.append(
                Case([_side(rng, 300, 36, shift, _how(shift), fill),
                      _side(rng, 40, 36, second, _how(second), fill)])
            )  # fmt: skip
    # Sums past the short forms' bounds: CMSIS-NN's loop must take them.
    out.append(Case([_side(rng, 32, 8, -4, NOT_EXACT, bias_bits=29)]))
    out.append(Case([_side(rng, 32, 8, 2, NOT_EXACT, bias_bits=28)]))
    out.append(Case([_side(rng, 1024, 8, 14, NOT_EXACT)]))
    out.append(Case([_side(rng, 32, 8, -24, NOT_EXACT)]))
    out.append(Case([_side(rng, 16, 4, 24, NOT_EXACT, bias_bits=2)]))
    out.append(Case([_side(rng, 10, 8, -3, RIGHT), _side(rng, 8, 8, 1, NOT_EXACT, bias_bits=29)]))
    # Within the left form's bound with a shift of 8.
    out.append(Case([_side(rng, 64, 12, 8, LEFT, bias_bits=12)]))
    return out


@pytest.mark.parametrize(
    ("cpu", "machine"), [("cortex-m4", "mps2-an386"), ("cortex-m3", "mps2-an385")]
)
def test_gate_sides_are_the_host_references(cpu: str, machine: str, tmp_path: Path) -> None:
    need_tools(*TOOLS)
    all_cases = cases()
    (tmp_path / "cases.bin").write_bytes(b"".join(case.pack() for case in all_cases))
    loop = "linear_sums_dsp.S" if cpu == "cortex-m4" else "linear_sums_scalar.S"
    elf = tmp_path / "gate_cases.elf"
    sources = [Path(__file__).parent / "gate_sides" / "gate_cases.cpp",
               KERNELS / "gate_sides.cpp", KERNELS / loop]  # fmt: skip
    build_semihosted(elf, sources, [f"-mcpu={cpu}"], REPO / "lib/src", ram_size=0x400000)
    run_semihosted(elf, machine, cpu, tmp_path)
    device = (tmp_path / "results.bin").read_bytes()
    at = 0
    for index, case in enumerate(all_cases):
        label = f"case {index} ({[side.w.shape for side in case.sides]})"
        chosen = struct.unpack_from(f"<{len(case.sides)}i", device, at)
        at += 4 * len(case.sides)
        assert list(chosen) == [side.how for side in case.sides], f"{label}: {chosen}"
        if NOT_EXACT in chosen:
            continue
        rows = len(case.sides[0].w)
        values = np.frombuffer(device, "<i2", rows, at)
        at += 2 * rows
        expected = case.expected()
        assert np.array_equal(values, expected), f"{label}: {values} != {expected}"
    assert at == len(device)
