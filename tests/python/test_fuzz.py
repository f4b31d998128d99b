# SPDX-License-Identifier: Apache-2.0
"""lib/ under AddressSanitizer + UndefinedBehaviorSanitizer on the host (clang).

- tests/fuzz/pte_fuzzer (libFuzzer over et_zephyr_init/run) replays every input of
  tests/fuzz/regressions (each once crashed it) and fuzzes for a bounded minute,
  seeded with et-export's hello and kws programs and tests/lib's affine_relu and
  missing_op;
- tests/fuzz/pte_soak: 1,000 init + run of affine_relu (portable kernels, runs to
  the end with identical outputs every time) and 1,000 inits of hello and kws (their
  cortex_m kernels are not in CI: each init refuses with ET_ZEPHYR_ERR_OPERATOR_MISSING
  after loading, validating and resolving the program);
- tests/lib's whole ctest suite built with -DET_ZEPHYR_SANITIZE=ON.

The executorch wheel's runtime library is not instrumented: the sanitizers watch
lib/'s code and the harnesses, and catch the runtime's crashes as signals only.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("clang++") is None, reason="clang not installed")


def _fuzz_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("et_fuzz", REPO / "benchmarks" / "fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["et_fuzz"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fuzz() -> ModuleType:
    return _fuzz_module()


@pytest.fixture(scope="module")
def built(fuzz: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("fuzz")
    seeds = fuzz.export_seeds(work / "programs", REPO / "build" / "et" / "kws" / "kws.pte")
    return fuzz.build(work / "build"), seeds


def test_regression_inputs_no_longer_crash(fuzz: ModuleType, built: tuple[Path, dict]) -> None:
    build, _ = built
    inputs = sorted((REPO / "tests" / "fuzz" / "regressions").glob("*.pte"))
    assert len(inputs) >= 4
    result = fuzz.replay(build / "pte_fuzzer", inputs)
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"Running {len(inputs)} inputs 1 time(s) each" in result.stderr
    for path in inputs:
        assert f"Executed {path}" in result.stderr


def test_bounded_fuzzing_finds_nothing(
    fuzz: ModuleType, built: tuple[Path, dict], tmp_path: Path
) -> None:
    build, _ = built
    # A minute on both cores. Inputs that crash the executorch wheel's own kernels
    # (type-confused kernel arguments, tests/fuzz/known, benchmarks/RESULTS.md) are not
    # lib/'s; any other crash, ASan or UBSan report fails the test.
    work = tmp_path / "work"
    shutil.copytree(build.parent / "programs", work / "programs")
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "fuzz.py"), "--seconds", "55", "--jobs", "2"]
        + ["--work-dir", str(work), "--runs", "20000000"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    log = result.stdout + result.stderr
    artifacts = sorted((work / "artifacts").glob("*"))
    ours = [p for p in artifacts if not fuzz.in_wheel(work / "build" / "pte_fuzzer", p)]
    assert not ours, f"findings in lib/: {ours}\n{log[-6000:]}"
    executions = re.search(r"executions\s+([\d,]+)", result.stdout)
    assert executions is not None, log[-4000:]
    assert int(executions.group(1).replace(",", "")) > 20_000, log[-3000:]
    coverage = re.search(r"coverage \(cov: edges\)\s+([\d,]+)", result.stdout)
    assert coverage is not None and int(coverage.group(1).replace(",", "")) > 300, log[-3000:]


@pytest.mark.parametrize(
    ("program", "status", "runs"),
    [
        ("affine_relu", "ET_ZEPHYR_OK", 1000),
        ("hello", "ET_ZEPHYR_ERR_OPERATOR_MISSING", 0),
        ("kws", "ET_ZEPHYR_ERR_OPERATOR_MISSING", 0),
    ],
)
def test_thousand_inits_under_sanitizers(
    built: tuple[Path, dict], program: str, status: str, runs: int
) -> None:
    build, seeds = built
    result = subprocess.run(
        [str(build / "pte_soak"), str(seeds[program]), "1000", status],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"pte_soak: 1000 inits ({status}), {runs} runs, outputs identical" in result.stdout


def test_lib_suite_under_sanitizers(tmp_path: Path) -> None:
    build = tmp_path / "build"
    configure = ["cmake", "-S", str(REPO / "tests" / "lib"), "-B", str(build)]
    configure += ["-DCMAKE_C_COMPILER=clang", "-DCMAKE_CXX_COMPILER=clang++"]
    configure += ["-DET_ZEPHYR_SANITIZE=ON", "-DCMAKE_BUILD_TYPE=Debug"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    subprocess.run(configure, check=True, capture_output=True)
    built_ = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)
    assert built_.returncode == 0, built_.stdout[-4000:]
    flags = (build / "CMakeCache.txt").read_text()
    assert "ET_ZEPHYR_SANITIZE:BOOL=ON" in flags
    result = subprocess.run(
        ["ctest", "--test-dir", str(build), "--output-on-failure", "-E", "^cross\\."],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-6000:]
    assert "100% tests passed" in result.stdout
    assert "lib.init_run" in result.stdout and "lib.corrupt_bytes" in result.stdout
