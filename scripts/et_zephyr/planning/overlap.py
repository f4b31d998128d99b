# SPDX-License-Identifier: Apache-2.0
"""Outputs that may overlap the input they are computed from.

A tensor's bytes are free once the last operator reading it has read them, and some
kernels read their input strictly ahead of what they write. Such an operator's output
may start below its input and run into it: MobileNet's 8-to-16-channel pointwise
layer needs 36,896 bytes instead of 55,296, a ResNet's 3x3 convolution 17,456 beside
its residual instead of 32,768, and a residual add none at all.

The condition, for an output placed `offset` bytes below the input: every byte the
kernel writes lies below every input byte it has still to read. It depends on the
order of the kernel's reads and writes, so it is claimed only for kernels whose order
is known (the CMSIS-NN commit and et-zephyr's own kernels):
- arm_convolve_s8 (any stride and padding, no dilation, one group; every ISA tier) and
  et-zephyr's DSP convolution gather the input patches of at most 4 output pixels,
  in row-major order, then write those pixels' outputs for every channel; et-zephyr's
  Helium convolution kernel does the same with chunks of its scratch's size (which
  only pushes the next read further up the input);
- on Helium, arm_convolve_1x1_s8_fast reads 4 pixels' inputs while it writes their
  outputs (arm_nn_mat_mult_nt_t_s8), then moves on; with the DSP extension or none, it
  writes 2 output channels of every pixel first, which no overlap survives; so does
  et-zephyr's Helium pointwise kernel (input depths that are a multiple of 16);
- on Helium, arm_depthwise_conv_s8_opt gathers the windows of 4 output pixels, in
  row-major order, then writes them, when the channels fit one of its blocks (124);
  et-zephyr's Helium depthwise kernel (3x3, stride 1 or 2) works channel group by
  channel group over the whole image, as do the DSP tier's depthwise kernels: never
  overlapped, unless the call's scratch holds the upstream kernel's buffer (the Helium
  kernel hands a call whose output overlaps its input to the upstream kernel; et-export
  plans that where the arena peaks, pipeline.plan_within_peak);
- arm_elementwise_add_s8 reads a block of both inputs before writing that block.
The bound used for a convolution: while the outputs of the pixels from p on (in blocks
of 4) are written, any input from the first byte of pixel p's window on may still be
read. Every other operator never overlaps.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

# Registers the cortex_m::* operators.
import executorch.backends.cortex_m.passes  # noqa: F401
import torch
from executorch.exir.tensor import TensorSpec
from torch.fx import GraphModule, Node

from ..firmware.kernel_scratch import (
    CHANNELS_LAST,
    HELIUM_DEPTHWISE_BLOCK,
    depthwise_mve_scratch_bytes,
    holds_upstream_depthwise_buffer,
)

_CONV = torch.ops.cortex_m.quantized_conv2d.out
_DEPTHWISE_CONV = torch.ops.cortex_m.quantized_depthwise_conv2d.out
_ADD = torch.ops.cortex_m.quantized_add.out
# The most output pixels any of those kernels writes before it is done with their inputs.
CHUNK_PIXELS = 4
# et-zephyr's Helium pointwise kernel takes input depths that are a multiple of this.
_HELIUM_POINTWISE_DEPTH = 16


@dataclass(frozen=True)
class Overlap:
    """`output` may start `offset` bytes below `input` (above it if negative) or lower,
    and overlap it: `input` is last read by the operator that writes `output`."""

    input: TensorSpec
    output: TensorSpec
    offset: int

    def saving(self) -> int:
        """Bytes the two need less than side by side, at best."""
        both = self.input.allocated_memory + self.output.allocated_memory
        return both - max(self.output.allocated_memory,
                          self.input.allocated_memory + max(self.offset, 0))  # fmt: skip


def output_overlaps(graph_module: GraphModule, isa: str) -> list[Overlap]:
    """The input/output pairs of the program's operators that may overlap, for kernels
    built for this ISA tier ('scalar', 'dsp' or 'mve')."""
    index = {node: i for i, node in enumerate(graph_module.graph.nodes)}
    found = []
    for node in graph_module.graph.nodes:
        for operand, offset in _operand_offsets(node, isa):
            x_spec, y_spec = operand.meta.get("spec"), node.meta.get("spec")
            if (
                _dies_here(operand, x_spec, node, index)
                and _planned(y_spec)
                and offset < y_spec.allocated_memory
            ):
                found.append(Overlap(x_spec, y_spec, offset))
    return found


def _operand_offsets(node: Node, isa: str) -> Iterator[tuple[Node, int]]:
    if node.op != "call_function":
        return
    if node.target in (_CONV, _DEPTHWISE_CONV):
        offset = _convolution_offset(node, isa)
        if offset is not None:
            yield node.args[0], offset
    elif node.target == _ADD:
        out = node.meta["val"]
        if not _int8_channels_last(out):
            return
        for operand in node.args:
            val = operand.meta.get("val") if isinstance(operand, Node) else None
            if _int8_channels_last(val) and tuple(val.shape) == tuple(out.shape):
                yield operand, 0


def _convolution_offset(node: Node, isa: str) -> int | None:
    """How far below its input a convolution's output must start, or None when its
    kernel's order is not one this module knows to be safe."""
    x, weight, _, stride, padding, dilation = node.args[:6]
    x_val, w_val, out = x.meta["val"], weight.meta["val"], node.meta["val"]
    if not _int8_channels_last(x_val) or not _int8_channels_last(out) or w_val.dim() != 4:
        return None
    _, c_in, h_in, w_in = x_val.shape
    _, c_out, h_out, w_out = out.shape
    if any(d != 1 for d in dilation) or x_val.shape[0] != 1:
        return None
    if node.target == _DEPTHWISE_CONV:
        _, k_h, k_w, _ = w_val.shape  # [1, kH, kW, C]
        # Helium only, where arm_depthwise_conv_s8_opt gathers 4 pixels' windows of one
        # channel block first; not the shapes et-zephyr's own kernel may run, unless the
        # call's scratch holds the upstream kernel's buffer (it then takes an overlapping
        # call).
        own_kernel = depthwise_mve_scratch_bytes(node) is not None and not (
            holds_upstream_depthwise_buffer(node)
        )
        if isa != "mve" or own_kernel or c_in != c_out or not 1 < c_in <= HELIUM_DEPTHWISE_BLOCK:
            return None
    else:
        _, k_h, k_w, w_depth = w_val.shape  # OHWI
        if w_depth != c_in:
            return None
    pointwise = node.target == _CONV and k_h == 1 and k_w == 1
    if pointwise:
        fast = all(s == 1 for s in stride) and all(p == 0 for p in padding)
        if not fast or isa != "mve" or c_in % _HELIUM_POINTWISE_DEPTH == 0:
            return None
    elif node.target == _CONV and (k_h == 1 or h_in == 1):
        return None  # arm_convolve_1_x_n_s8 on Helium: not examined
    return convolution_offset((c_in, h_in, w_in), (c_out, h_out, w_out), stride, padding)


