# SPDX-License-Identifier: Apache-2.0
"""Generated test inputs: the firmware's C and et_zephyr.artifacts.test_inputs make the same floats,
and et-export's vectors hold them with their host reference."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from et_zephyr.artifacts import test_inputs
from et_zephyr.errors import ExportError

ROOT = Path(__file__).resolve().parents[2]
HEADER_DIR = ROOT / "samples" / "kws" / "src"
IO_CONVERSION = ROOT / "lib" / "src" / "io_conversion.cpp"

PROGRAM = r"""
#include <stdio.h>
#include "test_inputs.h"
int main(int argc, char **argv) {
    static float out[4096];
    struct vec_recipe recipe;
    unsigned long count;
    sscanf(argv[1], "%u", &recipe.seed);
    sscanf(argv[2], "%d", &recipe.offset);
    sscanf(argv[3], "%u", &recipe.step_bits);
    sscanf(argv[4], "%lu", &count);
    if (argc > 7) { /* scale, zero point, bits: an --io int8 or --io int16 input */
        static int16_t quantized[4096];
        float scale;
        int zero_point, bits;
        sscanf(argv[5], "%f", &scale);
        sscanf(argv[6], "%d", &zero_point);
        sscanf(argv[7], "%d", &bits);
        generate_quantized_input(quantized, count, &recipe, scale, zero_point, bits == 16);
        fwrite(quantized, bits / 8, count, stdout);
        return 0;
    }
    generate_input(out, count, &recipe);
    fwrite(out, sizeof(float), count, stdout);
    return 0;
}
"""


@pytest.fixture(scope="module")
def c_generator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler, cxx = shutil.which("cc") or shutil.which("gcc"), shutil.which("g++")
    if compiler is None or cxx is None:
        pytest.skip("no C and C++ compiler")
    folder = tmp_path_factory.mktemp("generator")
    (folder / "main.c").write_text(PROGRAM)
    binary = folder / "generate"
    include = [f"-I{HEADER_DIR}", f"-I{ROOT / 'lib' / 'include'}"]
    # -ffp-contract=fast as GCC's GNU C default: the one multiply leaves nothing to fuse.
    main = [compiler, "-O2", "-ffp-contract=fast", *include, "-c", str(folder / "main.c")]
    subprocess.run([*main, "-o", str(folder / "main.o")], check=True)
    conversion = [cxx, "-O2", "-std=c++17", *include, "-c", str(IO_CONVERSION)]
    subprocess.run([*conversion, "-o", str(folder / "io_conversion.o")], check=True)
    link = [cxx, str(folder / "main.o"), str(folder / "io_conversion.o"), "-o", str(binary)]
    subprocess.run(link, check=True)
    return binary


def test_c_and_python_make_the_same_floats(c_generator: Path) -> None:
    calibration = [(torch.randn(1, 3, 8, 8) * 4 + 1.5,) for _ in range(4)]
    for row in test_inputs.recipes(calibration, len(test_inputs.AMPLITUDES), seed=7):
        (recipe,) = row
        seed, offset, step_bits = recipe.as_words()
        signed = offset - (1 << 32) if offset >= 1 << 31 else offset
        result = subprocess.run(
            [str(c_generator), str(seed), str(signed), str(step_bits), "4096"],
            check=True,
            capture_output=True,
        )
        assert result.stdout == test_inputs.values(recipe, 4096).tobytes()


@pytest.mark.parametrize(("bits", "scale", "zero_point"), [(8, 0.0731, -17), (16, 0.00031, 0)])
def test_integer_inputs_are_the_floats_quantized_as_on_the_host(
    c_generator: Path, bits: int, scale: float, zero_point: int
) -> None:
    """An --io int8 (int16) program's generated input: the same floats, quantized in
    chunks by et_zephyr_quantize_int8() (_int16()); the host reference quantizes the whole
    input at once."""
    from et_zephyr.reference import edges

    quantize = edges.quantize_int16 if bits == 16 else edges.quantize_int8
    calibration = [(torch.randn(1, 3, 8, 8) * 4 + 1.5,) for _ in range(4)]
    for count in (4096, 1000, 31, 33):  # whole chunks of 32, and a partial last one
        for row in test_inputs.recipes(calibration, 4, seed=3):
            (recipe,) = row
            seed, offset, step_bits = recipe.as_words()
            signed = offset - (1 << 32) if offset >= 1 << 31 else offset
            arguments = [seed, signed, step_bits, count, repr(scale), zero_point, bits]
            result = subprocess.run(
                [str(c_generator), *map(str, arguments)], check=True, capture_output=True
            )
            floats = torch.from_numpy(test_inputs.values(recipe, count))
            expected = quantize(floats, scale, zero_point).numpy().tobytes()
            assert result.stdout == expected


def test_amplitudes_cover_the_calibration_range_and_beyond() -> None:
    calibration = [(torch.rand(1, 64) * 2 - 1,) for _ in range(8)]  # within [-1, 1]
    rows = test_inputs.recipes(calibration, 10, seed=0)
    peaks = [float(np.abs(test_inputs.values(row[0], 4096)).max()) for row in rows]
    assert min(peaks) < 0.3 and max(peaks) > 15  # a quarter of the range up to 16x
    assert sum(0.9 < peak < 1.1 for peak in peaks) >= 3  # most at the range itself
    assert len({row[0].seed for row in rows}) == 10  # distinct sequences


def test_materialized_inputs_fill_device_memory_order() -> None:
    example = torch.zeros(1, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    (recipe,) = test_inputs.recipes([(example + 1,), (example - 1,)], 1, seed=3)[0:1][0]
    (tensor,) = test_inputs.materialize((recipe,), (example,), [(0, 2, 3, 1)])
    nhwc = tensor.permute(0, 2, 3, 1).contiguous().numpy().tobytes()
    assert nhwc == test_inputs.values(recipe, example.numel()).tobytes()
    sequence = torch.zeros(1, 3, 7)
    (tensor,) = test_inputs.materialize((recipe,), (sequence,), [(0, 2, 1)])
    nlc = tensor.permute(0, 2, 1).contiguous().numpy().tobytes()
    assert nlc == test_inputs.values(recipe, sequence.numel()).tobytes()


def test_generation_needs_float_inputs() -> None:
    with pytest.raises(ExportError, match="float32 inputs; input 0 is int64"):
        test_inputs.recipes([(torch.zeros(4, dtype=torch.int64),)], 2, seed=0)
    # Models with other inputs export as before when no vector is generated.
    assert test_inputs.recipes([(torch.zeros(4, dtype=torch.int64),)], 0, seed=0) == []


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m3"])
def test_export_writes_generated_vectors_the_program_reproduces(target: str, tmp_path) -> None:
    import sys

    from et_zephyr.api import ExportOptions, export
    from et_zephyr.artifacts import write_outputs
    from et_zephyr.reference.emulate import run_pte

    sys.path.insert(0, str(ROOT / "samples" / "kws"))
    from gen_vectors import render

    options = ExportOptions(
        target=target, name="hello", vectors=2, generated_vectors=12, expose_activations="all"
    )
    artifacts = export(f"{ROOT / 'samples/hello/model.py'}:hello", options)
    write_outputs(artifacts, tmp_path)
    with np.load(tmp_path / "hello.vectors.npz") as data:
        vectors = {name: data[name] for name in data.files}
    recipes = vectors["input_0_recipe"]
    assert recipes.shape == (14, 3) and not recipes[:2].any() and recipes[2:, 0].all()
    for v, words in enumerate(recipes[2:], start=2):
        recipe = test_inputs.Recipe(
            int(words[0]),
            int(np.int32(np.uint32(words[1]))),
            float(np.uint32(words[2]).view(np.float32)),
        )
        assert vectors["input_0_bytes"][v].tobytes() == test_inputs.values(recipe, 8).tobytes()
    # Every output, exposed activations included, as the serialized program computes it.
    outputs = artifacts.manifest["outputs"]
    assert len(outputs) == 1 + 3
    pte = (tmp_path / "hello.pte").read_bytes()
    for v in range(14):
        results = run_pte(
            pte, (torch.from_numpy(vectors["input_0"][v]),), artifacts.manifest["target"]["isa"]
        )
        for o, result in enumerate(results):
            physical = result.permute(outputs[o]["dim_order"]).contiguous().numpy().tobytes()
            assert physical == vectors[f"output_{o}_bytes"][v].tobytes(), (v, o)
    header = render(
        {k: a for k, a in vectors.items() if k.endswith(("_bytes", "_recipe"))}, [], None
    )
    assert header.count("{NULL, 32}") == 12 and "vec_input_1_0[32]" in header
    assert f"{{0x{int(recipes[2][0]):08x}u, " in header
