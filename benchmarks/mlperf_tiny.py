#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The MLPerf Tiny models through et-export: program size, arena, MACs.

For each model and target: the .pte size, the planned activation arena and
its lower bound (the largest set of simultaneously live activations), the
method allocator, and the MACs and their share on CMSIS-NN kernels. Firmware
flash, RAM and instructions per inference are measured on QEMU by hand and
recorded in benchmarks/RESULTS.md.

    python benchmarks/mlperf_tiny.py [--targets cortex-m55,cortex-m33,cortex-m3] [--io int8]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))

MODELS = {
    "KWS DS-CNN": f"{HERE.parent / 'samples/kws/model.py'}:kws",
    "IC ResNet-8": f"{HERE / 'mlperf_tiny_models.py'}:resnet8",
    "VWW MobileNetV1-0.25": f"{HERE / 'mlperf_tiny_models.py'}:mobilenet_v1",
    "AD autoencoder": f"{HERE / 'mlperf_tiny_models.py'}:autoencoder",
}
COLUMNS = ("model", "target", ".pte", "arena", "lower bound", "ratio", "method", "MACs", "CMSIS-NN")


def measure(model: str, target: str, io: str) -> tuple[str, ...]:
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.common.runtime_quiet import quiet_imports
    from et_zephyr.frontend.io_mode import parse_io

    options = ExportOptions(target=target, verify=False, io=parse_io(io))
    with quiet_imports():
        manifest = export(model, options).manifest
    memory = manifest["memory"]
    planned = sum(entry["bytes"] for entry in memory["planned"])
    bound = memory["planned_lower_bound"]
    macs = manifest["macs"]
    return (
        f"{manifest['pte_bytes']:,}",
        f"{planned:,}",
        f"{bound:,}",
        f"{planned / bound:.3f}" if bound else "-",
        f"{memory['method_allocator']:,}",
        f"{macs['total']:,}",
        f"{100 * macs['cmsis_nn'] / macs['total']:.0f} %",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="cortex-m55,cortex-m33,cortex-m3")
    parser.add_argument("--io", default="float", help="et-export's --io (default: float)")
    args = parser.parse_args()
    targets = args.targets.split(",")
    rows = [COLUMNS]
    for name, model in MODELS.items():
        for target in targets:
            rows.append((name, target, *measure(model, target, args.io)))
            print(f"  measured {name} for {target}", file=sys.stderr)
    from et_zephyr.common.table import format_table

    print("\n".join(format_table(rows, left=(0, 1))))


if __name__ == "__main__":
    main()
