# SPDX-License-Identifier: Apache-2.0
"""benchmarks/firmware.py --build-only: each memory region's use read from the link
step's table (ld's units are exact: B, or KB/MB/GB only for whole multiples), and a
model that cannot fit reported by the configure step's one line."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from conftest import REPO


def _firmware_script():
    spec = importlib.util.spec_from_file_location("firmware_bench", REPO / "benchmarks/firmware.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["firmware_bench"] = module
    spec.loader.exec_module(module)
    return module


FIRMWARE = _firmware_script()

_LINK = """\
[212/213] Linking CXX executable zephyr/zephyr.elf
Memory region         Used Size  Region Size  %age Used
           FLASH:      141236 B         2 MB      6.73%
             RAM:       39872 B       192 KB     20.28%
        IDT_LIST:          0 GB        32 KB      0.00%
            DTCM:       65536 B       128 KB     50.00%
Generating files from zephyr/zephyr.elf for board: nucleo_l4r5zi
"""


def _run(tmp_path: Path, log: str, fails: bool, monkeypatch) -> object:
    build_dir = tmp_path / "build-kws"

    def build(model, board, build_dir_, workspace, cmake_args):
        build_dir_.with_name(build_dir_.name + ".build.log").write_text(log)
        if fails:
            raise FIRMWARE.ExportError("west build failed")

    monkeypatch.setattr(FIRMWARE, "build", build)
    args = argparse.Namespace(cmake_arg=[])
    return FIRMWARE.build_fit("m.py:kws", "nucleo_l4r5zi", build_dir, tmp_path, args)


def test_every_used_region_with_its_size(tmp_path: Path, monkeypatch) -> None:
    fit = _run(tmp_path, _LINK, False, monkeypatch)
    assert fit.problem is None
    assert fit.regions == {
        "FLASH": (141236, 2 << 20),
        "RAM": (39872, 192 << 10),
        "DTCM": (65536, 128 << 10),
    }
    table = FIRMWARE.render_fits([fit])
    assert "FLASH 141,236 of 2,097,152 B (7 %)" in table and table.rstrip().endswith("yes")


def test_a_model_that_cannot_fit_says_why(tmp_path: Path, monkeypatch) -> None:
    line = (
        "et-zephyr: error: the program (553,232 B) does not fit mps3/corstone300/an547's "
        "flash (itcm@10000000) (524,288 B): export a smaller model"
    )
    fit = _run(tmp_path, f"-- et-zephyr: model\n{line}\nCMake Error at ...\n", True, monkeypatch)
    assert fit.problem.startswith("the program (553,232 B) does not fit")
    assert "no: the program (553,232 B)" in FIRMWARE.render_fits([fit])
    overflow = "region `FLASH' overflowed by 175112 bytes\n"
    fit = _run(tmp_path, overflow, True, monkeypatch)
    assert fit.problem == "west build failed"
