# SPDX-License-Identifier: Apache-2.0
"""Attribute a firmware's flash and RAM to components.

The ELF says which output sections occupy flash (loaded, at their load
address) and RAM (writable, at their run address); the linker map says which
object every input section came from. Each input section goes to the first
component whose rule matches; what an output section holds beyond its input
sections (alignment, fill, linker-made data) is counted as "linker padding".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from .linker_map import InputSection, LinkerMap, Region, parse_map

Rule = Callable[[InputSection, bool], bool]

PADDING = "linker padding"


def _source(*patterns: str) -> Rule:
    expression = re.compile("|".join(patterns), re.IGNORECASE)
    return lambda section, executable: bool(expression.search(section.source))


def _either(*rules: Rule) -> Rule:
    return lambda section, executable: any(rule(section, executable) for rule in rules)


def _section(pattern: str) -> Rule:
    """By input section name: with -ffunction-sections it carries the
    (mangled) function name, which says where code came from even when its
    object was archived into the application's library. Zephyr's own code
    (e.g. its arm_mpu functions) is never matched this way."""
    expression = re.compile(pattern)
    return lambda section, executable: (
        not section.source.startswith("zephyr/") and bool(expression.search(section.name))
    )


def _named(pattern: str, *, data_only: bool = False) -> Rule:
    expression = re.compile(pattern)

    def rule(section: InputSection, executable: bool) -> bool:
        if data_only and executable:
            return False
        return bool(expression.search(section.name)) or any(
            expression.search(symbol) for symbol in section.symbols
        )

    return rule


# Ordered: the first match wins (e.g. the registry is ExecuTorch code too).
COMPONENTS: tuple[tuple[str, Rule], ...] = (
    ("model", lambda s, x: "et_zephyr_model" in s.name or s.source.endswith("_pte.S.obj")),
    ("arenas", _named(r"_arena\b|_arena$", data_only=True)),
    ("stacks", _named(r"stack", data_only=True)),
    ("heap", _named(r"heap", data_only=True)),
    ("kernel registry", _source(r"operator_registry\.cpp", r"et_zephyr_registration\.cpp")),
    (
        "CMSIS-NN",
        _either(
            _source(r"cmsis[-_]nn", r"^(?!zephyr/)[^(]*\(arm_\w+\.c\.obj\)"),
            _section(r"\.arm_"),
        ),
    ),
    # et-zephyr's own kernels (lib/src/kernels), registered in place of upstream ones,
    # and their assembly loops.
    (
        "et-zephyr kernels",
        _either(
            _source(r"lib/src/kernels/", r"\(\w+_(mve|dsp|scalar)\.(cpp|S)\.obj\)"),
            _section(r"9et_zephyr6native|\.et_zephyr_\w+_(mve|dsp|scalar)$"),
        ),
    ),
    (
        "Cortex-M kernels",
        _either(
            _source(
                r"backends/cortex_m/",
                r"\(op_(quantized_\w+|quantize_per_tensor|dequantize_per_tensor|pad|transpose)"
                r"\.cpp\.obj\)",
            ),
            _section(r"8cortex_m"),
        ),
    ),
    (
        "portable kernels",
        _either(
            _source(r"kernels/portable/", r"kernels/prim_ops/"),
            _section(r"5torch8executor6native"),
        ),
    ),
    ("ExecuTorch core runtime", _source(r"executorch/", r"et_zephyr_runtime")),
    (
        "et-zephyr C API",
        _source(
            r"et_zephyr\.cpp",
            r"pte_reader\.cpp",
            r"platform_zephyr\.cpp",
            r"libet_zephyr\.a",
            r"_model\.c\.obj",
        ),
    ),
    (
        "libc/libc++",
        _source(
            r"lib(c|m|g|gcc|nosys|stdc\+\+|supc\+\+|c\+\+)\.a\(",
            r"picolibc",
            r"/lib/libc/",
            r"lib__libc",
            r"lib__cpp",
            r"/lib/cpp/",
        ),
    ),
    ("application", _source(r"^app/", r"libapp\.a")),
    ("Zephyr kernel and drivers", _source(r"^zephyr/", r"/zephyr/", r"^linker stubs")),
)
OTHER = "other"
ORDER = tuple(name for name, _ in COMPONENTS) + (OTHER, PADDING)


@dataclass
class Footprint:
    """Bytes per component in flash and in RAM, and the regions' totals."""

    flash: dict[str, int] = field(default_factory=dict)
    ram: dict[str, int] = field(default_factory=dict)
    flash_region: str = ""
    ram_region: str = ""
    # The RAM bytes again, per memory region (e.g. DTCM, SRAM), where arenas were spread.
    ram_by_region: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def flash_total(self) -> int:
        return sum(self.flash.values())

    @property
    def ram_total(self) -> int:
        return sum(self.ram.values())

    def to_json(self) -> dict[str, object]:
        return {
            "flash": {"region": self.flash_region, "total": self.flash_total, **self.flash},
            "ram": {"region": self.ram_region, "total": self.ram_total, **self.ram},
            "ram_by_region": self.ram_by_region,
        }


