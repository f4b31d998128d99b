# SPDX-License-Identifier: Apache-2.0
"""How closely the lowered INT8 program follows the models it came from."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch


@dataclass(frozen=True)
class Agreement:
    """Top-1 agreement (for a classifier-shaped output: one row of two or more scores a
    sample; None otherwise, where an argmax over pixels or values says nothing) and the
    largest error, in output quantization steps and relative to the float output's range."""

    samples: int
    top1_vs_fake_quant: float | None
    top1_vs_float: float | None
    max_steps_vs_fake_quant: float
    max_steps_vs_float: float
    relative_error_vs_float: float

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def compare(
    lowered: list[torch.Tensor],
    fake_quant: list[torch.Tensor],
    reference: list[torch.Tensor],
    output_scale: float | None,
) -> Agreement:
    """Compare the first output of each sample across the three models.

    Fixed-point requantization rounds differently from fake-quant near .5, so
    a step or two of difference is expected; more points at a real problem.
    """
    step = output_scale or 1.0
    classifier = all(classifier_shaped(output) for output in reference)
    return Agreement(
        samples=len(lowered),
        top1_vs_fake_quant=_top1(lowered, fake_quant) if classifier else None,
        top1_vs_float=_top1(lowered, reference) if classifier else None,
        max_steps_vs_fake_quant=_max_steps(lowered, fake_quant, step),
        max_steps_vs_float=_max_steps(lowered, reference, step),
        relative_error_vs_float=_relative_error(lowered, reference),
    )


def classifier_shaped(output: torch.Tensor) -> bool:
    """Scores of two or more classes: [classes] or [batch, classes]."""
    return 1 <= output.dim() <= 2 and output.shape[-1] >= 2


def _top1(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    same = sum(bool(torch.equal(_classes(x), _classes(y))) for x, y in zip(a, b))
    return same / len(a) if a else 1.0


def _classes(output: torch.Tensor) -> torch.Tensor:
    """The top class of each batch row; a rank-0 or rank-1 output is one row."""
    rows = output.float().reshape(output.shape[0] if output.dim() >= 2 else 1, -1)
    return rows.argmax(-1)


def _max_steps(a: list[torch.Tensor], b: list[torch.Tensor], step: float) -> float:
    errors = [((x.float() - y.float()).abs().max() / step).item() for x, y in zip(a, b)]
    return round(max(errors, default=0.0), 3)


def _relative_error(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """The largest error over the float outputs' range (max - min over all samples)."""
    if not b:
        return 0.0
    values = torch.cat([y.float().flatten() for y in b])
    spread = (values.max() - values.min()).item() or 1.0
    errors = [(x.float() - y.float()).abs().max().item() for x, y in zip(a, b)]
    return round(max(errors) / spread, 5)
