# SPDX-License-Identifier: Apache-2.0
"""et-zephyr and TensorFlow Lite Micro side by side: the same network, the same boards,
the same instruction counter.

For each model and board: benchmarks/firmware.py's firmware (the PyTorch model exported
with --io int8, an all-zero input) and benchmarks/peers/tflm_app (TensorFlow Lite Micro
with CMSIS-NN's kernels, as Zephyr's optional tflite-micro project gives it, running the
MLCommons reference .tflite of the same network on an all-zero input), each built with
`west build`, run under the board's QEMU and counted by the repository's counter over one
inference (Method::execute() for et-zephyr, MicroInterpreter::Invoke() for TFLite Micro,
interrupts included) after an uncounted warm-up inference. One table: flash and RAM
(et-size's totals; TFLite Micro's arena counted at what the model used, BENCH_ARENA, not
at the arena the firmware reserves), instructions and, on the in-order cores, estimated
cycles per inference, and the ratio of TFLite Micro's instructions to et-zephyr's.

The .tflite files are the user's: MLCommons' reference models from a checkout of
mlcommons/tiny (--tiny DIR: benchmark/training/*/trained_models/), or any pairs
(--pair NAME=MODEL.tflite=file.py:factory). Nothing of them is in this repository. The
networks match layer for layer (benchmarks/mlperf_tiny_models.py follows MLCommons'
training scripts); their weights differ, which moves the counts by little: both runtimes'
kernels do the same work whatever the values.

    west config manifest.group-filter -- +optional && west update tflite-micro
    python3 benchmarks/peers/side_by_side.py --tiny ~/tiny -b mps2/an386/qemu -b mps2/an385
    python3 benchmarks/peers/side_by_side.py --tiny ~/tiny --model kws -b mps3/corstone300/an547

Run it with the workspace's environment (ZEPHYR_BASE, the toolchain variables).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import firmware  # noqa: E402  (benchmarks/firmware.py)
from et_zephyr.common.table import format_table  # noqa: E402
from et_zephyr.size.firmware_count import count_build  # noqa: E402
from et_zephyr.size.window import call_window  # noqa: E402
from firmware import REPO, ExportError, Row, cycles_per_inference, measure, progress  # noqa: E402

APP = HERE / "tflm_app"
INVOKE = "_ZN6tflite16MicroInterpreter6InvokeEv"
CALLER = "bench_invoke"
_ARENA = re.compile(r"^BENCH_ARENA (\d+)\s*$", re.MULTILINE)
_ARENA_SIZE = re.compile(r"^CONFIG_PEER_ARENA_SIZE=(\d+)$", re.MULTILINE)
MODELS = REPO / "benchmarks" / "mlperf_tiny_models.py"

# MLCommons Tiny's reference models (mlcommons/tiny, benchmark/training/) and the same
# networks as et-export factories.
TINY = {
    "kws": ("keyword_spotting/trained_models/kws_ref_model.tflite", f"{MODELS}:kws"),
    "resnet8": (
        "image_classification/trained_models/pretrainedResnet_quant.tflite",
        f"{MODELS}:resnet8",
    ),
    "vww": ("visual_wake_words/trained_models/vww_96_int8.tflite", f"{MODELS}:mobilenet_v1"),
    "ad": ("anomaly_detection/trained_models/ad01_int8.tflite", f"{MODELS}:autoencoder"),
}
# et-zephyr as the MLCommons models run: INT8 in and out, the same all-zero input.
OURS_CMAKE = ["-DBENCH_EXPORT_ARGS=--io;int8", "-DBENCH_INPUT=zeros"]
# Each firmware runs a warm-up inference, then the counted one: what an always-on
# application pays per inference, not a runtime's first-call set-up.
RUNS = ["-DCONFIG_BENCH_RUNS=2"]


@dataclass
class Pair:
    name: str
    tflite: Path
    model: str  # file.py:factory


def measure_peer(pair: Pair, board: str, build_dir: Path, args: argparse.Namespace) -> Row:
    row = Row(board, build_dir)
    step = time.monotonic()
    progress(f"{board}: building TFLite Micro with {pair.tflite.name} in {build_dir} ...")
    firmware.build(
        str(pair.tflite), board, build_dir, args.workspace, [*RUNS, *args.peer_cmake_arg],
        app=APP, model_variable="PEER_MODEL",
    )  # fmt: skip
    elf, linker_map = build_dir / "zephyr" / "zephyr.elf", build_dir / "zephyr" / "zephyr.map"
    footprint = measure(elf, linker_map)
    window = call_window(elf, INVOKE, CALLER, "MicroInterpreter::Invoke()")
    progress(f"{board}: built in {time.monotonic() - step:.0f} s; counting under QEMU ...")
    _, count = count_build(
        build_dir,
        start=f"0x{window.start:x}",
        end=f"0x{window.end:x}",
        skip=1,
        timeout=args.timeout,
        until=firmware.DONE,
    )
    firmware.check_done(count, "the peer firmware")
    used = _ARENA.search(count.console)
    reserved = _ARENA_SIZE.search((build_dir / "zephyr" / ".config").read_text())
    if used is None or reserved is None:
        raise ExportError(f"the peer firmware printed no BENCH_ARENA ({count.histogram})")
    row.flash = footprint.flash_total
    row.ram = footprint.ram_total - int(reserved.group(1)) + int(used.group(1))
    row.windows = count.windows
    row.cycles = cycles_per_inference(build_dir, count.histogram, len(count.windows))
    progress(f"{board}: TFLite Micro {row.instructions:,} instructions per inference")
    return row


def measure_ours(pair: Pair, board: str, build_dir: Path, args: argparse.Namespace) -> Row:
    return firmware.measure_board(pair.model, board, build_dir, args.workspace, args)


def render(results: list[tuple[Pair, str, Row, Row]]) -> str:
    table = [
        (
            "model", "board", "runtime", "flash", "RAM", "instructions per inference",
            "cycles (estimate, TRM)", "TFLM / et-zephyr",
        )
    ]  # fmt: skip
    for pair, board, ours, peer in results:
        for runtime, row in (("et-zephyr", ours), ("TFLite Micro", peer)):
            if row.error is not None:
                table.append((pair.name, board, runtime, "-", "-", "-", "-", f"error: {row.error}"))
                continue
            cycles = row.cycles if isinstance(row.cycles, str) else f"{row.cycles[0]:,}"
            ratio = "-"
            if runtime == "TFLite Micro" and ours.error is None and ours.instructions:
                ratio = f"{peer.instructions / ours.instructions:.2f}x instructions"
                if not isinstance(ours.cycles, str) and not isinstance(peer.cycles, str):
                    ratio += f", {peer.cycles[0] / ours.cycles[0]:.2f}x cycles"
            table.append(
                (
                    pair.name, board, runtime, f"{row.flash:,} B", f"{row.ram:,} B",
                    f"{row.instructions:,}", cycles, ratio,
                )
            )  # fmt: skip
    return "\n".join(format_table(table, left=(0, 1, 2, 7)))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="side_by_side.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--tiny", type=Path, help="a checkout of mlcommons/tiny: its reference .tflite models"
    )
    parser.add_argument(
        "--model",
        action="append",
        choices=sorted(TINY),
        help="with --tiny: only these MLCommons models (repeat; default: all four)",
    )
    parser.add_argument(
        "--pair",
        action="append",
        default=[],
        metavar="NAME=MODEL.tflite=file.py:factory",
        help="a .tflite model and the same network as et-export takes it (repeat)",
    )
    parser.add_argument("-b", "--board", action="append", required=True, help="a QEMU board")
    parser.add_argument(
        "--workspace",
        type=Path,
        default=firmware.default_workspace(),
        help="the west workspace to build in (default: ZEPHYR_BASE's parent)",
    )
    parser.add_argument(
        "--build-prefix",
        default="build-peers-",
        help="build folders are WORKSPACE/<prefix><runtime>-<model>-<board>",
    )
    parser.add_argument(
        "--our-cmake-arg", action="append", default=[], help="more CMake arguments for et-zephyr"
    )
    parser.add_argument(
        "--peer-cmake-arg",
        action="append",
        default=[],
        help="CMake arguments for the TFLite Micro firmware (e.g. "
        "--peer-cmake-arg=-DCONFIG_SPEED_OPTIMIZATIONS=y)",
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="seconds per firmware under QEMU"
    )
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    if args.workspace is None:
        parser.error("no --workspace and no ZEPHYR_BASE: source the workspace's environment")
    pairs = []
    if args.tiny is not None:
        training = args.tiny / "benchmark" / "training"
        for name in args.model or sorted(TINY):
            relative, model = TINY[name]
            pairs.append(Pair(name, training / relative, model))
    for text in args.pair:
        name, tflite, model = (text.split("=", 2) + ["", ""])[:3]
        if not name or not tflite or ":" not in model:
            parser.error(f"--pair must be NAME=MODEL.tflite=file.py:factory, got '{text}'")
        pairs.append(Pair(name, Path(tflite).resolve(), model))
    if not pairs:
        parser.error("give --tiny DIR or --pair")
    for pair in pairs:
        if not pair.tflite.is_file():
            parser.error(f"{pair.name}: no such .tflite file: {pair.tflite}")
        file = Path(pair.model.rpartition(":")[0])
        if not file.is_file():
            parser.error(f"{pair.name}: no such model file: {file}")
    args.pairs = pairs
    # What firmware.measure_board reads: et-zephyr's build and its counted inference.
    args.cmake_arg = [*OURS_CMAKE, *RUNS, *args.our_cmake_arg]
    args.runs, args.warm_up = 1, 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = []
    jobs = [(pair, board) for pair in args.pairs for board in args.board]
    for number, (pair, board) in enumerate(jobs, start=1):
        progress(f"[{number}/{len(jobs)}] {pair.name} on {board}")
        rows = []
        for runtime, measure_one in (("et-zephyr", measure_ours), ("tflm", measure_peer)):
            build_dir = args.workspace / (
                f"{args.build_prefix}{runtime}-{pair.name}-{board.replace('/', '_')}"
            )
            try:
                rows.append(measure_one(pair, board, build_dir, args))
            except ExportError as error:
                progress(f"{board}: {runtime}: error: {error}")
                rows.append(Row(board, build_dir, error=str(error)))
        results.append((pair, board, *rows))
    print(render(results))
    if args.json:
        document = [
            {"model": p.name, "board": b, "et-zephyr": o.to_json(), "tflite-micro": t.to_json()}
            for p, b, o, t in results
        ]
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 1 if any(o.error or t.error for _, _, o, t in results) else 0


if __name__ == "__main__":
    sys.exit(main())
