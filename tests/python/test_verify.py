# SPDX-License-Identifier: Apache-2.0
"""The agreement line: top-1 where an output is a classifier's scores, and an error
relative to the float output's range for every output kind."""

import torch
from et_zephyr.reference.verify import compare


def test_classifier_scores_get_top1_agreement() -> None:
    reference = [torch.tensor([[0.1, 0.9, 0.0]]), torch.tensor([[0.8, 0.1, 0.1]])]
    lowered = [torch.tensor([[0.2, 0.7, 0.0]]), torch.tensor([[0.1, 0.2, 0.1]])]
    agreement = compare(lowered, reference, reference, 0.1)
    assert agreement.top1_vs_float == 0.5
    assert agreement.max_steps_vs_float == 7.0
    assert agreement.relative_error_vs_float == round(0.7 / 0.9, 5)


def test_a_dense_output_has_no_top1_only_its_errors() -> None:
    """A segmentation map whose values barely move: an argmax over its pixels would
    flip on ties and call that 0 % agreement."""
    reference = [torch.zeros(1, 2, 8, 8)]
    lowered = [torch.full((1, 2, 8, 8), 0.05)]
    reference[0][0, 0, 0, 0] = 1.0
    agreement = compare(lowered, reference, reference, 0.1)
    assert agreement.top1_vs_float is None and agreement.top1_vs_fake_quant is None
    assert agreement.max_steps_vs_float == 9.5
    assert round(agreement.relative_error_vs_float, 3) == 0.95
