# SPDX-License-Identifier: Apache-2.0
"""--npu: Ethos-U partitions through Vela, the rest on Cortex-M kernels."""

import json
from pathlib import Path

from conftest import MODELS
from test_cli import et_export


def test_ethos_u_takes_the_convolution_and_the_report_says_so(tmp_path: Path) -> None:
    result = et_export(
        f"{MODELS}:small_cnn", "--npu", "ethos-u55-128", "--name", "cnn", "-o", "out", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "et-export: cnn for cortex-m55 (MVE) + ethos-u55-128" in result.stdout
    assert "Ethos-U" in result.stdout
    assert "Network summary" not in result.stdout  # Vela's own report stays quiet
    manifest = json.loads((tmp_path / "out/cnn.json").read_text())
    assert manifest["npu"] == "ethos-u55-128"
    assert manifest["macs"]["ethos_u"] >= 8 * 8 * 8 * 27  # the 3x3 convolution at least
    assert manifest["macs"]["ethos_u"] + manifest["macs"]["cmsis_nn"] == manifest["macs"]["total"]
    assert not (tmp_path / "out/cnn.vectors.npz").exists()


def test_unknown_npu_is_refused(tmp_path: Path) -> None:
    result = et_export(f"{MODELS}:tiny", "--npu", "ethos-u99", "-o", "out", cwd=tmp_path)
    assert result.returncode == 2
    assert "invalid choice: 'ethos-u99'" in result.stderr
    assert not (tmp_path / "out").exists()
