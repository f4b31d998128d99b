# SPDX-License-Identifier: Apache-2.0
"""ExecuTorch's own Cortex-M test cases through et-export and through the plain upstream flow.

Every `McuTestCase` of `executorch/backends/cortex_m/test/{models,ops}/test_*.py` (shipped
in the executorch wheel) is exported twice per target: by et-export (calibrated on the
case's example inputs, as upstream's tester does) and by upstream's `CortexMTester`
(quantize, export, to_edge, CortexMPassManager, to_executorch). One row per case: whether
each exports, the share of MACs on CMSIS-NN, the operators left on portable kernels,
et-export's error line, and whether upstream's own suite expects the case to fail.

    python3 benchmarks/upstream_cases.py                        # cortex-m55, every case
    python3 benchmarks/upstream_cases.py -t cortex-m4 -t cortex-m0 -k conv --json cases.json
    python3 benchmarks/upstream_cases.py --upstream five-step -k conv_transpose

`--upstream five-step` sets et-export beside the five-step flow a user writes
(benchmarks/upstream_flow.py) instead of upstream's CortexMTester, which differs from it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import pkgutil
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from et_zephyr.common.runtime_quiet import quiet_imports  # noqa: E402

with quiet_imports():
    import torch
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.common.table import format_table
    from et_zephyr.errors import ExportError, first_line
    from et_zephyr.firmware.analysis import OperatorStats, mac_totals, operator_stats
    from et_zephyr.firmware.kernels import PORTABLE
    from et_zephyr.frontend.loading import ModelBundle

PACKAGES = ("executorch.backends.cortex_m.test.models", "executorch.backends.cortex_m.test.ops")


@dataclass
class Case:
    name: str  # module:case
    model: torch.nn.Module
    example_inputs: tuple
    upstream_xfail: str  # upstream's own expectation: "" or the xfail reason


@dataclass
class Outcome:
    """One flow's result on one case."""

    exported: bool
    cmsis_nn_share: float | None = None  # MACs on CMSIS-NN / all MACs, None without MACs
    portable: tuple[str, ...] = ()
    error: str = ""
    traceback: bool = False


def cases(pattern: str = "") -> Iterator[Case]:
    """Each McuTestCase of every test module, in module order."""
    from executorch.backends.cortex_m.test.tester import McuTestCase

    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for module_info in pkgutil.iter_modules(package.__path__):
            if not module_info.name.startswith("test_"):
                continue
            try:
                with quiet_imports():
                    module = importlib.import_module(f"{package_name}.{module_info.name}")
            except (ImportError, pytest.skip.Exception) as error:
                # torchvision's models (no CPU build of torchvision matches this torch on
                # PyPI), torchaudio's and ultralytics' are optional, as upstream's suite says.
                print(f"upstream_cases: {module_info.name} skipped: {error}", file=sys.stderr)
                continue
            xfails = {
                key: str(value)
                for name, table in vars(module).items()
                if name.startswith("xfails") and isinstance(table, dict)
                for key, value in table.items()
            }
            for table in vars(module).values():
                if not isinstance(table, dict) or not table:
                    continue
                if not all(isinstance(case, McuTestCase) for case in table.values()):
                    continue
                for key, case in table.items():
                    name = f"{module_info.name.removeprefix('test_')}:{key}"
                    if pattern in name:
                        yield Case(name, case.model, case.get_example_inputs(), xfails.get(key, ""))


def _outcome(stats: dict[str, OperatorStats]) -> Outcome:
    """An exported program's outcome from its operators."""
    macs = mac_totals(stats)
    share = macs["cmsis_nn"] / macs["total"] if macs["total"] else None
    portable = tuple(name for name, entry in stats.items() if entry.runs_on == PORTABLE)
    return Outcome(True, share, portable)


def run_et_export(case: Case, target: str) -> Outcome:
    inputs = tuple(case.example_inputs)
    bundle = ModelBundle(case.model, inputs, [inputs])
    options = ExportOptions(target=target, vectors=1, verify=False)
    try:
        with quiet_imports(), contextlib.redirect_stderr(io.StringIO()):
            artifacts = export(bundle, options)
    except ExportError as error:
        return Outcome(False, error=str(error))
    except Exception as error:  # what et-export must never let through as a traceback
        return Outcome(False, error=f"{type(error).__name__}: {first_line(error)}", traceback=True)
    return _outcome(artifacts.stats)


