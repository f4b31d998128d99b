# SPDX-License-Identifier: Apache-2.0
"""The QEMU command line of a Zephyr build: what `west build -t run` would start."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import ExportError


@dataclass(frozen=True)
class QemuCommand:
    """QEMU's arguments (argv[0] is the emulator) and the folder it runs in."""

    argv: list[str]
    cwd: Path


def qemu_command(build_dir: Path) -> QemuCommand:
    """The emulator command of the build's `run_qemu` target, from its Ninja file.

    Zephyr defines that target only for boards it emulates with QEMU
    (board.cmake's `board_set_emulator_ifnset(qemu)`); any other board is refused.
    """
    if not (build_dir / "build.ninja").is_file():
        raise ExportError(
            f"{build_dir} has no build.ninja: the instruction count needs a Zephyr build "
            "made with Ninja (west build's default)"
        )
    ninja = shutil.which("ninja")
    if ninja is None:
        raise ExportError(
            "ninja not found: it reads the build's QEMU command (apt install ninja-build)"
        )
    result = subprocess.run(
        [ninja, "-C", str(build_dir), "-t", "commands", "run_qemu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    board = _cache_value(build_dir, "BOARD") or "this board"
    if result.returncode != 0:
        raise ExportError(
            f"{build_dir} is not a QEMU build: {board} has no run_qemu target "
            "(the instruction counter runs under qemu-system-*)"
        )
    return parse_commands(result.stdout, build_dir)


def parse_commands(text: str, build_dir: Path) -> QemuCommand:
    """The last qemu-system-* command in Ninja's command list, with its `cd`."""
    for line in reversed(text.splitlines()):
        for part in reversed(line.split("&&")):
            words = shlex.split(part)
            if words and Path(words[0]).name.startswith("qemu-system-"):
                cwd = build_dir
                for earlier in line.split("&&"):
                    earlier_words = shlex.split(earlier)
                    if len(earlier_words) == 2 and earlier_words[0] == "cd":
                        cwd = Path(earlier_words[1])
                return QemuCommand(_runnable(words), cwd)
    raise ExportError(f"{build_dir}'s run_qemu target starts no qemu-system-* command")


def _runnable(argv: list[str]) -> list[str]:
    emulator = argv[0]
    if not Path(emulator).is_file() and shutil.which(Path(emulator).name) is None:
        raise ExportError(
            f"{emulator} not found: the instruction count runs the firmware under QEMU "
            "(apt install qemu-system-arm)"
        )
    if not Path(emulator).is_file():
        emulator = shutil.which(Path(emulator).name) or emulator
    # Zephyr's own pid file is for its run target; the counter manages the process itself.
    words: list[str] = [emulator]
    skip = False
    for word in argv[1:]:
        if skip:
            skip = False
            continue
        if word == "-pidfile":
            skip = True
            continue
        words.append(word)
    return words


def _cache_value(build_dir: Path, name: str) -> str | None:
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        return None
    for line in cache.read_text(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.split(":")[0] == name:
            return value
    return None
