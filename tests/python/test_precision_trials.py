# SPDX-License-Identifier: Apache-2.0
"""--precision auto's search: its trials (precision/trials.py) are the models the export's
own quantization makes (one calibration run recorded and replayed into the observers must
give every set of 16x8 layers the same fake-quantized outputs, bit for bit, as PT2E
calibrating that set from scratch), and a set is chosen only when its lowered program is
within the drop too."""

from __future__ import annotations

import copy
import random

import pytest
import torch
from conftest import REPO
from et_zephyr import api, pipeline
from et_zephyr.passes.quantizer import EtZephyrQuantizer
from et_zephyr.passes.quantizer_int16 import Int16Quantizer, mixed_precision_candidates
from et_zephyr.precision.search import choose_int16_layers
from et_zephyr.precision.trials import QuantizationTrials
from et_zephyr.reference.verify import Agreement


class _Captured(Exception):
    """Stops the export where --precision auto would start choosing."""


def _precision_inputs(model: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    captured: dict = {}

    def capture(graph, calibration, held_out, *args, **kwargs):
        captured.update(graph=graph, calibration=calibration, held_out=held_out)
        raise _Captured

    monkeypatch.setattr(api, "choose_int16_layers", capture)
    stateful = model.endswith("_stream")
    with pytest.raises(_Captured):
        api.export(
            model, api.ExportOptions(target="cortex-m4", precision="auto", stateful=stateful)
        )
    return captured


def _outputs(model, held_out) -> list[torch.Tensor]:
    with torch.no_grad():
        results = [result for stream in held_out for result in pipeline.run_stream(model, stream)]
    return [result[0] if isinstance(result, (tuple, list)) else result for result in results]


@pytest.mark.parametrize(
    "model",
    [
        # Residual additions (shared parameters, INT16 and INT8 meeting in the middle).
        "benchmarks/mlperf_tiny_models.py:resnet8",
        # LayerNorm, attention and softmax around the 16x8 linears.
        "tests/models/transformers.py:transformer",
        # Whole GRU layers (INT8 only) between 16x8 linears.
        "tests/models/recurrent.py:gru2_kws",
        # A stream: the LSTM layer's state carried from hop to hop.
        "tests/models/recurrent.py:lstm_kws_stream",
    ],
)
def test_every_trial_is_what_the_export_quantization_makes(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = _precision_inputs(f"{REPO}/{model}", monkeypatch)
    graph, calibration, held_out = inputs["graph"], inputs["calibration"], inputs["held_out"]
    trials = QuantizationTrials(graph, calibration)
    names = [node.name for node in mixed_precision_candidates(trials.annotated)]
    draw = random.Random(0)
    mixes = [set(draw.sample(names, draw.randint(1, len(names)))) for _ in range(3)]
    layer_sets = (
        [[], names]
        + [[name] for name in names]
        + [[name for name in names if name in mix] for mix in mixes]
    )
    for layers in layer_sets:
        quantizer = Int16Quantizer(layers) if layers else EtZephyrQuantizer()
        expected = pipeline.quantize(copy.deepcopy(graph), quantizer, calibration, lambda s: s)
        got = trials.quantize(layers)
        for ours, theirs in zip(_outputs(got, held_out), _outputs(expected, held_out), strict=True):
            assert torch.equal(ours, theirs), layers
    assert trials.calibration_runs == 1


def test_the_search_goes_on_while_the_program_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A set whose trial is within the drop is lowered; while its program is not within,
    the next layer in the ranking joins (here a program that misses until three layers
    are 16x8)."""
    inputs = _precision_inputs(f"{REPO}/benchmarks/mlperf_tiny_models.py:resnet8", monkeypatch)
    lowered: list[tuple[str, ...]] = []

    def program(layers: tuple[str, ...]) -> Agreement:
        lowered.append(layers)
        error = 0.01 if len(layers) < 3 else 0.001
        return Agreement(len(layers), None, None, 0.0, 0.0, error)

    args = (inputs["graph"], inputs["calibration"], inputs["held_out"], 0.004, "error")
    trials_only = choose_int16_layers(*args)
    assert len(trials_only.int16_layers) < 3  # the trials alone stop before three
    choice = choose_int16_layers(*args, lowered=program)
    assert len(choice.int16_layers) == 3 and choice.drop <= 0.004
    assert lowered[-1] == choice.int16_layers
    assert all(len(layers) < 3 for layers in lowered[:-1])
    assert set(trials_only.int16_layers) < set(choice.int16_layers)