@dataclass(frozen=True)
class _OutputSection:
    name: str
    address: int
    size: int
    executable: bool
    in_flash: bool
    in_ram: bool
    region: str


def classify(section: InputSection, executable: bool) -> str:
    for name, rule in COMPONENTS:
        if rule(section, executable):
            return name
    return OTHER


def measure(elf_path: Path, map_path: Path) -> Footprint:
    linker_map = parse_map(map_path)
    outputs = _output_sections(elf_path, linker_map.regions)
    footprint = Footprint()
    flash_region, ram_region = _main_regions(elf_path, linker_map)
    footprint.flash_region, footprint.ram_region = flash_region, ram_region
    placed: dict[str, int] = {}
    for section, size in _effective_sizes(linker_map.sections, outputs):
        output = outputs[section.output]
        placed[output.name] = placed.get(output.name, 0) + size
        _add(footprint, output, classify(section, output.executable), size)
    for output in outputs.values():
        _add(footprint, output, PADDING, output.size - placed.get(output.name, 0))
    footprint.flash = _ordered(footprint.flash)
    footprint.ram = _ordered(footprint.ram)
    footprint.ram_by_region = {
        name: _ordered(sizes) for name, sizes in sorted(footprint.ram_by_region.items())
    }
    return footprint


def _effective_sizes(
    sections: list[InputSection], outputs: dict[str, _OutputSection]
) -> list[tuple[InputSection, int]]:
    """Input sections with the bytes they really occupy.

    The map gives merged sections (e.g. .rodata.str1.1) their size before the
    linker dropped duplicate strings; such a section ends where the next one
    starts.
    """
    result = []
    ordered = sorted((s for s in sections if s.output in outputs), key=lambda s: s.address)
    for index, section in enumerate(ordered):
        output = outputs[section.output]
        limit = output.address + output.size
        if index + 1 < len(ordered) and ordered[index + 1].output == section.output:
            limit = min(limit, ordered[index + 1].address)
        result.append((section, max(0, min(section.size, limit - section.address))))
    return result


def _add(footprint: Footprint, output: _OutputSection, component: str, size: int) -> None:
    if size <= 0:
        return
    if output.in_flash:
        footprint.flash[component] = footprint.flash.get(component, 0) + size
    if output.in_ram:
        footprint.ram[component] = footprint.ram.get(component, 0) + size
        region = footprint.ram_by_region.setdefault(output.region, {})
        region[component] = region.get(component, 0) + size


def _ordered(sizes: dict[str, int]) -> dict[str, int]:
    return {name: sizes[name] for name in ORDER if sizes.get(name)}


def _output_sections(elf_path: Path, regions: list[Region]) -> dict[str, _OutputSection]:
    """Allocated ELF sections, and whether each takes flash, RAM or both."""
    flash = _flash_region(elf_path, regions)
    sections = {}
    with elf_path.open("rb") as stream:
        elf = ELFFile(stream)
        segments = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        for section in elf.iter_sections():
            flags = section["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC or section["sh_size"] == 0:
                continue
            address = section["sh_addr"]
            loaded = section["sh_type"] != "SHT_NOBITS"
            load_address = _load_address(address, segments)
            sections[section.name] = _OutputSection(
                name=section.name,
                address=address,
                size=section["sh_size"],
                executable=bool(flags & SH_FLAGS.SHF_EXECINSTR),
                in_flash=loaded and flash is not None and flash.contains(load_address),
                in_ram=flash is None or not flash.contains(address),
                region=next((r.name for r in regions if r.contains(address)), ""),
            )
    return sections


def _load_address(address: int, segments: list) -> int:  # type: ignore[type-arg]
    for segment in segments:
        start = segment["p_vaddr"]
        if start <= address < start + max(segment["p_memsz"], 1):
            return segment["p_paddr"] + address - start
    return address


def _flash_region(elf_path: Path, regions: list[Region]) -> Region | None:
    """The region holding the entry point's code: the image's flash."""
    with elf_path.open("rb") as stream:
        entry = ELFFile(stream)["e_entry"] & ~1
    return next((region for region in regions if region.contains(entry)), None)


def _main_regions(elf_path: Path, linker_map: LinkerMap) -> tuple[str, str]:
    flash = _flash_region(elf_path, linker_map.regions)
    ram_sections = [
        s for s in linker_map.sections if flash is None or not flash.contains(s.address)
    ]
    ram = next(
        (
            region.name
            for section in ram_sections
            for region in linker_map.regions
            if region.contains(section.address)
        ),
        "",
    )
    return (flash.name if flash else ""), ram
