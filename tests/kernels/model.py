# SPDX-License-Identifier: Apache-2.0
"""Convolution and linear shapes that exercise et-zephyr's own kernels and their fallbacks.

Every branch is an output of its own, so a wrong byte shows which shape broke:
3x3 depthwise with and without padding, bias and ReLU, outputs that are not a
multiple of the kernels' 4-pixel blocks or 2-pixel pairs, stride-2 depthwise
layers, valid and padded, both ways (Helium kernel; DSP: upstream kernel) or
across only (upstream kernel), rows wide enough for the DSP kernel's strips and too wide
for it, a column too tall for the Helium kernel to need less scratch than
CMSIS-NN (et-export then keeps CMSIS-NN's buffer: upstream kernel), and
pointwise convolutions whose depth is (own kernels) or is not a multiple of 16
(Helium: upstream kernel; DSP: an odd count of 4-value steps), with an odd
number of output channels, more channels than the DSP kernel sums at once, and
a depth beyond both kernels' limits; and, for the DSP kernel, small
convolutions: a strided window on one input channel (KWS's first layer), the
same padded, a padded 3x3 on four; for the Helium kernel's patches, a strided
1x1 (a ResNet shortcut) and a 3x3 over 16 channels (patches of 144 values:
two channels' weights in the scratch) on 135 pixels, more than its scratch
holds (chunks of 56); for the DSP kernel's patches in the temp arena, the 3x3 over 16
channels, the 144-deep pointwise layer and a padded 3x3 over 12 (27 steps of 4 values),
tap by tap, and a padded 6x6 window over 2 channels (72 values), gathered; patches
that are not a multiple of 4 values, padded to one: an image's strided 3x3 stem on 3
channels (27 values, on the stack) and a 5x5 on 3 (75 values, in the temp arena).
Linears for the DSP kernel: 540 deep (an odd count of
4-value steps) into 13 channels (three passes of 4 and one more) with a ReLU, 45 rows
of 12 without a bias, and a depth of 45 (not a multiple of 4: the upstream kernel).
The weights are seeded: every export gives the same program
and the same test vectors.
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
        self.depthwise_strided_padded = nn.Conv2d(
            channels, channels, 3, stride=2, padding=1, groups=channels
        )
        self.depthwise_strided_even = nn.Conv2d(
            channels, channels, 3, stride=2, padding=1, groups=channels
        )
        self.depthwise_strided_across = nn.Conv2d(
            channels, channels, 3, stride=(1, 2), padding=(0, 1), groups=channels
        )
        self.pointwise_widen = nn.Conv2d(channels, 16, 1)
        self.pointwise_deep = nn.Conv2d(16, 20, 1)
        self.depthwise_wide = nn.Conv2d(20, 20, 3, padding=1, groups=20)
        self.pointwise_odd = nn.Conv2d(16, 7, 1)
        self.pointwise_widest = nn.Conv2d(channels, 144, 1)
        self.pointwise_deepest = nn.Conv2d(144, 8, 1)
        self.to_one_channel = nn.Conv2d(channels, 1, 1)
        self.window_one_channel = nn.Conv2d(1, 16, (4, 2), stride=2)
        self.to_four_channels = nn.Conv2d(channels, 4, 1)
        self.padded_small = nn.Conv2d(4, 8, 3, padding=1)
        self.depthwise_strips = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.depthwise_too_wide = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.depthwise_tall = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.window_padded = nn.Conv2d(1, 8, (10, 4), stride=2, padding=(4, 1))
        self.shortcut_strided = nn.Conv2d(channels, 16, 1, stride=2)
        self.patches_chunked = nn.Conv2d(16, 8, 3, padding=1)
        self.deep_window = nn.Conv2d(channels, 8, 3, padding=1)
        self.deep_gathered = nn.Conv2d(2, 4, 6, padding=3)
        self.image_stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.wide_stem = nn.Conv2d(3, 6, 5, padding=2)
        self.linear_flat = nn.Linear(channels * INPUT_SHAPE[2] * INPUT_SHAPE[3], 13)
        self.linear_rows = nn.Linear(channels, 6, bias=False)
        self.linear_odd_depth = nn.Linear(INPUT_SHAPE[2] * INPUT_SHAPE[3], 5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        wide = torch.relu(self.pointwise_widen(x))
        four = self.to_four_channels(x)
        one = self.to_one_channel(x)
        deep = self.pointwise_deep(wide)
        return (
            torch.relu(self.depthwise_padded(x)),
            self.depthwise_valid(x),
            self.depthwise_rows(x),
            self.depthwise_strided(x),
            # 27 rows: 14 outputs down a column, 3 blocks of 4 and 2 more.
            torch.relu(self.depthwise_strided_padded(torch.cat([x] * 3, dim=2))),
            # 10 rows: the bottom padding row is never read.
            self.depthwise_strided_even(torch.cat([x, x[:, :, :1]], dim=2)),
            self.depthwise_strided_across(x),
            deep,
            torch.relu(self.depthwise_wide(deep)),
            self.pointwise_odd(wide),
            self.pointwise_deepest(torch.relu(self.pointwise_widest(x))),
            self.window_one_channel(one),
            torch.relu(self.padded_small(four)),
            # 40 and 50 columns: 3 output rows a strip; wider than the DSP kernel's 48.
            self.depthwise_strips(torch.cat([x] * 8, dim=3)),
            self.depthwise_too_wide(torch.cat([x] * 10, dim=3)),
            # 90 rows of 4 channels (two columns: small enough for qemu_cortex_m3's RAM):
            # the upstream kernel's on the M55 (the Helium kernel takes 8 channels up).
            self.depthwise_tall(torch.cat([four[..., :2]] * 10, dim=2)),
            torch.relu(self.window_padded(one)),
            self.shortcut_strided(x),
            self.patches_chunked(torch.cat([wide] * 3, dim=3)),
            self.deep_window(x),
            self.deep_gathered(x[:, :2]),
            torch.relu(self.image_stem(x[:, :3])),
            self.wide_stem(x[:, :3]),
            torch.relu(self.linear_flat(x.flatten(1))),
            self.linear_rows(x.flatten(2).transpose(1, 2)),
            self.linear_odd_depth(x.flatten(2)),
        )


def conv_shapes() -> tuple[nn.Module, tuple[torch.Tensor], list[tuple[torch.Tensor]]]:
    """et-export factory: the model, an example input and 32 calibration inputs."""
    torch.manual_seed(0)
    model = ConvShapes().eval()
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(INPUT_SHAPE, generator=generator),) for _ in range(32)]
    return model, calibration[0], calibration
