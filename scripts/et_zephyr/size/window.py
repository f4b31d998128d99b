# SPDX-License-Identifier: Apache-2.0
"""Where one inference starts and ends in a firmware image.

et_zephyr_run() brackets the inference with two et_zephyr_port_cycles() calls
around `Method::execute()`. The window is execute() itself: from its first
instruction to the instruction its call in et_zephyr_run() returns to, so it
counts the whole inference (and the interrupts that land in it) and nothing
of et_zephyr_run(); the return site, not the et_zephyr_port_cycles() entry,
because a profiling build (CONFIG_ET_ZEPHYR_PROFILING) calls that function
inside execute() too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from ..errors import ExportError

EXECUTE = "_ZN10executorch7runtime6Method7executeEv"
CALLER = "et_zephyr_run"


@dataclass(frozen=True)
class Window:
    """Instruction addresses: counting starts at `start` and stops at `end` (exclusive)."""

    start: int
    end: int
    description: str


def inference_window(elf_path: Path) -> Window:
    """Method::execute()'s entry and the return site of its call in et_zephyr_run()."""
    return call_window(
        elf_path, EXECUTE, CALLER, "Method::execute()", hint="not an et-zephyr firmware?"
    )


def call_window(
    elf_path: Path, callee: str, caller: str, name: str | None = None, *, hint: str = ""
) -> Window:
    """From `callee`'s entry to the return site of its one call in `caller` (function
    symbols): the callee's whole run, interrupts included, and nothing of the caller."""
    name = name or f"{callee}()"
    with elf_path.open("rb") as stream:
        elf = ELFFile(stream)
        functions = _functions(elf, elf_path)
        if callee not in functions:
            raise ExportError(
                f"{elf_path} has no {name}: {hint + ' ' if hint else ''}(give --start and --end)"
            )
        if caller not in functions:
            raise ExportError(f"{elf_path} has no {caller}() (give --start and --end)")
        start = functions[callee][0]
        address, size = functions[caller]
        sites = call_sites(_code(elf, address, size), address, start)
    if len(sites) != 1:
        raise ExportError(
            f"{caller}() in {elf_path} calls {name} {len(sites)} times, "
            "expected once (give --start and --end)"
        )
    return Window(start, sites[0], f"{name} to its return in {caller}()")


def symbol_window(elf_path: Path, start: str, end: str) -> Window:
    """A window between two symbols or addresses ("0x1000", a function's or a label's name)."""
    with elf_path.open("rb") as stream:
        functions = _functions(ELFFile(stream), elf_path, labels=True)
    return Window(
        _address(start, functions, elf_path),
        _address(end, functions, elf_path),
        f"{start} to {end}",
    )


def call_sites(code: bytes, address: int, target: int) -> list[int]:
    """Return addresses of the Thumb-2 BL instructions in `code` (at `address`) that call
    `target`: every halfword is tried as the first half of a BL."""
    sites = []
    for offset in range(0, len(code) - 3, 2):
        first = int.from_bytes(code[offset : offset + 2], "little")
        second = int.from_bytes(code[offset + 2 : offset + 4], "little")
        if (first & 0xF800) != 0xF000 or (second & 0xD000) != 0xD000:
            continue
        sign = (first >> 10) & 1
        i1 = 1 - (((second >> 13) & 1) ^ sign)
        i2 = 1 - (((second >> 11) & 1) ^ sign)
        value = (sign << 24) | (i1 << 23) | (i2 << 22) | ((first & 0x3FF) << 12)
        value |= (second & 0x7FF) << 1
        if sign:
            value -= 1 << 25
        pc = address + offset
        if pc + 4 + value == target:
            sites.append(pc + 4)
    return sites


def _functions(elf: ELFFile, elf_path: Path, *, labels: bool = False) -> dict[str, tuple[int, int]]:
    """(address, size) of each function symbol; with `labels`, of untyped code labels
    too (a function of the same name wins)."""
    symbols = elf.get_section_by_name(".symtab")
    if not isinstance(symbols, SymbolTableSection):
        raise ExportError(f"{elf_path} has no symbol table")
    kinds = ("STT_FUNC", "STT_NOTYPE") if labels else ("STT_FUNC",)
    found: dict[str, tuple[int, int]] = {}
    for symbol in symbols.iter_symbols():
        kind = symbol["st_info"]["type"]
        if kind not in kinds or not symbol.name or symbol["st_shndx"] == "SHN_UNDEF":
            continue
        if kind == "STT_FUNC" or symbol.name not in found:
            found[symbol.name] = (symbol["st_value"] & ~1, symbol["st_size"])
    return found


def _code(elf: ELFFile, address: int, size: int) -> bytes:
    for section in elf.iter_sections():
        start = section["sh_addr"]
        if section["sh_type"] != "SHT_NOBITS" and start <= address < start + section["sh_size"]:
            data = section.data()
            return data[address - start : address - start + size]
    return b""


def _address(text: str, functions: dict[str, tuple[int, int]], elf_path: Path) -> int:
    if text.lower().startswith("0x"):
        try:
            return int(text, 16) & ~1
        except ValueError:
            pass
    if text in functions:
        return functions[text][0]
    raise ExportError(f"{elf_path} has no function '{text}' (give a symbol name or 0x<address>)")
