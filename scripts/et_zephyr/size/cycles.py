# SPDX-License-Identifier: Apache-2.0
"""Estimate the cycles of counted instructions on an in-order Cortex-M core.

From the counter's histogram (how often each address ran, and how often its branch was
taken), the firmware's disassembly and the core's timings (`timing`): each instruction's
cycles times its executions, each taken branch's pipeline refill, the overlap of a load
with the load before it and the stall of an address just computed (the M3 and M4),
and each exception's entry and return. Assumes zero-wait-state memory, as the TRMs'
tables do: flash wait states, bus contention and caches are not in it.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from ..common.table import format_table
from ..errors import ExportError
from .disassembly import Instruction, disassemble
from .timing import CLASSES, UNKNOWN, ZERO, Core, Range, neighbour_cycles, timing_for

EXCEPTIONS = "exception entry and return"
# The TRM's ranges, the assumptions and what the estimate leaves out, for the report.
ASSUMPTIONS = (
    "zero-wait-state memory; each taken branch refills the pipeline in P = 1 to 3 cycles "
    "(estimate 2) on the M3 and M4; ranges (long multiplies on the M3, divides, MULS on "
    "the M0/M0+) at their middle; a conditional instruction that fails its condition "
    "costs as if it ran; exceptions cost their entry latency twice (entry and return)"
)


@dataclass
class CycleEstimate:
    core: str
    total: Range
    by_address: dict[int, Range]
    by_class: dict[str, tuple[int, Range]]  # instructions, cycles
    not_modelled: dict[str, int] = field(default_factory=dict)  # mnemonic: executions

    def to_json(self) -> dict[str, object]:
        return {
            "core": self.core,
            "estimate": round(self.total.mid),
            "low": round(self.total.low),
            "high": round(self.total.high),
            "by_class": {k: round(v.mid) for k, (_, v) in self.by_class.items()},
        }


def estimate(
    core: Core,
    histogram: dict[int, int],
    taken: dict[int, int],
    instructions: dict[int, Instruction],
    exception_entries: set[int] = frozenset(),  # type: ignore[assignment]
) -> CycleEstimate:
    """Cycles of what `histogram` counted. `exception_entries` are the handlers' first
    addresses: each execution of one is an exception entered (and returned from)."""
    ends = {i.address + i.size: i for i in instructions.values()}
    by_address: dict[int, Range] = {}
    counts: dict[str, int] = defaultdict(int)
    cycles: dict[str, Range] = defaultdict(lambda: ZERO)
    not_modelled: dict[str, int] = defaultdict(int)
    for address, count in sorted(histogram.items()):
        instruction = instructions.get(address)
        if instruction is None:
            kind, spent = UNKNOWN, Range.of(count)
            not_modelled[f"0x{address:x}"] += count
        else:
            cost = core.cost(instruction)
            kind = cost.kind
            spent = cost.base * count + cost.taken * taken.get(address, 0)
            previous = ends.get(address)
            if previous is not None:
                after = histogram.get(previous.address, 0) - taken.get(previous.address, 0)
                runs = min(count, max(after, 0))
                spent = spent + Range.of(neighbour_cycles(core, previous, instruction) * runs)
            if kind == UNKNOWN:
                not_modelled[instruction.mnemonic] += count
        counts[kind] += count
        cycles[kind] += spent
        if address in exception_entries:
            entered = core.exception * count
            counts[EXCEPTIONS] += count
            cycles[EXCEPTIONS] += entered
            spent = spent + entered
        by_address[address] = spent
    total = ZERO
    for value in by_address.values():
        total = total + value
    order = [*CLASSES, EXCEPTIONS]
    by_class = {k: (counts[k], cycles[k]) for k in order if counts[k]}
    return CycleEstimate(core.name, total, by_address, by_class, dict(not_modelled))


# Zephyr's Kconfig symbol of each core, as the build's .config sets it.
_CPU_SYMBOLS = {
    "CONFIG_CPU_CORTEX_M0": "Cortex-M0",
    "CONFIG_CPU_CORTEX_M0PLUS": "Cortex-M0+",
    "CONFIG_CPU_CORTEX_M3": "Cortex-M3",
    "CONFIG_CPU_CORTEX_M4": "Cortex-M4",
    "CONFIG_CPU_CORTEX_M7": "Cortex-M7",
    "CONFIG_CPU_CORTEX_M23": "Cortex-M23",
    "CONFIG_CPU_CORTEX_M33": "Cortex-M33",
    "CONFIG_CPU_CORTEX_M55": "Cortex-M55",
    "CONFIG_CPU_CORTEX_M85": "Cortex-M85",
}


def build_core(build_dir: Path) -> str:
    """The Cortex-M core a Zephyr build is for, from its .config."""
    config = build_dir / "zephyr" / ".config"
    try:
        lines = config.read_text().splitlines()
    except OSError as error:
        raise ExportError(f"cannot read {config}: {error.strerror}") from error
    for line in lines:
        symbol, _, value = line.partition("=")
        if value == "y" and symbol in _CPU_SYMBOLS:
            return _CPU_SYMBOLS[symbol]
    raise ExportError(f"{config} names no Cortex-M core (CONFIG_CPU_CORTEX_M*)")


def estimate_build(build_dir: Path, histogram: Path) -> CycleEstimate:
    """The cycle estimate of a build's counted histogram on the build's core."""
    from .instructions import read_histogram, read_taken

    core = timing_for(build_core(build_dir))
    elf = build_dir / "zephyr" / "zephyr.elf"
    return estimate(
        core,
        read_histogram(histogram),
        read_taken(histogram),
        disassemble(elf),
        exception_handlers(elf),
    )


def exception_handlers(elf_path: Path) -> set[int]:
    """The first instruction of every handler in the ELF's vector table: the exception
    entries an estimate prices. The table is `_vector_table` (its symbol's size, or
    Zephyr's sixteen system exceptions and `_irq_vector_table` after them)."""
    with elf_path.open("rb") as stream:
        elf = ELFFile(stream)
        symbols = elf.get_section_by_name(".symtab")
        if not isinstance(symbols, SymbolTableSection):
            return set()
        table = symbols.get_symbol_by_name("_vector_table")
        if not table:
            return set()
        start, end = table[0]["st_value"], table[0]["st_value"] + table[0]["st_size"]
        if end == start:
            irqs = symbols.get_symbol_by_name("_irq_vector_table")
            end = start + 16 * 4
            if irqs and irqs[0]["st_value"] == end:
                end += irqs[0]["st_size"]
        code = [
            (s["sh_addr"], s["sh_addr"] + s["sh_size"])
            for s in elf.iter_sections()
            if s["sh_flags"] & SH_FLAGS.SHF_EXECINSTR
        ]
        for section in elf.iter_sections():
            base, size = section["sh_addr"], section["sh_size"]
            if section["sh_type"] == "SHT_PROGBITS" and base <= start and end <= base + size:
                return _handlers(section.data()[start - base : end - base], code)
    return set()


def _handlers(table: bytes, code: list[tuple[int, int]]) -> set[int]:
    """Thumb handler addresses (odd, in code) among the table's words after the initial
    stack pointer and the reset vector (a reset is no exception a run returns from);
    reserved entries (0) and anything else are skipped."""
    words = (int.from_bytes(table[i : i + 4], "little") for i in range(8, len(table) - 3, 4))
    return {w & ~1 for w in words if w & 1 and any(lo <= w < hi for lo, hi in code)}


def render(estimate: CycleEstimate, windows: int = 1) -> str:
    """The estimate per window (inference) by instruction class, with its bounds."""
    total = estimate.total * (1 / windows)
    head = (
        f"estimated cycles ({estimate.core}, per inference): {round(total.mid):,} "
        f"(between {round(total.low):,} and {round(total.high):,})"
    )
    rows = [("class", "instructions", "cycles", "cycles per instruction")]
    for kind, (count, spent) in estimate.by_class.items():
        rows.append(
            (
                kind,
                f"{round(count / windows):,}",
                f"{round(spent.mid / windows):,}",
                f"{spent.mid / count:.2f}" if count else "-",
            )
        )
    lines = [head, *format_table(rows)]
    if estimate.not_modelled:
        top = sorted(estimate.not_modelled.items(), key=lambda item: -item[1])[:5]
        lines.append(
            "not modelled (1 cycle each): " + ", ".join(f"{name} ×{n:,}" for name, n in top)
        )
    lines += textwrap.wrap(f"assumed: {ASSUMPTIONS}", width=96)
    return "\n".join(lines)
