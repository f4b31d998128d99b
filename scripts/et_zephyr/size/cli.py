# SPDX-License-Identifier: Apache-2.0
"""The `et-size` command line, shared by the console script and `west et-size`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import ExportError

DESCRIPTION = """\
Attribute a Zephyr firmware's flash and RAM to components: Zephyr kernel and
drivers, libc/libc++, ExecuTorch core runtime, kernel registry, Cortex-M
kernels, CMSIS-NN, et-zephyr's own kernels, portable kernels, the embedded
model, arenas, stacks, heap, the application. Reads BUILD_DIR/zephyr/zephyr.elf
and its linker map, prints a table, and writes size.json and size.png into
BUILD_DIR.

With --instructions HIST it also attributes executed instructions to the same
components and to functions: HIST has one line per executed instruction
address, '0x<address> <count>', e.g. from a QEMU TCG plugin run over one
inference. What runs outside CMSIS-NN and et-zephyr's kernels is the framework
overhead.
"""


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "build_dir",
        nargs="?",
        type=Path,
        default=Path("build"),
        metavar="BUILD_DIR",
        help="a Zephyr build folder (default: build)",
    )
    parser.add_argument(
        "--compare", type=Path, metavar="OTHER", help="another build folder to show the change from"
    )
    parser.add_argument("--json", action="store_true", help="print size.json instead of the table")
    parser.add_argument(
        "--instructions",
        type=Path,
        metavar="HIST",
        help="an instruction histogram to attribute to components and functions",
    )
    parser.add_argument(
        "--top",
        type=int,
        default=15,
        metavar="N",
        help="with --instructions: list the N functions that execute most (default: 15)",
    )
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="et-size", description=DESCRIPTION)
    return add_arguments(parser)


def run(args: argparse.Namespace) -> str:
    from .footprint import measure
    from .instructions import attribute, read_histogram, render_split
    from .report import render_table, write_plot

    elf, linker_map = _build_files(args.build_dir)
    footprint = measure(elf, linker_map)
    other = measure(*_build_files(args.compare)) if args.compare else None
    split = None
    if args.instructions:
        split = attribute(read_histogram(args.instructions), elf, linker_map)
    document = footprint.to_json()
    if split is not None:
        document["instructions"] = split.to_json()
    (args.build_dir / "size.json").write_text(json.dumps(document, indent=2) + "\n")
    write_plot(footprint, args.build_dir / "size.png", f"{elf}")
    if args.json:
        return json.dumps(document, indent=2)
    title = f"et-size: {elf}" + (f" (change from {args.compare})" if other else "")
    files = f"wrote {args.build_dir / 'size.json'} and {args.build_dir / 'size.png'}"
    sections = [title, render_table(footprint, other)]
    if split is not None:
        sections.append(f"executed instructions ({args.instructions})")
        sections.append(render_split(split, args.top))
    return "\n\n".join([*sections, files])


def _build_files(build_dir: Path) -> tuple[Path, Path]:
    elf = build_dir / "zephyr" / "zephyr.elf"
    linker_map = build_dir / "zephyr" / "zephyr.map"
    for path in (elf, linker_map):
        if not path.is_file():
            raise ExportError(f"{path} not found: is {build_dir} a Zephyr build folder?")
    return elf, linker_map


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        print(run(args))
    except ExportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
