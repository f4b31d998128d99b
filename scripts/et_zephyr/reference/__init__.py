# SPDX-License-Identifier: Apache-2.0
"""The host semantics of the operators whose device arithmetic ExecuTorch's Python
does not reproduce bit for bit.

ExecuTorch registers a Python implementation of every cortex_m::* operator, and
et-export's host reference runs them. Where that Python is not the arithmetic the
device runs (CMSIS-NN's C code and ExecuTorch's C++ kernels around it), these
modules are, written from that C code: rounding, saturation, wrapping, order of
operations. `installed()` puts them in place of ExecuTorch's, for the block it
guards, for the ISA tier the program was lowered for (the float edges round
differently with Helium).

Beside them: et-zephyr's own operators (`own_ops`), the byte order of device buffers
(`memory_order`) and the dim orders the portable kernels take (`dim_orders`), the
emulator that runs a serialized program the way the device does (`emulate`), and how
closely the lowered program follows the float model (`verify`).
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Callable, Iterator

# Importing the passes first registers the cortex_m::* operators without an import cycle.
import executorch.backends.cortex_m.passes  # noqa: F401
import torch

from . import convolution, edges, matmul, pooling, resize, softmax

_helium: contextvars.ContextVar[bool] = contextvars.ContextVar("et_zephyr_helium", default=False)


def _quantize_per_tensor(
    values: torch.Tensor,
    scale: float,
    zero_point: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    helium = _helium.get()
    return edges.quantize_per_tensor(values, scale, zero_point, quant_min, quant_max, dtype, helium)


def _dequantize_per_tensor(
    values: torch.Tensor,
    scale: float,
    zero_point: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    del quant_min, quant_max, dtype  # the kernel reads int8 and int16 alike
    return edges.dequantize_per_tensor(values, scale, zero_point)


# Operator (functional overload) -> the module's host implementation.
HOST_KERNELS: dict[str, Callable[..., torch.Tensor]] = {
    "quantize_per_tensor": _quantize_per_tensor,
    "dequantize_per_tensor": _dequantize_per_tensor,
    "quantized_conv2d": convolution.conv2d,
    "quantized_depthwise_conv2d": convolution.depthwise_conv2d,
    "quantized_transpose_conv2d": convolution.transpose_conv2d,
    "quantized_avg_pool2d": pooling.avg_pool2d,
    "quantized_max_pool2d": pooling.max_pool2d,
    "softmax": softmax.softmax,
    "quantized_batch_matmul": matmul.batch_matmul,
}


# Portable operators whose torch kernel refuses what the device's computes (int8
# resizing): `namespace::name.overload` of the functional form -> the device's arithmetic.
PORTABLE_KERNELS: dict[str, Callable[..., torch.Tensor]] = {
    "aten::upsample_nearest2d.vec": resize.upsample_nearest2d,
}


def portable_kernel(target: object) -> Callable[..., torch.Tensor] | None:
    """The device's arithmetic for this operator (an Edge or ATen overload, functional or
    out variant) where torch's kernel is not it, else None."""
    # An Edge overload wraps the ATen one.
    overload = target if isinstance(target, torch._ops.OpOverload) else getattr(target, "_op", None)
    if not isinstance(overload, torch._ops.OpOverload):
        return None
    name = overload._overloadname
    functional = "default" if name == "out" else name.removesuffix("_out")
    return PORTABLE_KERNELS.get(f"{overload._schema.name}.{functional}")


@contextlib.contextmanager
def installed(isa: str) -> Iterator[None]:
    """Run cortex_m::* operators with the device's arithmetic for this ISA tier
    ("scalar", "dsp" or "mve") inside the block; outside it ExecuTorch's own
    implementations are back."""
    # torch's scoped library: its registrations are undone when the block ends.
    with torch.library._scoped_library("cortex_m", "IMPL") as library:
        with warnings.catch_warnings():
            # Replacing ExecuTorch's implementations is the point: no warning about it.
            warnings.filterwarnings(
                "ignore", message="(?s).*Overriding a previously registered kernel"
            )
            for name, kernel in HOST_KERNELS.items():
                library.impl(name, kernel, "CompositeExplicitAutograd")
        token = _helium.set(isa == "mve")
        try:
            yield
        finally:
            _helium.reset(token)
