# SPDX-License-Identifier: Apache-2.0
"""The firmware build's generator places a model's arenas in devicetree memory regions:
one array per planned buffer of an et-export --fast-arena program, each in the section
of the region Kconfig names, handed to et_zephyr_init() as planned_buffers; a region too
small for the arenas placed in it fails the build with the bytes needed; a program or
arenas too large for the board's flash or RAM (from its devicetree) stop the configure
step with one line naming the sizes, the region and what would help."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KWS_MODEL, REPO
from et_zephyr.api import ExportOptions, export
from et_zephyr.artifacts import write_outputs

GENERATOR = REPO / "zephyr/cmake/et_zephyr_gen.py"


@pytest.fixture(scope="module")
def fast_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kws-fast")
    write_outputs(export(KWS_MODEL, ExportOptions(name="kws", fast_arena=12 * 1024)), out)
    return out


def _generate(
    export_dir: Path, out: Path, *regions: str, board: tuple[str, ...] = (), defaults=()
) -> subprocess.CompletedProcess:
    import executorch

    wheel = Path(executorch.__path__[0])
    command = [
        sys.executable, str(GENERATOR), "--pte", str(export_dir / "kws.pte"), "--name", "kws",
        "--manifest", str(export_dir / "kws.json"), "--conf", str(export_dir / "kws.conf"),
        "--schemas", str(export_dir / "kws.schemas.yaml"), "--executorch-dir", str(wheel),
        "--isa", "mve", "--cpu", "cortex-m55", "--scratch-kernel", "depthwise_conv_mve",
        "--scratch-kernel", "conv_mve", "--no-kernel-sources", "--out-dir", str(out),
        *(f"--region={region}" for region in regions), *board,
        *(f"--default-region={region}" for region in defaults),
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True)


def test_each_planned_buffer_gets_its_own_array_in_its_region(fast_export, tmp_path) -> None:
    # Sizes as Zephyr's dt_reg_size() gives them (hex) or in decimal.
    run = _generate(fast_export, tmp_path, "planned2=ISRAM:0x400000", "method=SRAM:2097152")
    assert run.returncode == 0, run.stderr
    source = (tmp_path / "kws_model.c").read_text()
    assert "static uint8_t kws_planned1_arena[" in source
    assert '__attribute__((section("ISRAM.kws_planned2_arena")))' in source
    assert '__attribute__((section("SRAM.kws_method_arena")))' in source
    assert "kws_planned_buffers[] = {kws_planned1_arena, kws_planned2_arena}" in source
    assert ".num_planned_buffers = 2," in source and ".planned_arena = NULL," in source
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler")
    subprocess.run(
        [compiler, "-std=c11", "-Wall", "-Werror", "-c", f"-I{tmp_path}",
         f"-I{REPO / 'lib/include'}", str(tmp_path / "kws_model.c"), "-o",
         str(tmp_path / "kws_model.o")],
        check=True,
    )  # fmt: skip


def test_a_region_too_small_names_the_bytes_needed(fast_export, tmp_path) -> None:
    run = _generate(fast_export, tmp_path, "planned2=ISRAM:0x1000")
    assert run.returncode != 0
    assert "memory region ISRAM has 4096 bytes, the model's arenas placed there need" in run.stderr
    assert "planned2" in run.stderr


def test_a_one_buffer_program_keeps_one_arena(tmp_path) -> None:
    single = tmp_path / "single"
    write_outputs(export(KWS_MODEL, ExportOptions(name="kws")), single)
    run = _generate(single, tmp_path / "gen", "planned1=SRAM:2097152")
    assert run.returncode == 0, run.stderr
    source = (tmp_path / "gen" / "kws_model.c").read_text()
    assert '__attribute__((section("SRAM.kws_planned_arena")))' in source
    assert ".num_planned_buffers = 0," in source


def _board(flash: int, ram: int) -> tuple[str, ...]:
    flash_node = "/soc/flash-controller@40022000/flash@8000000"
    return (
        "--board", "nucleo_l4r5zi", f"--board-flash={flash_node}:{flash:#x}",
        f"--board-ram=/memory@20000000:{ram:#x}",
    )  # fmt: skip


def test_a_program_larger_than_the_flash_stops_the_build(fast_export, tmp_path) -> None:
    program = (fast_export / "kws.pte").stat().st_size
    run = _generate(fast_export, tmp_path, board=_board(program - 1, 1 << 20))
    assert run.returncode == 1
    line = run.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert f"the program ({program:,} B) does not fit nucleo_l4r5zi's flash (flash@8000000)" in line
    assert f"({program - 1:,} B)" in line and "smaller model" in line
    assert not (tmp_path / "kws_model.c").exists()


def test_arenas_larger_than_the_ram_name_every_arena_and_the_remedies(
    fast_export, tmp_path
) -> None:
    run = _generate(fast_export, tmp_path, board=_board(1 << 21, 4096))
    assert run.returncode == 1
    line = run.stderr.strip()
    assert "do not fit nucleo_l4r5zi's RAM (memory@20000000) (4,096 B)" in line
    assert "planned1" in line and "planned2" in line and "method" in line
    assert "--io int8" in line and "--fast-arena" in line and "PLANNED_REGION_1" in line


def test_arenas_in_a_region_of_their_own_do_not_count_against_the_ram(
    fast_export, tmp_path
) -> None:
    # The fast-arena program's second buffer goes to ISRAM: the RAM needs the rest only.
    run = _generate(fast_export, tmp_path, "planned2=ISRAM:0x400000", board=_board(1 << 21, 4096))
    assert run.returncode == 1 and "planned2" not in run.stderr
    source = tmp_path / "kws_model.c"
    run = _generate(
        fast_export, tmp_path, "planned2=ISRAM:0x400000", board=_board(1 << 21, 1 << 20)
    )
    assert run.returncode == 0, run.stderr
    assert source.exists()
    summary = next(line for line in run.stdout.splitlines() if "nucleo_l4r5zi:" in line)
    assert "of 2,097,152 B flash (flash@8000000)" in summary
    assert "of 1,048,576 B RAM (memory@20000000)" in summary
    assert "arenas in ISRAM " in summary and "of 4,194,304 B" in summary


def test_the_dtcm_by_default_only_where_the_arenas_fit_it(tmp_path: Path) -> None:
    single = tmp_path / "single"
    write_outputs(export(KWS_MODEL, ExportOptions(name="kws")), single)
    dtcm = [f"{arena}=DTCM:{{size}}" for arena in ("planned1", "method", "temp")]
    roomy = _generate(single, tmp_path / "roomy", defaults=[d.format(size=0x20000) for d in dtcm])
    assert roomy.returncode == 0, roomy.stderr
    source = (tmp_path / "roomy" / "kws_model.c").read_text()
    assert source.count('section("DTCM.kws_') == 3
    # Too small for them together: all stay in the main RAM, and the build says so.
    tight = _generate(single, tmp_path / "tight", defaults=[d.format(size=0x1000) for d in dtcm])
    assert tight.returncode == 0, tight.stderr
    assert "do not fit the board's DTCM (4,096 B): they stay in the main RAM" in tight.stdout
    assert 'section("DTCM' not in (tmp_path / "tight" / "kws_model.c").read_text()
    # A region Kconfig names is kept, and still checked.
    named = _generate(
        single,
        tmp_path / "named",
        "method=SRAM:0x10",
        defaults=[d.format(size=0x1000) for d in dtcm],
    )
    assert named.returncode != 0 and "memory region SRAM has 16 bytes" in named.stderr
