# SPDX-License-Identifier: Apache-2.0
"""Layout steps that move no byte are views (et_zephyr/planning/layout_views.py), and a flatten
of a channels-last map reads it pixel by pixel (passes/flatten_into_linear.py).

Each model is exported and its .pte run in the host emulator, where tensors live at
their planned offsets and a view reads its base's memory in its own dim order: a view
given the wrong order, or a base overwritten while a view still reads it, gives other
bytes than the host reference there as on the device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from conftest import REPO, assert_replays
from et_zephyr.api import ExportOptions, export
from et_zephyr.artifacts import Artifacts
from et_zephyr.artifacts.report import render_report
from et_zephyr.frontend.io_mode import parse_io
from et_zephyr.frontend.loading import ModelBundle
from et_zephyr.reference.dim_orders import reshaped_order
from torch import nn


class _Sensor(nn.Module):
    """A 1-D CNN over [N, C, L] accelerometer windows with a flatten into its head."""

    def __init__(self, channels: int, length: int) -> None:
        super().__init__()
        self.a = nn.Conv1d(channels, 8, 5, padding=2)
        self.b = nn.Conv1d(8, 6, 3, padding="same")
        self.head = nn.Linear(6 * length, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.relu(self.b(F.relu(self.a(x)))).flatten(1))


class _SequenceOut(nn.Module):
    """A 1-D denoiser whose result is a [N, C, L] sequence."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.down = nn.Conv1d(channels, 8, 4, stride=2, padding=1)
        self.up = nn.ConvTranspose1d(8, channels, 4, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(F.relu(self.down(x)))


class _ConvInTransformer(nn.Module):
    """A conformer's convolution module: [N, T, C] transposed into a Conv1d and back."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.depthwise = nn.Conv1d(width, width, 5, padding=2, groups=width)
        self.head = nn.Linear(width, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.depthwise(self.norm(x).transpose(1, 2))
        return self.head(x + F.relu(y).transpose(1, 2))


class _SwappedAxes(nn.Module):
    """A transpose of a map's height and width, which truly moves bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 5, 3, padding=1)
        self.b = nn.Conv2d(5, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(F.relu(self.a(x)).transpose(2, 3))


class _TwoHeads(nn.Module):
    """One flattened map read by two linears, and returned as it is too."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 7, 3, stride=2)
        self.first = nn.Linear(7 * 4 * 3, 5)
        self.second = nn.Linear(7 * 4 * 3, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        features = F.relu(self.conv(x)).flatten(1)
        return self.first(features), self.second(features), features


def _export(model: nn.Module, shape: tuple[int, ...], target: str, io: str = "float") -> Artifacts:
    torch.manual_seed(1)
    calibration = [(torch.randn(shape) * 2,) for _ in range(12)]
    return export(
        ModelBundle(model.eval(), calibration[0], calibration),
        ExportOptions(target=target, vectors=4, generated_vectors=4, io=parse_io(io)),
    )


def _calls(artifacts: Artifacts, name: str) -> int:
    return sum(s.calls for op, s in artifacts.stats.items() if op.startswith(name))


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m4", "cortex-m55"])
@pytest.mark.parametrize(("channels", "length"), [(3, 128), (5, 17), (1, 40), (6, 1)])
def test_a_sequence_input_is_declared_nlc_and_read_in_place(
    channels: int, length: int, target: str, tmp_path: Path
) -> None:
    artifacts = _export(_Sensor(channels, length), (1, channels, length), target)
    assert artifacts.manifest["layout_copies"]["calls"] == 0
    (spec,) = artifacts.manifest["inputs"]
    interleaved = channels > 1 and length > 1
    if interleaved:
        assert spec["dim_order"] == [0, 2, 1]
    # The report names a layout only where its bytes differ from the default order's.
    assert ("memory layout      input 0" in render_report(artifacts)) == interleaved
    assert _calls(artifacts, "cortex_m::transpose") == 0
    assert_replays(artifacts, tmp_path)


@pytest.mark.parametrize("io", ["float", "input=int8", "output=int8"])
def test_a_sequence_result_leaves_in_its_own_layout(io: str, tmp_path: Path) -> None:
    artifacts = _export(_SequenceOut(3), (1, 3, 64), "cortex-m4", io)
    copies = artifacts.manifest["layout_copies"]["calls"]
    # An INT8 output straight from a reshape stays a kernel call, which needs the
    # default dim order's bytes: that one copy stays.
    assert copies == (1 if io == "output=int8" else 0)
    assert artifacts.manifest["inputs"][0]["dim_order"] == [0, 2, 1]
    if io == "float":
        assert artifacts.manifest["outputs"][0]["dim_order"] == [0, 2, 1]
        assert (
            "memory layout      input 0 [1, 3, 64] NLC (dim order 0, 2, 1); "
            "output 0 [1, 3, 64] NLC (dim order 0, 2, 1)"
        ) in render_report(artifacts)
    assert_replays(artifacts, tmp_path)


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_transposes_into_and_out_of_a_conv1d_are_views(target: str, tmp_path: Path) -> None:
    artifacts = _export(_ConvInTransformer(12), (1, 9, 12), target)
    assert artifacts.manifest["layout_copies"]["calls"] == 0
    assert _calls(artifacts, "cortex_m::transpose") == 0
    assert artifacts.manifest["inputs"][0]["dim_order"] == [0, 1, 2]
    assert_replays(artifacts, tmp_path)


def test_a_transpose_that_moves_bytes_stays_and_computes(tmp_path: Path) -> None:
    artifacts = _export(_SwappedAxes(), (1, 3, 7, 5), "cortex-m55")
    moved = _calls(artifacts, "cortex_m::transpose") + artifacts.manifest["layout_copies"]["calls"]
    assert moved >= 1
    assert_replays(artifacts, tmp_path)


def test_a_flatten_read_by_linears_and_returned_keeps_every_reader_right(
    tmp_path: Path,
) -> None:
    artifacts = _export(_TwoHeads(), (1, 3, 9, 7), "cortex-m4")
    # The flattened map is an output too: its reshape stays a kernel on default bytes.
    assert artifacts.manifest["outputs"][2]["shape"] == [1, 84]
    assert_replays(artifacts, tmp_path)


def test_a_sequence_cut_from_a_map_leaves_in_the_order_its_kernels_wrote(
    tmp_path: Path,
) -> None:
    """breadth.py's joins: a GLU over a Conv1d of a map's row ends in a product of two
    channels-last slices, which the functional graph recorded in the default order; the
    serialized program writes it channels-last, and the output is read in place (found
    on the device: output 8 differed on every input at 129a9ba)."""
    artifacts = export(
        f"{REPO / 'tests/models/breadth.py'}:joins",
        ExportOptions(target="cortex-m4", vectors=2, generated_vectors=2),
    )
    assert artifacts.manifest["outputs"][8]["dim_order"] == [0, 2, 1]
    assert_replays(artifacts, tmp_path)


def test_without_derivable_orders_no_view_is_planned_and_the_copies_compute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A graph the fake-tensor run cannot follow plans no view: the copies stay."""
    from et_zephyr.planning import layout_views

    monkeypatch.setattr(layout_views, "_rederived_orders", lambda program: None)
    artifacts = _export(_Sensor(3, 20), (1, 3, 20), "cortex-m4")
    assert artifacts.manifest["layout_copies"]["calls"] >= 1
    assert artifacts.manifest["inputs"][0]["dim_order"] == [0, 1, 2]
    assert_replays(artifacts, tmp_path)


def test_reshaped_orders_read_the_same_bytes() -> None:
    # A [1, 3, 128] sequence in NLC as the channels-last [1, 3, 1, 128] image.
    assert reshaped_order((1, 3, 128), (0, 2, 1), (1, 3, 1, 128)) == (0, 2, 3, 1)
    # And back.
    assert reshaped_order((1, 3, 1, 128), (0, 2, 3, 1), (1, 3, 128)) == (0, 2, 1)
    # Row-major bytes reshape to row-major bytes.
    assert reshaped_order((2, 6, 4), (0, 1, 2), (2, 24)) == (0, 1)
    # Merging two dimensions laid out apart reads other bytes: no order does.
    assert reshaped_order((2, 6, 4), (0, 2, 1), (2, 24)) is None
