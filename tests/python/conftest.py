# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: KWS exports are slow, so each target is exported once."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

from et_zephyr import pipeline  # noqa: E402
from et_zephyr.api import ExportOptions, export  # noqa: E402
from et_zephyr.artifacts import Artifacts, write_outputs  # noqa: E402
from et_zephyr.artifacts.test_inputs import Recipe, values  # noqa: E402
from et_zephyr.frontend.targets import resolve_target  # noqa: E402
from et_zephyr.reference.emulate import run_pte  # noqa: E402
from executorch.backends.cortex_m.passes.passes_utils import quantize_multiplier_aot  # noqa: E402
from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer  # noqa: E402
from executorch.exir.dialects._ops import ops as exir_ops  # noqa: E402

KWS_MODEL = f"{REPO / 'samples/kws/model.py'}:kws"
KERNELS = REPO / "lib/src/kernels"
# A semihosted program of et-zephyr's Helium kernels on QEMU's Cortex-M55.
HELIUM_KERNEL_FLAGS = ["-mcpu=cortex-m55", "-mfloat-abi=hard", f"-I{KERNELS}"]
MODELS = Path(__file__).with_name("models.py")
CONV = exir_ops.edge.cortex_m.quantized_conv2d.default
DEPTHWISE = exir_ops.edge.cortex_m.quantized_depthwise_conv2d.default


def need_tools(*tools: str) -> None:
    """Skip without these programs; in CI, where scripts/setup installed them, fail."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        message = f"needs {', '.join(missing)} (scripts/setup installs them)"
        if os.environ.get("CI"):
            pytest.fail(f"CI: {message}")
        pytest.skip(message)


def generator_module() -> ModuleType:
    """zephyr/cmake/et_zephyr_gen.py (a script, not a package module) imported."""
    spec = importlib.util.spec_from_file_location(
        "et_zephyr_gen", REPO / "zephyr/cmake/et_zephyr_gen.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["et_zephyr_gen"] = module
    spec.loader.exec_module(module)
    return module


def assert_replays(artifacts: Artifacts, out_dir: Path) -> None:
    """Write an export and run its .pte in the host emulator (tensors at their planned
    offsets, views reading their base's memory in their own dim order) on every stored
    and generated test input: each output's bytes in device memory are the reference's.
    A generated input's bytes are the ones the firmware writes from its recipe, element
    by element in the program's memory order (then quantized where the program takes
    INT8)."""
    write_outputs(artifacts, out_dir)
    vectors = np.load(out_dir / f"{artifacts.name}.vectors.npz")
    pte = (out_dir / f"{artifacts.name}.pte").read_bytes()
    inputs, outputs = artifacts.manifest["inputs"], artifacts.manifest["outputs"]
    for i, spec in enumerate(inputs):
        count = vectors[f"input_{i}"][0].size
        for v, words in enumerate(vectors[f"input_{i}_recipe"]):
            if spec["dtype"] == "float32" and words.any():
                step = float(np.array(words[2], dtype=np.uint32).view(np.float32))
                recipe = Recipe(int(words[0]), int(np.int32(np.uint32(words[1]))), step)
                written = values(recipe, count).tobytes()
                assert written == vectors[f"input_{i}_bytes"][v].tobytes(), (v, i)
    for v in range(len(vectors["input_0"])):
        samples = tuple(torch.from_numpy(vectors[f"input_{i}"][v]) for i in range(len(inputs)))
        results = run_pte(pte, samples, artifacts.manifest["target"]["isa"])
        for o, result in enumerate(results):
            physical = result.permute(outputs[o]["dim_order"]).contiguous().numpy().tobytes()
            assert physical == vectors[f"output_{o}_bytes"][v].tobytes(), (v, o)


def trained_like_requantization(
    g: torch.Generator, channels: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel int32 multipliers and shifts of scales between 2^-12 and 2^-1 (right
    shifts), as upstream's Cortex-M lowering derives them from a scale."""
    scales = torch.exp2(-1 - torch.rand(channels, generator=g) * 11)
    multipliers, shifts = zip(*(quantize_multiplier_aot(float(s)) for s in scales))
    return torch.tensor(multipliers, dtype=torch.int32), torch.tensor(shifts, dtype=torch.int32)


def build_semihosted(
    elf: Path,
    sources: list[Path],
    flags: list[str],
    include: Path,
    ram_size: int = 0x80000,
) -> None:
    """A semihosting test program for a Cortex-M (arm-none-eabi-g++, picolibc), code at 0
    and RAM at 0x20000000 as QEMU's mps2 and mps3-an547 machines have them."""
    subprocess.run(
        ["arm-none-eabi-g++", "-mthumb", *flags, "-O2", "-std=c++17", "-fno-exceptions",
         "-fno-rtti", "-Wall", "-Wextra", "-Werror", "--specs=picolibcpp.specs",
         "--oslib=semihost", f"-I{include}",
         "-Wl,--defsym=__flash=0x0", f"-Wl,--defsym=__flash_size={ram_size:#x}",
         "-Wl,--defsym=__ram=0x20000000", f"-Wl,--defsym=__ram_size={ram_size:#x}",
         *map(str, sources), "-o", str(elf)],
        check=True,
    )  # fmt: skip


def run_semihosted(elf: Path, machine: str, core: str, cwd: Path) -> None:
    """Run a semihosting test program (picolibc, --oslib=semihost) on one of QEMU's Arm
    machines in `cwd`, where it reads and writes its files; it must print "done"."""
    result = subprocess.run(
        ["qemu-system-arm", "-machine", machine, "-cpu", core, "-display", "none",
         "-monitor", "none", "-serial", "null", "-semihosting-config", "enable=on,target=native",
         "-kernel", str(elf)],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    console = result.stdout + result.stderr
    assert result.returncode == 0 and "done" in console, console


def lowered_by_upstream(
    model: torch.nn.Module,
    example_inputs: tuple[torch.Tensor, ...],
    calibration: list[tuple[torch.Tensor, ...]],
    target: str,
) -> tuple[torch.export.ExportedProgram, list[tuple[torch.Tensor, ...]]]:
    """The model through et-export's steps up to upstream's Cortex-M lowering,
    before et-export's own passes; with the calibration it was quantized on."""
    prepared = pipeline.prepare_model(model, example_inputs, calibration)
    graph = pipeline.capture_graph(prepared.model, prepared.example_inputs)
    streams = [[sample] for sample in prepared.calibration]  # one hop each
    fake_quant = pipeline.quantize(graph, CortexMQuantizer(), streams, lambda s: s)
    edge = pipeline.to_edge_dialect(fake_quant, prepared.example_inputs)
    return pipeline.lower_to_cortex_m(edge, resolve_target(target)), prepared.calibration


@dataclass
class Export:
    """One export written to disk."""

    out_dir: Path
    name: str
    warnings: list[str]

    def path(self, suffix: str) -> Path:
        return self.out_dir / f"{self.name}{suffix}"

    @property
    def manifest(self) -> dict:
        return json.loads(self.path(".json").read_text())


@pytest.fixture(scope="session")
def export_kws(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Export]:
    cache: dict[tuple[str, str | None], Export] = {}

    def run(target: str, isa: str | None = None) -> Export:
        key = (target, isa)
        if key not in cache:
            warnings: list[str] = []
            options = ExportOptions(target=target, isa=isa, name="kws", warn=warnings.append)
            out_dir = tmp_path_factory.mktemp(f"kws-{target}-{isa or 'auto'}")
            write_outputs(export(KWS_MODEL, options), out_dir)
            cache[key] = Export(out_dir, "kws", warnings)
        return cache[key]

    return run
