# SPDX-License-Identifier: Apache-2.0
"""The Helium matrix product behind the pointwise, patch and linear kernels, on a Cortex-M55.

lib/src/kernels/pointwise_mve.cpp and pointwise_pair_mve.S (two channels over every
row as 4 streams, requantized in the assembly) run on QEMU's mps3-an547 over products of
realistic and extreme operands: row counts that do and do not fill the 4 streams (1 to
125 rows, so that streams overlap), depths that are and are not multiples of 16 (with
garbage between depth and the row stride), deep rows with and without the scratch for a
pair's weights, odd channel counts, per-tensor and per-channel terms, bases summed ahead,
left and right shifts, zero and saturating offsets. Every output byte must equal the
host reference's (CMSIS-NN's int32 sums and double-rounding requantization).
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
from et_zephyr.reference import fixed_point

SOURCES = [
    Path(__file__).parent / "pointwise_mve" / "pointwise_cases.cpp",
    KERNELS / "pointwise_mve.cpp",
    KERNELS / "pointwise_pair_mve.S",
]


@dataclass
class Case:
    rows: torch.Tensor  # int8 [rows, row_stride]
    depth: int
    weights: torch.Tensor  # int8 [channels, depth]
    bias: torch.Tensor | None  # int32 [channels]
    multipliers: torch.Tensor  # int32 [channels] or [1]
    shifts: torch.Tensor  # int32, as multipliers
    input_offset: int
    output_offset: int
    activation_min: int = -128
    activation_max: int = 127
    pair_scratch: bool = False
    channel_bases: bool = False

    def encoded(self) -> bytes:
        rows, row_stride = self.rows.shape
        header = struct.pack(
            "<12i", rows, self.depth, row_stride, self.weights.shape[0], self.input_offset,
            self.output_offset, self.activation_min, self.activation_max,
            int(self.multipliers.numel() == 1), int(self.bias is not None),
            int(self.pair_scratch), int(self.channel_bases),
        )  # fmt: skip
        data = [self.rows, self.weights]
        data += [self.bias] if self.bias is not None else []
        data += [self.multipliers, self.shifts]
        return header + b"".join(t.contiguous().numpy().tobytes() for t in data)

    def reference(self) -> torch.Tensor:
        x = self.rows[:, : self.depth].to(torch.int64) + self.input_offset
        sums = x @ self.weights.to(torch.int64).T
        if self.bias is not None:
            sums = sums + self.bias.to(torch.int64)
        sums = fixed_point.wrap32(sums)
        values = fixed_point.requantize(sums, self.multipliers, self.shifts)
        values = values + self.output_offset
        return values.clamp(self.activation_min, self.activation_max).to(torch.int8)


def row_stride(depth: int) -> int:
    return (depth + 15) // 16 * 16


def realistic(g: torch.Generator, rows: int, depth: int, channels: int, **kw) -> Case:
    """ReLU activations with their zero point, trained-like weights and bias, per-channel
    multipliers of scales between 2^-12 and 2^-1 (right shifts)."""
    zero_point = -128 + int(torch.randint(0, 20, (1,), generator=g))
    x = (torch.randn(rows, row_stride(depth), generator=g).abs() * 40 + zero_point).round()
    x[:, depth:] = torch.randint(-128, 128, (rows, row_stride(depth) - depth), generator=g)
    w = (torch.randn(channels, depth, generator=g) * 30).round().clamp(-127, 127)
    bias = (torch.randn(channels, generator=g) * 2000).round().to(torch.int32)
    multipliers, shifts = trained_like_requantization(g, channels)
    return Case(
        x.clamp(-128, 127).to(torch.int8), depth, w.to(torch.int8), bias, multipliers,
        shifts, -zero_point, int(torch.randint(-128, 10, (1,), generator=g)),
        **kw,
    )  # fmt: skip


def extreme(g: torch.Generator, rows: int, depth: int, channels: int, **kw) -> Case:
    """Full-range operands, shifts from -31 to +3 (0 included), edge multipliers,
    saturating offsets and a narrow activation range."""
    x = torch.randint(-128, 128, (rows, row_stride(depth)), generator=g, dtype=torch.int8)
    w = torch.randint(-128, 128, (channels, depth), generator=g, dtype=torch.int8)
    bias = torch.randint(-(1 << 20), 1 << 20, (channels,), generator=g, dtype=torch.int32)
    edges = torch.tensor([0, 1 << 30, (1 << 30) + 1, 1518500250, (1 << 31) - 1])
    multipliers = edges[torch.randint(0, len(edges), (channels,), generator=g)].to(torch.int32)
    shifts = torch.randint(-31, 4, (channels,), generator=g, dtype=torch.int32)
    return Case(x, depth, w, bias, multipliers, shifts, 127, -128, -100, 90, **kw)


def cases() -> list[Case]:
    g = torch.Generator().manual_seed(16)
    out: list[Case] = []
    for rows in (1, 2, 3, 4, 5, 7, 8, 13, 31, 32, 33, 125):
        for depth, channels in ((16, 2), (40, 64), (64, 64), (64, 13), (100, 3), (128, 12)):
            out.append(realistic(g, rows, depth, channels))
        out.append(extreme(g, rows, 48, 6))
    # Deep rows: pairs from the scratch, or one channel at a time without it.
    for rows, depth, channels in ((9, 144, 10), (25, 256, 16), (4, 576, 5)):
        out.append(realistic(g, rows, depth, channels, pair_scratch=True))
        out.append(realistic(g, rows, depth, channels))
        out.append(extreme(g, rows, depth, channels, pair_scratch=True))
    # Bases summed ahead (a convolution's chunks), no bias, per-tensor terms (linears).
    out.append(realistic(g, 33, 40, 64, channel_bases=True))
    no_bias = realistic(g, 6, 64, 7)
    no_bias.bias = None
    out.append(no_bias)
    for channels in (1, 12, 31):
        linear = realistic(g, 1, 64, channels)
        linear.multipliers, linear.shifts = linear.multipliers[:1], linear.shifts[:1]
        out.append(linear)
    return out


def test_cortex_m55_products_are_the_host_references(tmp_path: Path) -> None:
    need_tools("arm-none-eabi-g++", "qemu-system-arm")
    all_cases = cases()
    (tmp_path / "cases.bin").write_bytes(b"".join(c.encoded() for c in all_cases))
    elf = tmp_path / "pointwise_cases.elf"
    build_semihosted(elf, SOURCES, HELIUM_KERNEL_FLAGS, REPO / "lib/src")
    run_semihosted(elf, "mps3-an547", "cortex-m55", tmp_path)
    device = (tmp_path / "results.bin").read_bytes()
    expected = [c.reference().numpy().tobytes() for c in all_cases]
    assert len(device) == sum(len(e) for e in expected)
    offset = 0
    for index, (case, want) in enumerate(zip(all_cases, expected)):
        got = device[offset : offset + len(want)]
        offset += len(want)
        differing = sum(a != b for a, b in zip(got, want))
        assert differing == 0, (
            f"case {index} ({case.rows.shape[0]} rows, depth {case.depth}, "
            f"{case.weights.shape[0]} channels): {differing} of {len(want)} outputs differ"
        )
