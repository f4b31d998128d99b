# SPDX-License-Identifier: Apache-2.0
"""et_zephyr::quantized_layer_norm: the integer LayerNorm, on the host and on Cortex-M.

The kernel (lib/src/kernels/layer_norm.h) runs, built with g++ and on QEMU's Cortex-M3,
M4 and M55, over LayerNorms of realistic and extreme rows; every output byte must equal
the host reference's (reference/layer_norm.py), which must itself be the float
LayerNorm rounded to the output's quantization.
"""

from __future__ import annotations

import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from conftest import REPO, build_semihosted, need_tools, run_semihosted
from et_zephyr.reference import layer_norm

SOURCE = Path(__file__).parent / "layer_norm" / "layer_norm_cases.cpp"
CORES = [
    ("cortex-m3", "mps2-an385", ["-mcpu=cortex-m3"]),
    ("cortex-m4", "mps2-an386", ["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]),
    ("cortex-m55", "mps3-an547", ["-mcpu=cortex-m55", "-mfloat-abi=hard"]),
]


@dataclass
class Case:
    inputs: torch.Tensor  # int8 [rows, channels]
    input_zero_point: int
    output_zero_point: int
    params: layer_norm.LayerNormParameters
    # The float LayerNorm of the dequantized inputs, in output steps (None: extreme case).
    expected_steps: torch.Tensor | None = None

    def reference(self) -> torch.Tensor:
        p = self.params
        return layer_norm.layer_norm(
            self.inputs, p.multipliers, p.biases, self.input_zero_point,
            self.output_zero_point, p.epsilon, p.shift,
        )  # fmt: skip


def realistic(generator: torch.Generator, rows: int, channels: int, eps: float) -> Case:
    """Activations with an offset and outliers, gamma and beta as trained LayerNorms have
    them, scales from the data's range as an observer sets them."""
    x = torch.randn(rows, channels, generator=generator) * 1.5 + 0.3
    x[:, :: max(1, channels // 7)] *= 4
    input_scale = float(x.abs().max()) / 127.5
    input_zero_point = int(torch.randint(-20, 20, (1,), generator=generator))
    q = torch.clamp(torch.round(x / input_scale) + input_zero_point, -128, 127).to(torch.int8)
    gamma = torch.randn(channels, generator=generator) * 0.4 + 1.0
    beta = torch.randn(channels, generator=generator) * 0.3
    real = torch.nn.functional.layer_norm(
        (q.double() - input_zero_point) * input_scale, (channels,), gamma.double(),
        beta.double(), eps,
    )  # fmt: skip
    output_scale = float(real.max() - real.min()) / 255
    output_zero_point = int(round(-128 - float(real.min()) / output_scale))
    params = layer_norm.parameters(gamma, beta, eps, input_scale, output_scale, channels)
    steps = real / output_scale + output_zero_point
    return Case(q, input_zero_point, output_zero_point, params, steps)


def extreme(generator: torch.Generator) -> list[Case]:
    """Constant rows (zero variance, with and without eps), full-scale alternation, one
    channel, the widest row, negative, tiny and huge gains, saturating offsets."""

    def case(inputs, gamma, beta, eps, input_scale, output_scale, zx=0, zy=0) -> Case:
        channels = inputs.shape[1]
        params = layer_norm.parameters(gamma, beta, eps, input_scale, output_scale, channels)
        return Case(inputs.to(torch.int8), zx, zy, params)

    def uniform(rows: int, channels: int) -> torch.Tensor:
        return torch.randint(-128, 128, (rows, channels), generator=generator)

    alternating = torch.tensor([[-128, 127] * 16, [127, -128] * 16])
    return [
        case(torch.full((3, 16), 5), None, None, 0.0, 0.1, 0.02, zx=5),
        case(torch.full((2, 16), -128), torch.ones(16), torch.full((16,), 0.5), 1e-5, 0.1, 0.01),
        case(alternating, None, None, 1e-5, 0.05, 1 / 64, zy=-3),
        case(uniform(4, 1), None, torch.tensor([0.25]), 1e-5, 0.2, 0.01),
        case(uniform(2, layer_norm.MAX_CHANNELS), None, None, 1e-5, 0.1, 4 / 127),
        case(uniform(3, 64), -torch.rand(64, generator=generator) * 3, None, 1e-3, 0.1, 0.05),
        case(uniform(3, 48), torch.full((48,), 1e-4), torch.zeros(48), 1e-6, 0.1, 0.5),
        case(uniform(3, 48), torch.full((48,), 300.0), None, 1e-5, 0.1, 1.0, zy=10),
        case(uniform(3, 40), None, torch.linspace(-9, 9, 40), 1e-5, 0.1, 0.01),
        case(uniform(3, 24), None, None, 1e3, 0.01, 0.001),
        case(uniform(3, 24), None, None, 0.0, 1e-4, 0.03, zx=-7, zy=127),
    ]


def cases() -> list[Case]:
    generator = torch.Generator().manual_seed(13)
    shapes = [(16, 32), (49, 64), (4, 3), (8, 7), (2, 768), (5, 100), (1, 2)]
    found = [realistic(generator, rows, channels, eps) for rows, channels in shapes
             for eps in (1e-5, 1e-2)]  # fmt: skip
    return found + extreme(generator)


def write_cases(path: Path, all_cases: list[Case]) -> None:
    with path.open("wb") as out:
        for case in all_cases:
            p = case.params
            rows, channels = case.inputs.shape
            out.write(struct.pack("<5iq", rows, channels, case.input_zero_point,
                                  case.output_zero_point, p.shift, p.epsilon))  # fmt: skip
            out.write(p.multipliers.numpy().astype("<i4").tobytes())
            out.write(p.biases.numpy().astype("<i4").tobytes())
            out.write(case.inputs.numpy().tobytes())


def compare(device: bytes, all_cases: list[Case]) -> None:
    expected = b"".join(case.reference().numpy().tobytes() for case in all_cases)
    assert len(device) == len(expected)
    differing = [i for i, (d, e) in enumerate(zip(device, expected)) if d != e]
    assert not differing, f"{len(differing)} of {len(expected)} differ, first at {differing[0]}"


def test_reference_is_the_float_layer_norm_rounded() -> None:
    """Within half a step of the exact LayerNorm plus the fixed point's error: every
    output is the float result rounded, or its neighbour on a near-tie."""
    for case in cases():
        if case.expected_steps is None:
            continue
        expected = case.expected_steps.round().clamp(-128, 127)
        difference = (case.reference().double() - expected).abs()
        assert difference.max() <= 1
        assert (difference == 0).double().mean() > 0.995


def test_extreme_rows() -> None:
    constant, saturated = extreme(torch.Generator().manual_seed(0))[:2]
    # Zero variance, no eps: every deviation is 0, the output is beta (here 0 at zy 0).
    assert torch.equal(constant.reference(), torch.zeros(3, 16, dtype=torch.int8))
    # beta / s_y = 50: a constant row gives beta.
    assert torch.equal(saturated.reference(), torch.full((2, 16), 50, dtype=torch.int8))


@pytest.mark.parametrize("estimate", [0, 1], ids=["integer", "float-estimate"])
def test_host_build_matches_the_reference(tmp_path: Path, estimate: int) -> None:
    """Both ways the kernel computes: integers only (cores without an FPU) and a float32
    estimate checked against its error bound, the integer division deciding near ties."""
    need_tools("g++")
    all_cases = cases()
    write_cases(tmp_path / "cases.bin", all_cases)
    program = tmp_path / "layer_norm_cases"
    subprocess.run(
        ["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{REPO / 'lib/src'}",
         f"-DET_ZEPHYR_LAYER_NORM_FLOAT_ESTIMATE={estimate}", str(SOURCE), "-o", str(program)],
        check=True,
    )  # fmt: skip
    subprocess.run([str(program)], cwd=tmp_path, check=True, capture_output=True)
    compare((tmp_path / "results.bin").read_bytes(), all_cases)


@pytest.mark.parametrize(("core", "machine", "flags"), CORES, ids=[c[0] for c in CORES])
def test_cortex_m_matches_the_reference(
    tmp_path: Path, core: str, machine: str, flags: list[str]
) -> None:
    need_tools("arm-none-eabi-g++", "qemu-system-arm")
    all_cases = cases()
    write_cases(tmp_path / "cases.bin", all_cases)
    elf = tmp_path / "layer_norm_cases.elf"
    build_semihosted(elf, [SOURCE], flags, REPO / "lib/src")
    run_semihosted(elf, machine, core, tmp_path)
    compare((tmp_path / "results.bin").read_bytes(), all_cases)
