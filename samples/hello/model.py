# SPDX-License-Identifier: Apache-2.0
"""The smallest et-zephyr model: two linear layers and a residual add.

Small enough for a Cortex-M0 with 16 KB of RAM (qemu_cortex_m0). The weights
are seeded, so every export gives the same program and the same test vectors.
"""

from __future__ import annotations

import torch
from torch import nn

LABELS = ("zero", "one", "two", "three")
FEATURES = 8


class Hello(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, 16)
        self.fc2 = nn.Linear(16, FEATURES)
        self.fc3 = nn.Linear(FEATURES, len(LABELS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.fc1(x))
        return self.fc3(self.fc2(hidden) + x)


def hello() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: the model, an example input and 32 calibration inputs."""
    torch.manual_seed(0)
    model = Hello().eval()
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(1, FEATURES, generator=generator),) for _ in range(32)]
    return model, calibration[0], calibration
