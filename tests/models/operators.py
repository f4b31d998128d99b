# SPDX-License-Identifier: Apache-2.0
"""Operators whose host semantics are et-zephyr's own (et_zephyr/reference), at their
rounding edges on the device: one output per operator.

- average pools of 64 and of padded 3x3 windows (midpoints at sum = 32 mod 64, and
  windows that count fewer elements at the border);
- (linears()) linears over several rows, on et-zephyr's Helium kernel and off it;
- softmax of a linear layer's output, along the last dimension; (softmaxes()) rows of
  1, 7 and 49 in 2-D to 4-D tensors, and scores wide enough that diff_min cuts some off;
- a dilated convolution, a residual add, an element-wise product and a max pool;
- (matmul()) a batch matrix product of two inputs, attention's q @ k^T;
- (linears_16x8(), exported with --activations int16) 16x8 linears on CMSIS-NN's s16
  kernel, rows past its 32-bit partial sums; (convolutions_16x8()) its convolutions,
  pools, additions and pads on an odd map; (subtractions_16x8()) a 1-D denoiser's
  subtractions on the s16 addition, and the LayerNorm it meets in INT8;
- the float edges: the input's 16 x 8 x 8 = 1024 elements quantize in Helium's
  16-element blocks on the M55, a 10-element output dequantizes in the scalar tail.

Run with 32 generated inputs from a quarter to 16x the calibration range.
"""

from __future__ import annotations

import torch
from torch import nn

CHANNELS = 16


class Ops(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.global_pool = nn.AvgPool2d(8)
        self.padded_pool = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.max_pool = nn.MaxPool2d(2)
        self.dilated = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=2, dilation=2)
        self.head = nn.Linear(CHANNELS, 10)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        pooled = self.global_pool(x).flatten(1)
        scores = torch.softmax(self.head(pooled), dim=-1)
        residual = x + self.dilated(x)
        product = x * residual
        return (pooled, scores, self.padded_pool(x), self.max_pool(residual), product)


class Softmaxes(nn.Module):
    """Softmax rows along the last dimension of 2-D, 3-D and 4-D tensors, of 1, 7 and 49
    elements. The wide scores' input scale is above 1/16: their differences to the row's
    maximum pass diff_min (output -128) within the 256 an int8 row can have."""

    def __init__(self) -> None:
        super().__init__()
        self.wide = nn.Linear(16, 7)
        self.single = nn.Linear(16, 1)
        self.narrow = nn.Linear(16, 49)
        with torch.no_grad():
            self.wide.weight.mul_(16)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        wide = torch.softmax(self.wide(x), dim=-1)
        single = torch.softmax(self.single(x), dim=-1)
        narrow = self.narrow(x)
        attention = torch.softmax(narrow.reshape(1, 4, 7, 7), dim=-1)
        rows = torch.softmax(narrow.reshape(4, 49), dim=-1)
        return wide, single, attention, rows


class Linears(nn.Module):
    """Linears over 9 rows (two blocks of 4 and a tail row) for et-zephyr's Helium linear
    kernel: an odd number of outputs with a fused ReLU, no bias, an input 144 wide (past
    the 128 its paired path takes), and for the upstream kernel an input 24 wide (not a
    multiple of 16) and 3 rows (fewer than a block)."""

    def __init__(self) -> None:
        super().__init__()
        self.odd = nn.Linear(32, 7)
        self.unbiased = nn.Linear(32, 16, bias=False)
        self.widen = nn.Linear(32, 144)
        self.deepest = nn.Linear(144, 8)
        self.narrow = nn.Linear(32, 24)
        self.from_narrow = nn.Linear(24, 5)
        self.few_rows = nn.Linear(32, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.relu(self.odd(x)),
            self.unbiased(x.reshape(9, 32)),
            self.deepest(torch.relu(self.widen(x))),
            self.from_narrow(self.narrow(x)),
            self.few_rows(x[:, :3]),
        )


