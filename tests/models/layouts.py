# SPDX-License-Identifier: Apache-2.0
"""Portable operators between Cortex-M kernels in a channels-last model: one output each.

The convolutions make the model channels-last, and ExecuTorch's portable kernels index
by the default dim order; et-export gives them default-order copies
(et_zephyr/reference/dim_orders.py). Each output goes through one of them:

- a concatenation along the width (the kernels test's 8 copies of the input) and one
  along the channels, each into a convolution;
- channel slices x[:, :3] and x[:, :1] (one channel: the same bytes in either order);
- a flatten of a feature map that is not 1 x 1, into a linear layer.
"""

from __future__ import annotations

import torch
from torch import nn

INPUT_SHAPE = (1, 12, 9, 5)


class Layouts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        channels = INPUT_SHAPE[1]
        self.widened = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.stacked = nn.Conv2d(2 * channels, 4, 1)
        self.three = nn.Conv2d(3, 4, 3)
        self.one = nn.Conv2d(1, 4, 3)
        self.mixed = nn.Conv2d(channels, 4, 1)
        self.head = nn.Linear(4 * 9 * 5, 10)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            self.widened(torch.cat([x] * 8, dim=3)),
            self.stacked(torch.cat([x, x], dim=1)),
            self.three(x[:, :3]),
            self.one(x[:, :1]),
            self.head(torch.relu(self.mixed(x)).flatten(1)),
        )


def layouts() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: seeded weights, 32 calibration inputs of unit scale."""
    torch.manual_seed(0)
    model = Layouts().eval()
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(INPUT_SHAPE, generator=generator),) for _ in range(32)]
    return model, calibration[0], calibration
