# SPDX-License-Identifier: Apache-2.0
"""The Helium sigmoid and tanh of int16 values equal the host reference's, on a Cortex-M55.

lib/src/kernels/activation_s16_mve.cpp computes CMSIS-NN's arm_nn_activation_s16 (a
256-entry sigmoid table, interpolated; tanh from the same table) 4 values a vector: the
recurrent kernels' gates (left shift 0) and an LSTM's tanh of its cell state (left shift
cell_scale_power + 12, -15 to 5). activation_mve/activation_cases.cpp runs it on QEMU's
mps3-an547 with CMSIS-NN's table (reference/gates_s16.py's copy) over every int16 input
at every left shift the kernels pass, counts of 1 to 9 (the vector's tail) and outputs
written over their inputs; every value is compared with reference/gates_s16.py's
activation_s16, written from CMSIS-NN's C.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import torch
from conftest import HELIUM_KERNEL_FLAGS, REPO, build_semihosted, need_tools, run_semihosted
from et_zephyr.reference import gates_s16

SOURCES = (
    Path(__file__).parent / "activation_mve" / "activation_cases.cpp",
    REPO / "lib/src/kernels/activation_s16_mve.cpp",
)
TOOLS = ("arm-none-eabi-g++", "qemu-system-arm")
EVERY_INT16 = np.arange(-(1 << 15), 1 << 15, dtype=np.int16)
KINDS = ("sigmoid", "tanh")


def cases() -> list[tuple[str, int, bool, np.ndarray]]:
    """(kind, left shift, in place, inputs) each."""
    rng = np.random.default_rng(11)
    out = []
    for kind in KINDS:
        for left_shift in range(-15, 6):
            out.append((kind, left_shift, left_shift % 2 == 0, EVERY_INT16))
        for count in range(1, 10):
            values = rng.integers(-(1 << 15), 1 << 15, count, dtype=np.int16)
            out.append((kind, int(rng.integers(-15, 6)), count % 2 == 1, values))
    return out


def table_source(path: Path) -> Path:
    """CMSIS-NN's sigmoid table as the C++ definition the kernel links against."""
    values = ", ".join(str(v) for v in gates_s16.SIGMOID_TABLE.tolist())
    path.write_text(
        "#include <stdint.h>\n"
        f'extern "C" const uint16_t sigmoid_table_uint16[256] = {{{values}}};\n'
    )
    return path


def test_activations_are_the_host_references(tmp_path: Path) -> None:
    need_tools(*TOOLS)
    all_cases = cases()
    with open(tmp_path / "cases.bin", "wb") as f:
        for kind, left_shift, in_place, values in all_cases:
            f.write(struct.pack("<4i", KINDS.index(kind), left_shift, in_place, values.size))
            f.write(values.astype("<i2").tobytes())
    elf = tmp_path / "activation_cases.elf"
    sources = [*SOURCES, table_source(tmp_path / "table.cpp")]
    build_semihosted(elf, sources, HELIUM_KERNEL_FLAGS, REPO / "lib/src")
    run_semihosted(elf, "mps3-an547", "cortex-m55", tmp_path)
    device = np.frombuffer((tmp_path / "results.bin").read_bytes(), "<i2")
    assert device.size == sum(values.size for *_, values in all_cases)
    at = 0
    for kind, left_shift, _, values in all_cases:
        got, at = device[at : at + values.size], at + values.size
        expected = gates_s16.activation_s16(
            torch.from_numpy(values.astype(np.int64)), left_shift, kind
        ).numpy()
        differing = np.flatnonzero(got != expected)
        assert differing.size == 0, (
            f"{kind}, left shift {left_shift}: {differing.size} of {values.size} differ, "
            f"first input {values[differing[0]]}: {got[differing[0]]} != "
            f"{expected[differing[0]]}"
        )
