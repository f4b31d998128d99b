# SPDX-License-Identifier: Apache-2.0
"""The per-inference instruction totals as text."""

from __future__ import annotations

from ..common.table import format_table
from .window import Window


def render_windows(window: Window, totals: list[int]) -> str:
    """One row per counted window, and what the window was."""
    rows = [("inference", "instructions")]
    rows += [(str(index), f"{total:,}") for index, total in enumerate(totals, start=1)]
    lines = [
        f"instructions per inference ({window.description}, "
        f"0x{window.start:x} to 0x{window.end:x}):",
        *format_table(rows),
    ]
    if len(totals) > 1:
        lines.append(
            f"min {min(totals):,}, max {max(totals):,}, mean {sum(totals) / len(totals):,.1f}; "
            "the attribution below sums all of them"
        )
    return "\n".join(lines)
