# SPDX-License-Identifier: Apache-2.0
"""Layers beyond the MLPerf Tiny set, on the device against the host reference.

- pools(): max pools on maps of 1x1 to 32x32 pixels (CMSIS-NN's arm_max_pool_s8 has no
  size limit; torch's int8 max pool refuses 128 pixels and more), with padding, odd
  windows and strides, odd channel counts, ceil mode, beside average pools of the same
  shapes, ceil mode (with and without the padding in the divisor) among them;
- sequences(): the 1-D family as 2-D layers of height 1 (et_zephyr/passes/
  one_d_as_two_d.py): Conv1d with stride, dilation, "same" and causal F.pad padding,
  depthwise, one input channel; MaxPool1d, AvgPool1d, a residual add, a mean over time;
- same_padding(): `padding="same"` with odd and even kernels and dilation
  (et_zephyr/passes/explicit_padding.py);
- transposed(): transpose convolutions on CMSIS-NN's arm_transpose_conv_wrapper_s8,
  both its paths (input channels above and below its reverse-convolution threshold),
  and a ConvTranspose1d;
- transposed_variants(): transpose convolutions with output padding, groups, dilation;
- sensor_stream(): an IMU activity model fed 4 frames a run (et-export --stateful):
  causal dilated Conv1d layers (left F.pad and nn.ConstantPad1d) whose past frames the
  runtime carries, into a GRU whose state it carries, a label per run;
- joins(): nearest resizes, concatenations and slices on channels-last maps
  (et_zephyr::concatenate and ::slice), a ReLU sharing a concatenation's range, a GLU,
  a softmax over channels-last channels, PReLUs, bilinear resizes (et_zephyr::resize_bilinear);

Run with 32 generated inputs from a quarter to 16x the calibration range.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Pools(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lift = nn.Conv2d(3, 5, 3, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.lift(x)  # 5 channels, 32 x 32
        return (
            F.max_pool2d(y, 2),
            F.max_pool2d(y, 3, stride=2, padding=1),
            F.max_pool2d(y[:, :, :17, :23], (3, 2), stride=(2, 3), padding=(1, 0)),
            F.max_pool2d(y[:, :, :1, :1], 1),
            F.max_pool2d(y, 32),
            F.avg_pool2d(y, 3, stride=2, padding=1),
            F.avg_pool2d(y[:, :, :17, :23], (3, 2), stride=(2, 3)),
            F.max_pool2d(y[:, :, :13, :14], 3, 2, ceil_mode=True),
            F.max_pool2d(y[:, :, :17, :23], (3, 2), (2, 3), (1, 0), ceil_mode=True),
            F.avg_pool2d(y[:, :, :13, :14], 3, 2, ceil_mode=True),
            F.avg_pool2d(y[:, :, :17, :23], (3, 2), (2, 3), (1, 0), ceil_mode=True),
            F.avg_pool2d(y[:, :, :7, :9], 2, 2, ceil_mode=True, count_include_pad=False),
            F.avg_pool2d(y[:, :, :5, :5], 3, 2, 1, ceil_mode=True, count_include_pad=False),
        )


def _bundle(model: nn.Module, *shapes: tuple[int, ...]) -> tuple:
    """The model, its example inputs and 16 calibration samples."""
    generator = torch.Generator().manual_seed(1)
    samples = [
        tuple(torch.randn(shape, generator=generator) for shape in shapes) for _ in range(16)
    ]
    return model, samples[0], samples


def pools() -> tuple:
    torch.manual_seed(0)
    return _bundle(Pools(), (1, 3, 32, 32))


class _CausalBlock(nn.Module):
    def __init__(self, channels: int, dilation: int) -> None:
        super().__init__()
        self.pad = 2 * dilation
        self.conv = nn.Conv1d(channels, channels, 3, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.conv(F.pad(x, (self.pad, 0))))


class Sequences(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Conv1d(3, 12, 5, stride=2, padding=2)
        self.norm = nn.BatchNorm1d(12)
        self.same = nn.Conv1d(12, 13, 4, padding="same", dilation=2)
        self.blocks = nn.Sequential(_CausalBlock(13, 1), _CausalBlock(13, 4))
        self.depthwise = nn.Conv1d(13, 13, 7, groups=13, padding=3)
        self.raw = nn.Conv1d(1, 8, 16, stride=8)
        self.head = nn.Linear(13, 6)

    def forward(self, x: torch.Tensor, wave: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = F.relu(self.norm(self.first(x)))
        y = F.max_pool1d(F.relu(self.same(y)), 3, stride=2, padding=1)
        y = self.depthwise(self.blocks(y))
        sound = F.avg_pool1d(F.relu(self.raw(wave)), 4)
        return self.head(y.mean(-1)), y, sound


def sequences() -> tuple:
    torch.manual_seed(0)
    model = Sequences()
    with torch.no_grad():
        model.norm.running_mean.uniform_(-0.5, 0.5)
        model.norm.running_var.uniform_(0.5, 2.0)
    return _bundle(model, (1, 3, 128), (1, 1, 512))


class SamePadding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wide = nn.Conv2d(4, 8, (1, 7), padding="same")
        self.tall = nn.Conv2d(8, 8, (7, 1), padding="same")
        self.even = nn.Conv2d(8, 6, 4, padding="same")
        self.dilated = nn.Conv2d(6, 6, (2, 3), padding="same", dilation=(3, 2))
        self.valid = nn.Conv2d(6, 5, 3, padding="valid")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.tall(F.relu(self.wide(x))))
        return self.valid(self.dilated(self.even(y)))


def same_padding() -> tuple:
    torch.manual_seed(0)
    return _bundle(SamePadding(), (1, 4, 15, 13))


class Transposed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.twice = nn.ConvTranspose2d(8, 8, 2, stride=2)
        # Padding 1 at stride 2: CMSIS-NN's direct kernel misplaces its rows, so it runs
        # unpadded and cropped (et_zephyr/passes/transpose_conv_rows.py).
        self.padded = nn.ConvTranspose2d(8, 5, 3, stride=2, padding=1)
        # More input channels than CMSIS-NN's threshold: its reverse-convolution path.
        self.wide = nn.ConvTranspose2d(24, 4, 3, stride=2, padding=1)
        self.three = nn.ConvTranspose2d(4, 4, 3, stride=3)
        self.sequence = nn.ConvTranspose1d(4, 6, 4, stride=2, padding=1)

    def forward(self, x: torch.Tensor, w: torch.Tensor, s: torch.Tensor) -> tuple:
        y = self.padded(F.relu(self.twice(x)))
        return y, self.three(self.wide(w)), self.sequence(s)


def transposed() -> tuple:
    torch.manual_seed(0)
    return _bundle(Transposed(), (1, 8, 6, 7), (1, 24, 5, 4), (1, 4, 20))


class TransposedSweep(nn.Module):
    """Transpose convolutions across kernels 1-5, strides 1-3, paddings up to k - 1 and
    1, 3, 8, 17 and 24 input channels (both of CMSIS-NN's paths), each on its own
    output: where CMSIS-NN's direct kernel would misplace rows the layer runs cropped."""

    CASES = [  # (in, out, kernel, stride, padding)
        (3, 4, 1, 2, 0),
        (8, 5, 2, 2, 0),
        (8, 5, 2, 2, 1),
        (8, 6, 3, 1, 1),
        (8, 6, 3, 2, 1),
        (8, 6, 3, 3, 2),
        (17, 4, 4, 2, 1),
        (17, 4, 4, 3, 0),
        (1, 4, 5, 2, 2),
        (24, 3, 3, 2, 1),
        (24, 3, 5, 2, 2),
        (24, 3, 2, 3, 1),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.ConvTranspose2d(c_in, c_out, k, stride=s, padding=p)
            for c_in, c_out, k, s, p in self.CASES
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(layer(x[:, : layer.in_channels]) for layer in self.layers)


def transposed_sweep() -> tuple:
    torch.manual_seed(0)
    return _bundle(TransposedSweep(), (1, 24, 5, 6))


class SequenceSweep(nn.Module):
    """Conv1d across strides, dilations, paddings (numbers, "same", "valid"), groups and
    odd channel counts, and 1-D pools, each on its own output."""

    def __init__(self) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            [
                nn.Conv1d(5, 7, 1),
                nn.Conv1d(5, 7, 3, stride=3),
                nn.Conv1d(5, 7, 4, padding="same"),
                nn.Conv1d(5, 7, 5, padding="same", dilation=3),
                nn.Conv1d(5, 5, 3, groups=5, stride=2, padding=1),
                nn.Conv1d(5, 10, 3, groups=5, padding="valid"),
                nn.Conv1d(5, 3, 9, padding=4, dilation=2),
                nn.ConvTranspose1d(5, 3, 3, stride=2, padding=1),
            ]
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outputs = tuple(conv(x) for conv in self.convs)
        return (
            *outputs,
            F.max_pool1d(x, 2),
            F.max_pool1d(x, 5, stride=3, padding=2),
            F.avg_pool1d(x, 3, stride=2, padding=1),
            F.adaptive_avg_pool1d(x, 1),
        )


def sequence_sweep() -> tuple:
    torch.manual_seed(0)
    return _bundle(SequenceSweep(), (1, 5, 37))


class Joins(nn.Module):
    """Nearest resizes (integer, odd and fractional scales, a size, a shrink) and
    concatenations (along channels of odd counts, three inputs, along width) on
    channels-last maps, a ReLU whose output a concatenation shares, a GLU, a softmax
    over channels, PReLUs with one slope and a slope per channel, bilinear resizes."""

    def __init__(self) -> None:
        super().__init__()
        self.lift = nn.Conv2d(3, 5, 3, padding=1)
        self.branch = nn.Conv2d(5, 3, 1)
        self.fuse = nn.Conv2d(8, 4, 3, padding=1)
        self.gated = nn.Conv1d(3, 6, 3, padding=1)
        self.prelu = nn.PReLU()
        self.prelus = nn.PReLU(3)
        with torch.no_grad():
            self.prelu.weight.fill_(0.2)
            self.prelus.weight.copy_(torch.tensor([0.1, -0.4, 0.7]))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.lift(x)  # 5 channels, 9 x 11
        relu = F.relu(y)
        branch = self.branch(y)  # signed: the joined range reaches below zero
        joined = torch.cat([relu, branch], dim=1)
        return (
            F.interpolate(y, scale_factor=2.0, mode="nearest"),
            F.interpolate(branch, scale_factor=3.0, mode="nearest"),
            F.interpolate(y, scale_factor=1.7, mode="nearest"),
            F.interpolate(branch, size=(4, 17), mode="nearest"),
            F.interpolate(y, scale_factor=0.5, mode="nearest"),
            self.fuse(joined),
            torch.cat([branch, y, branch], dim=1),
            torch.cat([y[:, :, :, :4], y], dim=3),
            F.glu(self.gated(y[:, :3, 0, :]), dim=1),
            torch.softmax(branch, dim=1),
            self.prelu(y),
            self.prelus(branch),
            F.interpolate(y, scale_factor=2.0, mode="bilinear"),
            F.interpolate(branch, size=(4, 17), mode="bilinear", align_corners=True),
        )


def joins() -> tuple:
    torch.manual_seed(0)
    return _bundle(Joins(), (1, 3, 9, 11))


class TransposedVariants(nn.Module):
    """Transpose convolutions with output padding, groups (depthwise too) and dilation
    (et_zephyr/passes/transpose_conv_variants.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.lift = nn.Conv2d(3, 8, 3, padding=1)
        self.layers = nn.ModuleList(
            [
                nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1),
                nn.ConvTranspose2d(8, 4, 3, stride=2, output_padding=1),
                nn.ConvTranspose2d(8, 8, 3, stride=2, padding=1, groups=8),
                nn.ConvTranspose2d(8, 4, 3, stride=1, padding=2, dilation=2),
                nn.ConvTranspose2d(8, 6, 4, stride=2, padding=1, groups=2),
                nn.ConvTranspose2d(
                    8, 4, (3, 5), stride=(2, 3), padding=(1, 2), output_padding=(1, 2),
                    dilation=(1, 2), groups=2,
                ),
            ]
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.lift(x)
        return tuple(layer(y) for layer in self.layers)


def transposed_variants() -> tuple:
    torch.manual_seed(0)
    return _bundle(TransposedVariants(), (1, 3, 7, 6))


class SensorStream(nn.Module):
    """6 IMU channels: two causal dilated Conv1d layers (kernel 3; padded on the left,
    each its own way), a GRU over their frames, the last frame's label."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Conv1d(6, 12, 3)
        self.pad = nn.ConstantPad1d((4, 0), 0.0)
        self.second = nn.Conv1d(12, 12, 3, dilation=2)
        self.recurrent = nn.GRU(12, 16, batch_first=True)
        self.head = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.first(F.pad(x, (2, 0))))
        y = F.relu(self.second(self.pad(y)))
        steps, _ = self.recurrent(y.transpose(1, 2))
        return self.head(steps[:, -1])


def sensor_stream() -> tuple:
    """4 frames a run; calibrated on 32-frame sequences."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    samples = [(torch.randn(1, 6, 32, generator=generator),) for _ in range(16)]
    return SensorStream().eval(), (torch.randn(1, 6, 4, generator=generator),), samples
