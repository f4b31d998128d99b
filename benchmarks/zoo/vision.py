# SPDX-License-Identifier: Apache-2.0
"""Image classifiers TinyML teams deploy, in plain PyTorch, as et-export factories.

Small widths and inputs (what fits a Cortex-M part), seeded random weights with
BatchNorm statistics that are not the identity, calibration data at the input's scale:
the zoo measures what exports and where it runs, not accuracy.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

# et-export loads this file by its path: its sibling modules are imported from its folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bundle import Factory, bundle  # noqa: E402


def _conv_bn(c_in: int, c_out: int, k: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(c_out)
    )


class InvertedResidual(nn.Module):
    """MobileNetV2's block (and MBConv without squeeze-excitation): expand, depthwise,
    project, a residual where shapes allow."""

    def __init__(
        self, c_in: int, c_out: int, stride: int, expand: int, k: int = 3, act: type = nn.ReLU6
    ) -> None:
        super().__init__()
        hidden = c_in * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [_conv_bn(c_in, hidden, 1), act()]
        layers += [
            _conv_bn(hidden, hidden, k, stride, groups=hidden),
            act(),
            _conv_bn(hidden, c_out, 1),
        ]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    def __init__(self, blocks: list[tuple[int, int, int, int, int]], act: type = nn.ReLU6) -> None:
        super().__init__()
        layers: list[nn.Module] = [_conv_bn(3, 16, 3, 2), act()]
        c = 16
        for expand, c_out, repeats, stride, k in blocks:
            for i in range(repeats):
                layers.append(InvertedResidual(c, c_out, stride if i == 0 else 1, expand, k, act))
                c = c_out
        layers += [_conv_bn(c, 128, 1), act()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.head(y.flatten(1))


def mobilenet_v2() -> Factory:
    torch.manual_seed(0)
    blocks = [(1, 8, 1, 1, 3), (6, 16, 2, 2, 3), (6, 24, 2, 2, 3), (6, 32, 2, 2, 3)]
    return bundle(MobileNetV2(blocks), (1, 3, 64, 64))


def mbconv() -> Factory:
    """EfficientNet-lite-style: MBConv blocks with 3x3 and 5x5 depthwise kernels, ReLU6."""
    torch.manual_seed(0)
    blocks = [
        (1, 8, 1, 1, 3),
        (4, 16, 2, 2, 3),
        (4, 24, 2, 2, 5),
        (4, 40, 2, 2, 3),
        (4, 48, 1, 1, 5),
    ]
    return bundle(MobileNetV2(blocks), (1, 3, 64, 64))


def mcunet() -> Factory:
    """MCUNet-style: inverted residuals searched for 3, 5 and 7 wide kernels, small input."""
    torch.manual_seed(0)
    blocks = [
        (1, 8, 1, 1, 3),
        (4, 16, 1, 2, 7),
        (3, 16, 1, 1, 5),
        (5, 24, 1, 2, 5),
        (4, 32, 2, 2, 3),
    ]
    return bundle(MobileNetV2(blocks), (1, 3, 48, 48))


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.reduce = nn.Conv2d(channels, max(8, channels // 4), 1)
        self.expand = nn.Conv2d(max(8, channels // 4), channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = F.adaptive_avg_pool2d(x, 1)
        scale = F.hardsigmoid(self.expand(F.relu(self.reduce(scale))))
        return x * scale


class MobileNetV3Block(nn.Module):
    def __init__(self, c_in: int, hidden: int, c_out: int, k: int, stride: int, se: bool) -> None:
        super().__init__()
        self.expand = nn.Sequential(_conv_bn(c_in, hidden, 1), nn.Hardswish())
        self.depthwise = nn.Sequential(_conv_bn(hidden, hidden, k, stride, hidden), nn.Hardswish())
        self.se = SqueezeExcite(hidden) if se else nn.Identity()
        self.project = _conv_bn(hidden, c_out, 1)
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.se(self.depthwise(self.expand(x))))
        return x + y if self.residual else y


class MobileNetV3Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(_conv_bn(3, 16, 3, 2), nn.Hardswish())
        self.blocks = nn.Sequential(
            MobileNetV3Block(16, 16, 16, 3, 2, True),
            MobileNetV3Block(16, 72, 24, 3, 2, False),
            MobileNetV3Block(24, 88, 24, 3, 1, False),
            MobileNetV3Block(24, 96, 40, 5, 2, True),
            MobileNetV3Block(40, 120, 48, 5, 1, True),
        )
        self.last = nn.Sequential(_conv_bn(48, 144, 1), nn.Hardswish())
        self.head = nn.Linear(144, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.adaptive_avg_pool2d(self.last(self.blocks(self.stem(x))), 1)
        return self.head(y.flatten(1))


def mobilenet_v3_small() -> Factory:
    torch.manual_seed(0)
    return bundle(MobileNetV3Small(), (1, 3, 64, 64))


class Fire(nn.Module):
    def __init__(self, c_in: int, squeeze: int, expand: int) -> None:
        super().__init__()
        self.squeeze = nn.Conv2d(c_in, squeeze, 1)
        self.expand1 = nn.Conv2d(squeeze, expand, 1)
        self.expand3 = nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.expand1(s)), F.relu(self.expand3(s))], dim=1)


class SqueezeNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, stride=2)
        self.fires = nn.Sequential(
            nn.MaxPool2d(3, 2),
            Fire(32, 8, 16),
            Fire(32, 8, 16),
            nn.MaxPool2d(3, 2),
            Fire(32, 16, 32),
        )
        self.classifier = nn.Conv2d(64, 10, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fires(F.relu(self.stem(x)))
        return F.adaptive_avg_pool2d(F.relu(self.classifier(y)), 1).flatten(1)


def squeezenet() -> Factory:
    torch.manual_seed(0)
    return bundle(SqueezeNet(), (1, 3, 64, 64))


class ShuffleUnit(nn.Module):
    """ShuffleNetV2's unit of stride 1: half the channels pass, half are convolved, then
    the halves are interleaved."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        half = channels // 2
        self.branch = nn.Sequential(
            _conv_bn(half, half, 1),
            nn.ReLU(),
            _conv_bn(half, half, 3, groups=half),
            _conv_bn(half, half, 1),
            nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        left, right = x.chunk(2, dim=1)
        y = torch.cat([left, self.branch(right)], dim=1)
        n, c, h, w = y.shape
        return y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)


