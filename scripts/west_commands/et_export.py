# SPDX-License-Identifier: Apache-2.0
"""`west et-export`: the et-export command inside a west workspace."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from west.commands import WestCommand

# The module's Python package sits beside this folder; west loads this file
# by path, so the package need not be installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from et_zephyr import cli  # noqa: E402
from et_zephyr.common.workspace import check_executorch_source  # noqa: E402
from et_zephyr.errors import ExportError  # noqa: E402


class EtExport(WestCommand):
    def __init__(self) -> None:
        super().__init__(
            "et-export",
            "export a PyTorch model to a Cortex-M ExecuTorch program",
            cli.DESCRIPTION,
            accepts_unknown_args=False,
            # Exporting needs no workspace: it works on a model file anywhere.
            requires_workspace=False,
        )

    def do_add_parser(self, parser_adder) -> argparse.ArgumentParser:  # type: ignore[no-untyped-def]
        parser = parser_adder.add_parser(
            self.name,
            help=self.help,
            description=self.description,
            epilog=cli.EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        return cli.add_arguments(parser)

    def do_run(self, args: argparse.Namespace, unknown: list[str]) -> None:
        if self.has_manifest:
            for project in self.manifest.projects:
                if project.name == "executorch":
                    check_executorch_source(Path(project.abspath), self.wrn)
        try:
            self.inf(cli.run(args, self.wrn))
        except ExportError as error:
            self.die(str(error))
