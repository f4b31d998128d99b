# SPDX-License-Identifier: Apache-2.0
"""The MLPerf Tiny v1 reference models, as et-export factories.

Architectures follow the MLPerf Tiny reference training scripts; weights are
seeded random (these benchmarks measure size and speed, not accuracy), and
calibration data is drawn at each model's input scale. KWS comes from
samples/kws with its trained weights.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "samples" / "kws"))

from model import kws  # noqa: E402, F401  (re-exported as a factory)

Factory = tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]


def _data(shape: tuple[int, ...], count: int = 16) -> list[tuple[torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [(torch.rand(shape, generator=generator) * 2 - 1,) for _ in range(count)]


def _conv_bn_relu(c_in: int, c_out: int, stride: int = 1, groups: int = 1) -> list[nn.Module]:
    return [
        nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(),
    ]


class ResidualBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            *_conv_bn_relu(c_in, c_out, stride),
            nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
            nn.BatchNorm2d(c_out),
        )
        projection = nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False)
        self.shortcut = (
            nn.Sequential(projection, nn.BatchNorm2d(c_out))
            if stride != 1 or c_in != c_out
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


class ResNet8(nn.Module):
    """Image classification, CIFAR-10 32x32x3 -> 10 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(*_conv_bn_relu(3, 16))
        self.stacks = nn.Sequential(
            ResidualBlock(16, 16, 1), ResidualBlock(16, 32, 2), ResidualBlock(32, 64, 2)
        )
        self.pool = nn.AvgPool2d(8)
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.stacks(self.stem(x))), 1))


class MobileNetV1(nn.Module):
    """Visual wake words, 96x96x3 -> person / no person, width multiplier 0.25."""

    # (output channels at width 1.0, stride) of the 13 depthwise-separable blocks.
    BLOCKS = (
        ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2))
        + ((512, 1),) * 5
        + (
            (1024, 2),
            (1024, 1),
        )
    )

    def __init__(self, width: float = 0.25) -> None:
        super().__init__()
        channels = int(32 * width)
        layers = _conv_bn_relu(3, channels, stride=2)
        for out, stride in self.BLOCKS:
            out = int(out * width)
            layers += _conv_bn_relu(channels, channels, stride, groups=channels)
            layers += [nn.Conv2d(channels, out, 1, bias=False), nn.BatchNorm2d(out), nn.ReLU()]
            channels = out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d(3)
        self.fc = nn.Linear(channels, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class AutoEncoder(nn.Module):
    """Anomaly detection (ToyADMOS): 640 log-mel values in, reconstruction out."""

    def __init__(self) -> None:
        super().__init__()

        def dense(n_in: int, n_out: int) -> list[nn.Module]:
            return [nn.Linear(n_in, n_out), nn.BatchNorm1d(n_out), nn.ReLU()]

        sizes = (640, 128, 128, 128, 128, 8, 128, 128, 128, 128)
        layers: list[nn.Module] = []
        for n_in, n_out in zip(sizes, sizes[1:]):
            layers += dense(n_in, n_out)
        self.layers = nn.Sequential(*layers, nn.Linear(128, 640))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def resnet8() -> Factory:
    torch.manual_seed(0)
    data = _data((1, 3, 32, 32))
    return ResNet8(), data[0], data


def mobilenet_v1() -> Factory:
    torch.manual_seed(0)
    data = _data((1, 3, 96, 96))
    return MobileNetV1(), data[0], data


def autoencoder() -> Factory:
    torch.manual_seed(0)
    data = _data((1, 640))
    return AutoEncoder(), data[0], data
