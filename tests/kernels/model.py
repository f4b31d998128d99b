# SPDX-License-Identifier: Apache-2.0
"""Convolution shapes that exercise et-zephyr's own kernels and their fallbacks.

Every branch is an output of its own, so a wrong byte shows which shape broke:
3x3 depthwise with and without padding, bias and ReLU, outputs that are not a
multiple of the kernel's 4-pixel blocks, a stride-2 depthwise (upstream
kernel), and pointwise convolutions whose depth is (own kernel) or is not
(upstream kernel) a multiple of 16, with an odd number of output channels and
with a depth beyond the kernel's paired path. The weights are seeded: every
export gives the same program and the same test vectors.
"""

from __future__ import annotations

import torch
from torch import nn

INPUT_SHAPE = (1, 12, 9, 5)


class ConvShapes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        channels = INPUT_SHAPE[1]
        self.depthwise_padded = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.depthwise_valid = nn.Conv2d(channels, channels, 3, groups=channels, bias=False)
        self.depthwise_rows = nn.Conv2d(channels, channels, 3, padding=(1, 0), groups=channels)
        self.depthwise_strided = nn.Conv2d(channels, channels, 3, stride=2, groups=channels)
        self.pointwise_widen = nn.Conv2d(channels, 16, 1)
        self.pointwise_deep = nn.Conv2d(16, 20, 1)
        self.depthwise_wide = nn.Conv2d(20, 20, 3, padding=1, groups=20)
        self.pointwise_odd = nn.Conv2d(16, 7, 1)
        self.pointwise_widest = nn.Conv2d(channels, 144, 1)
        self.pointwise_deepest = nn.Conv2d(144, 8, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        wide = torch.relu(self.pointwise_widen(x))
        deep = self.pointwise_deep(wide)
        return (
            torch.relu(self.depthwise_padded(x)),
            self.depthwise_valid(x),
            self.depthwise_rows(x),
            self.depthwise_strided(x),
            deep,
            torch.relu(self.depthwise_wide(deep)),
            self.pointwise_odd(wide),
            self.pointwise_deepest(torch.relu(self.pointwise_widest(x))),
        )


def conv_shapes() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: the model, an example input and 32 calibration inputs."""
    torch.manual_seed(0)
    model = ConvShapes().eval()
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(INPUT_SHAPE, generator=generator),) for _ in range(32)]
    return model, calibration[0], calibration
