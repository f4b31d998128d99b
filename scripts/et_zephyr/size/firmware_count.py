# SPDX-License-Identifier: Apache-2.0
"""Count the instructions of a Zephyr build's inferences: plugin, window, QEMU, run."""

from __future__ import annotations

from pathlib import Path

from .counting import Count, count_instructions
from .plugin import build_plugin
from .qemu import qemu_command
from .window import Window, inference_window, symbol_window

HISTOGRAM = "insn_count.hist"


def count_build(
    build_dir: Path,
    *,
    windows: int = 1,
    skip: int = 0,
    timeout: float = 300.0,
    start: str | None = None,
    end: str | None = None,
    until: str | None = None,
) -> tuple[Window, Count]:
    """Run BUILD_DIR's firmware under its board's QEMU with the counter (built into
    BUILD_DIR/insn_count) over `windows` inferences after `skip` uncounted ones; the
    histogram goes to BUILD_DIR/insn_count.hist, the console to BUILD_DIR/insn_count.log."""
    # QEMU runs in the board's own working directory: every path it gets is absolute.
    build_dir = build_dir.resolve()
    elf = build_dir / "zephyr" / "zephyr.elf"
    command = qemu_command(build_dir)
    if start is not None or end is not None:
        window = symbol_window(elf, start or "", end or "")
    else:
        window = inference_window(elf)
    plugin = build_plugin(build_dir / "insn_count")
    count = count_instructions(
        command,
        plugin,
        window,
        build_dir / HISTOGRAM,
        windows=windows,
        skip=skip,
        until=until,
        timeout=timeout,
    )
    return window, count
