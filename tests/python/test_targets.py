# SPDX-License-Identifier: Apache-2.0
import pytest
from et_zephyr.errors import ExportError
from et_zephyr.frontend.targets import TARGETS, resolve_target

EXPECTED_TIER = {
    "cortex-m0": "scalar",
    "cortex-m0plus": "scalar",
    "cortex-m3": "scalar",
    "cortex-m23": "scalar",
    "cortex-m4": "dsp",
    "cortex-m7": "dsp",
    "cortex-m33": "dsp",
    "cortex-m35p": "dsp",
    "cortex-m55": "mve",
    "cortex-m85": "mve",
}


@pytest.mark.parametrize("target", TARGETS)
def test_each_target_gets_its_best_isa_tier(target: str) -> None:
    assert resolve_target(target).isa == EXPECTED_TIER[target]


def test_isa_can_be_lowered_on_a_capable_core() -> None:
    assert resolve_target("cortex-m55", "dsp").isa == "dsp"
    assert resolve_target("cortex-m4", "scalar").isa == "scalar"


@pytest.mark.parametrize(
    ("target", "isa", "supported"),
    [("cortex-m0", "mve", "scalar"), ("cortex-m33", "mve", "scalar, dsp")],
)
def test_isa_beyond_the_core_is_refused(target: str, isa: str, supported: str) -> None:
    with pytest.raises(ExportError, match=f"not available on {target}; it supports: {supported}$"):
        resolve_target(target, isa)


def test_unknown_target_lists_the_known_ones() -> None:
    with pytest.raises(ExportError, match="unknown target 'cortex-m99'; choose one of: cortex-m0,"):
        resolve_target("cortex-m99")
