# SPDX-License-Identifier: Apache-2.0
"""Example inputs that are Python numbers become constants of the program."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import MODELS
from et_zephyr.api import ExportOptions, export
from et_zephyr.artifacts import write_outputs
from et_zephyr.errors import ExportError
from et_zephyr.reference.emulate import run_pte


def test_a_number_input_is_bound_and_the_program_takes_the_tensors(tmp_path) -> None:
    artifacts = export(f"{MODELS}:scaled_sum", ExportOptions(name="m"))
    assert [i["shape"] for i in artifacts.manifest["inputs"]] == [[1, 8], [1, 8]]
    write_outputs(artifacts, tmp_path)
    vectors = np.load(tmp_path / "m.vectors.npz")
    pte = (tmp_path / "m.pte").read_bytes()
    for v in range(len(vectors["input_0"])):
        x, y = (torch.from_numpy(vectors[f"input_{i}"][v]) for i in (0, 1))
        (output,) = run_pte(pte, (x, y), "mve")
        assert output.numpy().tobytes() == vectors["output_0"][v].tobytes()
        # The host reference is the model's with alpha = 0.5, to a few INT8 steps.
        scale = artifacts.manifest["outputs"][0]["scale"]
        assert torch.allclose(output, torch.relu(x + 0.5 * y), atol=4 * scale)


def test_a_number_that_varies_across_calibration_is_refused() -> None:
    with pytest.raises(ExportError, match=r"input 1 is the Python number 0.5 .* but 1.5"):
        export(f"{MODELS}:scaled_sum_varying", ExportOptions())
