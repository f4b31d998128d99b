# SPDX-License-Identifier: Apache-2.0
"""Flash, RAM and instructions per inference of a model's firmware on QEMU boards.

For each board: `west build` of benchmarks/firmware_app (the model exported at build time
for the board's CPU, its first test input const in flash, no logging, nothing exposed),
then the firmware under the board's QEMU with the repository's instruction counter
(`et-size BUILD --count-instructions` does the same for any build), and one table row:
flash and RAM (et-size's totals), instructions per inference, the estimated cycles on
the in-order cores (Cortex-M0, M0+, M3 and M4: `et-size --cycles`), the share outside the
kernels (everything but CMSIS-NN and et-zephyr's own kernels: ExecuTorch, the op wrappers,
the registration, libc, Zephyr's interrupts in the inference), and the outputs' CRC-32
and argmax, with whether the bytes equal the host reference's (et-export's test vector).

    python3 benchmarks/firmware.py -b mps3/corstone300/an547 -b mps2/an521/cpu0
    python3 benchmarks/firmware.py benchmarks/mlperf_tiny_models.py:resnet8 \\
        -b mps3/corstone300/an547 --cmake-arg=-DCONFIG_TIMESLICING=n --cmake-arg=-DBENCH_INPUT=zeros
    python3 benchmarks/firmware.py -b mps3/corstone300/an547 \\
        "--cmake-arg=-DBENCH_EXPORT_ARGS=--io;int8" --cmake-arg=-DEXTRA_CONF_FILE=stack.conf

--runs N counts N inferences (each row's figure is the first; a range when they differ);
--warm-up N runs N more before them, uncounted (a runtime's first-call set-up left out).

With EXTRA_CONF_FILE=stack.conf it also prints how much of the main and interrupt
stacks the firmware used.

With --build-only it builds for any board (a real one too: nothing runs) and prints, per
model and board, each memory region's use as the linker reports it and whether the
firmware fits; a model that cannot fit stops at configure time with et-export's one line:

    python3 benchmarks/firmware.py --build-only -b nucleo_l4r5zi -b nrf52840dk/nrf52840 \\
        benchmarks/mlperf_tiny_models.py:kws benchmarks/mlperf_tiny_models.py:resnet8

Run it with the workspace's environment (ZEPHYR_BASE, the toolchain variables).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from et_zephyr.common.table import format_table  # noqa: E402
from et_zephyr.errors import ExportError  # noqa: E402
from et_zephyr.size.counting import Count  # noqa: E402
from et_zephyr.size.cycles import estimate_build  # noqa: E402
from et_zephyr.size.firmware_count import count_build  # noqa: E402
from et_zephyr.size.footprint import measure  # noqa: E402
from et_zephyr.size.instructions import attribute, read_histogram  # noqa: E402

APP = REPO / "benchmarks" / "firmware_app"
DEFAULT_MODEL = f"{REPO / 'samples' / 'kws' / 'model.py'}:kws"
KERNELS = ("CMSIS-NN", "et-zephyr kernels")
DONE = "BENCH_DONE"
_OUTPUT = re.compile(r"^BENCH_OUTPUT (\d+) ([0-9a-f]*)\s*$", re.MULTILINE)
_ARGMAX = re.compile(r"^BENCH_ARGMAX (\d+)\s*$", re.MULTILINE)
_STACK = re.compile(r"^BENCH_STACK (\w+) (\d+) of (\d+)\s*$", re.MULTILINE)


@dataclass
class Row:
    board: str
    build_dir: Path
    flash: int = 0
    ram: int = 0
    windows: list[int] = field(default_factory=list)
    by_component: dict[str, int] = field(default_factory=dict)
    outputs: list[bytes] = field(default_factory=list)
    argmax: int | None = None
    host_equal: bool | None = None
    error: str | None = None
    # Stack bytes used of the stack's size, by stack (main, isr): builds with stack.conf.
    stacks: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Estimated cycles per inference (estimate, low, high) on the in-order cores; why not.
    cycles: tuple[int, int, int] | str = "-"

    @property
    def instructions(self) -> int:
        return self.windows[0] if self.windows else 0

    @property
    def outside_kernels(self) -> float:
        total = sum(self.by_component.values())
        kernels = sum(self.by_component.get(name, 0) for name in KERNELS)
        return (total - kernels) / total if total else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "board": self.board,
            "build_dir": str(self.build_dir),
            "flash": self.flash,
            "ram": self.ram,
            "instructions_per_inference": self.windows,
            "instructions_by_component": self.by_component,
            "outside_kernels": self.outside_kernels,
            "output_crc32": [f"{zlib.crc32(o):08x}" for o in self.outputs],
            "argmax": self.argmax,
            "stacks": {name: list(use) for name, use in self.stacks.items()},
            "cycles_per_inference": self.cycles,
            "host_reference_equal": self.host_equal,
            "error": self.error,
        }


def build(
    model: str,
    board: str,
    build_dir: Path,
    workspace: Path,
    cmake_args: list[str],
    *,
    app: Path = APP,
    model_variable: str = "BENCH_MODEL",
) -> None:
    command = [
        sys.executable, "-m", "west", "build", "-p", "always", "-b", board, "-d", str(build_dir),
        str(app), "--", f"-D{model_variable}={model}", *cmake_args,
    ]  # fmt: skip
    log = build_dir.with_name(build_dir.name + ".build.log")
    result = subprocess.run(
        command, cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    log.write_text(result.stdout)
    if result.returncode != 0:
        overflow = re.search(r"region `(\w+)' overflowed by (\d+) bytes", result.stdout)
        if overflow:
            raise ExportError(
                f"{board}'s {overflow.group(1)} is {overflow.group(2)} bytes too small ({log})"
            )
        errors = [line for line in result.stdout.splitlines() if "error" in line.lower()]
        tail = errors[-1:] or [line for line in result.stdout.splitlines() if line.strip()][-1:]
        raise ExportError(f"west build failed ({log}): {tail[0] if tail else 'no output'}")


# Zephyr's link step prints "Memory region  Used Size  Region Size  %age Used" and a row
# per region: "FLASH:  23400 B  2 MB  1.12%".
_REGION = re.compile(r"^\s*(\w+):\s+(\d+) (B|KB|MB|GB)\s+(\d+) (B|KB|MB|GB)\s+[\d.]+%\s*$", re.M)
_UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
# The configure step's fit check (zephyr/cmake/et_zephyr_gen.py) and the linker's.
_DOES_NOT_FIT = re.compile(r"et-zephyr: error: (the program .*|the model's arenas .*)$", re.M)


@dataclass
class Fit:
    """A build-only row: each memory region's use, or why the firmware does not fit."""

    model: str
    board: str
    regions: dict[str, tuple[int, int]] = field(default_factory=dict)  # used, size
    problem: str | None = None


