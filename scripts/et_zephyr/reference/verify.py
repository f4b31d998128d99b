# SPDX-License-Identifier: Apache-2.0
"""How closely the lowered INT8 program follows the models it came from."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch


@dataclass(frozen=True)
class Agreement:
    """Top-1 agreement (for a classifier-shaped output: one row of two or more scores a
    sample; None otherwise, where an argmax over pixels or values says nothing) and the
    largest error, in output quantization steps and relative to the float output's range.
    `reference` names the float model: after quantization-aware training it is the
    trained fake-quant model, there being no other."""

    samples: int
    top1_vs_fake_quant: float | None
    top1_vs_float: float | None
    max_steps_vs_fake_quant: float
    max_steps_vs_float: float
    relative_error_vs_float: float
    reference: str = "float"

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


def relative_rms_error(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """The mean over samples of the RMS of `a - b` over the RMS of `b`: each sample judged
    against its own size, so a signal a thousand times smaller than another counts as
    much (a range-relative error passes one that INT8 rounds away). Sizes are floored at
    a thousandth of the largest, so a silent sample does not dominate; outputs of one
    value a sample are pooled (one value is no size: a regressor's output near zero)."""
    if not b:
        return 0.0
    errors = [(x.float() - y.float()).flatten() for x, y in zip(a, b)]
    values = [y.float().flatten() for y in b]
    if all(value.numel() == 1 for value in values):
        errors, values = [torch.cat(errors)], [torch.cat(values)]
    sizes = torch.stack([value.pow(2).mean().sqrt() for value in values])
    sizes = sizes.clamp(min=1e-3 * sizes.max().item() or 1.0)
    ratios = torch.stack([error.pow(2).mean().sqrt() for error in errors]) / sizes
    return round(ratios.mean().item(), 5)


def _relative_error(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """The largest error over the float outputs' range (max - min over all samples)."""
    if not b:
        return 0.0
    values = torch.cat([y.float().flatten() for y in b])
    spread = (values.max() - values.min()).item() or 1.0
    errors = [(x.float() - y.float()).abs().max().item() for x, y in zip(a, b)]
    return round(max(errors) / spread, 5)