class Linears16x8(nn.Module):
    """et-export --activations int16: rows of 600 columns, past the 512 whose products the
    DSP and Helium loops sum in 32 bits; 37, 5 and 3 outputs, tails of their 4- and 2-row
    loops; a ReLU, a clamp and no bias."""

    def __init__(self) -> None:
        super().__init__()
        self.wide = nn.Linear(600, 37)
        self.narrow = nn.Linear(37, 5)
        self.head = nn.Linear(5, 3, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        wide = torch.relu(self.wide(x))
        narrow = self.narrow(wide).clamp(-1.0, 1.0)
        return wide, narrow, self.head(narrow)


class Convolutions16x8(nn.Module):
    """et-export --activations int16 on an odd 13x11 map of 5 channels: an even kernel's
    'same' padding (asymmetric: an int16 pad first), a dilated and a strided convolution,
    depthwise convolutions with and without a channel multiplier (CMSIS-NN's generic and
    fast s16 kernels), a residual add with a ReLU, average and max pools with padding."""

    def __init__(self) -> None:
        super().__init__()
        self.even = nn.Conv2d(5, 8, 4, padding="same")
        self.dilated = nn.Conv2d(8, 8, 3, padding=2, dilation=2)
        self.strided = nn.Conv2d(8, 12, 3, stride=2, padding=1)
        self.multiplied = nn.Conv2d(8, 16, 3, padding=1, groups=8)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.average = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.maximum = nn.MaxPool2d(3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        even = torch.relu(self.even(x))
        residual = torch.relu(even + self.dilated(even))
        return (
            self.strided(residual),
            self.multiplied(residual),
            self.average(self.depthwise(residual)),
            self.maximum(residual),
        )


class Subtractions16x8(nn.Module):
    """et-export --activations int16: a denoiser's `x - f(x)` on a one-channel 1 x 127 map
    (the NCHW input and the NHWC convolution output: one byte order in different dim
    orders), a 1-D one's, and a clamped difference of two branches
    (arm_elementwise_add_s16 with the second multiplier negated), and a LayerNorm, which
    has no s16 kernel, in INT8 between them."""

    def __init__(self) -> None:
        super().__init__()
        self.smooth = nn.Conv2d(1, 6, (1, 9), padding=(0, 4))
        self.noise = nn.Conv2d(6, 1, (1, 9), padding=(0, 4))
        self.smooth_1d = nn.Conv1d(1, 6, 9, padding=4)
        self.noise_1d = nn.Conv1d(6, 1, 9, padding=4)
        self.branch = nn.Conv1d(1, 4, 5, padding=2)
        self.norm = nn.LayerNorm(127)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        denoised = x - self.noise(torch.relu(self.smooth(x)))
        signal = denoised.flatten(1, 2)
        denoised_1d = signal - self.noise_1d(torch.relu(self.smooth_1d(signal)))
        branches = self.branch(denoised_1d)
        difference = (branches[:, :2] - branches[:, 2:]).clamp(-0.5, 2.0)
        return denoised, difference, self.norm(difference)


class QueryKey(nn.Module):
    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        return torch.matmul(query, key.transpose(1, 2))


Factory = tuple[nn.Module, tuple[torch.Tensor, ...], list[tuple[torch.Tensor, ...]]]


def ops() -> Factory:
    """et-export factory: seeded weights, 32 calibration inputs of unit scale."""
    torch.manual_seed(0)
    model = Ops().eval()
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(1, CHANNELS, 8, 8, generator=generator),) for _ in range(32)]
    return model, calibration[0], calibration


def softmaxes() -> Factory:
    """et-export factory: seeded weights, 32 calibration inputs of 4 rows of 16."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(3)
    calibration = [(torch.randn(1, 4, 16, generator=generator),) for _ in range(32)]
    return Softmaxes().eval(), calibration[0], calibration


def linears() -> Factory:
    """et-export factory: seeded weights, 32 calibration inputs of 9 rows of 32."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(4)
    calibration = [(torch.randn(1, 9, 32, generator=generator),) for _ in range(32)]
    return Linears().eval(), calibration[0], calibration


def linears_16x8() -> Factory:
    """et-export factory (with --activations int16): 32 calibration inputs of 3 rows of 600."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(5)
    calibration = [(torch.randn(1, 3, 600, generator=generator),) for _ in range(32)]
    return Linears16x8().eval(), calibration[0], calibration


def convolutions_16x8() -> Factory:
    """et-export factory (with --activations int16): 32 calibration maps of 5 x 13 x 11."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(6)
    calibration = [(torch.randn(1, 5, 13, 11, generator=generator),) for _ in range(32)]
    return Convolutions16x8().eval(), calibration[0], calibration


def subtractions_16x8() -> Factory:
    """et-export factory (with --activations int16): 32 calibration signals of 127
    samples, amplitudes over three decades."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(7)
    calibration = [
        (torch.randn(1, 1, 1, 127, generator=generator) * 10.0 ** (2 * torch.rand(1).item() - 1),)
        for _ in range(32)
    ]
    return Subtractions16x8().eval(), calibration[0], calibration


def matmul() -> Factory:
    """et-export factory: 16 queries and keys of width 64 (sums past 2^24 in float32)."""
    generator = torch.Generator().manual_seed(2)
    calibration = [
        (torch.randn(1, 16, 64, generator=generator), torch.randn(1, 16, 64, generator=generator))
        for _ in range(32)
    ]
    return QueryKey().eval(), calibration[0], calibration
