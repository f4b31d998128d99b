# SPDX-License-Identifier: Apache-2.0
"""A firmware's Thumb instructions, as the toolchain's objdump decodes them.

Only what a timing model needs: each instruction's address, size, mnemonic (without its
condition, flag-setting and width suffixes, which objdump's unified syntax appends) and
operands.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import ExportError

# " 8000abc:\tf8d0 3004 \tldr.w\tr3, [r0, #4]\t@ comment"
_LINE = re.compile(r"^\s*([0-9a-f]+):\t((?:[0-9a-f]{4} ?)+)\s*\t([\w.]+)(?:\t([^@;<]*))?")
CONDITIONS = frozenset(
    [
        "eq",
        "ne",
        "cs",
        "hs",
        "cc",
        "lo",
        "mi",
        "pl",
        "vs",
        "vc",
        "hi",
        "ls",
        "ge",
        "lt",
        "gt",
        "le",
        "al",
    ]
)


@dataclass(frozen=True)
class Instruction:
    address: int
    size: int  # bytes: 2 or 4
    mnemonic: str  # as objdump prints it, e.g. "ldrsb.w", "movseq.w", "vcvt.s32.f32"
    operands: str  # e.g. "r3, [r0, #4]"

    def base(self, known: frozenset[str]) -> str:
        """The mnemonic without its width, data-type, condition and flag-setting
        suffixes, as one of `known` (the timing model's names); "" when none fits."""
        word = self.mnemonic.split(".")[0]
        candidates = [word]
        if word[-2:] in CONDITIONS:
            candidates.append(word[:-2])
        # A condition before the "s" (e.g. "bls" is "b" + "ls") is tried before the flag.
        candidates += [c[:-1] for c in list(candidates) if c.endswith("s")]
        return next((c for c in candidates if c in known), "")


def objdump() -> str:
    tool = shutil.which("arm-none-eabi-objdump")
    if tool is None:
        raise ExportError(
            "arm-none-eabi-objdump not found: estimating cycles needs the Arm toolchain's "
            "objdump on PATH (apt install binutils-arm-none-eabi)"
        )
    return tool


def disassemble(elf: Path) -> dict[int, Instruction]:
    """Every instruction objdump decodes in the ELF's executable sections, by address."""
    result = subprocess.run(
        [objdump(), "-d", str(elf)],
        capture_output=True,
        text=True,
        errors="replace",
    )
    if result.returncode != 0:
        message = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ExportError(f"objdump could not read {elf}: {message}")
    return parse(result.stdout)


def parse(listing: str) -> dict[int, Instruction]:
    instructions: dict[int, Instruction] = {}
    for line in listing.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        address = int(match.group(1), 16)
        size = 2 * len(match.group(2).split())
        operands = (match.group(4) or "").strip()
        instructions[address] = Instruction(address, size, match.group(3), operands)
    return instructions
