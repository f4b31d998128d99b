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

With --count-instructions it makes that histogram itself: it builds the
repository's QEMU TCG plugin (tools/insn_count) into BUILD_DIR/insn_count,
runs the build's firmware with the board's own QEMU command line (the build's
run_qemu target; QEMU boards only), counts every instruction executed from the
first instruction of executorch::runtime::Method::execute() to its return in
et_zephyr_run() -- one inference, with the interrupts that land in it -- for
--windows inferences, writes BUILD_DIR/insn_count.hist (and the console to
BUILD_DIR/insn_count.log), and prints the instructions of each inference and
their attribution (summed over the inferences counted).

With --cycles it also estimates the cycles of what it counted on the build's
core, for the in-order Cortex-M0, M0+, M3 and M4: each instruction's cycles in
the core's Technical Reference Manual (zero-wait-state memory), the pipeline
refill of every taken branch (the counter records them), overlapped loads and
address stalls, exception entries; printed with the TRM's bounds (a branch
refill of 1 to 3 cycles, ...) and by instruction class. The M7, M33, M55 and
M85 get no estimate: their timings are not published or not additive.

examples:
  et-size build                               flash and RAM by component
  et-size build --count-instructions          ... and one inference's instructions under QEMU
  et-size build --count-instructions --windows 5 --top 30
  et-size build --instructions kws.hist       attribute a histogram made elsewhere
  et-size build --count-instructions --cycles ... and its cycles on an M0/M0+/M3/M4
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
        "--count-instructions",
        action="store_true",
        help="run the firmware under QEMU with the instruction counter and attribute "
        "what one inference (or --windows) executes",
    )
    parser.add_argument(
        "--cycles",
        action="store_true",
        help="with --count-instructions or --instructions: estimate the cycles on the build's "
        "core (Cortex-M0, M0+, M3, M4) from its Technical Reference Manual's timings",
    )
    parser.add_argument(
        "--windows",
        type=_positive,
        default=1,
        metavar="N",
        help="with --count-instructions: inferences to count before QEMU is stopped (default: 1)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="with --count-instructions: give up after this long (default: 300)",
    )
    parser.add_argument(
        "--start",
        metavar="SYMBOL",
        help="with --count-instructions: count from this function (or 0x<address>) instead "
        "of Method::execute(); needs --end",
    )
    parser.add_argument(
        "--end",
        metavar="SYMBOL",
        help="with --count-instructions: stop counting at this function or 0x<address> "
        "(not counted)",
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
    parser = argparse.ArgumentParser(
        prog="et-size",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return add_arguments(parser)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run(args: argparse.Namespace) -> str:
    from .counting import read_windows
    from .cycles import CycleEstimate, estimate_build
    from .cycles import render as render_cycles
    from .footprint import measure
    from .instructions import attribute, read_histogram, render_split
    from .report import render_table, write_plot

    _check_options(args)
    elf, linker_map = _build_files(args.build_dir)
    footprint = measure(elf, linker_map)
    other = measure(*_build_files(args.compare)) if args.compare else None
    histogram, count_lines, windows = _histogram(args)
    split = None
    cycles: CycleEstimate | str | None = None
    if histogram is not None:
        split = attribute(read_histogram(histogram), elf, linker_map)
        if args.cycles:
            try:
                cycles = estimate_build(args.build_dir, histogram)
            except ExportError as error:  # a core with no model: the rest stands
                cycles = str(error)
    document = footprint.to_json()
    if split is not None:
        document["instructions"] = split.to_json()
        if windows:
            document["instructions"]["windows"] = windows
    if isinstance(cycles, CycleEstimate):
        document["cycles"] = cycles.to_json()
    (args.build_dir / "size.json").write_text(json.dumps(document, indent=2) + "\n")
    write_plot(footprint, args.build_dir / "size.png", f"{elf}")
    if args.json:
        return json.dumps(document, indent=2)
    title = f"et-size: {elf}" + (f" (change from {args.compare})" if other else "")
    files = f"wrote {args.build_dir / 'size.json'} and {args.build_dir / 'size.png'}"
    sections = [title, render_table(footprint, other)]
    if split is not None:
        sections.extend(count_lines)
        sections.append(f"executed instructions ({histogram})")
        sections.append(render_split(split, args.top))
    if isinstance(cycles, CycleEstimate):
        sections.append(render_cycles(cycles, len(read_windows(histogram)) or 1))
    elif cycles is not None:
        sections.append(f"cycles: {cycles}")
    return "\n\n".join([*sections, files])


def _check_options(args: argparse.Namespace) -> None:
    if args.count_instructions and args.instructions:
        raise ExportError("give --instructions HIST or --count-instructions, not both")
    if (args.start is None) != (args.end is None):
        raise ExportError("--start and --end go together")
    if args.cycles and not (args.count_instructions or args.instructions):
        raise ExportError("--cycles needs --count-instructions or --instructions HIST")
    if args.start is not None and not args.count_instructions:
        raise ExportError("--start and --end need --count-instructions")


def _histogram(args: argparse.Namespace) -> tuple[Path | None, list[str], list[int]]:
    """The histogram to attribute: given, or counted now under QEMU (with the lines that
    tell the per-inference totals)."""
    if not args.count_instructions:
        return args.instructions, [], []
    from .firmware_count import count_build
    from .window_report import render_windows

    window, count = count_build(
        args.build_dir,
        windows=args.windows,
        timeout=args.timeout,
        start=args.start,
        end=args.end,
    )
    return count.histogram, [render_windows(window, count.windows)], count.windows


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
