# SPDX-License-Identifier: Apache-2.0
"""A subset of benchmarks/zoo.py that must not regress: models of the breadth issue's
kinds (max pools on 32x32 maps, the 1-D family, transpose convolutions, spatial means,
nearest resizes, concatenations, GLUs, softmaxes over channels) export with every MAC
on Cortex-M kernels, no float operator, and no layout copy: the steps at their edges
(a [N, C, L] input into the 1-D family, a flatten into a linear, a transpose into a
Conv1d and back) read their source's bytes in place."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import zoo  # noqa: E402

SUBSET = (
    "cifar_cnn",
    "har_cnn",
    "tcn",
    "conv1d_autoencoder",
    "crnn",
    "conv_autoencoder",
    "unet",
    "yolo_style",
    "fomo",
    "squeezenet",
    "shufflenet_v2",
    "conformer_lite",
    "kwt",
)


@pytest.mark.parametrize("name", sorted(SUBSET))
def test_zoo_model_runs_in_int8_on_cortex_m_kernels(name: str) -> None:
    row = zoo.run_et_export(zoo.ZOO[name], "cortex-m4")
    assert row.error == ""
    assert row.cmsis_nn_share == 1.0
    assert row.float_ops == ()
    assert row.copies == (0, 0)
