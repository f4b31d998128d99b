# SPDX-License-Identifier: Apache-2.0
"""Small models and broken factories the tests export."""

import torch
from torch import nn


class TinyLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def _samples(shape: tuple[int, ...], count: int) -> list[tuple[torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [(torch.randn(shape, generator=generator),) for _ in range(count)]


def tiny() -> tuple:
    torch.manual_seed(0)
    return TinyLinear(), _samples((1, 8), 1)[0], _samples((1, 8), 16)


def tiny_without_calibration() -> tuple:
    torch.manual_seed(0)
    return TinyLinear(), _samples((1, 8), 1)[0]


def wrong_input_shape() -> tuple:
    return TinyLinear(), (torch.randn(1, 9),), _samples((1, 9), 4)


def raising() -> tuple:
    raise RuntimeError("dataset missing")


def not_a_module() -> tuple:
    return "model", (torch.randn(1, 8),)


class Bessel(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.i0(x)  # no ExecuTorch kernel implements aten::i0


def unsupported_operator() -> tuple:
    return Bessel(), (torch.randn(1, 8),), _samples((1, 8), 4)


class DynamicFilter(nn.Module):
    """A convolution whose filter the model computes from its input: refused, named."""

    def __init__(self) -> None:
        super().__init__()
        self.filters = nn.Linear(4 * 6 * 6, 8 * 4 * 3 * 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.filters(x.flatten()).view(8, 4, 3, 3)
        return nn.functional.conv2d(x, weight)


def dynamic_filter() -> tuple:
    torch.manual_seed(0)
    return DynamicFilter(), _samples((1, 4, 6, 6), 1)[0], _samples((1, 4, 6, 6), 8)


class VolumeConv(nn.Module):
    """A 3-D convolution (video, volumetric sensors): CMSIS-NN has none, so it stays float."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(2, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def volume_conv() -> tuple:
    torch.manual_seed(0)
    return VolumeConv(), _samples((1, 2, 4, 5, 5), 1)[0], _samples((1, 2, 4, 5, 5), 8)


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def small_cnn() -> tuple:
    torch.manual_seed(0)
    return SmallCNN(), _samples((1, 3, 8, 8), 1)[0], _samples((1, 3, 8, 8), 8)


def numpy_view_inputs() -> tuple:
    """Inputs as numpy views: `a[np.newaxis]` has a 0 stride on its new axis."""
    import numpy as np

    features = np.random.default_rng(0).normal(size=(8, 3, 8, 8)).astype(np.float32)
    samples = [(torch.from_numpy(sample[np.newaxis]),) for sample in features]
    torch.manual_seed(0)
    return SmallCNN(), samples[0], samples


class FloatNorm(nn.Module):
    """A LayerNorm over two dimensions: no integer kernel takes it, it stays in float."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.norm = nn.LayerNorm((4, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.linear(x))


def float_norm() -> tuple:
    torch.manual_seed(0)
    return FloatNorm(), _samples((1, 4, 8), 1)[0], _samples((1, 4, 8), 8)


class LayeredCNN(nn.Module):
    """Three convolutions of the three kinds and a linear, for et-compare's tests."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(2, 8, 3, padding=1)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pointwise = nn.Conv2d(8, 12, 1)
        self.head = nn.Linear(12, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        x = torch.relu(self.depthwise(x))
        x = torch.relu(self.pointwise(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def layered_cnn() -> tuple:
    torch.manual_seed(0)
    return LayeredCNN(), _samples((1, 2, 10, 10), 1)[0], _samples((1, 2, 10, 10), 12)


class ArgmaxHead(nn.Module):
    """A classifier that returns the class index: an int64 output, not a dequantized one."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).argmax(-1)


def argmax_head() -> tuple:
    torch.manual_seed(0)
    return ArgmaxHead(), _samples((1, 8), 1)[0], _samples((1, 8), 8)


class TwoInputs(nn.Module):
    """Features and a context vector, each through its own linear layer, then added."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Linear(12, 6)
        self.context = nn.Linear(4, 6)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.features(x) + self.context(context))


def two_inputs() -> tuple:
    torch.manual_seed(0)
    samples = [(torch.randn(1, 12), torch.randn(1, 4) * 3) for _ in range(12)]
    return TwoInputs(), samples[0], samples


class StridedStem(nn.Module):
    """A 32x32 RGB image down to 8x8 at once: its float input is most of the RAM."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 4, stride=4)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def strided_stem() -> tuple:
    torch.manual_seed(0)
    return StridedStem(), _samples((1, 3, 32, 32), 1)[0], _samples((1, 3, 32, 32), 8)


class ScaledSum(nn.Module):
    """x + alpha * y with alpha a Python number, as ExecuTorch's own add tests pass it."""

    def forward(self, x: torch.Tensor, alpha: float, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y * alpha)


def scaled_sum() -> tuple:
    samples = [(torch.randn(1, 8), 0.5, torch.randn(1, 8)) for _ in range(8)]
    return ScaledSum(), samples[0], samples


def scaled_sum_varying() -> tuple:
    samples = [(torch.randn(1, 8), 0.5 + k, torch.randn(1, 8)) for k in range(8)]
    return ScaledSum(), samples[0], samples


class AlphaAdd(nn.Module):
    """torch.add with alpha, as ExecuTorch's own add tests write it."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.add(x, y, alpha=0.5) - torch.sub(x, y, alpha=2)


def alpha_add() -> tuple:
    generator = torch.Generator().manual_seed(3)
    samples = [
        (torch.randn(4, 5, generator=generator) * 10, torch.randn(4, 5, generator=generator) * 4)
        for _ in range(16)
    ]
    return AlphaAdd(), samples[0], samples


class ResidualStages(nn.Module):
    """ResNet and MobileNet layers whose outputs may overlap their inputs (planning/overlap.py): a
    strided stem on the program input, two residual blocks of 3x3 convolutions, a strided
    depthwise convolution and a pointwise one of depth 8."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
            for _ in range(2)
        )
        self.down = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
        self.widen = nn.Conv2d(8, 24, 1)
        self.fc = nn.Linear(24, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        for block in self.blocks:
            x = torch.relu(x + block(x))
        x = torch.relu(self.widen(torch.relu(self.down(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def residual_stages() -> tuple:
    torch.manual_seed(0)
    return ResidualStages(), _samples((1, 3, 20, 18), 1)[0], _samples((1, 3, 20, 18), 16)


class WideLinear(nn.Module):
    """An autoencoder's first layer: 640 values into 8, then 8 into 6."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(640, 8)
        self.fc2 = nn.Linear(8, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def wide_linear() -> tuple:
    torch.manual_seed(0)
    return WideLinear(), _samples((1, 640), 1)[0], _samples((1, 640), 16)


def deep_patches() -> tuple:
    """A 3x3 convolution over 16 channels: patches of 144 values, padded."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(16, 8, 3, padding=1), nn.ReLU())
    return model, _samples((1, 16, 6, 6), 1)[0], _samples((1, 16, 6, 6), 16)


def padded_patches() -> tuple:
    """A 5x5 convolution over 3 channels: patches of 75 values, padded to 76."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 5, padding=2), nn.ReLU())
    return model, _samples((1, 3, 8, 8), 1)[0], _samples((1, 3, 8, 8), 16)
