# SPDX-License-Identifier: Apache-2.0
"""Scratch buffers sized for et-zephyr's own kernels where they need less than CMSIS-NN.

Upstream sizes every cortex_m::quantized_depthwise_conv2d scratch for CMSIS-NN. On
Helium that is arm_depthwise_conv_s8_opt's im2col buffer for 124 channels of a 3x3
window, 4,464 bytes whatever the layer, live beside the layer's input and output, so at
KWS's peak. et-zephyr's Helium depthwise kernel (lib/src/kernels/depthwise_conv_mve.cpp)
needs 16 * (9 + 3 * (H + 2 * pad)) bytes: 1,440 for KWS. The kernel runs a layer when
its scratch is at least that (its `handled_shape`), and upstream's kernel refuses a
scratch of any size but its own: a program planned here needs firmware with
CONFIG_ET_ZEPHYR_DEPTHWISE_CONV_MVE (the manifest's `target.scratch_for` says so and
the build checks it; `et-export --kernels cmsis-nn` plans CMSIS-NN's sizes instead).
"""

from __future__ import annotations

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram

from .targets import Target

_DEPTHWISE_CONV = exir_ops.edge.cortex_m.quantized_depthwise_conv2d.default
# The firmware kernel named as in the manifest and in gen.py's --scratch-kernel.
DEPTHWISE_CONV_MVE = "depthwise_conv_mve"
CHANNELS_LAST = (0, 2, 3, 1)
_LANES = 4  # channels per float32 vector
_VECTOR_BYTES = 16


def depthwise_mve_scratch_bytes(node: torch.fx.Node) -> int | None:
    """The scratch et-zephyr's Helium depthwise kernel needs for this call, or None
    when the kernel does not run this shape (mirrors `handled_shape` in the C file)."""
    x, weight, bias, stride, padding, dilation, depth_multiplier = node.args[:7]
    multipliers, shifts = node.args[9:11]
    x_val, w_val, out_val = x.meta["val"], weight.meta["val"], node.meta["val"]
    if x_val.dim() != 4 or w_val.dim() != 4 or out_val.dim() != 4 or x_val.shape[0] != 1:
        return None
    if depth_multiplier != 1 or any(s != 1 for s in stride) or any(d != 1 for d in dilation):
        return None
    if len(padding) != 2 or any(p not in (0, 1) for p in padding):
        return None
    int32 = (multipliers, shifts) + ((bias,) if bias is not None else ())
    if x_val.dtype != torch.int8 or w_val.dtype != torch.int8 or out_val.dtype != torch.int8:
        return None
    if any(t.meta["val"].dtype != torch.int32 for t in int32):
        return None
    channels = x_val.shape[1]
    if channels % _LANES or tuple(w_val.shape) != (1, 3, 3, channels):
        return None
    if out_val.shape[1] != channels or any(t.meta["val"].numel() != channels for t in int32):
        return None
    if x_val.dim_order() != CHANNELS_LAST or out_val.dim_order() != CHANNELS_LAST:
        return None
    height, width = x_val.shape[2], x_val.shape[3]
    pad_y, pad_x = padding
    if out_val.shape[2] != height + 2 * pad_y - 2 or out_val.shape[3] != width + 2 * pad_x - 2:
        return None
    if out_val.shape[2] < 1 or out_val.shape[3] < 1:
        return None
    return _VECTOR_BYTES * (9 + 3 * (height + 2 * pad_y))


def resize_scratch(scratch: torch.fx.Node, nbytes: int) -> None:
    """Make a kernel's scratch allocation (a uint8 tensor the planner places) `nbytes`."""
    scratch.args = (((nbytes,), torch.uint8),)
    scratch.meta["val"] = scratch.meta["val"].new_empty((nbytes,))


def plan_own_kernel_scratch(program: ExportedProgram, target: Target, kernels: str) -> list[str]:
    """Shrink each depthwise scratch that et-zephyr's Helium kernel runs with less than
    CMSIS-NN's size to the kernel's own. Returns the kernels the program now needs in the
    firmware (empty when nothing changed)."""
    if kernels != "et-zephyr" or target.isa != "mve":
        return []
    changed = False
    for node in program.graph_module.graph.nodes:
        if node.target != _DEPTHWISE_CONV:
            continue
        scratch = node.args[-1]
        planned = scratch.meta["val"].numel()
        needed = depthwise_mve_scratch_bytes(node)
        if needed is None or needed >= planned:
            continue
        resize_scratch(scratch, needed)
        changed = True
    program.graph_module.recompile()
    return [DEPTHWISE_CONV_MVE] if changed else []
