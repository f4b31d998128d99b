# SPDX-License-Identifier: Apache-2.0
"""tests/kernels' model reaches the kernels the device test is there to check.

The firmware test compares every output with the host reference, which a
convolution left on a portable kernel would pass too: this checks that each
convolution is lowered to the Cortex-M operator and that the shapes cover both
paths of et-zephyr's own Helium kernels (lib/src/kernels) and their fallbacks.
"""

from collections import Counter

from conftest import CONV, DEPTHWISE, REPO, lowered_by_upstream
from et_zephyr.loading import load_model


def _shape_kinds() -> Counter[str]:
    bundle = load_model(f"{REPO / 'tests/kernels/model.py'}:conv_shapes")
    program, _ = lowered_by_upstream(
        bundle.model, bundle.example_inputs, bundle.calibration, "cortex-m55"
    )
    kinds: Counter[str] = Counter()
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        if "convolution" in str(node.target):
            kinds["left in float"] += 1
        elif node.target == DEPTHWISE:
            stride = node.args[3]
            kinds["depthwise 3x3, stride 1" if stride == [1, 1] else "depthwise, strided"] += 1
        elif node.target == CONV:
            depth, channels = node.args[0].meta["val"].shape[1], node.meta["val"].shape[1]
            if depth % 16:
                kinds["pointwise, depth not a multiple of 16"] += 1
            elif depth > 128:
                kinds["pointwise, deeper than the paired path"] += 1
            else:
                kinds[f"pointwise, {'odd' if channels % 2 else 'even'} channel count"] += 1
    return kinds


def test_every_convolution_is_lowered_and_every_kernel_path_is_taken() -> None:
    assert _shape_kinds() == {
        "depthwise 3x3, stride 1": 4,
        "depthwise, strided": 1,
        "pointwise, depth not a multiple of 16": 2,
        "pointwise, deeper than the paired path": 1,
        "pointwise, odd channel count": 1,
        "pointwise, even channel count": 1,
    }
