# SPDX-License-Identifier: Apache-2.0
"""The `et-export` command line, shared by the console script and `west et-export`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from .errors import ExportError, first_line
from .firmware.board_memory import board_memory
from .firmware.fit import export_footprint, fit_problem, fit_summary
from .frontend.io_mode import IOMode, parse_io

DESCRIPTION = """\
Export a PyTorch model to an INT8 ExecuTorch program (.pte) for an Arm
Cortex-M, with CMSIS-NN kernels, and write everything the Zephyr build needs:

  NAME.pte           the program, executed in place from flash
  NAME.ops.yaml      the operators it calls (selective build: only their kernels are linked)
  NAME.conf          Kconfig fragment with the arena sizes it needs
  NAME.json          manifest: inputs/outputs, operators, MACs, memory, versions
  NAME.schemas.yaml  the operators' schemas, so the firmware build needs no torch
  NAME.schema/       ExecuTorch's program schema as C++ headers, so it needs no flatc
  NAME.vectors.npz   test inputs and the host-reference outputs the device must reproduce
  NAME.layers.npz    with --layer-data: each exposed layer's fake-quant and float values

The pipeline: eval mode, BatchNorm folding, channels_last where convolutions
need it, PT2E quantization with CortexMQuantizer, lowering with
CortexMPassManager for the target's ISA tier, memory planning, serialization.
"""

EPILOG = """\
examples:
  et-export samples/kws/model.py:kws --target cortex-m55
  et-export net.py:make_net --target cortex-m33 --calib data.npz -o build/et/net
  et-export program.pt2 --target cortex-m4 --calib-random 64 --strict

MODEL is 'path/to/file.py:factory', where factory() returns (model,
example_inputs) or (model, example_inputs, calibration_inputs), or a saved
torch.export program ('.pt2'). A model after quantization-aware training
(et_zephyr.api.load_qat) is lowered with the INT8 ranges it learned.