def build_fit(model: str, board: str, build_dir: Path, workspace: Path, args) -> Fit:
    fit = Fit(model.rpartition(":")[2], board)
    failure = None
    try:
        build(model, board, build_dir, workspace, args.cmake_arg)
    except ExportError as error:
        failure = str(error)
    log = build_dir.with_name(build_dir.name + ".build.log").read_text(errors="replace")
    if failure is not None:
        early = _DOES_NOT_FIT.search(log)
        fit.problem = early.group(1) if early else failure
        return fit
    for name, used, used_unit, size, size_unit in _REGION.findall(log):
        if int(used):
            fit.regions[name] = (int(used) * _UNITS[used_unit], int(size) * _UNITS[size_unit])
    return fit


def render_fits(fits: list[Fit]) -> str:
    table = [("model", "board", "memory regions used (linker)", "fits")]
    for fit in fits:
        if fit.problem is not None:
            table.append((fit.model, fit.board, "-", f"no: {fit.problem}"))
            continue
        regions = ", ".join(
            f"{name} {used:,} of {size:,} B ({100 * used / size:.0f} %)"
            for name, (used, size) in fit.regions.items()
        )
        table.append((fit.model, fit.board, regions, "yes"))
    return "\n".join(format_table(table, left=(0, 1, 2, 3)))


def reference_outputs(build_dir: Path) -> list[bytes]:
    """The host reference's bytes of each output for the stored input (none for zeros)."""
    cache = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    if re.search(r"^BENCH_INPUT:\w+=zeros$", cache, re.MULTILINE):
        return []
    found = sorted((build_dir / "et").glob("*/*.vectors.npz"))
    if not found:
        return []
    vectors = np.load(found[0])
    outputs = []
    while f"output_{len(outputs)}_bytes" in vectors:
        outputs.append(vectors[f"output_{len(outputs)}_bytes"][0].tobytes())
    return outputs


