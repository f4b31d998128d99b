# SPDX-License-Identifier: Apache-2.0
"""Example inputs that are Python numbers (a scale, a flag) become part of the model.

torch.export bakes such a value into the graph, so the program can only take the tensors;
this binds the numbers into a wrapper module whose inputs are exactly those tensors, and
checks that the calibration samples hold the same numbers.
"""

from __future__ import annotations

import torch

from ..errors import ExportError
from .loading import NUMBERS, ModelBundle


class _WithConstants(torch.nn.Module):
    """`model` with the non-tensor arguments of `template` fixed; a None slot takes the
    next tensor input."""

    def __init__(self, model: torch.nn.Module, template: tuple[object, ...]) -> None:
        super().__init__()
        self.model = model
        self.template = template

    def forward(self, *tensors: torch.Tensor) -> object:
        supplied = iter(tensors)
        return self.model(*(next(supplied) if t is None else t for t in self.template))


def bind_constant_inputs(bundle: ModelBundle) -> ModelBundle:
    """The bundle with its Python-number inputs bound into the model (unchanged if none)."""
    example = tuple(bundle.example_inputs)
    if all(isinstance(value, torch.Tensor) for value in example):
        return bundle
    for index, value in enumerate(example):
        if not isinstance(value, (torch.Tensor, *NUMBERS)):
            raise ExportError(
                f"example input {index} is a {type(value).__name__}: inputs must be tensors "
                "(or Python numbers, which become constants of the program)"
            )
    template = tuple(None if isinstance(v, torch.Tensor) else v for v in example)
    for sample in bundle.calibration:
        for index, value in enumerate(sample):
            if template[index] is not None and value != template[index]:
                raise ExportError(
                    f"input {index} is the Python number {template[index]!r} in the example "
                    f"inputs but {value!r} in a calibration sample: a number becomes a "
                    "constant of the program; pass a tensor to make it an input"
                )

    def tensors(sample: tuple[object, ...]) -> tuple[torch.Tensor, ...]:
        return tuple(v for v, t in zip(sample, template) if t is None)  # type: ignore[misc]

    return ModelBundle(
        _WithConstants(bundle.model, template),
        tensors(example),
        [tensors(tuple(sample)) for sample in bundle.calibration],
        bundle.source,
    )
