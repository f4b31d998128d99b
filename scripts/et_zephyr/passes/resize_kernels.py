# SPDX-License-Identifier: Apache-2.0
"""Bilinear resizes of int8 images onto et-zephyr's kernel.

With input and output sharing their quantization (passes/quantizer.py), an
aten::upsample_bilinear2d between int8 tensors would run on ExecuTorch's portable
kernel: float arithmetic truncated toward zero, which neither rounds nor reproduces
bit for bit across cores. It becomes et_zephyr::resize_bilinear
(lib/src/kernels/resize_bilinear.cpp), its taps (PyTorch's source rows and columns
and their weights in Q10, reference/resize.py) constants of the program.
"""

from __future__ import annotations

from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram

from ..reference import own_ops  # noqa: F401  (defines et_zephyr::resize_bilinear)
from ..reference.resize import bilinear_taps
from .int8_rewrites import add_constant, is_int8_map

_BILINEAR = exir_ops.edge.aten.upsample_bilinear2d.vec
_KERNEL = exir_ops.edge.et_zephyr.resize_bilinear.default


def bilinear_resizes_to_kernel(program: ExportedProgram) -> int:
    """Each int8 bilinear resize becomes et_zephyr::resize_bilinear. Returns how many."""
    graph = program.graph_module.graph
    given = 0
    for node in list(graph.nodes):
        if node.target != _BILINEAR or not is_int8_map(node) or not is_int8_map(node.args[0]):
            continue
        source = node.args[0]
        scales = node.args[3] if len(node.args) > 3 else None
        align_corners = bool(node.args[2])
        (in_h, in_w), (out_h, out_w) = source.meta["val"].shape[2:], node.meta["val"].shape[2:]
        taps = []
        for axis, (n_in, n_out) in enumerate(((in_h, out_h), (in_w, out_w))):
            scale = None if scales is None else float(scales[axis])
            taps.append(bilinear_taps(n_in, n_out, align_corners, scale))
        rows = add_constant(program, graph, f"{node.name}_rows", taps[0])
        columns = add_constant(program, graph, f"{node.name}_columns", taps[1])
        node.target = _KERNEL
        node.args = (source, rows, columns)
        given += 1
    program.graph_module.recompile()
    return given