def measure_board(
    model: str, board: str, build_dir: Path, workspace: Path, args: argparse.Namespace
) -> Row:
    row = Row(board, build_dir)
    step = time.monotonic()
    progress(f"{board}: building {build_dir} ...")
    build(model, board, build_dir, workspace, args.cmake_arg)
    elf, linker_map = build_dir / "zephyr" / "zephyr.elf", build_dir / "zephyr" / "zephyr.map"
    footprint = measure(elf, linker_map)
    row.flash, row.ram = footprint.flash_total, footprint.ram_total
    progress(
        f"{board}: built in {time.monotonic() - step:.0f} s ({row.flash:,} B flash, "
        f"{row.ram:,} B RAM); counting under QEMU ..."
    )
    step = time.monotonic()
    _, count = count_build(
        build_dir, windows=args.runs, skip=args.warm_up, timeout=args.timeout, until=DONE
    )
    row.windows = count.windows
    row.by_component = attribute(read_histogram(count.histogram), elf, linker_map).by_component
    row.cycles = cycles_per_inference(build_dir, count.histogram, len(count.windows))
    check_done(count, "the firmware")
    printed = {int(index): bytes.fromhex(data) for index, data in _OUTPUT.findall(count.console)}
    row.outputs = [printed[index] for index in sorted(printed)]
    argmax = _ARGMAX.search(count.console)
    row.argmax = int(argmax.group(1)) if argmax else None
    row.stacks = {
        name: (int(used), int(size)) for name, used, size in _STACK.findall(count.console)
    }
    reference = reference_outputs(build_dir)
    row.host_equal = row.outputs == reference if reference else None
    progress(
        f"{board}: {row.instructions:,} instructions per inference "
        f"({time.monotonic() - step:.0f} s under QEMU)"
    )
    return row


def cycles_per_inference(
    build_dir: Path, histogram: Path, windows: int
) -> tuple[int, int, int] | str:
    """et-size's cycle estimate per inference (M0, M0+, M3, M4); "-" on other cores."""
    try:
        total = estimate_build(build_dir, histogram).total
    except ExportError:
        return "-"
    return round(total.mid / windows), round(total.low / windows), round(total.high / windows)


def check_done(count: Count, firmware: str) -> None:
    """An error unless the firmware printed "BENCH_DONE ok"."""
    done = next((line for line in count.console.splitlines() if DONE in line), "")
    if done.strip() != f"{DONE} ok":
        log = count.histogram.with_suffix(".log")
        raise ExportError(f"{firmware} failed: {done.strip() or 'no ' + DONE} ({log})")


def render(rows: list[Row], model: str) -> str:
    header = (
        "board", "flash", "RAM", "instructions per inference", "cycles (estimate, TRM)",
        "outside the kernels", "outputs (CRC-32)", "argmax", "= host reference",
    )  # fmt: skip
    table = [header]
    for row in rows:
        if row.error is not None:
            table.append((row.board, *["-"] * 7, f"error: {row.error}"))
            continue
        instructions = f"{row.instructions:,}"
        if len(set(row.windows)) > 1:
            instructions += f" ({min(row.windows):,}-{max(row.windows):,})"
        table.append(
            (
                row.board,
                f"{row.flash:,} B",
                f"{row.ram:,} B",
                instructions,
                row.cycles if isinstance(row.cycles, str) else _cycles(*row.cycles),
                f"{100 * row.outside_kernels:.1f} %",
                " ".join(f"{zlib.crc32(o):08x}" for o in row.outputs),
                "-" if row.argmax is None else str(row.argmax),
                {True: "yes", False: "NO", None: "-"}[row.host_equal],
            )
        )
    lines = [f"model: {model}", *format_table(table, left=(0, 6, 8))]
    measured = [row for row in rows if row.stacks]
    if measured:
        lines += ["", "stack used (stack.conf):"]
        for row in measured:
            uses = ", ".join(
                f"{name} {used:,} of {size:,} B" for name, (used, size) in row.stacks.items()
            )
            lines.append(f"  {row.board}: {uses}")
    return "\n".join(lines)


