# SPDX-License-Identifier: Apache-2.0
"""et-size on firmware images the test links itself with arm-none-eabi-gcc."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import REPO
from et_zephyr.errors import ExportError
from et_zephyr.size.cli import build_parser, run
from et_zephyr.size.footprint import classify, measure
from et_zephyr.size.instructions import _without_parameters
from et_zephyr.size.linker_map import InputSection, parse_map
from size_fixture import sources

FIXTURE = Path(__file__).with_name("size_fixture")
GCC = "arm-none-eabi-gcc"
pytestmark = pytest.mark.skipif(shutil.which(GCC) is None, reason="needs arm-none-eabi-gcc")


def link_firmware(build_dir: Path, model_bytes: int = sources.MODEL_BYTES) -> Path:
    """Compile the fixture sources where Zephyr would put them; link with a map."""
    objects = []
    for relative, text in sources.SOURCES.items():
        text = text.replace(f".space {sources.MODEL_BYTES}", f".space {model_bytes}")
        source = build_dir / relative
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(textwrap.dedent(text))
        obj = build_dir / f"{relative}.obj"
        subprocess.run(
            [GCC, "-mcpu=cortex-m4", "-mthumb", "-Os", "-ffunction-sections", "-fdata-sections",
             "-fno-exceptions", "-fno-unwind-tables", "-c", relative, "-o", f"{relative}.obj"],
            cwd=build_dir, check=True,
        )  # fmt: skip
        objects.append(str(obj.relative_to(build_dir)))
    (build_dir / "zephyr").mkdir(exist_ok=True)
    subprocess.run(
        [GCC, "-mcpu=cortex-m4", "-mthumb", "-nostdlib", "-Wl,--gc-sections",
         f"-T{FIXTURE / 'link.ld'}", "-Wl,-Map=zephyr/zephyr.map", "-o", "zephyr/zephyr.elf",
         *objects],
        cwd=build_dir, check=True,
    )  # fmt: skip
    return build_dir


def sections_from(firmware: Path, source: str, name_part: str) -> list[InputSection]:
    sections = parse_map(firmware / "zephyr/zephyr.map").sections
    return [s for s in sections if s.source == source and name_part in s.name]


def section_sizes(elf: Path) -> dict[str, int]:
    output = subprocess.run(
        ["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    sizes = {}
    for line in output.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


@pytest.fixture(scope="module")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return link_firmware(tmp_path_factory.mktemp("firmware"))


def test_known_bytes_land_in_their_components(firmware: Path) -> None:
    footprint = measure(firmware / "zephyr/zephyr.elf", firmware / "zephyr/zephyr.map")
    assert footprint.flash_region == "FLASH" and footprint.ram_region == "RAM"
    assert footprint.flash["model"] == sources.MODEL_BYTES
    assert "model" not in footprint.ram
    assert footprint.ram["arenas"] == sources.ARENA_BYTES + sources.SRAM_ARENA_BYTES
    # Arenas in two memory regions: each region's share.
    assert footprint.ram_by_region["RAM"]["arenas"] == sources.ARENA_BYTES
    assert footprint.ram_by_region["SRAM"] == {"arenas": sources.SRAM_ARENA_BYTES}
    assert footprint.ram["stacks"] == sources.STACK_BYTES
    assert footprint.ram["kernel registry"] == sources.REGISTRY_BYTES
    # Initialised data takes flash for its image and RAM at run time.
    assert footprint.flash["application"] >= sources.APP_DATA_BYTES
    assert footprint.ram["application"] == sources.APP_DATA_BYTES
    (kernel,) = sections_from(firmware, "app/op_quantized_linear.cpp.obj", "8cortex_m")
    assert classify(kernel, executable=True) == "Cortex-M kernels"
    for component in ("ExecuTorch core runtime", "CMSIS-NN", "Cortex-M kernels"):
        assert footprint.flash[component] > 0, component
        assert component not in footprint.ram


@pytest.mark.parametrize(
    ("source", "section", "component"),
    [
        ("app/libapp.a(pointwise_pair_mve.S.obj)", ".text", "et-zephyr kernels"),
        (
            "app/libapp.a(depthwise_conv_mve.cpp.obj)",
            ".text._ZN9et_zephyr6native30quantized_depthwise_conv2d_outE",
            "et-zephyr kernels",
        ),
        ("app/libapp.a(conv_mve.cpp.obj)", ".text._Z1fv", "et-zephyr kernels"),
        # The DSP-extension kernels' assembly and their helpers in anonymous namespaces.
        ("app/libapp.a(conv_sums_dsp.S.obj)", ".text", "et-zephyr kernels"),
        ("", ".text.et_zephyr_depthwise_sums_dsp", "et-zephyr kernels"),
        ("app/libapp.a(depthwise_conv_dsp.cpp.obj)", ".text._Z1fv", "et-zephyr kernels"),
        ("app/libapp.a(arm_nn_mat_mult_nt_t_s8.c.obj)", ".text.arm_nn_mat", "CMSIS-NN"),
    ],
)
def test_own_kernels_and_their_assembly_count_as_et_zephyr_kernels(
    source: str, section: str, component: str
) -> None:
    code = InputSection(output="text", name=section, address=0, size=4, source=source)
    assert classify(code, executable=True) == component


@pytest.mark.parametrize(
    ("demangled", "shown"),
    [
        (
            "(anonymous namespace)::pair((anonymous namespace)::K const&, int)",
            "(anonymous namespace)::pair(...)",
        ),
        ("ns::f(int (*)(int)) const", "ns::f(...)"),
        ("g(Tensor const&) [clone .isra.0]", "g(...)"),
        ("arm_nn_mat_mult_nt_t_s8", "arm_nn_mat_mult_nt_t_s8"),
    ],
)
def test_function_names_lose_only_their_parameter_list(demangled: str, shown: str) -> None:
    assert _without_parameters(demangled) == shown


def test_totals_match_the_elf_sections(firmware: Path) -> None:
    footprint = measure(firmware / "zephyr/zephyr.elf", firmware / "zephyr/zephyr.map")
    sizes = section_sizes(firmware / "zephyr/zephyr.elf")
    assert footprint.flash_total == sizes["text"] + sizes["rodata"] + sizes["datas"]
    assert footprint.ram_total == sizes["datas"] + sizes["bss"] + sizes["noinit"] + sizes["SRAM"]


def test_a_column_per_ram_region(firmware: Path) -> None:
    table = run(build_parser().parse_args([str(firmware)]))
    lines = table.splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.startswith("component"))
    header, rows = lines[header_at], lines[header_at + 1 :]
    assert header.split() == ["component", "flash", "(FLASH)", "RAM", "(RAM)", "RAM", "(SRAM)",
                              "RAM", "total"]  # fmt: skip
    arenas = next(row for row in rows if row.startswith("arenas")).split()
    total_ram = sources.ARENA_BYTES + sources.SRAM_ARENA_BYTES
    assert arenas[1:] == ["0", f"{sources.ARENA_BYTES:,}", f"{sources.SRAM_ARENA_BYTES:,}",
                          f"{total_ram:,}"]  # fmt: skip


def test_command_writes_json_and_plot_and_compares(firmware: Path, tmp_path: Path) -> None:
    bigger = link_firmware(tmp_path / "bigger", model_bytes=sources.MODEL_BYTES + 1000)
    args = build_parser().parse_args([str(bigger), "--compare", str(firmware)])
    table = run(args)
    model_row = next(line for line in table.splitlines() if line.startswith("model"))
    assert model_row.split() == ["model", "5,096", "+1,000", "0", "0"]
    document = json.loads((bigger / "size.json").read_text())
    assert document["flash"]["model"] == sources.MODEL_BYTES + 1000
    assert (bigger / "size.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def function_addresses(elf: Path) -> dict[str, tuple[int, int]]:
    """(start, size) of each function, from arm-none-eabi-nm."""
    output = subprocess.run(
        ["arm-none-eabi-nm", "-S", "--defined-only", str(elf)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    functions = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "Tt":
            functions[parts[3]] = (int(parts[0], 16) & ~1, int(parts[1], 16))
    return functions


def test_executed_instructions_are_attributed_to_components(firmware: Path, tmp_path: Path) -> None:
    functions = function_addresses(firmware / "zephyr/zephyr.elf")
    conv_start, conv_size = functions["arm_convolve_s8"]
    runtime_start, _ = functions["et_runtime_execute"]
    wrapper_start, _ = functions["cortex_m_quantized_conv2d_out"]
    histogram = tmp_path / "hist.txt"
    histogram.write_text(
        f"0x{conv_start:x} 700\n0x{conv_start + conv_size - 2:x} 200\n"
        f"0x{runtime_start:x} 60\n0x{wrapper_start:x} 40\n# a comment\n0x{conv_start:x} 100\n"
    )
    args = build_parser().parse_args([str(firmware), "--instructions", str(histogram)])
    report = run(args)
    document = json.loads((firmware / "size.json").read_text())["instructions"]
    assert document == {
        "total": 1100,
        "CMSIS-NN": 1000,
        "Cortex-M kernels": 40,
        "ExecuTorch core runtime": 60,
    }
    lines = report.splitlines()
    assert any(line.split()[:3] == ["CMSIS-NN", "1,000", "90.9"] for line in lines if line)
    assert any(line.startswith("arm_convolve_s8 ") for line in lines)


def test_a_malformed_histogram_is_refused(firmware: Path, tmp_path: Path) -> None:
    histogram = tmp_path / "hist.txt"
    histogram.write_text("0x100 5\nnot a count\n")
    args = build_parser().parse_args([str(firmware), "--instructions", str(histogram)])
    with pytest.raises(
        ExportError, match=r"hist.txt:2: expected '0x<address> <count>\[ <taken>\]'"
    ):
        run(args)


def test_a_folder_without_firmware_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="zephyr.elf not found: is .* a Zephyr build folder"):
        run(build_parser().parse_args([str(tmp_path)]))


def test_registered_as_a_west_command() -> None:
    import yaml

    manifest = yaml.safe_load((REPO / "scripts/west-commands.yml").read_text())
    names = [c["name"] for entry in manifest["west-commands"] for c in entry["commands"]]
    assert names == ["et-export", "et-size", "et-compare"]
