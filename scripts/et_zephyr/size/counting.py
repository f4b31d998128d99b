# SPDX-License-Identifier: Apache-2.0
"""Run a firmware under QEMU with the instruction counter and read what it counted."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ExportError
from .qemu import QemuCommand
from .window import Window

_WINDOW = re.compile(r"^# window (\d+) (\d+)\s*$")


@dataclass
class Count:
    """The histogram file, each window's instruction count and the firmware's console."""

    histogram: Path
    windows: list[int]
    console: str


def read_windows(path: Path) -> list[int]:
    """The per-window totals the plugin writes at the top of its histogram."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    return [int(m.group(2)) for m in map(_WINDOW.match, lines) if m is not None]


def count_instructions(
    command: QemuCommand,
    plugin: Path,
    window: Window,
    histogram: Path,
    *,
    windows: int = 1,
    skip: int = 0,
    until: str | None = None,
    timeout: float = 300.0,
) -> Count:
    """Run `command` with the plugin counting `windows` windows into `histogram`, after
    `skip` windows it passes over (warm-up inferences).

    Without `until`, QEMU ends when the last window closes (the plugin's
    exit_on_end). With it, the firmware runs on until it prints a line holding
    `until` (e.g. its outputs after the inference), then QEMU is stopped.
    """
    if "," in str(histogram):
        raise ExportError(f"{histogram}: QEMU's -plugin options cannot hold a ',' in a path")
    histogram.unlink(missing_ok=True)
    options = [
        f"start=0x{window.start:x}",
        f"end=0x{window.end:x}",
        f"hist={histogram}",
        f"windows={windows}",
        f"skip={skip}",
    ]
    if until is None:
        options.append("exit_on_end=on")
    argv = [*command.argv, "-plugin", ",".join([str(plugin), *options])]
    process = subprocess.Popen(
        argv,
        cwd=command.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    lines: list[str] = []
    finished = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if until is not None and until in line:
                break
        finished.set()

    threading.Thread(target=read, daemon=True).start()
    started = time.monotonic()
    in_time = finished.wait(timeout)
    if process.poll() is None:
        _stop(process)
    elapsed = time.monotonic() - started
    console = "".join(lines)
    log = histogram.with_suffix(".log")
    log.write_text(console)
    counted = read_windows(histogram)
    last = next((line.strip() for line in reversed(lines) if line.strip()), "no output")
    if not in_time:
        raise ExportError(
            f"timeout after {elapsed:.0f} s: {len(counted)} of {windows} inference windows "
            f"counted (console: {log})"
        )
    if until is not None and until not in console:
        raise ExportError(
            f"QEMU exited (code {process.returncode}) before the firmware printed '{until}': "
            f"{last} (console: {log})"
        )
    if len(counted) < windows:
        raise ExportError(
            f"QEMU exited (code {process.returncode}) after {len(counted)} of {windows} "
            f"inference windows: {last} (console: {log})"
        )
    return Count(histogram, counted, console)


def _stop(process: subprocess.Popen[str]) -> None:
    """End QEMU and anything it started (its process group)."""
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue
