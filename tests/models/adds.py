# SPDX-License-Identifier: Apache-2.0
"""Quantized additions, one output each, for et-zephyr's Helium add kernel and around it:

- a residual connection over 12 x 9 x 5 = 540 elements (8 a step, then a predicated
  tail of 4);
- the sum of two convolutions with a fused ReLU (the clamp's lower bound moves);
- two inputs of very different scales (one input's requantization shifts far right);
- a channel broadcast (each channel's average added to its pixels): the upstream kernel.
"""

from __future__ import annotations

import torch
from torch import nn

INPUT_SHAPE = (1, 12, 9, 5)


class Adds(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        channels = INPUT_SHAPE[1]
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.other = nn.Conv2d(channels, channels, 1)
        self.small = nn.Conv2d(channels, channels, 1)
        self.pool = nn.AvgPool2d(INPUT_SHAPE[2:])
        with torch.no_grad():
            self.small.weight.mul_(1 / 64)
            self.small.bias.mul_(1 / 64)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        features = self.conv(x)
        return (
            x + features,
            torch.relu(features + self.other(x)),
            x + self.small(x),
            x + self.pool(x),
        )


def adds() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: seeded weights, 32 calibration inputs of unit scale."""
    torch.manual_seed(0)
    model = Adds().eval()
    generator = torch.Generator().manual_seed(5)
    calibration = [(torch.randn(INPUT_SHAPE, generator=generator),) for _ in range(32)]
    return model, calibration[0], calibration
