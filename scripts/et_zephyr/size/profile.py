# SPDX-License-Identifier: Apache-2.0
"""`et-profile`: per-operator cycles from a device log, sorted by cost.

Firmware built with CONFIG_ET_ZEPHYR_PROFILING reads et_zephyr_get_op_profile()
and prints one line per operator:

    ET_PROFILE <operator> <calls> <cycles> [<share> %]

(anything may precede ET_PROFILE on the line, e.g. a log prefix). Lines of
several runs or boots are summed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..common.table import format_table

# An optional share ("12.3 %") may follow, as the samples print it.
_LINE = re.compile(r"ET_PROFILE\s+(\S+)\s+(\d+)\s+(\d+)(?:\s+[\d.]+\s*%)?\s*$")


def parse_profile(text: str) -> dict[str, tuple[int, int]]:
    """(calls, cycles) per operator, summed over every ET_PROFILE line."""
    totals: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        match = _LINE.search(line)
        if match:
            calls, cycles = totals.get(match.group(1), (0, 0))
            totals[match.group(1)] = (calls + int(match.group(2)), cycles + int(match.group(3)))
    return totals


def render_profile(totals: dict[str, tuple[int, int]]) -> str:
    rows = sorted(totals.items(), key=lambda item: (-item[1][1], item[0]))
    everything = sum(cycles for _, cycles in totals.values()) or 1
    table = [("operator", "calls", "cycles", "per call", "share")]
    for name, (calls, cycles) in rows:
        per_call = cycles // calls if calls else 0
        share = f"{100 * cycles / everything:.1f} %"
        table.append((name, f"{calls:,}", f"{cycles:,}", f"{per_call:,}", share))
    table.append(("total", "", f"{sum(c for _, c in totals.values()):,}", "", "100.0 %"))
    return "\n".join(format_table(table, total_row=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="et-profile",
        description=__doc__.split("\n\n")[0],
        epilog="LOG is a captured console log ('-' for standard input).",
    )
    parser.add_argument("log", metavar="LOG", help="device log with ET_PROFILE lines")
    args = parser.parse_args(argv)
    try:
        text = sys.stdin.read() if args.log == "-" else Path(args.log).read_text(errors="replace")
    except OSError as error:
        print(f"error: cannot read {args.log}: {error.strerror}", file=sys.stderr)
        return 1
    totals = parse_profile(text)
    if not totals:
        print(f"error: no ET_PROFILE lines in {args.log}", file=sys.stderr)
        return 1
    print(render_profile(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
