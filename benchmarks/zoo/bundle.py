# SPDX-License-Identifier: Apache-2.0
"""What each zoo factory returns: the model in eval mode with BatchNorm statistics that
are not the identity, an example input and 16 calibration samples at the input's scale
(uniform in [-1, 1]), all seeded."""

from __future__ import annotations

import torch
from torch import nn

Factory = tuple[nn.Module, tuple[torch.Tensor, ...], list[tuple[torch.Tensor, ...]]]


def bundle(model: nn.Module, *shapes: tuple[int, ...], count: int = 16) -> Factory:
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                module.running_mean.uniform_(-0.2, 0.2, generator=generator)
                module.running_var.uniform_(0.5, 1.5, generator=generator)
    data = [
        tuple(torch.rand(shape, generator=generator) * 2 - 1 for shape in shapes)
        for _ in range(count)
    ]
    return model.eval(), data[0], data
