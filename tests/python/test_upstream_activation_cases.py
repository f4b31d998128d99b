# SPDX-License-Identifier: Apache-2.0
"""Upstream's own Cortex-M activation cases (ExecuTorch's ops/test_activation_quant.py,
shipped in the wheel) export, rank-1 ones included, and the serialized program
reproduces their test vectors; rank-0 and rank-5 models too."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from et_zephyr.api import ExportOptions, export
from et_zephyr.frontend.loading import ModelBundle
from et_zephyr.reference.emulate import run_pte
from executorch.backends.cortex_m.test.ops.test_activation_quant import test_cases


def _export_and_replay(model: torch.nn.Module, example: tuple[torch.Tensor, ...]) -> dict:
    artifacts = export(
        ModelBundle(model, example),
        ExportOptions(target="cortex-m55", name="case", calib_random=16),
    )
    with np.load(io.BytesIO(artifacts.files["case.vectors.npz"])) as data:
        vectors = {name: data[name] for name in data.files}
    for v in range(len(vectors["input_0"])):
        (result,) = run_pte(
            artifacts.files["case.pte"],
            (torch.from_numpy(np.asarray(vectors["input_0"][v])),),
            "mve",
        )
        assert result.numpy().tobytes() == vectors["output_0_bytes"][v].tobytes()
    assert artifacts.manifest["agreement"]["samples"] >= 4
    return artifacts.manifest


@pytest.mark.parametrize("name", sorted(test_cases))
def test_upstream_activation_case_exports(name: str) -> None:
    case = test_cases[name]
    example = case.get_example_inputs()
    manifest = _export_and_replay(case.model, example)
    assert manifest["outputs"][0]["shape"] == list(example[0].shape)
    assert "cortex_m::quantized_activation.out" in manifest["operators"]


class _TanhPlus(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) + x


@pytest.mark.parametrize("shape", [(), (3,), (1, 2, 3, 2, 2)])
def test_rank_0_1_and_5_models_export(shape: tuple[int, ...]) -> None:
    manifest = _export_and_replay(_TanhPlus(), (torch.randn(shape),))
    assert manifest["inputs"][0]["shape"] == list(shape)
    assert manifest["outputs"][0]["shape"] == list(shape)
