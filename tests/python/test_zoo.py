# SPDX-License-Identifier: Apache-2.0
"""A subset of benchmarks/zoo.py that must not regress: models of the breadth issue's
kinds (max pools on 32x32 maps, the 1-D family, transpose convolutions, spatial means,
nearest resizes, concatenations, GLUs, softmaxes over channels) export with every MAC
on Cortex-M kernels, no float operator, and no more layout copies than their edges
need."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import zoo  # noqa: E402

# Model: layout copies an inference (at the model's edges: a 3-D input into the 1-D
# family, a flatten of a map wider than 1x1, a 3-D result leaving the 1-D family).
SUBSET = {
    "cifar_cnn": 1,
    "har_cnn": 1,
    "tcn": 1,
    "conv1d_autoencoder": 2,
    "conv_autoencoder": 0,
    "unet": 0,
    "yolo_style": 0,
    "fomo": 0,
    "squeezenet": 0,
    "shufflenet_v2": 0,
    "conformer_lite": 4,
}


@pytest.mark.parametrize("name", sorted(SUBSET))
def test_zoo_model_runs_in_int8_on_cortex_m_kernels(name: str) -> None:
    row = zoo.run_et_export(zoo.ZOO[name], "cortex-m4")
    assert row.error == ""
    assert row.cmsis_nn_share == 1.0
    assert row.float_ops == ()
    assert row.copies[0] == SUBSET[name]
