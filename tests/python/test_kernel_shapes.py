# SPDX-License-Identifier: Apache-2.0
"""tests/kernels' model reaches the kernels the device test is there to check.

The firmware test compares every output with the host reference, which a
convolution left on a portable kernel would pass too: this checks that each
convolution is lowered to the Cortex-M operator and that the shapes cover the
paths of et-zephyr's own Helium and DSP-extension kernels (lib/src/kernels) and
their fallbacks (on Helium, convolutions with a window gather patches; the sizes of
their scratch are test_kernel_scratch.py's).
"""

from collections import Counter

from conftest import CONV, DEPTHWISE, REPO, lowered_by_upstream
from et_zephyr.frontend.loading import load_model


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
            stride, width = node.args[3], node.args[0].meta["val"].shape[3]
            if node.args[0].meta["val"].shape[1] == 1:
                # et-export's own pass makes this a convolution (as KWS's first layer).
                kinds["small convolution, one channel (DSP)"] += 1
            elif stride != [1, 1]:
                kinds["depthwise, strided"] += 1
            elif node.args[0].meta["val"].shape[2] > 85:
                kinds["depthwise 3x3, taller than the Helium kernel's CMSIS-NN-sized scratch"] += 1
            elif width > 48:
                kinds["depthwise 3x3, wider than the DSP kernel's rows"] += 1
            elif width > 16:
                kinds["depthwise 3x3, in strips of rows (DSP)"] += 1
            else:
                kinds["depthwise 3x3, stride 1"] += 1
        elif node.target == CONV:
            weight = node.args[1].meta["val"]
            depth, channels = node.args[0].meta["val"].shape[1], node.meta["val"].shape[1]
            if weight.shape[1:3] != (1, 1):
                padded = node.args[4] != [0, 0]
                if weight[0].numel() > 128:
                    kinds["patches over 128 values, more than the scratch holds (Helium)"] += 1
                elif weight[0].numel() % 4:
                    kinds["patches padded to whole 4-value steps (DSP)"] += 1
                elif weight[0].numel() > 64:
                    kinds["patches deeper than the DSP kernel's stack buffer"] += 1
                else:
                    kinds[f"small convolution, {'padded' if padded else 'one channel'} (DSP)"] += 1
            elif node.args[3] != [1, 1]:
                kinds["1x1, strided (Helium: patches)"] += 1
            elif depth % 16:
                kinds["pointwise, depth not a multiple of 16"] += 1
            elif depth > 128:
                kinds["pointwise, deeper than the paired path"] += 1
            else:
                kinds[f"pointwise, {'odd' if channels % 2 else 'even'} channel count"] += 1
            if weight.shape[1:3] == (1, 1) and channels > 16:
                kinds["pointwise, more channels than the DSP kernel sums at once"] += 1
    return kinds


def test_every_convolution_is_lowered_and_every_kernel_path_is_taken() -> None:
    assert _shape_kinds() == {
        "depthwise 3x3, stride 1": 4,
        "depthwise 3x3, in strips of rows (DSP)": 1,
        "depthwise 3x3, wider than the DSP kernel's rows": 1,
        "depthwise, strided": 4,
        "depthwise 3x3, taller than the Helium kernel's CMSIS-NN-sized scratch": 1,
        # Depth 12: also an odd count of the DSP kernel's 4-value steps.
        "pointwise, depth not a multiple of 16": 4,
        "pointwise, deeper than the paired path": 1,
        "pointwise, odd channel count": 1,
        "pointwise, even channel count": 1,
        "pointwise, more channels than the DSP kernel sums at once": 2,
        # One of them padded: a 10x4 window like KWS's first layer.
        "small convolution, one channel (DSP)": 2,
        "small convolution, padded (DSP)": 1,
        # An image's 3x3 stem and a 5x5 on 3 channels (27 and 75 values); a 3x3 over 12
        # channels and a 6x6 over 2 (108 and 72 values: the temp arena's patches).
        "patches padded to whole 4-value steps (DSP)": 2,
        "patches deeper than the DSP kernel's stack buffer": 2,
        "1x1, strided (Helium: patches)": 1,
        "patches over 128 values, more than the scratch holds (Helium)": 1,
    }
