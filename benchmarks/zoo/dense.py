# SPDX-License-Identifier: Apache-2.0
"""Dense-output and multi-tensor models, in plain PyTorch, as et-export factories: a
U-Net, a FOMO-style centroid detector, SSD-lite and YOLO-style heads, a convolutional
autoencoder, a two-input and a multi-output net. Seeded random weights; calibration data
at the input's scale."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

# et-export loads this file by its path: its sibling modules are imported from its folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bundle import Factory, bundle  # noqa: E402


def _conv(c_in: int, c_out: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, stride, 1, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(),
    )


def _separable(c_in: int, c_out: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(_conv(c_in, c_in, stride, c_in), nn.Conv2d(c_in, c_out, 1), nn.ReLU())


class UNet(nn.Module):
    """Two levels down with max pools, nearest upsampling and skip concatenations up."""

    def __init__(self) -> None:
        super().__init__()
        self.down1, self.down2 = _conv(3, 8), _conv(8, 16)
        self.bottom = _conv(16, 16)
        self.up2, self.up1 = _conv(32, 8), _conv(16, 8)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.down1(x)
        b = self.down2(F.max_pool2d(a, 2))
        c = self.bottom(F.max_pool2d(b, 2))
        y = self.up2(torch.cat([F.interpolate(c, scale_factor=2.0, mode="nearest"), b], dim=1))
        y = self.up1(torch.cat([F.interpolate(y, scale_factor=2.0, mode="nearest"), a], dim=1))
        return self.out(y)


def unet() -> Factory:
    torch.manual_seed(0)
    return bundle(UNet(), (1, 3, 32, 32))


class Fomo(nn.Module):
    """FOMO-style: a MobileNet trunk cut at 1/8 of the input, a 1x1 head per cell."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(_conv(3, 8, 2), _separable(8, 16, 2), _separable(16, 32, 2))
        self.head = nn.Sequential(nn.Conv2d(32, 16, 1), nn.ReLU(), nn.Conv2d(16, 3, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.head(self.trunk(x)), dim=1)


def fomo() -> Factory:
    torch.manual_seed(0)
    return bundle(Fomo(), (1, 3, 96, 96))


class SsdLite(nn.Module):
    """Separable trunk, class and box heads on two scales (four outputs)."""

    def __init__(self, anchors: int = 3, classes: int = 4) -> None:
        super().__init__()
        self.stage1 = nn.Sequential(_conv(3, 8, 2), _separable(8, 16, 2), _separable(16, 24, 2))
        self.stage2 = _separable(24, 32, 2)
        self.cls1 = nn.Conv2d(24, anchors * classes, 3, padding=1)
        self.box1 = nn.Conv2d(24, anchors * 4, 3, padding=1)
        self.cls2 = nn.Conv2d(32, anchors * classes, 3, padding=1)
        self.box2 = nn.Conv2d(32, anchors * 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = self.stage1(x)
        b = self.stage2(a)
        return self.cls1(a), self.box1(a), self.cls2(b), self.box2(b)


def ssd_lite() -> Factory:
    torch.manual_seed(0)
    return bundle(SsdLite(), (1, 3, 96, 96))


class YoloStyle(nn.Module):
    """A trunk, an upsampling neck that joins two scales, a detection head per scale."""

    def __init__(self, outputs: int = 3 * (5 + 2)) -> None:
        super().__init__()
        self.stem = nn.Sequential(_conv(3, 8, 2), _conv(8, 16, 2), _conv(16, 16, 1))
        self.deep = nn.Sequential(_conv(16, 32, 2), _conv(32, 32, 1))
        self.lateral = nn.Conv2d(32, 16, 1)
        self.fuse = _conv(32, 16)
        self.head_deep = nn.Conv2d(32, outputs, 1)
        self.head_fine = nn.Conv2d(16, outputs, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        fine = self.stem(x)
        deep = self.deep(fine)
        up = F.interpolate(self.lateral(deep), scale_factor=2.0, mode="nearest")
        fused = self.fuse(torch.cat([up, fine], dim=1))
        return self.head_deep(deep), self.head_fine(fused)


def yolo_style() -> Factory:
    torch.manual_seed(0)
    return bundle(YoloStyle(), (1, 3, 64, 64))


class ConvAutoencoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(_conv(1, 8, 2), _conv(8, 16, 2))
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 2, stride=2), nn.ReLU(), nn.ConvTranspose2d(8, 1, 2, stride=2)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


def conv_autoencoder() -> Factory:
    torch.manual_seed(0)
    return bundle(ConvAutoencoder(), (1, 1, 32, 32))


class TwoInputs(nn.Module):
    """An image and a sensor vector, joined before the classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.image = nn.Sequential(_conv(1, 8, 2), _conv(8, 16, 2), nn.AdaptiveAvgPool2d(1))
        self.sensors = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(32, 4)

    def forward(self, image: torch.Tensor, sensors: torch.Tensor) -> torch.Tensor:
        joined = torch.cat([self.image(image).flatten(1), self.sensors(sensors)], dim=1)
        return self.head(joined)


def two_inputs() -> Factory:
    torch.manual_seed(0)
    return bundle(TwoInputs(), (1, 1, 32, 32), (1, 8))


class MultiOutput(nn.Module):
    """A shared trunk with a classifier and a regressor."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(_conv(3, 8, 2), _conv(8, 16, 2), nn.AdaptiveAvgPool2d(1))
        self.classes = nn.Linear(16, 5)
        self.value = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.trunk(x).flatten(1)
        return self.classes(features), torch.sigmoid(self.value(features))


def multi_output() -> Factory:
    torch.manual_seed(0)
    return bundle(MultiOutput(), (1, 3, 32, 32))
