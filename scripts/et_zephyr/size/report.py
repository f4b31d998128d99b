# SPDX-License-Identifier: Apache-2.0
"""The footprint as a table, a JSON document and a picture."""

from __future__ import annotations

from pathlib import Path

from ..common.table import format_table
from .footprint import ORDER, Footprint


def render_table(footprint: Footprint, other: Footprint | None = None) -> str:
    """Bytes per component; with `other`, the change from it as well."""
    names = [n for n in ORDER if n in footprint.flash or n in footprint.ram]
    if other is not None:
        names += [n for n in ORDER if n not in names and (n in other.flash or n in other.ram)]
        names.sort(key=ORDER.index)
    header = ["component", f"flash ({footprint.flash_region})", f"RAM ({footprint.ram_region})"]
    if other is not None:
        header = [header[0], header[1], "change", header[2], "change"]
    regions = footprint.ram_by_region if len(footprint.ram_by_region) > 1 else {}
    if other is None and regions:
        # RAM spread over regions (arenas in DTCM and SRAM): a column for each, then the sum.
        header = [header[0], header[1], *(f"RAM ({name})" for name in regions), "RAM total"]
    rows = [header]
    for name in [*names, "total"]:
        row = _row(name, footprint, other)
        if other is None and regions:
            row[2:2] = [f"{_region_bytes(sizes, name):,}" for sizes in regions.values()]
        rows.append(row)
    return "\n".join(format_table(rows, total_row=True))


def _region_bytes(sizes: dict[str, int], name: str) -> int:
    return sum(sizes.values()) if name == "total" else sizes.get(name, 0)


def _row(name: str, footprint: Footprint, other: Footprint | None) -> list[str]:
    flash, ram = _sizes(footprint, name)
    if other is None:
        return [name, f"{flash:,}", f"{ram:,}"]
    old_flash, old_ram = _sizes(other, name)
    return [name, f"{flash:,}", _change(flash - old_flash), f"{ram:,}", _change(ram - old_ram)]


def _sizes(footprint: Footprint, name: str) -> tuple[int, int]:
    if name == "total":
        return footprint.flash_total, footprint.ram_total
    return footprint.flash.get(name, 0), footprint.ram.get(name, 0)


def _change(delta: int) -> str:
    return f"{delta:+,}" if delta else "0"


def write_plot(footprint: Footprint, path: Path, title: str) -> None:
    """Two stacked bars, flash and RAM, one colour per component."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    names = [n for n in ORDER if n in footprint.flash or n in footprint.ram]
    colours = plt.get_cmap("tab20").colors
    figure, axes = plt.subplots(figsize=(10, 3.2), dpi=100)
    for row, sizes in enumerate((footprint.ram, footprint.flash)):
        left = 0
        for index, name in enumerate(names):
            size = sizes.get(name, 0)
            if not size:
                continue
            axes.barh(
                row,
                size / 1024,
                left=left / 1024,
                color=colours[index % len(colours)],
                edgecolor="white",
            )
            if size / max(sum(sizes.values()), 1) > 0.06:
                axes.text(
                    (left + size / 2) / 1024,
                    row,
                    f"{size / 1024:.1f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                )
            left += size
        axes.text(left / 1024, row, f"  {left / 1024:.1f} KiB", va="center", fontsize=9)
    axes.set_yticks([0, 1], [f"RAM ({footprint.ram_region})", f"flash ({footprint.flash_region})"])
    axes.set_xlabel("KiB")
    axes.set_title(title, fontsize=10)
    axes.spines[["top", "right"]].set_visible(False)
    handles = [Patch(color=colours[i % len(colours)], label=name) for i, name in enumerate(names)]
    axes.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
    )
    axes.set_xlim(0, max(footprint.flash_total, footprint.ram_total) / 1024 * 1.18)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
