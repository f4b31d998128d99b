# SPDX-License-Identifier: Apache-2.0
"""Which host arithmetic a device run agrees with: et-zephyr's reference or ExecuTorch's
own Python implementations of the Cortex-M operators.

Reads a build of the samples' test runner (the folder twister's handler.log is in, or
any build whose console log is given with --log): its et-export program and test
inputs (et/NAME/), and the device's "ET_CRC" or "ET_OUTPUT" lines. Re-runs the
serialized program on the host (et_zephyr.reference.emulate) both ways and prints, per
reference, how many outputs differ from the device's and the first ones.

    python3 benchmarks/device_vs_host.py BUILD [BUILD ...] [--log FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zlib
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from et_zephyr.common.table import format_table  # noqa: E402
from et_zephyr.reference.emulate import run_pte  # noqa: E402

CRC_LINE = re.compile(r"ET_CRC (\d+) (\d+) \d+ ([0-9a-f]{8})")
OUTPUT_LINE = re.compile(r"ET_OUTPUT (\d+) (\d+) ([0-9a-f]*)")


def device_crcs(log: Path) -> dict[tuple[int, int], int]:
    crcs = {}
    for line in log.read_text(errors="replace").splitlines():
        if match := CRC_LINE.search(line):
            crcs[(int(match[1]), int(match[2]))] = int(match[3], 16)
        elif match := OUTPUT_LINE.search(line):
            crcs[(int(match[1]), int(match[2]))] = zlib.crc32(bytes.fromhex(match[3]))
    return crcs


def differing(build: Path, crcs: dict[tuple[int, int], int], own: bool) -> list[tuple[int, int]]:
    (vectors_file,) = build.glob("et/*/*.vectors.npz")
    name = vectors_file.name.removesuffix(".vectors.npz")
    manifest = json.loads((vectors_file.parent / f"{name}.json").read_text())
    pte = (vectors_file.parent / f"{name}.pte").read_bytes()
    outputs = manifest["outputs"]
    with np.load(vectors_file) as vectors:
        inputs = [vectors[f"input_{i}"] for i in range(len(manifest["inputs"]))]
    wrong = []
    for v in range(len(inputs[0])):
        sample = tuple(torch.from_numpy(np.asarray(values[v])) for values in inputs)
        results = run_pte(pte, sample, manifest["target"]["isa"], own_reference=own)
        for o, result in enumerate(results):
            data = result.permute(outputs[o]["dim_order"]).contiguous().numpy().tobytes()
            if zlib.crc32(data) != crcs.get((v, o)):
                wrong.append((v, o))
    return wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", type=Path, help="build folders")
    parser.add_argument("--log", type=Path, help="console log (default: BUILD/handler.log)")
    args = parser.parse_args(argv)
    rows = []
    for build in args.builds:
        crcs = device_crcs(args.log or build / "handler.log")
        if not crcs:
            raise SystemExit(f"device_vs_host: no ET_CRC or ET_OUTPUT lines for {build}")
        for label, own in (("et-zephyr", True), ("ExecuTorch's Python", False)):
            wrong = differing(build, crcs, own)
            first = ", ".join(f"input {v} output {o}" for v, o in wrong[:2])
            rows.append([str(build), label, f"{len(wrong)} of {len(crcs)}", first or "-"])
    header = ["build", "host reference", "outputs differing", "first"]
    print("\n".join(format_table([header, *rows], left=(0, 1, 3))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
