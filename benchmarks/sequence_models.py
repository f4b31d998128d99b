#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Transformers and recurrent models through et-export: where they run, their size, and
how closely the INT8 program follows the fake-quant and float models.

For each model of tests/models/transformers.py and tests/models/recurrent.py (and
samples/kwt) and each target, prints one table row: MACs on CMSIS-NN, operators left
on portable kernels other than byte copies, .pte size, planned and method arenas,
top-1 agreement with the fake-quant and float models on the held-out inputs and the
largest difference in output steps. `--unroll-recurrent` exports GRUs and LSTMs as their
time steps instead of one operator a layer.

    python benchmarks/sequence_models.py [-t cortex-m55 -t cortex-m3 ...] \
        [--unroll-recurrent] [MODEL ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from et_zephyr.common.runtime_quiet import quiet_imports  # noqa: E402

with quiet_imports():
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.firmware.analysis import BYTE_COPIES

MODELS = [
    "tests/models/transformers.py:transformer",
    "tests/models/transformers.py:transformer_sdpa",
    "tests/models/transformers.py:transformer_mha",
    "tests/models/recurrent.py:gru",
    "tests/models/recurrent.py:gru2",
    "tests/models/recurrent.py:lstm",
    "tests/models/recurrent.py:lstm2",
    "tests/models/recurrent.py:lstm_kws",
    "tests/models/recurrent.py:gru_kws",
    "tests/models/recurrent.py:gru2_kws",
    "samples/kwt/model.py:kwt",
]


def row(model: str, target: str, unroll_recurrent: bool) -> str:
    options = ExportOptions(target=target, name="model", unroll_recurrent=unroll_recurrent)
    with quiet_imports():
        artifacts = export(str(REPO / model), options)
    manifest = artifacts.manifest
    floats = sorted(
        op
        for op, stats in manifest["operators"].items()
        if stats["runs_on"] == "portable" and op not in BYTE_COPIES
    )
    macs = manifest["macs"]
    memory = manifest["memory"]
    agreement = manifest["agreement"]
    planned = sum(entry["bytes"] for entry in memory["planned"])
    name = model.rsplit(":", 1)[1]
    return (
        f"| {name} | {target} | {macs['cmsis_nn']:,} / {macs['total']:,} | "
        f"{', '.join(floats) or 'none'} | {manifest['pte_bytes']:,} | {planned:,} | "
        f"{memory['method_allocator']:,} | {agreement['top1_vs_fake_quant']:.0%} / "
        f"{agreement['top1_vs_float']:.0%} | {agreement['max_steps_vs_fake_quant']:g} / "
        f"{agreement['max_steps_vs_float']:.1f} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-t", "--target", action="append", help="default: cortex-m55")
    parser.add_argument(
        "--unroll-recurrent", action="store_true", help="GRUs and LSTMs as their time steps"
    )
    parser.add_argument("models", nargs="*", default=MODELS, help="FILE.py:FACTORY")
    args = parser.parse_args(argv)
    print(
        "| model | target | MACs on CMSIS-NN | float operators | .pte | planned arena | "
        "method arena | top-1 vs fake-quant / float | largest error, steps vs fake-quant "
        "/ float |"
    )
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for model in args.models:
        for target in args.target or ["cortex-m55"]:
            print(row(model, target, args.unroll_recurrent), flush=True)


if __name__ == "__main__":
    main()
