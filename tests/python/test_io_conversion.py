# SPDX-License-Identifier: Apache-2.0
"""The C API's float <-> INT8 and INT16 helpers compute the host reference's integers on
every core.

An `--io int8` (`--io int16`) program leaves quantizing the input to the application; the
test vectors assume it quantizes as `et_zephyr.reference.edges.quantize_int8`
(`quantize_int16`) does. The helpers
(lib/src/io_conversion.cpp) run here on the host and, built with arm-none-eabi-g++, on
QEMU's Cortex-M3 (soft float), Cortex-M4 (FPv4, no rounding instruction) and Cortex-M55
(FPv5 and Helium, which GCC's -O2 vectorizes for) over rounding midpoints and the floats
next to them, saturation, infinities, NaN, denormals and random data, for scales and
zero points of real models; every byte must match.
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO, build_semihosted, need_tools, run_semihosted
from et_zephyr.reference import edges

SOURCES = [
    Path(__file__).parent / "io_conversion" / "conversion_cases.cpp",
    REPO / "lib/src/io_conversion.cpp",
]
# (scale, zero point): KWS's input, 1/255, a power of two, others seen in models.
QUANTIZATIONS = [
    (0.5311244130134583, 105),
    (1 / 255, -128),
    (0.0078125, 0),
    (0.1, 127),
    (0.0037, -1),
    (1e-5, 5),
    (12.5, -60),
]
GROUP = 256
# (core, QEMU machine, compiler flags).
CORES = [
    ("cortex-m3", "mps2-an385", ["-mcpu=cortex-m3"]),
    ("cortex-m4", "mps2-an386", ["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]),
    ("cortex-m55", "mps3-an547", ["-mcpu=cortex-m55", "-mfloat-abi=hard"]),
]


def cases() -> list[tuple[float, int, np.ndarray]]:
    """Groups of GROUP floats per quantization: midpoints and their neighbours, the
    saturation edges, special values, random data."""
    rng = np.random.default_rng(7)
    groups = []
    for scale, zero_point in QUANTIZATIONS:
        s = np.float32(scale)
        steps = np.arange(-140, 140, dtype=np.float32)
        midpoints = (steps + np.float32(0.5)) * s
        near = np.concatenate(
            [midpoints, np.nextafter(midpoints, np.float32(np.inf)),
             np.nextafter(midpoints, np.float32(-np.inf))]
        )  # fmt: skip
        special = np.array(
            [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3e38, -3e38,
             256 * s, -256 * s, 255.5 * s, -255.5 * s, 1e6, -1e6,
             32766.5 * s, -32766.5 * s, 32767.5 * s, -32767.5 * s, 65536 * s, -65537 * s],
            dtype=np.float32,
        )  # fmt: skip
        random = rng.uniform(-300, 300, 4 * GROUP).astype(np.float32) * s
        values = np.concatenate([near, special, random]).astype(np.float32)
        for start in range(0, len(values), GROUP):
            groups.append((scale, zero_point, values[start : start + GROUP]))
    return groups


def write_cases(path: Path, groups: list[tuple[float, int, np.ndarray]]) -> None:
    with path.open("wb") as out:
        for scale, zero_point, values in groups:
            out.write(struct.pack("<Ifi", len(values), scale, zero_point))
            out.write(values.astype("<f4").tobytes())


def expected(groups: list[tuple[float, int, np.ndarray]]) -> bytes:
    result = bytearray()
    for scale, zero_point, values in groups:
        scale32 = float(np.float32(scale))
        quantized = edges.quantize_int8(torch.from_numpy(values.copy()), scale32, zero_point)
        back = edges.dequantize_per_tensor(quantized, scale32, zero_point)
        result += quantized.numpy().tobytes() + back.numpy().astype("<f4").tobytes()
        quantized16 = edges.quantize_int16(torch.from_numpy(values.copy()), scale32, zero_point)
        back16 = edges.dequantize_per_tensor(quantized16, scale32, zero_point)
        result += quantized16.numpy().astype("<i2").tobytes()
        result += back16.numpy().astype("<f4").tobytes()
    return bytes(result)


def _compare(device: bytes, groups: list[tuple[float, int, np.ndarray]]) -> None:
    reference = expected(groups)
    assert len(device) == len(reference)
    differing = [i for i, (d, e) in enumerate(zip(device, reference)) if d != e]
    assert not differing, (
        f"{len(differing)} of {len(reference)} bytes differ, first at {differing[0]}"
    )


def test_host_build_matches_the_reference(tmp_path: Path) -> None:
    need_tools("g++")
    groups = cases()
    write_cases(tmp_path / "cases.bin", groups)
    program = tmp_path / "conversion_cases"
    subprocess.run(
        ["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{REPO / 'lib/include'}",
         *map(str, SOURCES), "-o", str(program)],
        check=True,
    )  # fmt: skip
    subprocess.run([str(program)], cwd=tmp_path, check=True, capture_output=True)
    _compare((tmp_path / "results.bin").read_bytes(), groups)


@pytest.mark.parametrize(("core", "machine", "flags"), CORES, ids=[core[0] for core in CORES])
def test_cortex_m_matches_the_reference(
    tmp_path: Path, core: str, machine: str, flags: list[str]
) -> None:
    need_tools("arm-none-eabi-g++", "qemu-system-arm")
    groups = cases()
    write_cases(tmp_path / "cases.bin", groups)
    elf = tmp_path / "conversion_cases.elf"
    build_semihosted(elf, SOURCES, flags, REPO / "lib/include")
    run_semihosted(elf, machine, core, tmp_path)
    _compare((tmp_path / "results.bin").read_bytes(), groups)


def test_reference_rounds_half_to_even_and_saturates() -> None:
    """The reference itself, on values whose answer is known by hand."""
    values = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 1000.0, -1000.0, float("nan"), float("inf")])
    got = edges.quantize_int8(values, 1.0, 3).tolist()
    assert got == [3, 5, 5, 3, 1, 127, -128, 3, 127]
    wide = torch.tensor([0.5, 1.5, -2.5, 40000.0, -40000.0, float("nan"), float("-inf")])
    assert edges.quantize_int16(wide, 1.0, 0).tolist() == [0, 2, -2, 32767, -32767, 0, -32767]
