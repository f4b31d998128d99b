#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""et-export against the plain upstream script flow, on the KWS DS-CNN.

Each flow runs in a fresh interpreter so wall time and peak RSS are its own.
Prints: wall time and where it goes, step by step (et-export with its
verification and host reference on, as the firmware build runs it), peak RSS,
.pte size against the raw bytes of the tensors it holds, the planned arena
against its lower bound, and where the MACs run.

    python benchmarks/export.py [--target cortex-m55]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
KWS = REPO / "samples/kws/model.py"


def measure_ours(target: str) -> dict[str, object]:
    start = time.perf_counter()
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.common.runtime_quiet import quiet_imports

    options = ExportOptions(target=target, name="kws")
    options.times.seconds["import"] = time.perf_counter() - start
    with quiet_imports():
        artifacts = export(f"{KWS}:kws", options)
    pte = artifacts.files["kws.pte"]
    memory = artifacts.manifest["memory"]
    return {
        "steps": options.times.seconds,
        "pte_bytes": len(pte),
        "raw_tensor_bytes": _raw_tensor_bytes(pte),
        "planned_arena": sum(entry["bytes"] for entry in memory["planned"]),
        "lower_bound": memory["planned_lower_bound"],
        "macs": artifacts.manifest["macs"],
    }


def measure_upstream(target: str) -> dict[str, object]:
    """What ExecuTorch's Cortex-M documentation has a user write by hand."""
    start = time.perf_counter()
    import importlib.util

    from et_zephyr.common.runtime_quiet import quiet_imports
    from et_zephyr.common.timing import StepTimes
    from et_zephyr.firmware.analysis import mac_totals, operator_stats
    from et_zephyr.planning.memory import planned_lower_bound
    from upstream_flow import five_step

    times = StepTimes()
    times.seconds["import"] = time.perf_counter() - start
    with quiet_imports(), times.step("load model"):
        spec = importlib.util.spec_from_file_location("kws_model", KWS)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        model, example, calibration = module.kws()
    program = five_step(model, example, calibration, target, times)
    pte = bytes(program.buffer)
    graph = program.exported_program().graph_module
    plan = program.executorch_program.execution_plan[0]
    return {
        "steps": times.seconds,
        "pte_bytes": len(pte),
        "raw_tensor_bytes": _raw_tensor_bytes(pte),
        "planned_arena": sum(plan.non_const_buffer_sizes[1:]),
        "lower_bound": planned_lower_bound(graph),
        "macs": mac_totals(operator_stats(graph)),
    }


def _raw_tensor_bytes(pte: bytes) -> int:
    """Bytes of the constant tensors a program serializes, without padding."""
    import torch
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import Tensor
    from executorch.exir.tensor import get_scalar_type

    plan = deserialize_pte_binary(pte).program.execution_plan[0]
    total = 0
    for value in plan.values:
        tensor = value.val
        if isinstance(tensor, Tensor) and tensor.data_buffer_idx > 0:
            count = 1
            for size in tensor.sizes:
                count *= size
            total += count * torch.empty((), dtype=get_scalar_type(tensor.scalar_type)).itemsize
    return total


def run_flow(flow: str, target: str) -> dict[str, object]:
    """Run one flow in a child interpreter; add its wall time and peak RSS."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, __file__, "--flow", flow, "--target", target],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise SystemExit(f"the {flow} flow failed (status {status})")
    figures = json.loads(output)
    figures["seconds"] = time.perf_counter() - start
    figures["peak_rss_mib"] = usage.ru_maxrss / 1024
    return figures


def print_table(target: str, flows: dict[str, dict]) -> None:
    print(f"KWS DS-CNN export for {target}\n")
    rows = [
        ("wall time", lambda f: f"{f['seconds']:.1f} s"),
        ("peak RSS", lambda f: f"{f['peak_rss_mib']:.0f} MiB"),
        (".pte size", lambda f: f"{f['pte_bytes']:,} B"),
        ("raw tensor bytes in it", lambda f: f"{f['raw_tensor_bytes']:,} B"),
        ("planned arena", lambda f: f"{f['planned_arena']:,} B"),
        ("arena lower bound", lambda f: f"{f['lower_bound']:,} B"),
        (
            "MACs on CMSIS-NN",
            lambda f: f"{f['macs']['cmsis_nn']:,} / {f['macs']['total']:,}",
        ),
    ]
    names = list(flows)
    steps = list(dict.fromkeys(step for f in flows.values() for step in f["steps"]))
    for step in steps:
        rows.insert(len(rows) - 6, (f"  {step}", lambda f, s=step: _seconds(f["steps"], s)))
    rows.insert(
        1, ("  ratio to upstream", lambda f: f"{f['seconds'] / flows['upstream']['seconds']:.2f} x")
    )
    width = max(len(label) for label, _ in rows)
    print(f"{'':{width}}  " + "  ".join(f"{name:>22}" for name in names))
    for label, cell in rows:
        print(f"{label:{width}}  " + "  ".join(f"{cell(flows[n]):>22}" for n in names))


def _seconds(steps: dict[str, float], step: str) -> str:
    return f"{steps[step]:.2f} s" if step in steps else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cortex-m55")
    parser.add_argument("--flow", choices=("et-export", "upstream"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flow == "et-export":
        print(json.dumps(measure_ours(args.target)))
    elif args.flow == "upstream":
        print(json.dumps(measure_upstream(args.target)))
    else:
        flows = {flow: run_flow(flow, args.target) for flow in ("et-export", "upstream")}
        print_table(args.target, flows)


if __name__ == "__main__":
    main()
