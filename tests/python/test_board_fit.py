# SPDX-License-Identifier: Apache-2.0
"""`et-export --board`: the board's flash and RAM read from its devicetree in a Zephyr
workspace (here a small one of the test's own: a board root, an SoC .dtsi under the
devicetree roots' include folders, a macro header), the program and arenas held against
them, and one line naming the sizes, the region and what would help when they do not fit,
with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MODELS
from et_zephyr.errors import ExportError
from et_zephyr.firmware.board_memory import board_memory
from et_zephyr.firmware.fit import (
    Footprint,
    MemoryRegion,
    export_footprint,
    firmware_method_arena,
    fit_problem,
)
from test_cli import assert_clean_error, et_export

pytest.importorskip(
    "devicetree.dtlib", reason="Zephyr's python-devicetree (pip install devicetree)"
)

_SOC = """\
#include <mem.h>
/ {
    #address-cells = <1>;
    #size-cells = <1>;
    soc {
        #address-cells = <1>;
        #size-cells = <1>;
        flash0: flash@8000000 { reg = <0x08000000 SIZE_K(FLASH_K)>; };
        sram0: memory@20000000 { reg = <0x20000000 SIZE_K(RAM_K)>; };
        dtcm: memory@30000000 { reg = <0x30000000 SIZE_K(64)>; };
        spi@400cc000 {
            #address-cells = <1>;
            #size-cells = <0>;
            nor: is25wp128@0 { reg = <0>; size = <134217728>; };
        };
    };
};
"""


def _workspace(root: Path, flash_k: int, ram_k: int) -> Path:
    """A Zephyr tree with two boards: acme_widget (one SoC) and acme_duo/a1/cpuapp (a
    qualified name, revisions) whose flash is a serial NOR chip sized in bits."""
    base = root / "zephyr"
    (base / "include").mkdir(parents=True)
    (base / "include/mem.h").write_text("#define SIZE_K(x) ((x) * 1024)\n")
    (base / "dts/arm/acme").mkdir(parents=True)
    soc = _SOC.replace("FLASH_K", str(flash_k)).replace("RAM_K", str(ram_k))
    (base / "dts/arm/acme/soc.dtsi").write_text(soc)
    widget = base / "boards/acme/widget"
    widget.mkdir(parents=True)
    (widget / "acme_widget.dts").write_text(
        '/dts-v1/;\n#include <acme/soc.dtsi>\n#include "acme_widget-extra.dtsi"\n'
        "/ { chosen { zephyr,flash = &flash0; zephyr,sram = &sram0; }; };\n"
    )
    (widget / "acme_widget-extra.dtsi").write_text('/ { model = "widget"; };\n')
    duo = base / "boards/acme/duo"
    duo.mkdir(parents=True)
    (duo / "acme_duo_a1_cpuapp.dts").write_text(
        "/dts-v1/;\n#include <acme/soc.dtsi>\n"
        "/ { chosen { zephyr,flash = &nor; zephyr,sram = &dtcm; }; };\n"
    )
    # Its default revision B has a bigger chip: the build applies the revision's overlay.
    (duo / "board.yml").write_text(
        "board:\n  name: acme_duo\n  revision:\n    default: B\n"
        "    revisions:\n      - name: A\n      - name: B\n"
    )
    (duo / "acme_duo_a1_cpuapp_B.overlay").write_text("&nor { size = <268435456>; };\n")
    return base


def test_a_boards_flash_and_ram_come_from_its_chosen_nodes(tmp_path: Path) -> None:
    base = _workspace(tmp_path, flash_k=512, ram_k=96)
    widget = board_memory("acme_widget", base)
    assert widget.flash == MemoryRegion("flash (flash@8000000)", 512 * 1024)
    assert widget.ram == MemoryRegion("RAM (memory@20000000)", 96 * 1024)
    # The board name qualified with its SoC finds the same .dts.
    assert board_memory("acme_widget/acme9", base).ram == widget.ram
    duo = board_memory("acme_duo/a1/cpuapp", base)
    assert duo.flash == MemoryRegion("flash (is25wp128@0)", 256 * 1024 * 1024 // 8)
    assert duo.ram == MemoryRegion("RAM (memory@30000000)", 64 * 1024)


def test_an_unknown_board_names_the_roots_searched(tmp_path: Path) -> None:
    base = _workspace(tmp_path, flash_k=512, ram_k=96)
    with pytest.raises(ExportError, match=r"--board acme_gadget: no such board .*west boards"):
        board_memory("acme_gadget", base)


def test_a_program_and_arenas_are_held_against_each_region() -> None:
    flash, ram = MemoryRegion("flash (f)", 100_000), MemoryRegion("RAM (r)", 10_000)
    assert (
        fit_problem("b", Footprint(100_000, {"planned": 9_000, "method": 992}), flash, ram) is None
    )
    too_big = fit_problem("b", Footprint(100_001, {"planned": 1}), flash, ram)
    assert too_big is not None and too_big.startswith("the program (100,001 B) does not fit b's")
    # Each arena is aligned to 16 bytes, as the firmware's arrays are.
    crowded = fit_problem("b", Footprint(1, {"planned": 9_001, "method": 1_000}), flash, ram)
    assert crowded is not None and "(10,016 B: planned 9,001 B, method 1,000 B)" in crowded


def test_the_footprint_is_the_firmware_builds(tmp_path: Path) -> None:
    result = et_export(f"{MODELS}:tiny", "--target", "cortex-m4", "-o", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "out/models.json").read_text())
    footprint = export_footprint(manifest)
    conf = dict(
        line.split("=", 1)
        for line in (tmp_path / "out/models.conf").read_text().splitlines()
        if line.startswith("CONFIG_")
    )
    assert footprint.program == (tmp_path / "out/models.pte").stat().st_size
    assert footprint.arenas["planned"] == int(conf["CONFIG_ET_ZEPHYR_PLANNED_ARENA_SIZE"])
    method = int(conf["CONFIG_ET_ZEPHYR_METHOD_ARENA_SIZE"])
    assert footprint.arenas["method"] == firmware_method_arena(method) > method


@pytest.mark.parametrize(
    ("flash_k", "ram_k", "message"),
    [
        (1, 96, "does not fit acme_widget's flash (flash@8000000) (1,024 B)"),
        (512, 1, "do not fit acme_widget's RAM (memory@20000000) (1,024 B)"),
    ],
)
def test_a_model_too_big_for_the_board_stops_the_export_with_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flash_k: int, ram_k: int, message: str
) -> None:
    base = _workspace(tmp_path, flash_k=flash_k, ram_k=ram_k)
    monkeypatch.setenv("ZEPHYR_BASE", str(base))
    args = (f"{MODELS}:small_cnn", "--target", "cortex-m4", "-o", "out", "--board", "acme_widget")
    result = et_export(*args, cwd=tmp_path)
    assert_clean_error(result, message)
    assert not (tmp_path / "out").exists()


def test_a_model_that_fits_says_what_it_takes(tmp_path: Path, monkeypatch) -> None:
    base = _workspace(tmp_path, flash_k=512, ram_k=96)
    monkeypatch.setenv("ZEPHYR_BASE", str(base))
    args = (f"{MODELS}:small_cnn", "--target", "cortex-m4", "-o", "out", "--board", "acme_widget")
    result = et_export(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("board "))
    assert "acme_widget: program" in line and "of 524,288 B flash (flash@8000000)" in line
    assert "of 98,304 B RAM (memory@20000000)" in line
    assert (tmp_path / "out/models.pte").exists()


def test_board_without_a_workspace_is_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("ZEPHYR_BASE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no west either
    result = et_export(f"{MODELS}:tiny", "--board", "acme_widget", cwd=tmp_path)
    assert_clean_error(result, "--board reads the board's devicetree from a Zephyr workspace")
