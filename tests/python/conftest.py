# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: KWS exports are slow, so each target is exported once."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

from et_zephyr.api import ExportOptions, export  # noqa: E402
from et_zephyr.artifacts import write_outputs  # noqa: E402

KWS_MODEL = f"{REPO / 'samples/kws/model.py'}:kws"
MODELS = Path(__file__).with_name("models.py")


@dataclass
class Export:
    """One export written to disk."""

    out_dir: Path
    name: str
    warnings: list[str]

    def path(self, suffix: str) -> Path:
        return self.out_dir / f"{self.name}{suffix}"

    @property
    def manifest(self) -> dict:
        return json.loads(self.path(".json").read_text())


@pytest.fixture(scope="session")
def export_kws(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Export]:
    cache: dict[tuple[str, str | None], Export] = {}

    def run(target: str, isa: str | None = None) -> Export:
        key = (target, isa)
        if key not in cache:
            warnings: list[str] = []
            options = ExportOptions(target=target, isa=isa, name="kws", warn=warnings.append)
            out_dir = tmp_path_factory.mktemp(f"kws-{target}-{isa or 'auto'}")
            write_outputs(export(KWS_MODEL, options), out_dir)
            cache[key] = Export(out_dir, "kws", warnings)
        return cache[key]

    return run
