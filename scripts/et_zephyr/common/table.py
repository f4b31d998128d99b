# SPDX-License-Identifier: Apache-2.0
"""Plain-text tables for the reports of et-export, et-size and et-profile."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def format_table(
    rows: Sequence[Sequence[str]], left: Collection[int] = (0,), total_row: bool = False
) -> list[str]:
    """Lines of a table whose first row is the header, underlined.

    Columns in `left` are left-aligned, the others right-aligned (numbers);
    with `total_row` the last row is set off by a rule.
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    rule = "  ".join("-" * width for width in widths)
    lines = []
    for index, row in enumerate(rows):
        if total_row and index == len(rows) - 1:
            lines.append(rule)
        cells = [
            cell.ljust(width) if column in left else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append(rule)
    return lines
