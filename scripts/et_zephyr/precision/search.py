# SPDX-License-Identifier: Apache-2.0
"""`--precision auto`: which operators with an s16 kernel (linears, convolutions, pools,
additions: "layers" here) to quantize 16x8 so that the model stays within a given drop of
the float model, INT8 everywhere else.

The drop is measured on the held-out inputs against the float model's outputs: "top1",
the share of inputs whose top class differs from the float model's; "error", the output's
RMS error relative to the float output's RMS, each input judged against its own size and
averaged (reference/verify.py's relative_rms_error); a stateful model's held-out streams
count each hop's output as one input's. By default top1 for a
classifier-shaped output (one row of two or more scores a sample), error otherwise. Each
candidate layer is tried alone in 16x8 and ranked by the drop it leaves; layers then move
to 16x8 in that order until the drop is within the limit (or every candidate is 16x8):
in the trial and then in the program lowered from the set (its host reference, the
device's arithmetic), since some integer kernels round more than fake quantization shows
(LayerNorm, GELU and softmax tables, a whole LSTM or GRU layer's gates and state).
Each trial is a fake-quantized model (PT2E, calibrated as the export calibrates;
trials.py), not a lowered program: what the host reference computes follows it
within a step or two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch.fx import GraphModule

from .. import pipeline
from ..firmware.kernels import model_location
from ..frontend.streams import Stream
from ..passes.quantizer_int16 import mixed_precision_candidates
from ..reference.verify import Agreement, classifier_shaped, compare, relative_rms_error
from .trials import QuantizationTrials

Progress = Callable[[list[str]], Iterable[str]]


@dataclass(frozen=True)
class PrecisionChoice:
    """The layers chosen for 16x8 and what the choice measured."""

    int16_layers: tuple[str, ...]
    # Each candidate layer (node name) and the model's source line it comes from.
    candidates: tuple[tuple[str, str], ...]
    measure: str  # "top1" (top-1 disagreement) or "error" (relative error)
    int8_drop: float
    drop: float
    max_drop: float

    def to_json(self, program_drop: float | None = None) -> dict[str, object]:
        """With the same drop measured on the lowered program, when there is one."""
        return {
            "int16_layers": list(self.int16_layers),
            "candidates": [name for name, _ in self.candidates],
            "measure": self.measure,
            "int8_drop": self.int8_drop,
            "drop": self.drop,
            "max_drop": self.max_drop,
            "program_drop": program_drop,
        }


def choose_int16_layers(
    graph: GraphModule,
    calibration: list[Stream],
    held_out: list[Stream],
    max_drop: float,
    measure: str | None = None,
    progress: Progress = lambda layers: layers,
    lowered: Callable[[tuple[str, ...]], Agreement | None] = lambda layers: None,
) -> PrecisionChoice:
    """The fewest 16x8 layers (by the ranking above) that keep the drop within `max_drop`,
    in their trial and in the program: `lowered` lowers one set and compares its host
    reference with the float model (None: not measured)."""
    trials = QuantizationTrials(graph, calibration)
    candidates = mixed_precision_candidates(trials.annotated)
    names = [node.name for node in candidates]
    with torch.no_grad():
        reference = _outputs(graph, held_out)
    if measure is None:
        measure = "top1" if all(classifier_shaped(output) for output in reference) else "error"
    classifier = measure == "top1"

    def drop(layers: list[str]) -> float:
        fake_quant = trials.quantize(layers)
        with torch.no_grad():
            outputs = _outputs(fake_quant, held_out)
        if classifier:
            return 1.0 - (compare(outputs, outputs, reference, None).top1_vs_float or 0.0)
        return relative_rms_error(outputs, reference)

    def within(layers: list[str], trial: float) -> bool:
        if trial > max_drop:
            return False
        agreement = lowered(tuple(name for name in names if name in layers))
        program = None if agreement is None else program_drop(measure, agreement)
        return program is None or program <= max_drop

    int8_drop = drop([])
    chosen: list[str] = []
    current = int8_drop
    if names and not within([], int8_drop):
        alone = {name: drop([name]) for name in progress(names)}
        for name in sorted(names, key=lambda name: (alone[name], names.index(name))):
            chosen.append(name)
            current = drop(chosen)
            if within(chosen, current):
                break
    locations = tuple((node.name, model_location(node)) for node in candidates)
    ordered = tuple(name for name in names if name in chosen)
    return PrecisionChoice(ordered, locations, measure, int8_drop, current, max_drop)


def _outputs(model: GraphModule, streams: list[Stream]) -> list[torch.Tensor]:
    """The first output of every run: each stream's hops in order, a stateful model's
    recurrent layers carrying their float state from one to the next."""
    return [_first(result) for stream in streams for result in pipeline.run_stream(model, stream)]


def program_drop(measure: str, agreement: Agreement) -> float | None:
    """The drop by `measure` of a lowered program, from its comparison with the float
    model (None for top1 where the output is no class scores)."""
    if measure == "top1":
        top1 = agreement.top1_vs_float
        return None if top1 is None else 1.0 - top1
    return agreement.relative_error_vs_float


def _first(result: object) -> torch.Tensor:
    return result[0] if isinstance(result, (tuple, list)) else result  # type: ignore[return-value]
