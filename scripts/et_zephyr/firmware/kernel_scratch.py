# SPDX-License-Identifier: Apache-2.0
"""Scratch buffers sized for et-zephyr's own Helium kernels instead of CMSIS-NN.

Upstream sizes every convolution's scratch for CMSIS-NN, and its kernels refuse a
scratch of any other size. Two of et-zephyr's kernels want another:
- 3x3 depthwise (lib/src/kernels/depthwise_mve.cpp): CMSIS-NN's
  arm_depthwise_conv_s8_opt takes an im2col buffer for 124 channels of a 3x3 window,
  4,464 bytes whatever the layer, live beside the layer's input and output, so at KWS's
  peak; the kernel needs 8 channels' weight vectors and terms (1,152 bytes) and strips of
  3 bytes a padded input row (`_depthwise_strip_bytes`), 1,904 bytes for KWS.
- Convolutions with a window (lib/src/kernels/conv_mve.cpp): CMSIS-NN's arm_convolve_s8
  gathers the patches of 4 output pixels at a time and its matrix product sets up
  every output channel again for them; the kernel gathers as many as its scratch
  holds (all of them up to _PATCH_BYTES, at least _MIN_CHUNK_ROWS; in chunks, the
  channels' bias and input-offset terms ahead of them, summed once); rows over 128
  values also take two channels' interleaved weights. KWS's first layer: 125 patches
  of 40 values, 6,000 bytes, where the layer's 8,000-byte output is the peak anyway.
Each kernel runs a layer when its scratch is at least what it needs (the conditions
below mirror the C files'). Where a kernel takes every call of the program, the
firmware leaves out the upstream kernel it would hand the others to (the manifest's
`target.kernels_without_fallback`; the linear kernel, which needs no scratch, as well).
A program planned here needs firmware with CONFIG_ET_ZEPHYR_DEPTHWISE_CONV_MVE and
CONFIG_ET_ZEPHYR_CONV_MVE (the manifest's `target.scratch_for` says which, the build
checks it; `et-export --kernels cmsis-nn` plans CMSIS-NN's sizes instead).
"""

from __future__ import annotations

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram

from ..frontend.targets import Target

_DEPTHWISE_CONV = exir_ops.edge.cortex_m.quantized_depthwise_conv2d.default
_CONV = exir_ops.edge.cortex_m.quantized_conv2d.default
_LINEAR = exir_ops.edge.cortex_m.quantized_linear.default
# arm_depthwise_conv_s8_opt on Helium runs channel blocks of this many, one after another.
HELIUM_DEPTHWISE_BLOCK = 124
# The firmware kernels named as in the manifest and in gen.py's --scratch-kernel.
DEPTHWISE_CONV_MVE = "depthwise_conv_mve"
CONV_MVE = "conv_mve"
LINEAR_MVE = "linear_mve"
CHANNELS_LAST = (0, 2, 3, 1)
_VECTOR_BYTES = 16
# depthwise_mve.cpp: channels transposed together (kGroup), their records for the
# ring's 3 turns (kRecordsBytes: two weight vectors and 4 words of terms a channel),
# outputs down a column requantized together (kRows).
_DEPTHWISE_GROUP = 8
_DEPTHWISE_RECORDS_BYTES = 3 * _DEPTHWISE_GROUP * (2 * _VECTOR_BYTES + 16)
_DEPTHWISE_ROWS = 4
# conv_mve.cpp: patches per chunk at least this (kMinChunkRows), other than the last a
# multiple of the product's 4-row blocks (kChunkMultiple).
_MIN_CHUNK_ROWS = 16
_CHUNK_MULTIPLE = 4
# The most scratch planned for patches, unless _MIN_CHUNK_ROWS of them need more.
_PATCH_BYTES = 8192
# Rows deeper than this (pointwise_mve.h's kPointwiseStackDepth) have their two channels'
# interleaved weights in the scratch, ahead of the patches.
_STACK_DEPTH = 128


