# SPDX-License-Identifier: Apache-2.0
"""The float edges of a program: cortex_m::quantize_per_tensor and dequantize_per_tensor.

As ExecuTorch's Cortex-M kernels compute them (op_quantize_per_tensor.cpp,
op_dequantize_per_tensor.cpp), not as the Edge dialect's Python does:
- the inverse scale is 1.0f / (float)scale, in float32;
- the scalar loop rounds the float32 product `inv_scale * x` with nearbyint (ties to
  even), so the product is rounded twice;
- with Helium, every whole block of 16 elements goes through
  `vfmaq_f32(1.5 * 2^23, x, inv_scale)`: one fused rounding of the exact product, and
  outside |x * inv_scale| < 2^22 not a rounding at all but the float's bits minus the
  magic number, narrowed to 16 bits; the tail runs the scalar loop.
"""

from __future__ import annotations

import torch

from . import memory_order
from .fixed_point import INT32_MAX, INT32_MIN, wrap32

_MAGIC_FLOAT = 12582912.0  # 1.5 * 2^23
_MAGIC_INT = 0x4B400000  # its bit pattern
_HELIUM_BLOCK = 16


def quantize_per_tensor(
    values: torch.Tensor,
    scale: float,
    zero_point: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
    helium: bool,
) -> torch.Tensor:
    inv_scale = torch.tensor(1.0, dtype=torch.float32) / torch.tensor(scale, dtype=torch.float32)
    flat, order = memory_order.flatten(values.to(torch.float32))
    # float32 * float32 is exact in float64 (48 significant bits).
    exact = flat.to(torch.float64) * inv_scale.to(torch.float64)
    result = _scalar_loop(exact, zero_point)
    if helium:
        block = flat.numel() // _HELIUM_BLOCK * _HELIUM_BLOCK
        narrow = 16 if dtype == torch.int8 else 32
        result[:block] = _helium_loop(exact[:block], zero_point, narrow)
    result = result.clamp(quant_min, quant_max).to(dtype)
    return memory_order.unflatten(result, values.shape, order)


def _scalar_loop(exact: torch.Tensor, zero_point: int) -> torch.Tensor:
    """zero_point + (int32_t)nearbyint(inv_scale * x): the float32 product, then ties
    to even; the float-to-int conversion saturates on Arm, the addition wraps."""
    rounded = torch.round(exact.to(torch.float32).to(torch.float64))
    as_int = rounded.nan_to_num(0.0).clamp(INT32_MIN, INT32_MAX).to(torch.int64)
    return wrap32(as_int + zero_point)


def _helium_loop(exact: torch.Tensor, zero_point: int, narrow: int) -> torch.Tensor:
    """bits(fma(magic, x, inv_scale)) - (magic_int - zero_point), then the int8 path's
    narrowing to 16 bits before its clamp.

    Below 2^22 the fused sum lies in [2^23, 2^24), where a float's step is 1: the bits
    are the exact product rounded to nearest even. Above, the sum is exact in float64
    and rounds to float32 once, as the fused multiply-add does.
    """
    in_range = exact.abs() < (1 << 22)
    fused = torch.where(in_range, 0.0, exact + _MAGIC_FLOAT).to(torch.float32)
    bits = fused.view(torch.int32).to(torch.int64) - _MAGIC_INT
    rounded = torch.round(torch.where(in_range, exact, 0.0)).to(torch.int64)
    result = wrap32(torch.where(in_range, rounded, bits) + zero_point)
    if narrow == 16:
        result = ((result + (1 << 15)) & 0xFFFF) - (1 << 15)
    return result


def dequantize_per_tensor(values: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    """(float)(q - zero_point) * (float)scale, in float32 (exact int-to-float, one rounding)."""
    centred = values.to(torch.int32) - zero_point
    return centred.to(torch.float32) * torch.tensor(scale, dtype=torch.float32)


def quantize_int8(values: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    """The C API's et_zephyr_quantize_int8(), with which an application quantizes the float
    data of an `--io int8` input: zero_point + the float32 product x * (1.0f / scale)
    rounded to nearest even, saturated to int8 (NaN gives the zero point). Unlike the
    program's own quantize operator it saturates at every magnitude and computes the same
    on every core, so the host reference holds for any application data.
    """
    return _quantize(values, scale, zero_point, -128, 127, torch.int8)


def quantize_int16(values: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    """The C API's et_zephyr_quantize_int16(), for an `--io int16` input of a 16x8
    program: as quantize_int8, saturated to the 16x8 activations' [-32767, 32767]."""
    return _quantize(values, scale, zero_point, -32767, 32767, torch.int16)


def _quantize(
    values: torch.Tensor, scale: float, zero_point: int, low: int, high: int, dtype: torch.dtype
) -> torch.Tensor:
    """io_conversion.cpp's quantize(): the product clamped to +-2 * (high + 1) before
    rounding (exact there; past it every zero point saturates anyway)."""
    inv_scale = torch.tensor(1.0, dtype=torch.float32) / torch.tensor(scale, dtype=torch.float32)
    product = values.to(torch.float32) * inv_scale  # one float32 rounding, as on the device
    bound = 2.0 * (high + 1)
    rounded = torch.round(product.nan_to_num(0.0).clamp(-bound, bound)).to(torch.int32)
    return (rounded + zero_point).clamp(low, high).to(dtype)
