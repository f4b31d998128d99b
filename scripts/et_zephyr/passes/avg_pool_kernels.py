# SPDX-License-Identifier: Apache-2.0
"""Ceil-mode average pools of int8 maps onto CMSIS-NN, through et-zephyr's kernel.

With ceil_mode=True PyTorch adds a last output row or column whose window runs past the
input (ResNet-D's downsampling `AvgPool2d(2, 2, ceil_mode=True)`); ExecuTorch's
Cortex-M lowering takes floor mode only and left such pools in float. arm_avgpool_s8
lays its windows by the output's size and clips them to the input, averaging over the
positions they cover: PyTorch's ceil-mode windows, which start inside the input (or
its leading padding) and end at most `padding` past it. With count_include_pad, the
padding is part of the divisor: it becomes the input's zero point (cortex_m::pad, as
upstream lowers floor-mode pools), and a window's clipped end is the padded input's
end, as in PyTorch. The quantizer gives the pool's output its input's parameters
(passes/quantizer.py), so the int8 pool is left between int8 tensors: it becomes
et_zephyr::avg_pool2d_clipped (lib/src/kernels/avg_pool2d_clipped.cpp), which passes
the output's size to arm_avgpool_s8.
"""

from __future__ import annotations

import torch
from executorch.backends.cortex_m.passes.aten_to_cortex_m_pass import (
    _create_uninitialized_alloc_node,
)
from executorch.backends.cortex_m.passes.scratch_buffer_sizes import (
    cmsis_nn_avgpool_buffer_size,
)
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..errors import ExportError
from ..firmware.kernel_scratch import resize_scratch
from ..frontend.targets import Target
from ..reference import own_ops  # noqa: F401  (defines et_zephyr::avg_pool2d_clipped)
from .fx_nodes import pair
from .int8_rewrites import is_int8_map, padded_map

_AVG_POOL = exir_ops.edge.aten.avg_pool2d.default
_KERNEL = exir_ops.edge.et_zephyr.avg_pool2d_clipped.default
_QUANTIZE = exir_ops.edge.cortex_m.quantize_per_tensor.default
_DEQUANTIZE = exir_ops.edge.cortex_m.dequantize_per_tensor.default


def ceil_mode_avg_pools_to_kernel(program: ExportedProgram, target: Target) -> int:
    """Each int8 average pool left by the lowering (ceil mode) becomes
    et_zephyr::avg_pool2d_clipped; one with divisor_override computes in float. Returns
    how many became the kernel."""
    graph = program.graph_module.graph
    given = 0
    for node in list(graph.nodes):
        if node.target != _AVG_POOL or not is_int8_map(node) or not is_int8_map(node.args[0]):
            continue
        args = list(node.args) + [None] * (7 - len(node.args))
        source, kernel_size, stride, padding, _, count_include_pad, divisor = args
        if divisor is not None:
            _in_float(node)
            continue
        kernel = pair(kernel_size)
        strides = pair(stride) if stride else kernel
        pads = pair(padding) if padding else [0, 0]
        if count_include_pad is not False and any(pads):
            source = _padded_with_zero_point(node, source, pads)
            pads = [0, 0]
        with graph.inserting_before(node):
            scratch = _create_uninitialized_alloc_node(node, program)
        node.target = _KERNEL
        node.args = (source, kernel, strides, pads, list(node.meta["val"].shape[2:]), scratch)
        (scratch_bytes,) = cmsis_nn_avgpool_buffer_size(target.config.backend, node)
        resize_scratch(scratch, scratch_bytes)
        given += 1
    program.graph_module.recompile()
    return given


def _in_float(pool: Node) -> None:
    """A pool dividing by divisor_override, which no CMSIS-NN kernel does: in float on
    the portable kernel between the Cortex-M dequantize and quantize of its shared
    parameters (et-export warns of it, --strict refuses it)."""
    qparams = (pool.meta.get("input_qparams") or {}).get(0)
    if qparams is None:
        raise ExportError(f"node '{pool.name}': an int8 average pool without its quantization")
    graph = pool.graph
    source = pool.args[0]
    assert isinstance(source, Node)
    int8 = (float(qparams.scale), int(qparams.zp), -128, 127, torch.int8)
    with graph.inserting_before(pool):
        real = graph.call_function(_DEQUANTIZE, (source, *int8))
    real.meta = {k: v for k, v in pool.meta.items() if k in ("stack_trace", "nn_module_stack")}
    real.meta["val"] = source.meta["val"].to(torch.float32)
    with graph.inserting_after(pool):
        back = graph.call_function(_QUANTIZE, (pool, *int8))
    back.meta = dict(real.meta)
    back.meta["val"] = pool.meta["val"]
    pool.replace_all_uses_with(back, delete_user_cb=lambda user: user is not back)
    pool.replace_input_with(source, real)
    pool.meta["val"] = pool.meta["val"].to(torch.float32)


def _padded_with_zero_point(pool: Node, source: Node, pads: list[int]) -> Node:
    """cortex_m::pad of the source with its zero point, `pads` rows and columns each side."""
    qparams = pool.meta.get("input_qparams") or {}
    if 0 not in qparams:
        raise ExportError(f"node '{pool.name}': an int8 average pool without its quantization")
    pad_h, pad_w = pads
    return padded_map(source, (pad_h, pad_w), (pad_h, pad_w), int(qparams[0].zp), pool)
