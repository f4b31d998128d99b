# SPDX-License-Identifier: Apache-2.0
"""Float and INT8 accuracy of a shipped keyword model on the held-out test split.

    python samples/kws/evaluate.py [--model FILE.py:FACTORY] [--out-dir build/kws-data]
                                   [--limit N] [--float-ops OP,...]

Exports the model (default: this folder's model.py:kws; samples/kwt/model.py:kwt is the
keyword transformer) with et-export's Python API (INT8, Cortex-M55) and runs the
serialized program on the host with et-export's emulation of the device kernels, clip
by clip, next to the float model on the same features. --float-ops is et-export's:
those operators stay float on portable kernels (e.g. layer_norm,gelu for the KWT).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from classify import predict
from dataset import CACHE_DIR, CLIPS_PER_CLASS, SEED, evaluation_features, load

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "scripts"))

from et_zephyr.common.runtime_quiet import quiet_imports  # noqa: E402

with quiet_imports():
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.frontend.loading import load_model
    from et_zephyr.reference.emulate import run_pte

TARGET = "cortex-m55"
ISA = "mve"  # the M55's CMSIS-NN tier: the emulation rounds as Helium does


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    splits = load(args.out_dir, args.clips_per_class, args.seed)
    inputs, labels = evaluation_features(splits["test"], "test", args.seed)
    inputs, labels = inputs[: args.limit], labels[: args.limit]

    float_predictions = predict(load_model(args.model).model, inputs)

    started = time.monotonic()
    with quiet_imports():
        options = ExportOptions(target=TARGET, name="model", float_ops=args.float_ops)
        artifacts = export(args.model, options)
    print(f"export: {time.monotonic() - started:.0f} s")
    started = time.monotonic()
    int8_predictions = _run_int8(artifacts.files["model.pte"], inputs)
    print(f"host INT8 runs: {time.monotonic() - started:.0f} s")

    print(f"\ntest split: {len(labels)} clips, voices never heard in training")
    _row("float accuracy", float_predictions == labels)
    _row(f"INT8 accuracy (host, {TARGET})", int8_predictions == labels)
    _row("float/INT8 agreement", float_predictions == int8_predictions)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--model", default=f"{HERE / 'model.py'}:kws", help="FILE.py:FACTORY")
    parser.add_argument("--out-dir", type=Path, default=CACHE_DIR)
    parser.add_argument("--limit", type=int, help="evaluate only the first N test clips")
    parser.add_argument("--clips-per-class", type=int, default=CLIPS_PER_CLASS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--float-ops",
        type=lambda text: frozenset(text.split(",")),
        default=frozenset(),
        metavar="OP,...",
        help="keep these operators in float on portable kernels (et-export's --float-ops)",
    )
    return parser.parse_args(argv)


def _row(name: str, hits: np.ndarray) -> None:
    print(f"{name:<32}{np.mean(hits):>7.1%}  ({hits.sum()}/{hits.size})")


def _run_int8(pte: bytes, inputs: np.ndarray) -> np.ndarray:
    outputs = [run_pte(pte, (torch.from_numpy(sample[np.newaxis]),), ISA)[0] for sample in inputs]
    return np.array([int(output.argmax()) for output in outputs])


if __name__ == "__main__":
    main()
