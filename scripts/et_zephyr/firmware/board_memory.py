# SPDX-License-Identifier: Apache-2.0
"""`--board`: a Zephyr board's flash and RAM, read from its devicetree in the workspace.

The regions are the ones the firmware build checks at configure time: the chosen
`zephyr,flash` and `zephyr,sram`. The board's .dts is found in the board roots of Zephyr
and of every module west lists, preprocessed as Zephyr's build does (the C preprocessor
with each devicetree root's include folders) and read with Zephyr's own devicetree
library; nothing is built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import ExportError
from .fit import MemoryRegion

_INCLUDES = ("include", "include/zephyr", "dts/common", "dts/vendor", "dts/arm", "dts")


@dataclass(frozen=True)
class BoardMemory:
    board: str
    flash: MemoryRegion | None
    ram: MemoryRegion | None


def board_memory(board: str, zephyr_base: Path | None = None) -> BoardMemory:
    base = zephyr_base or _zephyr_base()
    modules = _module_dirs(base)
    board_roots = [base, *_module_roots(modules, "board_root")]
    dts = _board_dts(board, board_roots)
    dts_roots = [dts.parent, base, *_module_roots(modules, "dts_root")]
    tree = _read_devicetree([dts, *_revision_overlay(dts)], dts_roots, base)
    return BoardMemory(
        board,
        _chosen_region(tree, "zephyr,flash", "flash", board),
        _chosen_region(tree, "zephyr,sram", "RAM", board),
    )


def _zephyr_base() -> Path:
    if os.environ.get("ZEPHYR_BASE"):
        return Path(os.environ["ZEPHYR_BASE"])
    try:
        top = subprocess.run(["west", "topdir"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        top = None
    if top is not None and (Path(top.stdout.strip()) / "zephyr").is_dir():
        return Path(top.stdout.strip()) / "zephyr"
    raise ExportError(
        "--board reads the board's devicetree from a Zephyr workspace: run inside one "
        "(`west et-export`) or set ZEPHYR_BASE"
    )


def _module_dirs(base: Path) -> list[Path]:
    """The workspace's projects west lists, and this checkout when it is a module."""
    dirs = []
    try:
        listed = subprocess.run(
            ["west", "list", "-f", "{abspath}"], cwd=base, capture_output=True, text=True
        )
        dirs = [Path(line) for line in listed.stdout.split()] if listed.returncode == 0 else []
    except OSError:
        pass
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "zephyr" / "module.yml").exists():
        dirs.append(checkout)
    return dirs


def _module_roots(modules: list[Path], setting: str) -> list[Path]:
    roots = []
    for module in dict.fromkeys(m.resolve() for m in modules):
        meta = module / "zephyr" / "module.yml"
        if not meta.exists():
            continue
        settings = ((yaml.safe_load(meta.read_text()) or {}).get("build") or {}).get("settings")
        root = (settings or {}).get(setting)
        if root:
            roots.append(module / root)
    return roots


def _board_dts(board: str, roots: list[Path]) -> Path:
    """BOARD[/SOC[/CLUSTER]]'s .dts: the qualified name, or without the SoC where the
    board has one SoC (nucleo_l4r5zi/stm32l4r5xx is nucleo_l4r5zi.dts)."""
    parts = board.split("/")
    names = {"_".join(parts) + ".dts", "_".join([parts[0], *parts[2:]]) + ".dts"}
    for root in roots:
        boards = root / "boards"
        if not boards.is_dir():
            continue
        for path in boards.rglob("*.dts"):
            if path.name in names:
                return path
    raise ExportError(
        f"--board {board}: no such board in the workspace's board roots "
        f"({', '.join(str(r) for r in roots)}); `west boards` lists them"
    )


def _revision_overlay(dts: Path) -> list[Path]:
    """The overlay of the board's default revision, which the build applies too (the
    MIMXRT1170-EVK's revision B has another flash chip)."""
    meta = dts.parent / "board.yml"
    if not meta.exists():
        return []
    revision = ((yaml.safe_load(meta.read_text()) or {}).get("board") or {}).get("revision")
    default = (revision or {}).get("default")
    overlay = dts.with_name(f"{dts.stem}_{default}.overlay")
    return [overlay] if default and overlay.exists() else []


def _read_devicetree(sources: list[Path], roots: list[Path], base: Path):
    cpp = shutil.which("cpp") or shutil.which("arm-none-eabi-cpp")
    if cpp is None:
        raise ExportError("--board needs a C preprocessor (cpp) to read the devicetree")
    includes = [f"-I{root / sub}" for root in roots for sub in _INCLUDES if (root / sub).is_dir()]
    dts = sources[0]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "board.dts.pre"
        # The build concatenates the board's .dts and its overlays before preprocessing.
        combined = Path(tmp) / "board.dts"
        combined.write_text("".join(f'#include "{source}"\n' for source in sources))
        run = subprocess.run(
            [cpp, "-x", "assembler-with-cpp", "-nostdinc", *includes, "-undef", "-D__DTS__",
             "-P", "-E", str(combined), "-o", str(out)],
            capture_output=True, text=True,
        )  # fmt: skip
        if run.returncode != 0:
            first = (run.stderr.strip().splitlines() or ["no message"])[0]
            raise ExportError(f"--board: cannot preprocess {dts.name}: {first}")
        # Zephyr's own reader: the workspace's, else the `devicetree` package's.
        sys.path.insert(0, str(base / "scripts" / "dts" / "python-devicetree" / "src"))
        try:
            from devicetree import dtlib
        except ImportError:
            raise ExportError(
                "--board reads devicetrees with Zephyr's python-devicetree: the workspace "
                "has none (pip install devicetree)"
            ) from None
        finally:
            sys.path.pop(0)
        try:
            return dtlib.DT(str(out), force=True)
        except Exception as error:  # dtlib raises its own error types and OSError
            raise ExportError(f"--board: cannot read {dts.name}: {error}") from None


def _chosen_region(tree, chosen: str, kind: str, board: str) -> MemoryRegion | None:
    try:
        prop = tree.get_node("/chosen").props.get(chosen)
    except Exception:  # no /chosen node
        return None
    if prop is None:
        return None
    node = prop.to_path()
    size = 0
    reg = node.props.get("reg")
    if reg is not None:
        cells = reg.to_nums()
        address_cells = _cells(node.parent, "#address-cells", 2)
        size_cells = _cells(node.parent, "#size-cells", 1)
        for cell in cells[address_cells : address_cells + size_cells]:
            size = (size << 32) | cell
    if not size and "size" in node.props:
        # A serial NOR flash (jedec,spi-nor and its kin) gives its capacity in bits.
        size = node.props["size"].to_num() // 8
    if size <= 0:
        raise ExportError(f"--board {board}: {chosen} ({node.path}) has no size")
    return MemoryRegion(f"{kind} ({node.name})", size)


def _cells(node, name: str, default: int) -> int:
    prop = node.props.get(name) if node is not None else None
    return prop.to_num() if prop is not None else default
