# SPDX-License-Identifier: Apache-2.0
"""`west et-size`: where a firmware's flash and RAM go, by component."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from west.commands import WestCommand

# The module's Python package sits beside this folder; west loads this file
# by path, so the package need not be installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from et_zephyr.errors import ExportError  # noqa: E402
from et_zephyr.size import cli  # noqa: E402


class EtSize(WestCommand):
    def __init__(self) -> None:
        super().__init__(
            "et-size",
            "attribute a firmware's flash and RAM to components",
            cli.DESCRIPTION,
            accepts_unknown_args=False,
            requires_workspace=False,
        )

    def do_add_parser(self, parser_adder) -> argparse.ArgumentParser:  # type: ignore[no-untyped-def]
        parser = parser_adder.add_parser(
            self.name,
            help=self.help,
            description=self.description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        return cli.add_arguments(parser)

    def do_run(self, args: argparse.Namespace, unknown: list[str]) -> None:
        try:
            self.inf(cli.run(args))
        except ExportError as error:
            self.die(str(error))
