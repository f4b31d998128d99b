#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The model zoo through et-export and through upstream's five-step flow, per target.

Each model of benchmarks/zoo/ (and the MLPerf Tiny four, the KWS transformer) is
exported for each target; a row says whether it exported (or the error's first
words), the share of its MACs on Cortex-M kernels, the operators left computing in
float, the layout copies an inference makes and the bytes they write, the program and
the planned arena; then the same for the five-step flow (benchmarks/upstream_flow.py)
on the model as written, made channels-last as upstream's tests make theirs. Figures,
not a test: tests/python/test_zoo.py keeps a subset from regressing.

    python3 benchmarks/zoo.py -t cortex-m0 -t cortex-m4 -t cortex-m55 [-k TEXT]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from et_zephyr.api import ExportOptions, export  # noqa: E402
from et_zephyr.common.runtime_quiet import quiet_imports  # noqa: E402
from et_zephyr.common.table import format_table  # noqa: E402
from et_zephyr.errors import ExportError, first_line  # noqa: E402
from et_zephyr.firmware.analysis import (  # noqa: E402
    OperatorStats,
    layout_copies,
    mac_totals,
    operator_stats,
    portable_arithmetic,
)
from et_zephyr.frontend.loading import load_model  # noqa: E402

ZOO = {
    # Image classifiers.
    "ds_cnn": "samples/kws/model.py:kws",
    "resnet8": "benchmarks/mlperf_tiny_models.py:resnet8",
    "mobilenet_v1": "benchmarks/mlperf_tiny_models.py:mobilenet_v1",
    "mobilenet_v2": "benchmarks/zoo/vision.py:mobilenet_v2",
    "mobilenet_v3_small": "benchmarks/zoo/vision.py:mobilenet_v3_small",
    "mbconv": "benchmarks/zoo/vision.py:mbconv",
    "mcunet": "benchmarks/zoo/vision.py:mcunet",
    "squeezenet": "benchmarks/zoo/vision.py:squeezenet",
    "shufflenet_v2": "benchmarks/zoo/vision.py:shufflenet_v2",
    "cifar_cnn": "benchmarks/zoo/vision.py:cifar_cnn",
    "resnet18_narrow": "benchmarks/zoo/vision.py:resnet18_narrow",
    # Over time: sensors, audio, sequences.
    "har_cnn": "benchmarks/zoo/sequences.py:har_cnn",
    "ecg_resnet": "benchmarks/zoo/sequences.py:ecg_resnet",
    "tcn": "benchmarks/zoo/sequences.py:tcn",
    "raw_audio_cnn": "benchmarks/zoo/sequences.py:raw_audio_cnn",
    "conv1d_autoencoder": "benchmarks/zoo/sequences.py:conv1d_autoencoder",
    "crnn": "benchmarks/zoo/sequences.py:crnn",
    "kwt": "samples/kwt/model.py:kwt",
    "conformer_lite": "benchmarks/zoo/sequences.py:conformer_lite",
    # Dense outputs, several tensors.
    "autoencoder": "benchmarks/mlperf_tiny_models.py:autoencoder",
    "conv_autoencoder": "benchmarks/zoo/dense.py:conv_autoencoder",
    "unet": "benchmarks/zoo/dense.py:unet",
    "fomo": "benchmarks/zoo/dense.py:fomo",
    "ssd_lite": "benchmarks/zoo/dense.py:ssd_lite",
    "yolo_style": "benchmarks/zoo/dense.py:yolo_style",
    "two_inputs": "benchmarks/zoo/dense.py:two_inputs",
    "multi_output": "benchmarks/zoo/dense.py:multi_output",
}


@dataclass
class Row:
    """One flow's outcome on one model and target."""

    error: str = ""
    cmsis_nn_share: float | None = None
    float_ops: tuple[str, ...] = ()
    copies: tuple[int, int] = (0, 0)
    pte_bytes: int = 0
    arena_bytes: int = 0


def _row(stats: dict[str, OperatorStats], pte_bytes: int, arena_bytes: int) -> Row:
    macs = mac_totals(stats)
    share = macs["cmsis_nn"] / macs["total"] if macs["total"] else None
    floats = tuple(portable_arithmetic(stats)) + tuple(
        name for name, s in stats.items() if s.macs and s.runs_on == "portable"
    )
    return Row("", share, floats, layout_copies(stats), pte_bytes, arena_bytes)


def run_et_export(spec: str, target: str) -> Row:
    try:
        with quiet_imports(), contextlib.redirect_stderr(io.StringIO()):
            artifacts = export(str(REPO / spec), ExportOptions(target=target, vectors=1))
    except ExportError as error:
        return Row(error=str(error))
    planned = sum(entry["bytes"] for entry in artifacts.manifest["memory"]["planned"])
    return _row(artifacts.stats, artifacts.manifest["pte_bytes"], planned)


def run_five_step(spec: str, target: str) -> Row:
    from upstream_flow import five_step

    try:
        with quiet_imports(), contextlib.redirect_stderr(io.StringIO()):
            bundle = load_model(str(REPO / spec))
            calibration = bundle.calibration or [bundle.example_inputs]
            program = five_step(
                bundle.model, bundle.example_inputs, calibration, target, channels_last=True
            )
    except Exception as error:
        return Row(error=f"{type(error).__name__}: {first_line(error)}")
    plan = program.executorch_program.execution_plan[0]
    stats = operator_stats(program.exported_program().graph_module)
    return _row(stats, len(program.buffer), sum(plan.non_const_buffer_sizes[1:]))


def _cells(row: Row, full: bool) -> tuple[str, ...]:
    if row.error:
        return ("no: " + row.error[:60],) + ("",) * (5 if full else 3)
    share = "no MACs" if row.cmsis_nn_share is None else f"{100 * row.cmsis_nn_share:.1f} %"
    floats = ", ".join(name.split("::")[-1].split(".")[0] for name in row.float_ops) or "-"
    calls, written = row.copies
    cells = ("yes", share, floats, f"{calls} / {written:,} B")
    if full:
        cells += (f"{row.pte_bytes:,}", f"{row.arena_bytes:,}")
    return cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-t", "--target", action="append", help="Cortex-M target (repeatable)")
    parser.add_argument(
        "-k",
        action="append",
        default=[],
        help="only models whose name contains this (repeat for several)",
    )
    parser.add_argument("--no-upstream", action="store_true", help="skip the five-step flow")
    args = parser.parse_args(argv)
    targets = args.target or ["cortex-m55"]
    header = (
        "model",
        "target",
        "exported",
        "MACs on Cortex-M",
        "float operators",
        "layout copies",
        "program B",
        "arena B",
        "five-step: exported",
        "MACs",
        "float operators",
        "layout copies",
    )
    rows = [header]
    complete = 0
    for name, spec in ZOO.items():
        if args.k and not any(text in name for text in args.k):
            continue
        for target in targets:
            ours = run_et_export(spec, target)
            upstream = Row(error="skipped") if args.no_upstream else run_five_step(spec, target)
            complete += not ours.error and ours.cmsis_nn_share in (None, 1.0) and not ours.float_ops
            rows.append((name, target, *_cells(ours, True), *_cells(upstream, False)))
            print("\t".join(rows[-1]), file=sys.stderr, flush=True)
    print("\n".join(format_table(rows, left=(0, 1, 2, 4, 8, 10))))
    print(f"\n{complete} of {len(rows) - 1} exports: every MAC on Cortex-M, no float operator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
