# SPDX-License-Identifier: Apache-2.0
"""The Helium 3x3 depthwise convolution, on a Cortex-M55.

lib/src/kernels/depthwise_mve.cpp and depthwise_column_mve.S (8 channels' input columns
transposed into int8 strips, one vmladav an output, 4 outputs a block) run on QEMU's
mps3-an547 over every shape they take: strides 1, 2 down and 2 both ways, padding 0 or
1 each way, channel counts a multiple of 8 and not (the last group of 8 overlapping the
one before), output heights that are and are not a multiple of 4 (from 1: under 4 a
predicated block), widths from 1, tall columns; realistic operands (ReLU activations at
their zero point, trained-like weights and bias, right shifts) and extreme ones
(full-range values, shifts from -31 to +3 with 0, edge multipliers, zero points at both
ends, a narrow activation range, no bias). Every output byte must equal the host
reference's (et_zephyr.reference.convolution, CMSIS-NN's arithmetic), and the bytes past
the output must be untouched. The kernel's scratch size for each shape, and its refusal
of shapes it does not run, must be what et-export plans (firmware/kernel_scratch.py).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import torch
from conftest import (
    HELIUM_KERNEL_FLAGS,
    KERNELS,
    REPO,
    build_semihosted,
    need_tools,
    run_semihosted,
    trained_like_requantization,
)
from et_zephyr.firmware.kernel_scratch import depthwise_shape_scratch_bytes
from et_zephyr.reference.convolution import depthwise_conv2d

SOURCES = [
    Path(__file__).parent / "depthwise_mve" / "depthwise_cases.cpp",
    KERNELS / "depthwise_mve.cpp",
    KERNELS / "depthwise_column_mve.S",
]
GUARD = 64  # depthwise_cases.cpp's kGuard
GUARD_VALUE = 0x5A


@dataclass
class Case:
    x: torch.Tensor  # int8 [H, W, C]
    weights: torch.Tensor  # int8 [3, 3, C]
    bias: torch.Tensor | None  # int32 [C]
    multipliers: torch.Tensor  # int32 [C]
    shifts: torch.Tensor  # int32 [C]
    stride: tuple[int, int]
    padding: tuple[int, int]
    input_offset: int
    output_offset: int
    activation_min: int = -128
    activation_max: int = 127

    def out_size(self) -> tuple[int, int]:
        h, w, _ = self.x.shape
        return tuple(
            (size + 2 * pad - 3) // stride + 1
            for size, pad, stride in zip((h, w), self.padding, self.stride)
        )

    def planned_scratch(self) -> int:
        """What et-export plans for the shape (0: the upstream kernel's)."""
        h, w, c = self.x.shape
        planned = depthwise_shape_scratch_bytes(
            c, (h, w), self.out_size(), self.stride, self.padding
        )
        return planned or 0

    def encoded(self) -> bytes:
        h, w, c = self.x.shape
        header = struct.pack(
            "<14i", c, h, w, *self.out_size(), *self.stride, *self.padding, self.input_offset,
            self.output_offset, self.activation_min, self.activation_max,
            int(self.bias is not None),
        )  # fmt: skip
        data = [self.x, self.weights]
        data += [self.bias] if self.bias is not None else []
        data += [self.multipliers, self.shifts]
        return header + b"".join(t.contiguous().numpy().tobytes() for t in data)

    def reference(self) -> bytes:
        nchw = self.x.permute(2, 0, 1).unsqueeze(0)
        out = depthwise_conv2d(
            nchw, self.weights.unsqueeze(0), self.bias, self.stride, self.padding, (1, 1), 1,
            self.input_offset, self.output_offset, self.multipliers, self.shifts,
            self.activation_min, self.activation_max, torch.empty(0),
        )  # fmt: skip
        return out.permute(0, 2, 3, 1).contiguous().numpy().tobytes()


def realistic(g: torch.Generator, h: int, w: int, c: int, stride, padding) -> Case:
    """ReLU activations with their zero point, trained-like weights and bias,
    per-channel multipliers of scales between 2^-12 and 2^-1 (right shifts)."""
    zero_point = -128 + int(torch.randint(0, 20, (1,), generator=g))
    x = (torch.randn(h, w, c, generator=g).abs() * 40 + zero_point).round().clamp(-128, 127)
    weights = (torch.randn(3, 3, c, generator=g) * 40).round().clamp(-127, 127)
    bias = (torch.randn(c, generator=g) * 3000).round().to(torch.int32)
    multipliers, shifts = trained_like_requantization(g, c)
    return Case(
        x.to(torch.int8), weights.to(torch.int8), bias, multipliers, shifts,
        stride, padding, -zero_point, int(torch.randint(-128, 10, (1,), generator=g)),
    )  # fmt: skip


def extreme(g: torch.Generator, h: int, w: int, c: int, stride, padding) -> Case:
    """Full-range operands, shifts from -31 to +3 (0 included), edge multipliers, a zero
    point at either end, saturating offsets and a narrow activation range."""
    x = torch.randint(-128, 128, (h, w, c), generator=g, dtype=torch.int8)
    weights = torch.randint(-128, 128, (3, 3, c), generator=g, dtype=torch.int8)
    bias = torch.randint(-(1 << 24), 1 << 24, (c,), generator=g, dtype=torch.int32)
    edges = torch.tensor([0, 1 << 30, (1 << 30) + 1, 1518500250, (1 << 31) - 1])
    multipliers = edges[torch.randint(0, len(edges), (c,), generator=g)].to(torch.int32)
    shifts = torch.randint(-31, 4, (c,), generator=g, dtype=torch.int32)
    input_offset = 128 if int(torch.randint(0, 2, (1,), generator=g)) else -127
    return Case(x, weights, bias, multipliers, shifts, stride, padding, input_offset, 127, -100, 90)


STRIDES = ((1, 1), (2, 1), (2, 2))
PADDINGS = ((1, 1), (0, 0), (1, 0), (0, 1))


def cases() -> list[Case]:
    g = torch.Generator().manual_seed(15)
    out: list[Case] = []
    # KWS's and MobileNet's shapes, then heights around the 4-output blocks and widths
    # from 1, every stride and padding.
    out.append(realistic(g, 25, 5, 64, (1, 1), (1, 1)))
    out.append(realistic(g, 48, 48, 8, (1, 1), (1, 1)))
    out.append(realistic(g, 48, 48, 16, (2, 2), (1, 1)))
    out.append(realistic(g, 6, 6, 64, (2, 2), (1, 1)))
    out.append(realistic(g, 3, 3, 128, (1, 1), (1, 1)))
    for stride in STRIDES:
        for padding in PADDINGS:
            for h in (1, 2, 3, 4, 5, 6, 7, 8, 9, 13):
                height = (h - 1) * stride[0] + 3 - 2 * padding[0]
                for width in (1, 2, 3, 6):
                    in_width = max(width * stride[1] + 2 - 2 * padding[1], 1)
                    if in_width + 2 * padding[1] < 3:
                        continue
                    channels = (8, 12, 20, 24)[(h + width) % 4]
                    make = extreme if (h + width) % 3 == 0 else realistic
                    out.append(make(g, height, in_width, channels, stride, padding))
    # An odd input height at stride 2 (the last row unread), tall and wide layers, many
    # channels, no bias.
    out.append(realistic(g, 27, 7, 16, (2, 1), (1, 1)))
    out.append(extreme(g, 96, 3, 8, (1, 1), (1, 1)))
    out.append(realistic(g, 97, 4, 12, (2, 2), (0, 1)))
    out.append(realistic(g, 10, 10, 136, (1, 1), (1, 1)))
    no_bias = extreme(g, 9, 5, 40, (1, 1), (1, 1))
    no_bias.bias = None
    out.append(no_bias)
    return out


def refused() -> list[Case]:
    """Shapes the kernel leaves to the upstream kernel: 4 channels, channels not a
    multiple of 4, stride 2 only across, stride 3, padding 2."""
    g = torch.Generator().manual_seed(3)
    shapes = [
        ((10, 6, 4), (1, 1), (1, 1)),
        ((10, 6, 10), (1, 1), (1, 1)),
        ((10, 6, 8), (1, 2), (1, 1)),
        ((12, 6, 8), (3, 3), (1, 1)),
        ((10, 6, 8), (1, 1), (2, 2)),
    ]
    return [realistic(g, h, w, c, stride, padding) for (h, w, c), stride, padding in shapes]


def test_cortex_m55_depthwise_convolutions_are_the_host_references(tmp_path: Path) -> None:
    need_tools("arm-none-eabi-g++", "qemu-system-arm")
    taken, not_taken = cases(), refused()
    assert all(c.planned_scratch() > 0 for c in taken)
    assert {c.out_size()[0] for c in taken} >= {1, 2, 3, 4, 5, 6, 7}
    assert all(c.planned_scratch() == 0 for c in not_taken)
    all_cases = taken + not_taken
    (tmp_path / "cases.bin").write_bytes(b"".join(c.encoded() for c in all_cases))
    elf = tmp_path / "depthwise_cases.elf"
    build_semihosted(elf, SOURCES, HELIUM_KERNEL_FLAGS, REPO / "lib/src")
    run_semihosted(elf, "mps3-an547", "cortex-m55", tmp_path)
    device = (tmp_path / "results.bin").read_bytes()
    offset = 0
    for index, case in enumerate(all_cases):
        (scratch,) = struct.unpack_from("<i", device, offset)
        offset += 4
        assert scratch == case.planned_scratch(), f"case {index}: scratch {scratch}"
        if scratch == 0:
            continue
        want = case.reference()
        got = device[offset : offset + len(want)]
        guard = device[offset + len(want) : offset + len(want) + GUARD]
        offset += len(want) + GUARD
        differing = sum(a != b for a, b in zip(got, want))
        shape = f"{tuple(case.x.shape)} stride {case.stride} padding {case.padding}"
        assert differing == 0, f"case {index} ({shape}): {differing} of {len(want)} differ"
        assert guard == bytes([GUARD_VALUE]) * GUARD, f"case {index} ({shape}) wrote past it"
    assert offset == len(device)
