# SPDX-License-Identifier: Apache-2.0
"""Sensor and audio models over time, in plain PyTorch, as et-export factories: 1-D CNNs
on accelerometer, ECG and raw audio, a TCN, a 1-D autoencoder, a CRNN and a
conformer-lite block. Seeded random weights; calibration data at the input's scale."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

# et-export loads this file by its path: its sibling modules are imported from its folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bundle import Factory, bundle  # noqa: E402


def _conv_bn(c_in: int, c_out: int, k: int, stride: int = 1, dilation: int = 1) -> nn.Sequential:
    padding = dilation * (k - 1) // 2
    conv = nn.Conv1d(c_in, c_out, k, stride, padding, dilation=dilation, bias=False)
    return nn.Sequential(conv, nn.BatchNorm1d(c_out), nn.ReLU())


class HarCnn(nn.Module):
    """Human-activity recognition on 3-axis accelerometer windows of 128 samples."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _conv_bn(3, 32, 5),
            nn.MaxPool1d(2),
            _conv_bn(32, 64, 5),
            nn.MaxPool1d(2),
            _conv_bn(64, 64, 3),
            nn.AdaptiveAvgPool1d(1),
        )
        self.head = nn.Linear(64, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def har_cnn() -> Factory:
    torch.manual_seed(0)
    return bundle(HarCnn(), (1, 3, 128))


class EcgBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.a = _conv_bn(c_in, c_out, 7, stride)
        self.b = nn.Sequential(
            nn.Conv1d(c_out, c_out, 7, padding=3, bias=False), nn.BatchNorm1d(c_out)
        )
        self.skip = nn.Conv1d(c_in, c_out, 1, stride) if stride != 1 or c_in != c_out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.skip is None else self.skip(x)
        return F.relu(skip + self.b(self.a(x)))


class EcgResNet(nn.Module):
    """A 1-D ResNet on one lead of 256 ECG samples."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = _conv_bn(1, 16, 15, 2)
        self.blocks = nn.Sequential(EcgBlock(16, 16, 1), EcgBlock(16, 32, 2), EcgBlock(32, 32, 2))
        self.head = nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)).mean(-1))


def ecg_resnet() -> Factory:
    torch.manual_seed(0)
    return bundle(EcgResNet(), (1, 1, 256))


class TemporalBlock(nn.Module):
    def __init__(self, channels: int, dilation: int) -> None:
        super().__init__()
        self.pad = 2 * dilation
        self.a = nn.Conv1d(channels, channels, 3, dilation=dilation)
        self.b = nn.Conv1d(channels, channels, 3, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.a(F.pad(x, (self.pad, 0))))
        y = F.relu(self.b(F.pad(y, (self.pad, 0))))
        return F.relu(x + y)


class Tcn(nn.Module):
    """A causal temporal convolutional network on 6-axis IMU data."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv1d(6, 24, 1)
        self.blocks = nn.Sequential(*(TemporalBlock(24, d) for d in (1, 2, 4, 8)))
        self.head = nn.Linear(24, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x))[:, :, -1])


def tcn() -> Factory:
    torch.manual_seed(0)
    return bundle(Tcn(), (1, 6, 96))


class RawAudioCnn(nn.Module):
    """Keyword spotting on 0.5 s of 8 kHz samples, no front end."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _conv_bn(1, 16, 40, 8),
            nn.MaxPool1d(4),
            _conv_bn(16, 32, 3),
            nn.MaxPool1d(4),
            _conv_bn(32, 32, 3),
        )
        self.head = nn.Linear(32, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.adaptive_avg_pool1d(self.features(x), 1).flatten(1))


def raw_audio_cnn() -> Factory:
    torch.manual_seed(0)
    return bundle(RawAudioCnn(), (1, 1, 4000))


class Conv1dAutoencoder(nn.Module):
    """Vibration anomaly detection: strided Conv1d down, ConvTranspose1d up."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv1d(3, 16, 4, 2, 1), nn.ReLU(), nn.Conv1d(16, 32, 4, 2, 1), nn.ReLU()
        )
        self.decoder = nn.Sequential(
            nn.ConvTranspose1d(32, 16, 4, 2, 1), nn.ReLU(), nn.ConvTranspose1d(16, 3, 4, 2, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


def conv1d_autoencoder() -> Factory:
    torch.manual_seed(0)
    return bundle(Conv1dAutoencoder(), (1, 3, 128))


class Crnn(nn.Module):
    """Convolutions over a spectrogram, then a GRU over its frames."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d((1, 2)),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d((1, 5)),
        )
        self.gru = nn.GRU(16, 32, batch_first=True)
        self.head = nn.Linear(32, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)  # [1, 16, frames, 1]
        frames = y.flatten(2).transpose(1, 2)
        out, _ = self.gru(frames)
        return self.head(out[:, -1])


def crnn() -> Factory:
    torch.manual_seed(0)
    return bundle(Crnn(), (1, 1, 12, 10))


class ConformerLite(nn.Module):
    """One conformer block over 16 frames of 32 features: feed-forward, attention, a
    convolution module (pointwise, GLU, depthwise Conv1d, pointwise), feed-forward."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.ff1 = nn.Sequential(
            nn.LayerNorm(width), nn.Linear(width, 64), nn.SiLU(), nn.Linear(64, width)
        )
        self.norm = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, 2, batch_first=True)
        self.conv_norm = nn.LayerNorm(width)
        self.pointwise = nn.Conv1d(width, 2 * width, 1)
        self.depthwise = nn.Conv1d(width, width, 7, padding=3, groups=width)
        self.project = nn.Conv1d(width, width, 1)
        self.ff2 = nn.Sequential(
            nn.LayerNorm(width), nn.Linear(width, 64), nn.SiLU(), nn.Linear(64, width)
        )
        self.head = nn.Linear(width, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 0.5 * self.ff1(x)
        y = self.norm(x)
        x = x + self.attention(y, y, y, need_weights=False)[0]
        y = self.conv_norm(x).transpose(1, 2)
        y = F.glu(self.pointwise(y), dim=1)
        y = self.project(F.silu(self.depthwise(y)))
        x = x + y.transpose(1, 2)
        x = x + 0.5 * self.ff2(x)
        return self.head(x.mean(1))


def conformer_lite() -> Factory:
    torch.manual_seed(0)
    return bundle(ConformerLite(), (1, 16, 32))