def _int8_conv_operands(node: torch.fx.Node, multipliers_at: int) -> bool:
    """4-D int8 input, weights and output, int32 bias and requantization (multipliers and
    shifts at args[multipliers_at:]) with one value per output channel, NHWC."""
    x, weight, bias = node.args[:3]
    multipliers, shifts = node.args[multipliers_at : multipliers_at + 2]
    x_val, w_val, out_val = x.meta["val"], weight.meta["val"], node.meta["val"]
    if x_val.dim() != 4 or w_val.dim() != 4 or out_val.dim() != 4:
        return False
    if x_val.dtype != torch.int8 or w_val.dtype != torch.int8 or out_val.dtype != torch.int8:
        return False
    int32 = (multipliers, shifts) + ((bias,) if bias is not None else ())
    if any(t.meta["val"].dtype != torch.int32 for t in int32):
        return False
    channels = out_val.shape[1]
    if any(t.meta["val"].numel() != channels for t in int32):
        return False
    return has_nhwc_bytes(x_val) and has_nhwc_bytes(out_val)


def has_nhwc_bytes(val: torch.Tensor) -> bool:
    """conv_checks.h's: the dims over size 1 in NHWC order (a size-1 dim may sit
    anywhere: the program derives dim orders from strides, which do not place it)."""
    order = [d for d in val.dim_order() if val.shape[d] != 1]
    return order == [d for d in CHANNELS_LAST if val.shape[d] != 1]


def depthwise_mve_scratch_bytes(node: torch.fx.Node) -> int | None:
    """The scratch et-zephyr's Helium depthwise kernel needs for this call, or None
    when the kernel does not run this shape (mirrors `handled_shape` in
    depthwise_conv_mve.cpp)."""
    if not _int8_conv_operands(node, multipliers_at=9):
        return None
    x, weight, _, stride, padding, dilation, depth_multiplier = node.args[:7]
    x_val, w_val, out_val = x.meta["val"], weight.meta["val"], node.meta["val"]
    if x_val.shape[0] != 1 or depth_multiplier != 1:
        return None
    if len(dilation) != 2 or any(d != 1 for d in dilation) or len(padding) != 2:
        return None
    channels = x_val.shape[1]
    if tuple(w_val.shape) != (1, 3, 3, channels) or out_val.shape[1] != channels:
        return None
    return depthwise_shape_scratch_bytes(
        channels, tuple(x_val.shape[2:]), tuple(out_val.shape[2:]), tuple(stride), tuple(padding)
    )


