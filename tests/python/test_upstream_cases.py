# SPDX-License-Identifier: Apache-2.0
"""A fast subset of ExecuTorch's own Cortex-M test cases through et-export and through
upstream's flow (benchmarks/upstream_cases.py runs all of them): no traceback, every case
upstream exports exports here too, with no fewer MACs on CMSIS-NN."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import upstream_cases  # noqa: E402

# One or two of each kind: a whole model, Python-number inputs, transpose convolutions,
# attention-shaped matmuls, rank-1 outputs, float-only operators (pow), activations.
SUBSET = (
    "ds_cnn:ds_cnn",
    "add:tensor_scalar",
    "add:scalar_tensor",
    "conv_transpose:conv_transpose2d_stride_2",
    "conv_transpose:conv_transpose2d_bias",
    "batch_matmul:matmul_rank4",
    "linear:linear_rank1",
    "activation_quant:silu_rank1",
    "silero_vad:silero_vad_16k",
    "softmax:",
)


@pytest.fixture(scope="module")
def subset() -> list[upstream_cases.Case]:
    chosen = [case for case in upstream_cases.cases() if case.name.startswith(SUBSET)]
    assert {p for p in SUBSET if any(c.name.startswith(p) for c in chosen)} == set(SUBSET)
    return chosen


def test_no_traceback_and_every_upstream_export_exports_here(subset) -> None:
    for case in subset:
        ours = upstream_cases.run_et_export(case, "cortex-m55")
        theirs = upstream_cases.run_upstream(case, "cortex-m55")
        assert not ours.traceback, f"{case.name}: {ours.error}"
        if theirs.exported:
            assert ours.exported, f"{case.name}: {ours.error}"
            assert (ours.cmsis_nn_share or 0) >= (theirs.cmsis_nn_share or 0), case.name


def test_the_table_counts_what_it_lists(subset) -> None:
    rows = [
        (case.name, "cortex-m55", upstream_cases.Outcome(True, 1.0),
         upstream_cases.Outcome(index % 2 == 0), case.upstream_xfail)
        for index, case in enumerate(subset[:4])
    ]  # fmt: skip
    table = upstream_cases.render(rows)
    assert (
        "cortex-m55: 4 cases; et-export exports 4, the upstream flow 2; upstream only: 0" in table
    )
