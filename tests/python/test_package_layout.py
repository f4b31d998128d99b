# SPDX-License-Identifier: Apache-2.0
"""The package's folders are the export's stages: a module imports only from its own
stage or an earlier one, so a reader knows from the folder where a change belongs."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "scripts" / "et_zephyr"

# Earliest first. A top-level module is its own stage.
STAGES = [
    "errors",
    "common",
    "audio",
    "frontend",
    "reference",
    "firmware",
    "passes",
    "planning",
    "pipeline",
    "precision",
    "artifacts",
    "compare",
    "size",
    "api",
    "cli",
]


def _stage(module: str) -> str:
    return module.split(".")[0] if module else "__init__"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """The et_zephyr modules a file imports, relative to the package."""
    tree = ast.parse(path.read_text())
    module = _module_name(path)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif (node.module or "").startswith("et_zephyr"):
                target = node.module.removeprefix("et_zephyr").lstrip(".")
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                is_module = (PACKAGE / sub.replace(".", "/")).with_suffix(".py").exists() or (
                    PACKAGE / sub.replace(".", "/")
                ).is_dir()
                found.add(sub if is_module else target)
        elif isinstance(node, ast.Import):
            found |= {
                a.name.removeprefix("et_zephyr.")
                for a in node.names
                if a.name.startswith("et_zephyr.")
            }
    return found


def test_every_module_belongs_to_a_stage() -> None:
    strays = [
        _module_name(p)
        for p in PACKAGE.rglob("*.py")
        if _stage(_module_name(p)) not in [*STAGES, "__init__"]
    ]
    assert not strays, f"modules outside the stages: {strays}"


def test_no_module_imports_a_later_stage() -> None:
    backwards = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        stage = _stage(module)
        if stage == "__init__":
            continue
        for target in _imported(path):
            if _stage(target) == "__init__":
                continue
            if STAGES.index(_stage(target)) > STAGES.index(stage):
                backwards.append(f"{module} imports {target}")
    assert not backwards, "\n".join(backwards)


def test_the_checker_sees_imports() -> None:
    # The pipeline reads the passes and the planners: the walk must find both.
    imported = _imported(PACKAGE / "pipeline.py")
    assert "passes.cortex_m_passes" in imported and "planning.offset_planner" in imported
