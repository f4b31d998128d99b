# SPDX-License-Identifier: Apache-2.0
"""Build the instruction counter, the QEMU TCG plugin in tools/insn_count, with CMake."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..errors import ExportError

SOURCE_DIR = Path(__file__).resolve().parents[3] / "tools" / "insn_count"
LIBRARY = "libinsn_count.so"


def build_plugin(out_dir: Path) -> Path:
    """Configure and build tools/insn_count into `out_dir` with the host C compiler;
    returns the plugin's path. CMake rebuilds only when the source changed."""
    if not (SOURCE_DIR / "CMakeLists.txt").is_file():
        raise ExportError(
            f"the instruction counter's source is not at {SOURCE_DIR}: "
            "run et-size from an et-zephyr checkout"
        )
    cmake = shutil.which("cmake")
    if cmake is None:
        raise ExportError("cmake not found: it builds the instruction counter (apt install cmake)")
    out_dir.mkdir(parents=True, exist_ok=True)
    steps = [
        [cmake, "-S", str(SOURCE_DIR), "-B", str(out_dir), "-DCMAKE_BUILD_TYPE=Release"],
        [cmake, "--build", str(out_dir)],
    ]
    for step in steps:
        result = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode != 0:
            (out_dir / "build.log").write_text(result.stdout)
            tail = [line for line in result.stdout.splitlines() if line.strip()][-1:]
            raise ExportError(
                f"building the instruction counter failed ({out_dir / 'build.log'}): "
                f"{tail[0] if tail else 'no output'}"
            )
    library = out_dir / LIBRARY
    if not library.is_file():
        raise ExportError(f"building the instruction counter made no {library}")
    return library
