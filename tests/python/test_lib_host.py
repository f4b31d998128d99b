# SPDX-License-Identifier: Apache-2.0
"""lib/ on the host: its ctest suite, Cortex-M cross-compiles and clang-format."""

import subprocess

from conftest import REPO


def test_lib_builds_and_passes_its_host_tests(tmp_path) -> None:
    result = subprocess.run(
        [str(REPO / "tests/lib/run_host_tests.sh"), str(tmp_path / "build")],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "100% tests passed" in result.stdout
    assert "run_host_tests: all passed" in result.stdout
