# SPDX-License-Identifier: Apache-2.0
"""Whether a model fits a board: its program against the flash, its arenas against the RAM.

Said in the same words by the firmware build at configure time (zephyr/cmake/
et_zephyr_gen.py, with the regions of the board's devicetree) and by `et-export --board`
before any build. Standard library only: the firmware build imports it without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryRegion:
    """A board memory the model goes to, as the user finds it in the devicetree."""

    label: str  # e.g. "flash (zephyr,flash: itcm)"
    size: int


@dataclass(frozen=True)
class Footprint:
    """What a model puts in the board's default memories."""

    program: int  # the .pte, executed in place from flash
    arenas: dict[str, int]  # arena -> bytes, those in the default RAM


# The firmware build gives the method arena et-export's size plus this much, for
# alignment padding the 32-bit estimate may miss (seen: 4 bytes short on a cortex-m3).
METHOD_ARENA_SLACK = 32


def aligned16(size: int) -> int:
    """A size rounded up to the 16 bytes every arena is aligned to."""
    return (size + 15) // 16 * 16


def firmware_method_arena(exported: int) -> int:
    """The method arena the firmware build gives a program et-export sized at `exported`."""
    return aligned16(exported + METHOD_ARENA_SLACK)


def export_footprint(manifest: dict) -> Footprint:
    """What an export's manifest says the firmware build will put in flash and RAM, with
    every arena in the default RAM (the build's defaults)."""
    memory = manifest["memory"]
    planned = [entry["bytes"] for entry in memory["planned"]]
    arenas = (
        {"planned": planned[0]}
        if len(planned) == 1
        else {f"planned{i}": size for i, size in enumerate(planned, start=1)}
    )
    arenas["method"] = firmware_method_arena(memory["method_allocator"])
    arenas["temp"] = memory["temp_allocator"]
    return Footprint(manifest["pte_bytes"], arenas)


def arena_bytes(footprint: Footprint) -> int:
    return sum(aligned16(size) for size in footprint.arenas.values())


def fit_problem(
    board: str, footprint: Footprint, flash: MemoryRegion | None, ram: MemoryRegion | None
) -> str | None:
    """One line saying what does not fit and what would help, or None when it fits."""
    if flash is not None and footprint.program > flash.size:
        return (
            f"the program ({footprint.program:,} B) does not fit {board}'s {flash.label} "
            f"({flash.size:,} B): export a smaller model (fewer or narrower layers; an "
            "unrolled recurrent layer, --unroll-recurrent or bidirectional, copies itself "
            "for every frame), or put the program in another memory "
            "(CONFIG_ET_ZEPHYR_MODEL_SECTION)"
        )
    need = arena_bytes(footprint)
    if ram is not None and need > ram.size:
        parts = ", ".join(f"{kind} {size:,} B" for kind, size in footprint.arenas.items() if size)
        return (
            f"the model's arenas ({need:,} B: {parts}) do not fit {board}'s {ram.label} "
            f"({ram.size:,} B): export with --io int8 (no float copies at the edges) or "
            "--fast-arena BYTES, give the arenas another region "
            "(CONFIG_ET_ZEPHYR_PLANNED_REGION_1, _METHOD_ARENA_REGION), or export a "
            "smaller model"
        )
    return None


def fit_summary(
    board: str,
    footprint: Footprint,
    flash: MemoryRegion | None,
    ram: MemoryRegion | None,
    others: Sequence[tuple[str, int, int]] = (),
) -> str:
    """What the model takes of each memory, and what it leaves for everything else;
    `others` are (what, used, region size) of memories given arenas of their own."""
    parts = []
    if flash is not None:
        parts.append(_share("program", footprint.program, flash))
    if ram is not None and (arena_bytes(footprint) or not others):
        parts.append(_share("arenas", arena_bytes(footprint), ram))
    parts += [f"{what} {used:,} B of {size:,} B" for what, used, size in others]
    rest = "; the rest holds Zephyr, the runtime, the kernels and the application"
    return f"{board}: " + ", ".join(parts) + (rest if parts else "no memory regions known")


def _share(what: str, used: int, region: MemoryRegion) -> str:
    return (
        f"{what} {used:,} B of {region.size:,} B {region.label} ({100 * used / region.size:.1f} %)"
    )