class ShuffleNetV2(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(_conv_bn(3, 24, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.stage = nn.Sequential(ShuffleUnit(24), ShuffleUnit(24))
        self.down = nn.Sequential(_conv_bn(24, 48, 3, 2), nn.ReLU())
        self.stage2 = nn.Sequential(ShuffleUnit(48), ShuffleUnit(48))
        self.head = nn.Linear(48, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stage2(self.down(self.stage(self.stem(x))))
        return self.head(y.mean((2, 3)))


def shufflenet_v2() -> Factory:
    torch.manual_seed(0)
    return bundle(ShuffleNetV2(), (1, 3, 64, 64))


class CifarCnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def cifar_cnn() -> Factory:
    torch.manual_seed(0)
    return bundle(CifarCnn(), (1, 3, 32, 32))


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.a = _conv_bn(c_in, c_out, 3, stride)
        self.b = _conv_bn(c_out, c_out, 3)
        self.skip = _conv_bn(c_in, c_out, 1, stride) if stride != 1 or c_in != c_out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.skip is None else self.skip(x)
        return F.relu(skip + self.b(F.relu(self.a(x))))


class ResNet18Narrow(nn.Module):
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        widths = [width, 2 * width, 4 * width, 8 * width]
        self.stem = nn.Sequential(_conv_bn(3, width, 3), nn.ReLU())
        blocks, c = [], width
        for i, w in enumerate(widths):
            blocks += [BasicBlock(c, w, 1 if i == 0 else 2), BasicBlock(w, w, 1)]
            c = w
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(c, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1)
        return self.head(y.flatten(1))


def resnet18_narrow() -> Factory:
    torch.manual_seed(0)
    return bundle(ResNet18Narrow(), (1, 3, 32, 32))
