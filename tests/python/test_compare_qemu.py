# SPDX-License-Identifier: Apache-2.0
"""`west et-compare` on QEMU: it finds a deliberately wrong kernel at the right layer.

Needs a west workspace with et-zephyr, Zephyr, CMSIS-NN and ExecuTorch (not in CI):
ET_ZEPHYR_WORKSPACE=/path/to/workspace python3 -m pytest tests/python/test_compare_qemu.py
Each case builds and runs the KWS model once (about a minute).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

WORKSPACE = os.environ.get("ET_ZEPHYR_WORKSPACE")
KWS = f"{REPO / 'samples/kws/model.py'}:kws"
FIRST = re.compile(r"first layer where the device differs: #(\d+) (\S+) \(([\w:]+),")

pytestmark = pytest.mark.skipif(
    not WORKSPACE, reason="set ET_ZEPHYR_WORKSPACE to a west workspace with et-zephyr"
)


def et_compare(tmp_path: Path, board: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "west",
            "et-compare",
            KWS,
            "-b",
            board,
            "-d",
            str(tmp_path / "build"),
            *args,
        ],
        cwd=WORKSPACE,
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.parametrize(
    ("board", "args", "layer", "module"),
    [
        # The third quantized_conv2d call: the first layer, blocks.3, then blocks.9.
        ("mps3/corstone300/an547", ["--inject", "cortex_m::quantized_conv2d.out:2"], 4, "blocks.9"),
        # 64 KiB of RAM holds three exposed activations of KWS, not all ten.
        (
            "qemu_cortex_m3",
            ["--layers", "2,3,4", "--inject", "cortex_m::quantized_depthwise_conv2d.out:1"],
            3,
            "blocks.6",
        ),
    ],
)
def test_injected_fault_is_found_at_its_layer(
    tmp_path: Path, board: str, args: list[str], layer: int, module: str
) -> None:
    result = et_compare(tmp_path, board, *args)
    assert result.returncode == 1, result.stdout + result.stderr
    match = FIRST.search(result.stdout)
    assert match, result.stdout
    assert (int(match.group(1)), match.group(2)) == (layer, module)
    assert (tmp_path / "build/et-compare.png").read_bytes()[:4] == b"\x89PNG"


def test_without_a_fault_the_device_equals_the_host(tmp_path: Path) -> None:
    result = et_compare(tmp_path, "mps3/corstone300/an547")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "device = host reference on every layer" in result.stdout
