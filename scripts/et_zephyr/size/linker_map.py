# SPDX-License-Identifier: Apache-2.0
"""Read a GNU ld map file: memory regions and every input section placed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_REGION = re.compile(r"^(\S+)\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+)(?:\s+\S+)?\s*$")
_OUTPUT = re.compile(r"^([^\s*(][^\s]*)(?:\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+))?")
_INPUT_NAME = re.compile(r"^ ([^\s*][^\s]*)(?:\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+)\s+(.+))?$")
_PLACEMENT = re.compile(r"^\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+)\s+(.+)$")
_SYMBOL = re.compile(r"^\s+0x([0-9a-fA-F]+)\s+([A-Za-z_.$][\w.$]*)\s*$")


@dataclass(frozen=True)
class Region:
    """A MEMORY region of the linker script."""

    name: str
    origin: int
    length: int

    def contains(self, address: int) -> bool:
        return self.origin <= address < self.origin + self.length


@dataclass
class InputSection:
    """One input section placed in the image, and the global symbols it defines."""

    output: str
    name: str
    address: int
    size: int
    source: str
    symbols: list[str] = field(default_factory=list)


@dataclass
class LinkerMap:
    regions: list[Region]
    sections: list[InputSection]


def parse_map(path: Path) -> LinkerMap:
    lines = path.read_text(errors="replace").splitlines()
    return LinkerMap(_regions(lines), _input_sections(lines))


def _regions(lines: list[str]) -> list[Region]:
    regions = []
    try:
        start = lines.index("Memory Configuration")
    except ValueError:
        return regions
    for line in lines[start + 1 :]:
        if line.startswith("Linker script and memory map"):
            break
        match = _REGION.match(line)
        if match and match.group(1) not in ("Name", "*default*"):
            regions.append(Region(match.group(1), int(match.group(2), 16), int(match.group(3), 16)))
    return regions


def _input_sections(lines: list[str]) -> list[InputSection]:
    try:
        start = lines.index("Linker script and memory map")
    except ValueError:
        return []
    sections: list[InputSection] = []
    output = ""
    pending_name: str | None = None
    current: InputSection | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        if not line.startswith(" "):
            match = _OUTPUT.match(line)
            if match and not line.startswith(("LOAD ", "OUTPUT(", "START GROUP", "END GROUP")):
                output = match.group(1)
            pending_name, current = None, None
            continue
        named = _INPUT_NAME.match(line)
        if named and not line.startswith("  "):
            pending_name, current = named.group(1), None
            if named.group(2) is not None:
                current = _placed(sections, output, pending_name, named.groups()[1:])
            continue
        if pending_name is not None and current is None:
            placement = _PLACEMENT.match(line)
            if placement:
                current = _placed(sections, output, pending_name, placement.groups())
                continue
        symbol = _SYMBOL.match(line)
        if symbol and current is not None and "=" not in line:
            current.symbols.append(symbol.group(2))
    return sections


def _placed(
    sections: list[InputSection], output: str, name: str, fields: tuple[str | None, ...]
) -> InputSection:
    address, size, source = fields
    assert address is not None and size is not None and source is not None
    section = InputSection(output, name, int(address, 16), int(size, 16), source.strip())
    if section.size:
        sections.append(section)
    return section