def depthwise_shape_scratch_bytes(
    channels: int,
    in_size: tuple[int, int],
    out_size: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
) -> int | None:
    """depthwise_mve.cpp's `depthwise_scratch_bytes` for a 3x3 layer's sizes (None for
    its 0: a shape it does not run)."""
    # 1 both ways, or 2 down and 1 or 2 across.
    if stride not in ((1, 1), (2, 1), (2, 2)) or any(p not in (0, 1) for p in padding):
        return None
    # 8 channels at a time, the last 8 overlapping the group before when need be.
    if channels < _DEPTHWISE_GROUP or channels % 4:
        return None
    padded = (in_size[0] + 2 * padding[0], in_size[1] + 2 * padding[1])
    if min(padded) < 3:
        return None
    if any(out_size[d] != (padded[d] - 3) // stride[d] + 1 for d in (0, 1)):
        return None
    strip = _depthwise_strip_bytes(out_size[0], stride[0])
    # The strips are 16-bit scatter offsets apart.
    if strip * (_DEPTHWISE_GROUP - 1) > 0xFFFF:
        return None
    return _DEPTHWISE_RECORDS_BYTES + _DEPTHWISE_GROUP * strip


def _depthwise_strip_bytes(height: int, stride: int) -> int:
    """A channel's strip (depthwise_mve.cpp's strip_bytes): 3 bytes a padded input row,
    and what the second 16-byte load of the last block of 4 outputs reads past them."""
    computed = -(-height // _DEPTHWISE_ROWS) * _DEPTHWISE_ROWS
    return 3 * stride * (computed - 2) + _VECTOR_BYTES


def _runs_pointwise(node: torch.fx.Node) -> bool:
    """conv_mve.cpp's `is_pointwise`: the input's pixels are the product's rows."""
    x, weight, _, stride, padding, dilation = node.args[:6]
    x_val, w_val = x.meta["val"], weight.meta["val"]
    return (
        tuple(w_val.shape[1:3]) == (1, 1)
        and all(s == 1 for s in stride)
        and all(p == 0 for p in padding)
        and all(d == 1 for d in dilation)
        and x_val.shape[1] % _VECTOR_BYTES == 0
    )


def _pair_weight_bytes(row_stride: int) -> int:
    return 2 * row_stride if row_stride > _STACK_DEPTH else 0


def conv_mve_scratch_bytes(node: torch.fx.Node) -> int | None:
    """The scratch et-zephyr's Helium convolution kernel runs this call with, or None
    when CMSIS-NN's size is as good (mirrors conv_mve.cpp): two channels' interleaved
    weights for rows deeper than the stack holds, then, for a convolution with a window,
    the patches of a chunk of output pixels (pointwise layers read their input in
    place)."""
    if node.target != _CONV or not _int8_conv_operands(node, multipliers_at=8):
        return None
    if _runs_pointwise(node):
        return _pair_weight_bytes(node.args[0].meta["val"].shape[1]) or None
    x, weight, _, stride, padding, dilation = node.args[:6]
    x_val, w_val, out_val = x.meta["val"], weight.meta["val"], node.meta["val"]
    if any(d != 1 for d in dilation) or x_val.shape[0] != 1 or out_val.shape[0] != 1:
        return None
    channels, _, _, depth = w_val.shape  # OHWI
    if channels != out_val.shape[1] or depth != x_val.shape[1]:
        return None
    rows, row_stride = _patches(node)
    per_chunk = _PATCH_BYTES // row_stride // _CHUNK_MULTIPLE * _CHUNK_MULTIPLE
    chunk = min(rows, max(_MIN_CHUNK_ROWS, per_chunk))
    # In chunks, each channel's bias and input-offset term is summed once, ahead.
    bases = 4 * channels if chunk < rows else 0
    return bases + _pair_weight_bytes(row_stride) + row_stride * chunk


def _patches(node: torch.fx.Node) -> tuple[int, int]:
    """A convolution's patches as conv_mve.cpp gathers them: one an output pixel, each
    its window's values padded to whole vectors (rows, row stride in bytes)."""
    _, k_h, k_w, depth = node.args[1].meta["val"].shape  # OHWI
    out_val = node.meta["val"]
    rows = out_val.shape[2] * out_val.shape[3]
    return rows, -(-k_h * k_w * depth // _VECTOR_BYTES) * _VECTOR_BYTES


def resize_scratch(scratch: torch.fx.Node, nbytes: int) -> None:
    """Make a kernel's scratch allocation (a uint8 tensor the planner places) `nbytes`."""
    scratch.args = (((nbytes,), torch.uint8),)
    scratch.meta["val"] = scratch.meta["val"].new_empty((nbytes,))


def plan_own_kernel_scratch(program: ExportedProgram, target: Target, kernels: str) -> list[str]:
    """Size the scratch of each convolution et-zephyr's Helium kernels run better with
    their own size: depthwise scratch where the kernel needs less than CMSIS-NN, patch
    scratch wherever the convolution kernel gathers patches. Returns the kernels the
    program now needs in the firmware (empty when nothing changed)."""
    if kernels != "et-zephyr" or target.isa != "mve":
        return []
    needed_by: list[str] = []
    for node in program.graph_module.graph.nodes:
        if node.target == _DEPTHWISE_CONV:
            kernel, needed = DEPTHWISE_CONV_MVE, depthwise_mve_scratch_bytes(node)
        elif node.target == _CONV:
            kernel, needed = CONV_MVE, conv_mve_scratch_bytes(node)
        else:
            continue
        scratch = node.args[-1]
        planned = scratch.meta["val"].numel()
        # The depthwise kernel also runs with CMSIS-NN's larger size: kept.
        shrinks_only = kernel == DEPTHWISE_CONV_MVE
        if needed is None or needed == planned or (shrinks_only and needed > planned):
            continue
        resize_scratch(scratch, needed)
        if kernel not in needed_by:
            needed_by.append(kernel)
    program.graph_module.recompile()
    return sorted(needed_by)


def conv_mve_scratch_floor(node: torch.fx.Node) -> int | None:
    """The least scratch conv_mve.cpp gathers patches with for this call (its `chunk_rows`:
    min(rows, _MIN_CHUNK_ROWS) patches, the bases and pair weights ahead where it chunks),
    or None where it gathers none. Any size from this up runs the same arithmetic in
    larger chunks."""
    planned = conv_mve_scratch_bytes(node)
    if planned is None or _runs_pointwise(node):
        return None
    rows, row_stride = _patches(node)
    if rows <= _MIN_CHUNK_ROWS:
        return planned
    channels = node.meta["val"].shape[1]
    return 4 * channels + _pair_weight_bytes(row_stride) + row_stride * _MIN_CHUNK_ROWS


def _conv_mve_takes(node: torch.fx.Node) -> bool:
    """Whether conv_mve.cpp runs this call itself with the scratch it was planned."""
    if not _int8_conv_operands(node, multipliers_at=8):
        return False
    if _runs_pointwise(node):
        return True
    if conv_mve_scratch_bytes(node) is None:
        return False
    # The patch path's fewest bytes: min(rows, _MIN_CHUNK_ROWS) patches (`chunk_rows`).
    rows, row_stride = _patches(node)
    return node.args[-1].meta["val"].numel() >= row_stride * min(rows, _MIN_CHUNK_ROWS)


def _depthwise_mve_takes(node: torch.fx.Node) -> bool:
    """Whether depthwise_conv_mve.cpp runs the call itself: its scratch is large enough,
    and the plan cannot have laid its output over its input (which the upstream kernel's
    buffer allows, planning/overlap.py)."""
    needed = depthwise_mve_scratch_bytes(node)
    scratch = node.args[-1].meta["val"].numel()
    return needed is not None and scratch >= needed and not holds_upstream_depthwise_buffer(node)


def holds_upstream_depthwise_buffer(node: torch.fx.Node) -> bool:
    """Whether a depthwise call's scratch holds arm_depthwise_conv_s8_opt's buffer on
    Helium (4 bytes a channel of its block for each tap of the window): the upstream
    kernel can then run the call with its output over its input, in its own order."""
    scratch = node.args[-1]
    value = scratch.meta.get("val") if isinstance(scratch, torch.fx.Node) else None
    window = node.args[1].meta["val"].shape[1] * node.args[1].meta["val"].shape[2]
    return value is not None and value.numel() >= 4 * HELIUM_DEPTHWISE_BLOCK * window


def _is_contiguous(val: torch.Tensor) -> bool:
    return tuple(val.dim_order()) == tuple(range(val.dim()))


def _linear_mve_takes(node: torch.fx.Node) -> bool:
    """Whether linear_mve.cpp runs this call itself (mirrors its `handled`)."""
    x, weights, bias, kernel_sum = node.args[:4]
    filter_offset = node.args[5]
    multipliers, shifts = node.args[7:9]
    x_val, w_val, out_val = x.meta["val"], weights.meta["val"], node.meta["val"]
    if any(v.dtype != torch.int8 for v in (x_val, w_val, out_val)):
        return False
    if x_val.dim() < 1 or out_val.dim() < 1 or w_val.dim() != 2:
        return False
    channels, depth = w_val.shape
    for terms in (bias, kernel_sum):
        if terms is not None and (
            terms.meta["val"].dtype != torch.int32 or terms.meta["val"].numel() != channels
        ):
            return False
    if x_val.shape[-1] != depth or out_val.shape[-1] != channels:
        return False
    if depth < 1 or depth % _VECTOR_BYTES or filter_offset != 0:
        return False
    rows = x_val.numel() // depth
    if rows < 2 or out_val.numel() != rows * channels:
        return False
    if not multipliers or not shifts or not -(2**31) <= multipliers[0] < 2**31:
        return False
    if not -31 <= shifts[0] <= 31:
        return False
    return all(_is_contiguous(v) for v in (x_val, w_val, out_val))


def kernels_without_fallback(program: ExportedProgram, target: Target, kernels: str) -> list[str]:
    """The Helium kernels that run every call of their operator in the program themselves
    (after the scratch is planned), so the firmware need not link the upstream kernel
    they would hand a call to. Empty unless the program is for et-zephyr's kernels."""
    if kernels != "et-zephyr" or target.isa != "mve":
        return []
    takes = {
        _CONV: (CONV_MVE, _conv_mve_takes),
        _DEPTHWISE_CONV: (DEPTHWISE_CONV_MVE, _depthwise_mve_takes),
        _LINEAR: (LINEAR_MVE, _linear_mve_takes),
    }
    taking: dict[str, bool] = {}
    for node in program.graph_module.graph.nodes:
        if node.op == "call_function" and node.target in takes:
            kernel, runs = takes[node.target]
            taking[kernel] = taking.get(kernel, True) and runs(node)
    return sorted(kernel for kernel, every in taking.items() if every)
