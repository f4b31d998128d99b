# SPDX-License-Identifier: Apache-2.0
"""`west et-export` is the same command as `et-export`, inside west."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest
import yaml
from conftest import MODELS, REPO
from west.configuration import Configuration


def load_command():
    path = REPO / "scripts/west_commands/et_export.py"
    spec = importlib.util.spec_from_file_location("et_export_west_command", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EtExport()


def parse(command, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="west")
    command.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args([command.name, *argv])


def test_registered_in_west_commands_yml() -> None:
    manifest = yaml.safe_load((REPO / "scripts/west-commands.yml").read_text())
    entry = next(e for e in manifest["west-commands"] if e["file"].endswith("et_export.py"))
    assert (REPO / entry["file"]).is_file()
    assert entry["commands"] == [
        {"name": "et-export", "class": "EtExport", "help": load_command().help}
    ]


def test_help_is_the_et_export_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(load_command(), ["--help"])
    assert "NAME.ops.yaml" in capsys.readouterr().out


def test_runs_the_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    command = load_command()
    args = parse(command, [f"{MODELS}:tiny", "--name", "tiny", "-o", str(tmp_path)])
    command.run(args, [], topdir=None, config=Configuration())
    assert "et-export: tiny for cortex-m55 (MVE)" in capsys.readouterr().out
    assert (tmp_path / "tiny.pte").is_file()


def test_bad_input_dies_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    command = load_command()
    args = parse(command, ["missing.py:f", "-o", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as exit_info:
        command.run(args, [], topdir=None, config=Configuration())
    assert exit_info.value.code == 1
    assert "model file not found: missing.py" in capsys.readouterr().err


def test_warns_when_workspace_executorch_differs(tmp_path: Path) -> None:
    from et_zephyr.common.workspace import check_executorch_source

    warnings: list[str] = []
    (tmp_path / "version.txt").write_text("1.3.0\n")
    check_executorch_source(tmp_path, warnings.append)
    assert len(warnings) == 1
    assert "is 1.3.0 but the installed executorch package is 1.4.1" in warnings[0]
    (tmp_path / "version.txt").write_text("1.4.1\n")
    check_executorch_source(tmp_path, warnings.append)
    assert len(warnings) == 1
