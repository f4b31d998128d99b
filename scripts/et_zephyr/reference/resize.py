# SPDX-License-Identifier: Apache-2.0
"""aten::upsample_nearest2d.vec as ExecuTorch's portable kernel computes it
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
