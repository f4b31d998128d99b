# SPDX-License-Identifier: Apache-2.0
"""Temp-arena bytes et-zephyr's own kernels borrow while they run.

The runtime resets the temp arena after every operator, so the arena needs the most
any one call borrows (beside what loading borrows; planning/memory.py takes the
larger). Each rule mirrors its C file; a call that finds less runs the upstream kernel:
- softmax (lib/src/kernels/softmax_table.cpp), every tier: its table of the 256 int32
  exponentials;
- on the DSP tier, linears (linear_dsp.cpp) whose depth is a multiple of 4: the input
  row sign-extended into int16 pairs, 2 bytes a value;
- on the DSP tier, convolutions without dilation whose patch (kernel height x width x
  input channels, padded to a multiple of 4) is deeper than the 64 values their stack
  buffer holds (conv_dsp.cpp): 4 pixels' patches sign-extended, 8 bytes a value; one
  pixel's window gathered, a byte a value, where the patch is padded or the input
  channels are not a multiple of 4 (and the layer is not pointwise); where the patch
  is padded, the last channel's weights padded, a byte a value.
"""

from __future__ import annotations

from executorch.exir.schema import ExecutionPlan, IntList, KernelCall

SOFTMAX_TABLE_BYTES = 256 * 4
_STEP = 4
_CONV_STACK_DEPTH = 64
_PIXELS = 4
_PAIR_BYTES = 2


def run_time_temp_bytes(plan: ExecutionPlan, call: KernelCall, isa: str) -> int:
    """The temp bytes one call of `plan`, exported for the CMSIS-NN tier `isa`, borrows."""
    name = plan.operators[call.op_index].name
    if name == "cortex_m::softmax":
        return SOFTMAX_TABLE_BYTES
    if isa != "dsp":
        return 0
    if name == "cortex_m::quantized_linear":
        depth = plan.values[call.args[1]].val.sizes[1]  # weights [channels, depth]
        return _PAIR_BYTES * depth if depth % _STEP == 0 else 0
    if name == "cortex_m::quantized_conv2d":
        # (input, weight, bias, stride, padding, dilation, ...); weight [O, H, W, I].
        _, height, width, channels = plan.values[call.args[1]].val.sizes
        padding, dilation = (_ints(plan, call.args[i]) for i in (4, 5))
        depth = height * width * channels
        padded = -(-depth // _STEP) * _STEP
        if padded <= _CONV_STACK_DEPTH or any(d != 1 for d in dilation):
            return 0
        pointwise = height == width == 1 and not any(padding)
        gathers = depth != padded or (not pointwise and channels % _STEP != 0)
        return (
            _PIXELS * _PAIR_BYTES * padded
            + (padded if gathers else 0)
            + (padded if depth != padded else 0)
        )
    return 0


def _ints(plan: ExecutionPlan, index: int) -> list[int]:
    value = plan.values[index].val
    assert isinstance(value, IntList)
    return [plan.values[i].val.int_val for i in value.items]
