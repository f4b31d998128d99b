# SPDX-License-Identifier: Apache-2.0
"""The `et-compare` command line, shared by the console script and `west et-compare`."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..errors import ExportError

DESCRIPTION = """\
Find the first layer where the device and the host reference part ways.

Builds samples/kws's test runner (tests/models) for MODEL and BOARD with the
output of every MAC layer exposed, runs it on the board's emulator (QEMU), and
prints a table per layer:

  device vs host           bytes identical, or how many INT8 elements differ and
                           by how many quantization steps
  host INT8 vs fake-quant  the same between the host reference and PyTorch's
                           fake-quant model
  fake-quant vs float      largest error in quantization steps and relative error

and names the first layer where the device differs, with its PyTorch module and
the model's source line. A PNG of the per-layer error is written beside it.
With -d BUILD and no MODEL, it runs that existing build (e.g. of samples/kws)
as it is. With --log, no build or run: the table for a log captured elsewhere
(real hardware, an FVP) against an export folder. Exports without
--layer-data (samples/kws's own) get the device-vs-host column only.

Exit status: 0 when the device equals the host reference on every layer and
output, 1 when something differs, 2 on an error.
"""

EPILOG = """\
examples:
  west et-compare samples/kws/model.py:kws -b mps3/corstone300/an547
  west et-compare net.py:make_net -b qemu_cortex_m3 --inject cortex_m::quantized_conv2d.out:2
  west et-compare -d build/kws
  west et-compare --log uart.txt --export-dir build/et-compare/kws/et/kws
"""


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("model", nargs="?", metavar="MODEL", help="file.py:factory")
    parser.add_argument("-b", "--board", help="Zephyr board to build for and emulate")
    parser.add_argument(
        "-d",
        "--build-dir",
        type=Path,
        metavar="DIR",
        help="build folder (default: build/et-compare/<factory>-<board>)",
    )
    parser.add_argument(
        "--log",
        type=Path,
        metavar="FILE",
        help="compare this captured device output instead of building and running",
    )
    parser.add_argument(
        "--export-dir",
        type=Path,
        metavar="DIR",
        help="with --log: the folder et-export wrote with --expose-activations all "
        "--layer-data (default: the build folder's et/<factory>)",
    )
    parser.add_argument(
        "--inject",
        metavar="OP[:CALL]",
        help="test build with a deliberately wrong kernel: flip one bit of OP's output "
        "at its CALL-th call (default 0) of each inference (CONFIG_ET_ZEPHYR_TEST_FAULT_*)",
    )
    parser.add_argument(
        "--layers",
        default="all",
        metavar="I,J,...|all",
        help="the MAC layers to expose (0 = the first conv or linear; default: all); each stays "
        "live in RAM, so a small board may hold only some",
    )
    parser.add_argument(
        "--vectors",
        type=int,
        default=2,
        metavar="N",
        help="stored test inputs to run (default: 2)",
    )
    parser.add_argument(
        "--generated-vectors",
        type=int,
        default=2,
        metavar="N",
        help="test inputs the firmware generates, up to 16x the calibration range (default: 2)",
    )
    parser.add_argument(
        "--export-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="pass ARG on to et-export (repeat for several), e.g. --export-arg=--calib-random=64",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds to wait for the firmware's ET_DONE line (default: 600)",
    )
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="PNG",
        help="where to write the plot (default: et-compare.png in the build or export folder)",
    )
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="et-compare",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return add_arguments(parser)


def run(args: argparse.Namespace, info=print) -> int:  # type: ignore[no-untyped-def]
    """Do what the arguments say; return the exit status (0 same, 1 differs)."""
    from . import compare, read_log, render
    from .plot import plot

    if args.log is not None:
        export_dir = args.export_dir or _default_export_dir(args)
        try:
            text = args.log.read_text(errors="replace")
        except OSError as error:
            raise ExportError(f"cannot read {args.log}: {error.strerror}") from error
        plot_dir = export_dir
    elif args.model is None and args.build_dir is not None:
        from .device_run import run_on_emulator

        export_dir = _only_export(args.build_dir)
        info(f"running {args.build_dir} on its board's emulator")
        text = run_on_emulator(args.build_dir, args.timeout)
        plot_dir = args.build_dir
    else:
        if not args.model or not args.board:
            raise ExportError(
                "give MODEL and --board, or -d BUILD of an existing build, or --log FILE "
                "with --export-dir"
            )
        from .device_run import build_runner, run_on_emulator

        build_dir = args.build_dir or _default_build_dir(args.model, args.board)
        info(f"building {args.model} for {args.board} in {build_dir}")
        build_runner(
            args.model,
            args.board,
            build_dir,
            layers=args.layers,
            stored_vectors=args.vectors,
            generated_vectors=args.generated_vectors,
            export_args=args.export_arg,
            kconfig=_fault_kconfig(args.inject),
        )
        info(f"running on the {args.board} emulator")
        text = run_on_emulator(build_dir, args.timeout)
        export_dir = build_dir / "et" / _factory(args.model)
        plot_dir = build_dir
    comparison = compare(export_dir, read_log(text))
    info(render(comparison))
    plot_path = args.plot or plot_dir / "et-compare.png"
    plot(comparison, plot_path)
    info(f"plot: {plot_path}")
    same = comparison.first_divergent is None and not comparison.outputs_differing
    return 0 if same else 1


def _only_export(build_dir: Path) -> Path:
    found = sorted(path.parent for path in build_dir.glob("et/*/*.vectors.npz"))
    if len(found) != 1:
        raise ExportError(f"{build_dir} is not a build of an et-export model (no et/NAME/)")
    return found[0]


def _fault_kconfig(inject: str | None) -> dict[str, str]:
    if not inject:
        return {}
    match = re.fullmatch(r"([A-Za-z_][\w:]*(?:\.\w+)?)(?::(\d+))?", inject)
    if not match or "::" not in match.group(1):
        raise ExportError(
            f"--inject wants OP[:CALL], e.g. cortex_m::quantized_conv2d.out:2, got '{inject}'"
        )
    # Kconfig string values keep their quotes on the CMake command line.
    return {
        "CONFIG_ET_ZEPHYR_TEST_FAULT_OPERATOR": f'"{match.group(1)}"',
        "CONFIG_ET_ZEPHYR_TEST_FAULT_CALL": match.group(2) or "0",
    }


def _factory(model: str) -> str:
    return model.rpartition(":")[2]


def _default_build_dir(model: str, board: str) -> Path:
    return Path("build/et-compare") / f"{_factory(model)}-{board.replace('/', '_')}"


def _default_export_dir(args: argparse.Namespace) -> Path:
    if args.build_dir is not None and args.model:
        return args.build_dir / "et" / _factory(args.model)
    raise ExportError("--log needs --export-dir (the folder with NAME.json and NAME.layers.npz)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except ExportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
