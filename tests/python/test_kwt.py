# SPDX-License-Identifier: Apache-2.0
"""The keyword transformer sample: its shipped weights, and a program without float."""

from __future__ import annotations

import importlib.util

import numpy as np
import torch
from conftest import REPO
from et_zephyr import api
from et_zephyr.firmware.analysis import BYTE_COPIES

_spec = importlib.util.spec_from_file_location("kwt_model", REPO / "samples/kwt/model.py")
assert _spec is not None and _spec.loader is not None
kwt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kwt)

# Of the 12 shipped test clips (one per class, held-out voices); see RESULTS.md for
# the float and INT8 accuracy on the whole test split.
MIN_CORRECT_TEST_CLIPS = 10


def test_shipped_weights_classify_the_shipped_test_clips() -> None:
    model, _, calibration = kwt.kwt()
    assert kwt.WEIGHTS.exists() and len(calibration) == 16
    with np.load(kwt.TEST_CLIPS) as clips:
        features, labels = clips["features"], clips["labels"]
    assert features.shape == (len(kwt.LABELS), *kwt.INPUT_SHAPE[1:])
    with torch.no_grad():
        predicted = model.eval()(torch.from_numpy(features)).argmax(dim=1).numpy()
    assert (predicted == labels).sum() >= MIN_CORRECT_TEST_CLIPS


def test_the_exported_kwt_has_no_float_operator() -> None:
    artifacts = api.export(
        f"{REPO / 'samples/kwt/model.py'}:kwt", api.ExportOptions(target="cortex-m55", name="kwt")
    )
    operators = artifacts.manifest["operators"]
    floats = {op for op, stats in operators.items() if stats["runs_on"] == "portable"}
    assert floats <= BYTE_COPIES
    assert operators["et_zephyr::quantized_layer_norm.out"]["calls"] == 2 * kwt.DEPTH + 1
    agreement = artifacts.manifest["agreement"]
    assert agreement["top1_vs_fake_quant"] == 1.0 and agreement["top1_vs_float"] == 1.0
