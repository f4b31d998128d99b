# SPDX-License-Identifier: Apache-2.0
"""Build the test runner for a model with west, and run it on the board's emulator."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..errors import ExportError

MODULE_ROOT = Path(__file__).resolve().parents[3]  # scripts/et_zephyr/compare/ -> the module
RUNNER_APP = MODULE_ROOT / "tests" / "models"


def build_runner(
    model: str,
    board: str,
    build_dir: Path,
    *,
    layers: str,
    stored_vectors: int,
    generated_vectors: int,
    export_args: list[str],
    kconfig: dict[str, str],
) -> None:
    """`west build` of tests/models (samples/kws's runner) for `model` ("file.py:factory"),
    the MAC layers `layers` ("all" or "0,3,...") exposed and each output printed in full."""
    file, _, factory = model.rpartition(":")
    if not file or not factory or not Path(file).is_file():
        raise ExportError(f"MODEL must be 'path/to/file.py:factory', got '{model}'")
    settings = {
        "TEST_MODEL": factory,
        "TEST_MODEL_FILE": str(Path(file).resolve()),
        "TEST_EXPOSE": layers,
        "TEST_STORED_VECTORS": str(stored_vectors),
        "TEST_GENERATED_VECTORS": str(generated_vectors),
        "TEST_EXPORT_ARGS": ";".join(["--layer-data", *export_args]),
        "CONFIG_APP_PRINT_OUTPUTS": "y",
        "CONFIG_APP_PRINT_OUTPUT_CRCS": "n",
        **kconfig,
    }
    command = [
        sys.executable,
        "-m",
        "west",
        "build",
        "-b",
        board,
        "-d",
        str(build_dir),
        str(RUNNER_APP),
        "--",
        *(f"-D{key}={value}" for key, value in settings.items()),
    ]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    (build_dir / "et-compare-build.log").parent.mkdir(parents=True, exist_ok=True)
    (build_dir / "et-compare-build.log").write_text(result.stdout)
    overflow = re.search(r"region `(\w+)' overflowed by (\d+) bytes", result.stdout)
    if overflow:
        raise ExportError(
            f"the firmware needs {overflow.group(2)} bytes more {overflow.group(1)} than "
            f"{board} has: every exposed layer's activation stays live; expose fewer "
            "(--layers 0,3,...)"
        )
    if result.returncode != 0:
        tail = [line for line in result.stdout.splitlines() if line.strip()][-1:]
        raise ExportError(
            f"west build failed ({build_dir / 'et-compare-build.log'}): "
            f"{tail[0] if tail else 'no output'}"
        )


def run_on_emulator(build_dir: Path, timeout: float) -> str:
    """Everything the firmware prints under `west build -t run` until its ET_DONE line."""
    command = [sys.executable, "-m", "west", "build", "-d", str(build_dir), "-t", "run"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    lines: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "ET_DONE" in line:
                done.set()
                return
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    start = time.monotonic()
    finished = done.wait(timeout)
    os.killpg(process.pid, signal.SIGTERM)
    process.wait()
    log = "".join(lines)
    (build_dir / "et-compare-device.log").write_text(log)
    if not finished or "ET_DONE" not in log:
        why = (
            f"no ET_DONE line after {time.monotonic() - start:.0f} s"
            if not finished
            else ("the emulator stopped before ET_DONE")
        )
        raise ExportError(f"{why} (log: {build_dir / 'et-compare-device.log'})")
    return log
