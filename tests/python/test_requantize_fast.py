# SPDX-License-Identifier: Apache-2.0
"""The own kernels' short requantization equals the host reference's, on a Cortex-M4 and M3.

lib/src/kernels/requantize_fast.h rewrites CMSIS-NN's double-rounding requantization
(arm_nn_requantize, then the output offset and the int8 saturation) as one SMMLAR (with
the DSP extension; an SMULL, ADDS and ADC without), an add, a shift and an SSAT, and
claims the same result for every sum within its bound. requantize_fast/requantize_cases.cpp
runs it on QEMU's mps2-an386 (Cortex-M4) and mps2-an385 (Cortex-M3), built with
arm-none-eabi-g++, over every right shift 1..23, edge multipliers and offsets, random
sums and sums next to both roundings' midpoints; here the same sums are drawn again and
every result is compared with et-export's host reference (reference/fixed_point.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import REPO, build_semihosted, need_tools, run_semihosted
from et_zephyr.reference import fixed_point

SOURCE = Path(__file__).parent / "requantize_fast" / "requantize_cases.cpp"
SUMS = 512
MULTIPLIERS = (0, 1 << 30, (1 << 30) + 1, 1518500250, 1932735283, (1 << 31) - 1)
OFFSETS = (-128, -1, 0, 127)
EXACT_SUM_BOUND = (1 << 29) - 1
TOOLS = ("arm-none-eabi-g++", "qemu-system-arm")


class XorShift:
    """requantize_cases.cpp's generator."""

    def __init__(self) -> None:
        self.state = 0x9E3779B9

    def next(self) -> int:
        x = self.state
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.state = x
        return x


def _trunc_div(a: int, b: int) -> int:
    """C's integer division (towards zero)."""
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def draw(rng: XorShift, index: int, multiplier: int, right_shift: int) -> int:
    a, b, c = rng.next(), rng.next(), rng.next()
    if index % 2 or multiplier == 0:
        value = b & ((1 << (1 + a % 29)) - 1)
        value = -value if c & 1 else value
    else:
        limit = 2048 if right_shift < 18 else 1 << (29 - right_shift)
        steps = a % (2 * limit + 1) - limit
        target = steps * (1 << right_shift) + (1 << (right_shift - 1))
        value = _trunc_div(target << 31, multiplier) + c % 3 - 1
    return max(-EXACT_SUM_BOUND, min(EXACT_SUM_BOUND, value))


def expected_bytes() -> bytes:
    rng = XorShift()
    out = bytearray()
    for shift in range(-1, -24, -1):
        for multiplier in MULTIPLIERS:
            for offset in OFFSETS:
                sums = torch.tensor(
                    [draw(rng, i, multiplier, -shift) for i in range(SUMS)], dtype=torch.int64
                )
                values = fixed_point.requantize(sums, multiplier, shift) + offset
                out += values.clamp(-128, 127).to(torch.int8).numpy().tobytes()
    return bytes(out)


def run_on(cpu: str, machine: str, out_dir: Path) -> bytes:
    need_tools(*TOOLS)
    elf = out_dir / "requantize_cases.elf"
    # mps2-an385/an386: 4 MB of code memory at 0, 4 MB of SRAM at 0x20000000.
    build_semihosted(
        elf, [SOURCE], [f"-mcpu={cpu}", f"-DSUMS={SUMS}"], REPO / "lib/src", ram_size=0x400000
    )
    run_semihosted(elf, machine, cpu, out_dir)
    return (out_dir / "requantized.bin").read_bytes()


# The DSP extension's SMMLAR (M4) and the scalar cores' SMULL (M3).
@pytest.mark.parametrize(
    ("cpu", "machine"), [("cortex-m4", "mps2-an386"), ("cortex-m3", "mps2-an385")]
)
def test_requantization_is_the_host_references_for_every_case(
    cpu: str, machine: str, tmp_path: Path
) -> None:
    device = run_on(cpu, machine, tmp_path)
    expected = expected_bytes()
    assert len(device) == len(expected) == 23 * len(MULTIPLIERS) * len(OFFSETS) * SUMS
    differing = [i for i, (d, e) in enumerate(zip(device, expected)) if d != e]
    assert not differing, (
        f"{len(differing)} of {len(expected)} outputs differ, first at case {differing[0]}"
    )
