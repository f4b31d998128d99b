# SPDX-License-Identifier: Apache-2.0
"""Resizing on the device: aten::upsample_nearest2d.vec as ExecuTorch's portable kernel
computes it, and et-zephyr's bilinear kernel (below).

The nearest resize mirrors ExecuTorch's portable kernel
(kernels/portable/cpu/op_upsample_nearest2d.cpp and util/upsample_util.*), for int8
tensors, which torch's own kernel refuses.

The output size truncates `input size * scale factor` (a double); given a size
instead, the scale is `output / input`. Each output row or column reads the source
`min(floor(float(index) * float(1.0 / scale)), input size - 1)`: the product is a
single-precision one, as on the device, so a scale whose reciprocal is not exact in
binary picks the sources the device picks, not the ones exact arithmetic would.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def upsample_nearest2d(
    values: torch.Tensor,
    output_size: Sequence[int] | None,
    scale_factors: Sequence[float] | None,
) -> torch.Tensor:
    in_h, in_w = values.shape[-2:]
    if scale_factors is not None:
        scale_h, scale_w = (float(s) for s in scale_factors)
        out_h, out_w = int(in_h * scale_h), int(in_w * scale_w)
    elif output_size is not None:
        out_h, out_w = (int(s) for s in output_size)
        scale_h, scale_w = out_h / in_h, out_w / in_w
    else:
        raise ValueError("upsample_nearest2d needs an output size or scale factors")
    if out_h <= 0 or out_w <= 0:
        raise ValueError(f"upsample_nearest2d: empty output ({out_h} x {out_w})")
    rows = source_indices(scale_h, out_h, in_h)
    columns = source_indices(scale_w, out_w, in_w)
    return values.index_select(-2, rows).index_select(-1, columns)


def source_indices(scale: float, output_size: int, input_size: int) -> torch.Tensor:
    """The input index each output index reads along one dimension."""
    step = np.float32(1.0 / scale)
    positions = np.arange(output_size, dtype=np.float32) * step
    indices = np.minimum(np.floor(positions).astype(np.int64), input_size - 1)
    return torch.from_numpy(indices)


# et_zephyr::resize_bilinear (lib/src/kernels/resize_bilinear.cpp): PyTorch's source
# positions, each tap's weight in Q10, the four products summed in Q20 and rounded half
# up. The weights of a pixel sum to exactly 1 << 20, so the zero point carries through
# and input and output share their quantization; rounding half up on the raw int8 value
# is rounding half up around the zero point. Q10 keeps the sum in 32 bits (127 * 2^20 *
# 4 < 2^31) and the weights within 1/2048 of PyTorch's: within one step of its result.
FRACTION_BITS = 10
_ONE = 1 << FRACTION_BITS


def bilinear_taps(
    input_size: int, output_size: int, align_corners: bool, scale_factor: float | None
) -> torch.Tensor:
    """[output_size, 3] int32: each output index's two input indices and the second's
    weight in Q10, from PyTorch's single-precision source position (UpSample.h)."""
    if align_corners:
        scale = np.float32((input_size - 1) / (output_size - 1) if output_size > 1 else 0.0)
    elif scale_factor is not None and scale_factor > 0:
        scale = np.float32(1.0 / scale_factor)
    else:
        scale = np.float32(input_size) / np.float32(output_size)
    index = np.arange(output_size, dtype=np.float32)
    if align_corners:
        source = scale * index
    else:
        source = np.maximum(scale * (index + np.float32(0.5)) - np.float32(0.5), np.float32(0))
    first = np.minimum(np.floor(source).astype(np.int64), input_size - 1)
    fraction = np.clip(source - first.astype(np.float32), 0, 1)
    second = np.where(first < input_size - 1, first + 1, first)
    weight = np.floor(fraction.astype(np.float64) * _ONE + 0.5).astype(np.int64)
    return torch.from_numpy(np.stack([first, second, weight], axis=1).astype(np.int32))


def resize_bilinear(
    values: torch.Tensor, rows: torch.Tensor, columns: torch.Tensor
) -> torch.Tensor:
    """The kernel's integer bilinear resize of an int8 [N, C, H, W] image."""
    x = values.to(torch.int64)
    r0, r1, wy = (rows[:, i].to(torch.int64) for i in range(3))
    c0, c1, wx = (columns[:, i].to(torch.int64) for i in range(3))
    top, bottom = x.index_select(2, r0), x.index_select(2, r1)
    wy = wy.view(-1, 1)
    tl, tr = top.index_select(3, c0), top.index_select(3, c1)
    bl, br = bottom.index_select(3, c0), bottom.index_select(3, c1)
    total = (
        tl * (_ONE - wy) * (_ONE - wx)
        + tr * (_ONE - wy) * wx
        + bl * wy * (_ONE - wx)
        + br * wy * wx
        + (1 << (2 * FRACTION_BITS - 1))
    )
    return (total >> (2 * FRACTION_BITS)).clamp(-128, 127).to(torch.int8)
