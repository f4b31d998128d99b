# SPDX-License-Identifier: Apache-2.0
"""et-profile: a device log's ET_PROFILE lines as a table sorted by cost."""

from pathlib import Path

import pytest
from et_zephyr.size.profile import main, parse_profile

LOG = """\
*** Booting Zephyr OS build v4.3.0 ***
[00:00:00.010,000] <inf> kws: ET_PROFILE cortex_m::quantized_conv2d.out 4 120000
ET_PROFILE cortex_m::quantized_depthwise_conv2d.out 5 300000
ET_PROFILE cortex_m::quantize_per_tensor.out              1         2000   0.4 %
ET_PROFILE cortex_m::quantized_conv2d.out 4 121000
ET_PROFILE malformed line
"""


def test_lines_of_several_runs_are_summed() -> None:
    assert parse_profile(LOG) == {
        "cortex_m::quantized_conv2d.out": (8, 241000),
        "cortex_m::quantized_depthwise_conv2d.out": (5, 300000),
        "cortex_m::quantize_per_tensor.out": (1, 2000),
    }


def test_table_is_sorted_by_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "log.txt").write_text(LOG)
    assert main([str(tmp_path / "log.txt")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["cortex_m::quantized_depthwise_conv2d.out", "5", "300,000",
                                "60,000", "55.2", "%"]  # fmt: skip
    assert lines[3].startswith("cortex_m::quantized_conv2d.out")
    assert lines[-1].split() == ["total", "543,000", "100.0", "%"]


def test_a_log_without_profile_lines_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "log.txt").write_text("*** Booting Zephyr ***\n")
    assert main([str(tmp_path / "log.txt")]) == 1
    assert capsys.readouterr().err.strip() == f"error: no ET_PROFILE lines in {tmp_path}/log.txt"