def convolution_offset(
    input_chw: tuple[int, int, int],
    output_chw: tuple[int, int, int],
    stride: tuple[int, int] | list[int],
    padding: tuple[int, int] | list[int],
) -> int:
    """The least `input address - output address` (NHWC, batch 1) at which a kernel that
    writes output pixels in row-major blocks of CHUNK_PIXELS, reading any input from the
    first byte of the block's first window on while it writes them, never writes an input
    byte it has still to read."""
    c_in, _, w_in = input_chw
    c_out, h_out, w_out = output_chw

    def window_start(out_y: int, out_x: int) -> int:
        """The first input byte of an output pixel's window (padding clipped)."""
        in_y = max(0, out_y * stride[0] - padding[0])
        in_x = max(0, out_x * stride[1] - padding[1])
        return (in_y * w_in + in_x) * c_in

    pixels = h_out * w_out
    worst = None
    for first in range(0, pixels, CHUNK_PIXELS):
        written = min(pixels, first + CHUNK_PIXELS) * c_out
        out_y, out_x = divmod(first, w_out)
        # The lowest window from this pixel on: its own, or, where top padding clips
        # rows alike, the next row's first (later rows start lower than that never).
        still_read = window_start(out_y, out_x)
        if out_y + 1 < h_out:
            still_read = min(still_read, window_start(out_y + 1, 0))
        worst = written - still_read if worst is None else max(worst, written - still_read)
    assert worst is not None
    return worst


def _int8_channels_last(val: object) -> bool:
    """An int8 4-D tensor in channels-last order, as these kernels take them."""
    return (
        isinstance(val, torch.Tensor)
        and val.dtype == torch.int8
        and val.dim() == 4
        and val.dim_order() == CHANNELS_LAST
    )


def _planned(spec: object) -> bool:
    return (
        isinstance(spec, TensorSpec)
        and spec.lifetime[0] is not None
        and spec.inplace_base is None
        and spec.const is False
    )


def _dies_here(operand: object, spec: object, node: Node, index: dict[Node, int]) -> bool:
    """The operator is the last to read this tensor. A program input counts: planning
    already gives its bytes to later tensors once it is read."""
    return (
        isinstance(operand, Node)
        and operand.op in ("call_function", "placeholder")
        and _planned(spec)
        and spec.lifetime[1] == index[node]
        and not any(user.op == "output" for user in operand.users)
    )


def lower_bound_savings(overlaps: list[Overlap]) -> list[tuple[int, int, int, int]]:
    """(first, last, bytes, mem id): how much less than the sum of the live tensors no
    plan can go below, during the time each overlapping pair is alive together. One
    pair an output (an add may overlap either input, not both at once)."""
    best: dict[int, Overlap] = {}
    for pair in overlaps:
        kept = best.get(id(pair.output))
        if kept is None or pair.saving() > kept.saving():
            best[id(pair.output)] = pair
    return [
        (max(p.input.lifetime[0], p.output.lifetime[0]), p.input.lifetime[1], p.saving(),
         p.output.mem_id or 1)
        for p in best.values()
        if p.saving() > 0
    ]  # fmt: skip