The device takes a model that convolves its inputs in the layouts its kernels
read: an image NHWC, a [N, C, L] sequence NLC (sample by sample, as a sensor
delivers it); the report's "memory layout" line and the manifest's dim orders
say which, and the test vectors' _bytes arrays are laid out so.
"""

TARGET_CHOICES = ("m0", "m0plus", "m3", "m4", "m7", "m23", "m33", "m35p", "m55", "m85")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("model", metavar="MODEL", help="file.py:factory or program.pt2")
    parser.add_argument(
        "--target",
        default="cortex-m55",
        metavar="CPU",
        help=f"cortex-{{{','.join(TARGET_CHOICES)}}} (default: cortex-m55)",
    )
    parser.add_argument(
        "--isa",
        choices=("scalar", "dsp", "mve"),
        help="override the CMSIS-NN ISA tier (default: the best the CPU has)",
    )
    parser.add_argument("--name", help="base name of the outputs (default: the model file's stem)")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="DIR", help="output folder (default: build/et/NAME)"
    )
    calibration = parser.add_mutually_exclusive_group()
    calibration.add_argument(
        "--calib",
        type=Path,
        metavar="FILE",
        help=".npy (one input) or .npz (one array per input), samples along axis 0",
    )
    calibration.add_argument(
        "--calib-random",
        type=int,
        metavar="N",
        help="calibrate on N random inputs (accuracy is then meaningless)",
    )
    parser.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        help="skip comparing the INT8 program with the fake-quant and float models",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail if a conv, linear or matmul did not land on a CMSIS-NN kernel, or if "
        "any operator but a byte copy computes in float on a portable kernel",
    )
    parser.add_argument(
        "--npu",
        choices=("ethos-u55-128", "ethos-u65-256", "ethos-u85-256"),
        help="delegate what an Arm Ethos-U supports to it (Vela); the rest runs on Cortex-M",
    )
    parser.add_argument(
        "--expose-activations",
        type=_layer_list,
        default=(),
        metavar="I,J,...|all",
        help="also output the activations of these MAC layers (0 = the first conv or linear; "
        "'all' for every one), so a device test can compare them with the host reference",
    )
    parser.add_argument(
        "--layer-data",
        action="store_true",
        help="with --expose-activations: also write NAME.layers.npz, the fake-quant and float "
        "values of each exposed layer on the test inputs, and each layer's module and source "
        "line in the manifest (what west et-compare reads)",
    )
    parser.add_argument(
        "--vectors",
        type=int,
        default=4,
        metavar="N",
        help="test inputs the firmware stores: the example and held-out inputs (default: 4)",
    )
    parser.add_argument(
        "--generated-vectors",
        type=int,
        default=0,
        metavar="N",
        help="also N test inputs the firmware generates from a seed (no flash), from a "
        "quarter to 16x the calibration range, saturation included; float32 inputs only",
    )
    parser.add_argument(
        "--io",
        type=_io_mode,
        default="float",
        metavar="MODE",
        help="float (default): the program takes and gives float32 and quantizes inside; "
        "int8: it takes and gives the INT8 tensors themselves (no float buffers in RAM; "
        "the manifest and the model's config give each one's scale and zero point, the C "
        "API's et_zephyr_quantize_int8() converts float data); int16: the same for a 16x8 "
        "program's INT16 edges (et_zephyr_quantize_int16()); or per side, e.g. "
        "input=int8,output=float",
    )
    parser.add_argument(
        "--fast-arena",
        type=_byte_count,
        metavar="BYTES",
        help="plan activations in two buffers: the largest in memory id 1, at most BYTES "
        "(e.g. 64K), for a fast region such as DTCM; the rest in memory id 2 (e.g. SRAM). "
        "The firmware places each with CONFIG_ET_ZEPHYR_PLANNED_REGION_1/_2",
    )
    parser.add_argument(
        "--arena-budget",
        type=_byte_count,
        metavar="BYTES",
        help="on Helium, trade speed for a smaller planned arena only while the plan is "
        "larger than BYTES (e.g. 48K): by default et-export finds the smallest plan, giving a "
        "layer where the plan peaks a slower kernel that lets its output overlap its input "
        "(VWW on the M55: 7 KB less RAM for 15 %% more instructions)",
    )
    parser.add_argument(
        "--kernels",
        choices=("et-zephyr", "cmsis-nn"),
        default="et-zephyr",
        help="whose scratch sizes to plan: et-zephyr (default) sizes a buffer for the "
        "module's own kernel where it needs less than CMSIS-NN's (Helium 3x3 depthwise: the "
        "firmware then needs CONFIG_ET_ZEPHYR_DEPTHWISE_CONV_MVE); cmsis-nn plans CMSIS-NN's "
        "sizes, for firmware without the module's own kernels",
    )
    parser.add_argument(
        "--activations",
        choices=("int8", "int16"),
        default="int8",
        help="the activations' integer width. int16: 16x8 quantization (INT16 activations, "
        "INT8 weights) on CMSIS-NN's s16 kernels, for models whose accuracy INT8 costs "
        "(unnormalized inputs, signals of wide range, regressions, long residual chains); "
        "twice the activation memory and more instructions. Linears, convolutions, "
        "depthwise convolutions, pools and additions run in INT16; the others (LayerNorm, "
        "softmax, tables, attention's matmuls, LSTM and GRU layers) on their INT8 kernels, "
        "converted where the two meet, and the report names them",
    )
    parser.add_argument(
        "--precision",
        choices=("auto",),
        help="auto: quantize 16x8 only the operators that need it (linears, convolutions, "
        "pools, additions). Each is "
        "tried alone in 16x8 on the held-out inputs, then they move to 16x8 in order of the "
        "drop they leave until the model is within --max-drop of the float model; the "
        "report names them (a few fake-quantized trial models: seconds to minutes)",
    )
    parser.add_argument(
        "--max-drop",
        type=float,
        default=0.01,
        metavar="X",
        help="with --precision auto: the drop allowed against the float model on the "
        "held-out inputs, a fraction (default 0.01; see --drop-measure)",
    )
    parser.add_argument(
        "--drop-measure",
        choices=("top1", "error"),
        help="with --precision auto: top1, the share of inputs whose top class changes; "
        "error, the output's RMS error over the float output's RMS, each input judged "
        "against its own size and averaged (default: top1 when the output is a row of class "
        "scores, error otherwise)",
    )
    parser.add_argument(
        "--float-ops",
        type=_name_list,
        default=frozenset(),
        metavar="OP,...",
        help="keep these operators in float on ExecuTorch's portable kernels instead of "
        "et-export's integer ones, to compare accuracy or cost: layer_norm, gelu, or another "
        "elementwise function et-export makes a lookup table of (exp, log, sqrt, pow, ...); "
        "their float rounding on the device may differ from the host reference's",
    )
    parser.add_argument(
        "--unroll-recurrent",
        action="store_true",
        help="run every nn.LSTM and nn.GRU as its time steps (quantized linears, adds, muls "
        "and tables) instead of one operator a layer (CMSIS-NN's arm_lstm_unidirectional_s8, "
        "et-zephyr's GRU kernel); the program and the arena then grow with the number of "
        "steps. Layers the kernels cannot run (both directions, proj_size, an initial state "
        "given, an LSTM's final cell state read) and any with --npu are unrolled either way",
    )
    parser.add_argument(
        "--stateful",
        action="store_true",
        help="carry every LSTM's and GRU's state, and the past frames of every causal "
        "Conv1d (padded on the left only: F.pad(x, (p, 0))), from one run to the next, for "
        "a model fed a stream: a run takes the example input's frames (one, or a hop of "
        "them) and continues where the last run stopped; the runtime keeps the state and "
        "et_zephyr_reset_state() clears it. Calibration and held-out samples may be whole "
        "sequences, a whole number of hops long: each is fed a hop at a time, and the test "
        "vectors are one stream",
    )
    parser.add_argument(
        "--board",
        metavar="BOARD",
        help="check that the program fits BOARD's flash and the arenas its RAM (the "
        "devicetree's zephyr,flash and zephyr,sram, as the firmware build checks them) and "
        "stop, writing nothing, if not; reads the board from the Zephyr workspace "
        "(west et-export, or ZEPHYR_BASE set), e.g. --board nucleo_l4r5zi",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the manifest instead of a report"
    )
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="et-export",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return add_arguments(parser)


def run(args: argparse.Namespace, warn: Callable[[str], None]) -> str:
    """Export as the arguments say, write the files; return what to print."""
    from .common.runtime_quiet import quiet_imports

    with quiet_imports():
        from .api import ExportOptions, export
        from .artifacts import check_writable, write_outputs
        from .artifacts.report import render_report
        from .common.progress import calibration_progress, layer_progress

    if args.vectors < 1:
        raise ExportError("--vectors must be at least 1")
    if args.generated_vectors < 0:
        raise ExportError("--generated-vectors must not be negative")
    if args.calib_random is not None and args.calib_random < 1:
        raise ExportError("--calib-random must be at least 1")
    name = args.name or _model_stem(args.model)
    out_dir = args.output or Path("build/et") / name
    check_writable(out_dir)
    # Read before the export, so a board the workspace lacks fails at once.
    board = board_memory(args.board) if args.board else None
    options = ExportOptions(
        target=_target_name(args.target),
        isa=args.isa,
        name=name,
        calibration_file=args.calib,
        calib_random=args.calib_random,
        verify=args.verify,
        strict=args.strict,
        vectors=args.vectors,
        generated_vectors=args.generated_vectors,
        npu=args.npu,
        expose_activations=args.expose_activations,
        layer_data=args.layer_data,
        io=args.io,
        fast_arena=args.fast_arena,
        arena_budget=args.arena_budget,
        kernels=args.kernels,
        float_ops=args.float_ops,
        activations=args.activations,
        precision=args.precision,
        max_drop=args.max_drop,
        drop_measure=args.drop_measure,
        unroll_recurrent=args.unroll_recurrent,
        stateful=args.stateful,
        progress=calibration_progress,
        layer_progress=layer_progress,
        warn=warn,
    )
    with quiet_imports():
        artifacts = export(args.model, options)
    fit = ""
    if board is not None:
        footprint = export_footprint(artifacts.manifest)
        problem = fit_problem(board.board, footprint, board.flash, board.ram)
        if problem:
            raise ExportError(f"{name}: {problem}")
        fit = f"\nboard              {fit_summary(board.board, footprint, board.flash, board.ram)}"
    write_outputs(artifacts, out_dir)
    if args.json:
        return json.dumps(artifacts.manifest, indent=2, sort_keys=True)
    return render_report(artifacts, out_dir) + fit


def _layer_list(text: str) -> tuple[int, ...] | Literal["all"]:
    if text == "all":
        return "all"
    try:
        return tuple(int(item) for item in text.split(","))
    except ValueError:
        message = f"'{text}' is not a comma-separated list of layer numbers"
        raise argparse.ArgumentTypeError(message) from None


def _name_list(text: str) -> frozenset[str]:
    return frozenset(name.strip() for name in text.split(",") if name.strip())


def _io_mode(text: str) -> IOMode:
    try:
        return parse_io(text)
    except ExportError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix(f"--io '{text}' ")) from None


def _byte_count(text: str) -> int:
    """A size in bytes, with an optional K (KiB) or M (MiB) suffix."""
    units = {"k": 1 << 10, "m": 1 << 20}
    scale = units.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale != 1 else text
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}' is not a byte count (e.g. 65536 or 64K)")
    return int(digits) * scale


def _target_name(target: str) -> str:
    return target if target.startswith("cortex-") else f"cortex-{target}"


def _model_stem(model: str) -> str:
    path = model.rpartition(":")[0] if not model.endswith(".pt2") else model
    return Path(path or model).stem


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        print(run(args, lambda message: print(f"warning: {message}", file=sys.stderr)))
    except ExportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        # A step of torch or ExecuTorch failed in a way et-export does not know yet:
        # still one line (and no files: they are written last, all or none).
        if os.environ.get("ET_EXPORT_TRACEBACK"):
            raise
        print(
            f"error: unexpected {type(error).__name__}: {first_line(error)} "
            "(set ET_EXPORT_TRACEBACK=1 to see where)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
