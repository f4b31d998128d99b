# SPDX-License-Identifier: Apache-2.0
"""Attribute executed instructions to the components of `et-size` and to functions.

The input is an instruction histogram: one line per executed instruction address,
``0x<address> <count>[ <taken>]`` (e.g. written by a QEMU TCG plugin over one inference;
<taken>, how often a branch there was taken, is what `cycles` needs).
Addresses go to the linker map's input section that holds them, hence to the same
components as the firmware's bytes, and to the ELF function symbol that covers them.
"""

from __future__ import annotations

import bisect
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from ..common.table import format_table
from ..errors import ExportError
from .footprint import ORDER, OTHER, classify
from .linker_map import parse_map

_LINE = re.compile(r"^\s*(0x[0-9a-fA-F]+|\d+)\s+(\d+)(?:\s+(\d+))?\s*$")
# The counter's header says when its lines carry the taken column.
_WITH_TAKEN = re.compile(r"^#.*\btaken=on\b")
UNKNOWN_FUNCTION = "?"


@dataclass
class InstructionSplit:
    """Executed instructions per component and per (component, function)."""

    by_component: dict[str, int]
    by_function: dict[tuple[str, str], int]

    @property
    def total(self) -> int:
        return sum(self.by_component.values())

    def to_json(self) -> dict[str, object]:
        return {"total": self.total, **self.by_component}


def read_histogram(path: Path) -> dict[int, int]:
    """Executions per instruction address; repeated addresses are summed."""
    return _read(path)[0]


def read_taken(path: Path) -> dict[int, int]:
    """How often execution went on elsewhere than the next instruction in memory after
    each address (a taken branch, or an exception entered), by address; only addresses
    where it did. A histogram of an older counter, without the column, is an error."""
    _, taken, with_taken = _read(path)
    if not with_taken:
        raise ExportError(
            f"{path} does not say how often branches were taken (its header lacks "
            "taken=on): count again with this et-size's counter (--count-instructions)"
        )
    return taken


def _read(path: Path) -> tuple[dict[int, int], dict[int, int], bool]:
    try:
        text = path.read_text()
    except OSError as error:
        raise ExportError(f"cannot read {path}: {error.strerror}") from error
    counts: Counter[int] = Counter()
    taken: Counter[int] = Counter()
    with_taken = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.lstrip().startswith("#"):
            with_taken = with_taken or _WITH_TAKEN.match(line.lstrip()) is not None
            continue
        match = _LINE.match(line)
        if match is None:
            raise ExportError(
                f"{path}:{number}: expected '0x<address> <count>[ <taken>]', got {line!r}"
            )
        address = int(match.group(1), 0)
        counts[address] += int(match.group(2))
        if match.group(3) is not None:
            taken[address] += int(match.group(3))
    if not counts:
        raise ExportError(f"{path} holds no instruction counts")
    return dict(counts), dict(taken), with_taken


def attribute(histogram: dict[int, int], elf_path: Path, map_path: Path) -> InstructionSplit:
    code, functions = _read_elf(elf_path)
    placed = parse_map(map_path).sections
    sections = sorted((s for s in placed if s.output in code), key=lambda s: s.address)
    starts = [s.address for s in sections]
    function_starts = [start for start, _, _ in functions]
    by_component: Counter[str] = Counter()
    by_function: Counter[tuple[str, str]] = Counter()
    for address, count in histogram.items():
        index = bisect.bisect_right(starts, address) - 1
        section = sections[index] if index >= 0 else None
        if section is not None and address < section.address + section.size:
            component = classify(section, executable=True)
        else:
            component = OTHER
        by_component[component] += count
        by_function[(component, _function_at(functions, function_starts, address))] += count
    ordered = {name: by_component[name] for name in ORDER if by_component[name]}
    return InstructionSplit(ordered, dict(by_function))


def render_split(split: InstructionSplit, top: int) -> str:
    rows = [("component", "instructions", "share")]
    for component, count in split.by_component.items():
        rows.append((component, f"{count:,}", _percent(count, split.total)))
    rows.append(("total", f"{split.total:,}", "100.0 %"))
    lines = format_table(rows, total_row=True)
    if top > 0:
        ranked = sorted(split.by_function.items(), key=lambda item: (-item[1], item[0]))[:top]
        names = _demangle([function for (_, function), _ in ranked])
        rows = [("function", "component", "instructions", "share")]
        for ((component, _), count), name in zip(ranked, names, strict=True):
            rows.append((name, component, f"{count:,}", _percent(count, split.total)))
        lines += ["", *format_table(rows, left=(0, 1))]
    return "\n".join(lines)


def _percent(count: int, total: int) -> str:
    return f"{100 * count / total:.1f} %" if total else "-"


def _read_elf(elf_path: Path) -> tuple[set[str], list[tuple[int, int, str]]]:
    """The names of the ELF's executable output sections (debug sections share their
    addresses), and (start, size, name) of its function symbols, by start address."""
    with elf_path.open("rb") as stream:
        elf = ELFFile(stream)
        code = {
            section.name
            for section in elf.iter_sections()
            if section["sh_flags"] & SH_FLAGS.SHF_EXECINSTR
        }
        symbols = elf.get_section_by_name(".symtab")
        if not isinstance(symbols, SymbolTableSection):
            raise ExportError(f"{elf_path} has no symbol table")
        functions = {
            # Thumb function symbols have bit 0 set.
            (symbol["st_value"] & ~1, symbol["st_size"], symbol.name)
            for symbol in symbols.iter_symbols()
            if symbol["st_info"]["type"] == "STT_FUNC" and symbol["st_size"] > 0
        }
    return code, sorted(functions)


def _function_at(functions: list[tuple[int, int, str]], starts: list[int], address: int) -> str:
    index = bisect.bisect_right(starts, address) - 1
    if index >= 0:
        start, size, name = functions[index]
        if address < start + size:
            return name
    return UNKNOWN_FUNCTION


def _demangle(names: list[str]) -> list[str]:
    """C++ names readable when a c++filt is on PATH; unchanged otherwise."""
    tool = shutil.which("arm-none-eabi-c++filt") or shutil.which("c++filt")
    if tool is None or not names:
        return names
    result = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True)
    demangled = result.stdout.splitlines()
    if result.returncode != 0 or len(demangled) != len(names):
        return names
    return [_without_parameters(name) for name in demangled]


def _without_parameters(name: str) -> str:
    """The name with its trailing parameter list as "(...)": C++ parameter lists
    make rows hundreds of characters wide, and the name says enough. Earlier
    parentheses, as in "(anonymous namespace)::f", stay; GCC's clone suffixes go."""
    body = re.sub(r"( \[clone [^\]]*\])+$", "", name).removesuffix(" const")
    if not body.endswith(")"):
        return name
    depth = 0
    for index in range(len(body) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(body[index], 0)
        if depth == 0:
            return body[:index] + "(...)"
    return name