def run_upstream(case: Case, target: str) -> Outcome:
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig
    from executorch.backends.cortex_m.test.tester import CortexMTester

    try:
        with quiet_imports(), contextlib.redirect_stderr(io.StringIO()):
            config = CortexMTargetConfig(cpu=_upstream_cpu(target))
            tester = CortexMTester(case.model, tuple(case.example_inputs), config)
            tester.quantize().export().to_edge().run_passes().to_executorch()
            program = tester.get_artifact().exported_program()
    except Exception as error:
        return Outcome(False, error=f"{type(error).__name__}: {first_line(error)}")
    return _outcome(operator_stats(program.graph_module))


def run_five_step(case: Case, target: str) -> Outcome:
    """The five-step flow a user writes from ExecuTorch's Cortex-M documentation
    (upstream_flow.py), on the case as given: where upstream's CortexMTester differs
    from it (the tester's own quantizer and pass settings), this shows what a user gets."""
    from upstream_flow import five_step

    inputs = tuple(case.example_inputs)
    try:
        with quiet_imports(), contextlib.redirect_stderr(io.StringIO()):
            program = five_step(case.model, inputs, [inputs], target)
    except Exception as error:
        return Outcome(False, error=f"{type(error).__name__}: {first_line(error)}")
    return _outcome(operator_stats(program.exported_program().graph_module))


def _upstream_cpu(target: str) -> object:
    from executorch.backends.cortex_m.target_config import CortexM

    core = target.removeprefix("cortex-").upper()
    return CortexM[core]


def _share(outcome: Outcome) -> str:
    if not outcome.exported:
        return "-"
    return "no MACs" if outcome.cmsis_nn_share is None else f"{100 * outcome.cmsis_nn_share:.0f} %"


def render(rows: list[tuple[str, str, Outcome, Outcome, str]]) -> str:
    table = [("case", "target", "et-export", "MACs on CMSIS-NN", "portable", "upstream flow",
              "upstream MACs", "upstream expects", "et-export error")]  # fmt: skip
    for name, target, ours, theirs, xfail in rows:
        status = "exported" if ours.exported else ("TRACEBACK" if ours.traceback else "error")
        table.append(
            (
                name,
                target.removeprefix("cortex-"),
                status,
                _share(ours),
                ", ".join(op.split("::")[-1] for op in ours.portable) or "-",
                "exported" if theirs.exported else "fails",
                _share(theirs),
                "xfail" if xfail else "pass",
                ours.error[:90],
            )
        )
    lines = format_table(table, left=(0, 1, 2, 4, 5, 7, 8))
    for target in dict.fromkeys(row[1] for row in rows):
        mine = [row for row in rows if row[1] == target]
        ours = sum(row[2].exported for row in mine)
        theirs = sum(row[3].exported for row in mine)
        only_upstream = sum(row[3].exported and not row[2].exported for row in mine)
        fewer = sum(
            row[2].exported
            and row[3].exported
            and (row[2].cmsis_nn_share or 0) < (row[3].cmsis_nn_share or 0) - 1e-9
            for row in mine
        )
        lines += [
            "",
            f"{target}: {len(mine)} cases; et-export exports {ours}, the upstream flow {theirs}; "
            f"upstream only: {only_upstream}; tracebacks: {sum(r[2].traceback for r in mine)}; "
            f"fewer MACs on CMSIS-NN than upstream: {fewer}",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-t", "--target", action="append", help="core, e.g. cortex-m4 (repeatable; default m55)"
    )
    parser.add_argument("-k", "--cases", default="", metavar="TEXT", help="only cases naming TEXT")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    parser.add_argument(
        "--upstream",
        choices=("tester", "five-step"),
        default="tester",
        help="upstream's test harness (CortexMTester), or the five-step flow a user writes",
    )
    args = parser.parse_args(argv)
    run_theirs = run_upstream if args.upstream == "tester" else run_five_step
    targets = args.target or ["cortex-m55"]
    rows = []
    for case in cases(args.cases):
        for target in targets:
            start = time.monotonic()
            ours = run_et_export(case, target)
            theirs = run_theirs(case, target)
            rows.append((case.name, target, ours, theirs, case.upstream_xfail))
            mark = "ok" if ours.exported else ("TRACEBACK" if ours.traceback else "error")
            seconds = time.monotonic() - start
            print(
                f"upstream_cases: {case.name} {target}: {mark} ({seconds:.1f} s)", file=sys.stderr
            )
    print(render(rows))
    if args.json:
        document = [
            {"case": name, "target": target, "et_export": asdict(ours), "upstream": asdict(theirs),
             "upstream_xfail": xfail}
            for name, target, ours, theirs, xfail in rows
        ]  # fmt: skip
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