def _cycles(estimate: int, low: int, high: int) -> str:
    return f"{estimate:,} ({low:,}-{high:,})"


def progress(message: str) -> None:
    print(f"firmware.py: {message}", file=sys.stderr, flush=True)


def default_workspace() -> Path | None:
    base = os.environ.get("ZEPHYR_BASE")
    return Path(base).resolve().parent if base else None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="firmware.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "model",
        nargs="*",
        default=[DEFAULT_MODEL],
        help="the model as et-export takes it, path/to/file.py:factory "
        "(default: samples/kws/model.py:kws; several with --build-only)",
    )
    parser.add_argument(
        "-b",
        "--board",
        action="append",
        required=True,
        help="a Zephyr board that runs on QEMU, or any board with --build-only (repeat for "
        "several)",
    )
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="build, run nothing: each memory region's use and whether the firmware fits",
    )
    parser.add_argument(
        "--workspace",
        type=Path,
        default=default_workspace(),
        help="the west workspace to build in (default: ZEPHYR_BASE's parent)",
    )
    parser.add_argument(
        "--build-prefix",
        default="build-firmware-",
        help="build folders are WORKSPACE/<prefix><model>-<board> (default: build-firmware-)",
    )
    parser.add_argument(
        "--cmake-arg",
        action="append",
        default=[],
        metavar="-DNAME=VALUE",
        help="passed to CMake after west build's '--', e.g. --cmake-arg=-DCONFIG_TIMESLICING=n "
        "(repeat for several)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="inferences the firmware runs and the counter counts (CONFIG_BENCH_RUNS; default 1)",
    )
    parser.add_argument(
        "--warm-up",
        type=int,
        default=0,
        metavar="N",
        help="inferences run before the counted ones and not counted (default 0)",
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per board under QEMU (default 600)"
    )
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    if args.workspace is None:
        parser.error("no --workspace and no ZEPHYR_BASE: source the workspace's environment")
    models = []
    for model in args.model:
        file, _, factory = model.rpartition(":")
        if not file or not factory or not Path(file).is_file():
            parser.error(f"MODEL must be 'path/to/file.py:factory', got '{model}'")
        models.append(f"{Path(file).resolve()}:{factory}")
    if len(models) > 1 and not args.build_only:
        parser.error("several models need --build-only (one model a run otherwise)")
    args.model = models
    if args.runs < 1 or args.warm_up < 0:
        parser.error("--runs must be at least 1, --warm-up at least 0")
    if args.runs + args.warm_up > 1:
        args.cmake_arg = [*args.cmake_arg, f"-DCONFIG_BENCH_RUNS={args.runs + args.warm_up}"]
    return args


def build_dir_for(args: argparse.Namespace, model: str, board: str) -> Path:
    factory = model.rpartition(":")[2]
    return args.workspace / f"{args.build_prefix}{factory}-{board.replace('/', '_')}"


def main_build_only(args: argparse.Namespace) -> int:
    fits = []
    pairs = [(model, board) for model in args.model for board in args.board]
    for number, (model, board) in enumerate(pairs, start=1):
        progress(f"[{number}/{len(pairs)}] {model.rpartition(':')[2]} on {board}: building ...")
        fit = build_fit(model, board, build_dir_for(args, model, board), args.workspace, args)
        progress(f"{board}: {'fits' if fit.problem is None else 'does not fit: ' + fit.problem}")
        fits.append(fit)
    print(render_fits(fits))
    if args.json:
        rows = [
            {"model": f.model, "board": f.board, "regions": f.regions, "problem": f.problem}
            for f in fits
        ]
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.build_only:
        return main_build_only(args)
    model = args.model[0]
    rows = []
    for number, board in enumerate(args.board, start=1):
        progress(f"[{number}/{len(args.board)}] {board}")
        build_dir = build_dir_for(args, model, board)
        try:
            rows.append(measure_board(model, board, build_dir, args.workspace, args))
        except ExportError as error:
            progress(f"{board}: error: {error}")
            rows.append(Row(board, build_dir, error=str(error)))
    print(render(rows, model))
    if args.json:
        args.json.write_text(json.dumps([row.to_json() for row in rows], indent=2) + "\n")
    return 1 if any(row.error for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
