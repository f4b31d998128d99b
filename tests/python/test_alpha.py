# SPDX-License-Identifier: Apache-2.0
"""add/sub with alpha: the Cortex-M passes refuse the keyword, et-export scales the
operand instead (pipeline.scale_alpha_operands)."""

from __future__ import annotations

import numpy as np
import torch
from conftest import MODELS
from et_zephyr.api import ExportOptions, export
from et_zephyr.artifacts import write_outputs
from et_zephyr.reference.emulate import run_pte


def test_alpha_becomes_a_scaled_operand_and_the_program_replays(tmp_path) -> None:
    artifacts = export(f"{MODELS}:alpha_add", ExportOptions(name="m", target="cortex-m4"))
    assert artifacts.manifest["agreement"]["max_steps_vs_fake_quant"] <= 1
    write_outputs(artifacts, tmp_path)
    vectors = np.load(tmp_path / "m.vectors.npz")
    pte = (tmp_path / "m.pte").read_bytes()
    scale = artifacts.manifest["outputs"][0]["scale"]
    for v in range(len(vectors["input_0"])):
        x, y = (torch.from_numpy(vectors[f"input_{i}"][v]) for i in (0, 1))
        (output,) = run_pte(pte, (x, y), "dsp")
        assert output.numpy().tobytes() == vectors["output_0"][v].tobytes()
    # The stored vectors are the example and held-out inputs the calibration covered.
    x, y = (torch.from_numpy(vectors[f"input_{i}"][0]) for i in (0, 1))
    (output,) = run_pte(pte, (x, y), "dsp")
    expected = (x + 0.5 * y) - (x - 2 * y)
    assert torch.allclose(output, expected, atol=6 * scale)
