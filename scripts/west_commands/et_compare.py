# SPDX-License-Identifier: Apache-2.0
"""`west et-compare`: the first layer where the device and the host reference differ."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from west.commands import WestCommand

# The module's Python package sits beside this folder; west loads this file
# by path, so the package need not be installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from et_zephyr.compare import cli as compare_cli  # noqa: E402
from et_zephyr.errors import ExportError  # noqa: E402


class EtCompare(WestCommand):
    def __init__(self) -> None:
        super().__init__(
            "et-compare",
            "find the first layer where the device and the host reference differ",
            compare_cli.DESCRIPTION,
            accepts_unknown_args=False,
            # --log works anywhere; building needs the workspace west build finds.
            requires_workspace=False,
        )

    def do_add_parser(self, parser_adder) -> argparse.ArgumentParser:  # type: ignore[no-untyped-def]
        parser = parser_adder.add_parser(
            self.name,
            help=self.help,
            description=self.description,
            epilog=compare_cli.EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        return compare_cli.add_arguments(parser)

    def do_run(self, args: argparse.Namespace, unknown: list[str]) -> None:
        try:
            status = compare_cli.run(args, self.inf)
        except ExportError as error:
            self.die(str(error))
        if status:
            sys.exit(status)
