# SPDX-License-Identifier: Apache-2.0
"""Keep the exporter and the firmware on the same ExecuTorch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import executorch.version


def check_executorch_source(source_dir: Path, warn: Callable[[str], None]) -> None:
    """Warn when the workspace's ExecuTorch sources are not the installed release.

    The .pte format and the operators' arguments must match between the AOT
    side (this Python package) and the runtime compiled into the firmware.
    """
    version_file = source_dir / "version.txt"
    if not version_file.is_file():
        return
    source = version_file.read_text().strip()
    installed = executorch.version.__version__.split("+")[0]
    if source != installed:
        warn(
            f"the workspace's ExecuTorch ({source_dir}) is {source} but the installed "
            f"executorch package is {installed}: the firmware may reject or misrun the .pte"
        )
