# SPDX-License-Identifier: Apache-2.0
"""Ceil-mode max pooling as floor mode over an input padded with the int8 minimum.

With ceil_mode=True PyTorch adds a last output row or column whose window runs past
the input (SqueezeNet's and GoogLeNet's pools); ExecuTorch's Cortex-M max pool takes
floor mode only and leaves such pools on a portable kernel, with layout copies. Padding
the input's bottom and right with -128 (cortex_m::pad) until floor mode gives
PyTorch's size changes no maximum: every window PyTorch allows holds an input element,
and -128 wins over none. Runs on the int8 graph, before the Cortex-M lowering.
"""

from __future__ import annotations

from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass, PassResult
from torch.fx import GraphModule, Node

from .fx_nodes import pair
from .int8_rewrites import padded_map

_MAX_POOL = exir_ops.edge.aten.max_pool2d.default
_INT8_MIN = -128


class CeilModeMaxPoolsPadded(ExportPass):
    """Each int8 ceil-mode max pool (no dilation) becomes a floor-mode one over a padded
    input, which the Cortex-M lowering then takes. In place."""

    def call(self, graph_module: GraphModule) -> PassResult:
        changed = False
        for node in list(graph_module.graph.nodes):
            if node.target == _MAX_POOL and _ceil_mode_int8(node):
                _pad_for_floor_mode(node)
                changed = True
        graph_module.recompile()
        return PassResult(graph_module, changed)


def _ceil_mode_int8(node: Node) -> bool:
    args = list(node.args) + [None] * (6 - len(node.args))
    dilation, ceil_mode = args[4], args[5]
    if not ceil_mode or (dilation is not None and list(dilation) not in ([1, 1], [1])):
        return False
    return bool(node.meta.get("input_qparams")) and bool(node.meta.get("output_qparams"))


def _pad_for_floor_mode(node: Node) -> None:
    source = node.args[0]
    assert isinstance(source, Node)
    value = source.meta["val"]
    kernel = pair(node.args[1])
    stride = pair(node.args[2]) if len(node.args) > 2 and node.args[2] else kernel
    padding = pair(node.args[3]) if len(node.args) > 3 else [0, 0]
    out_h, out_w = node.meta["val"].shape[2:]
    height, width = value.shape[2:]
    extra_h = max(0, (out_h - 1) * stride[0] + kernel[0] - 2 * padding[0] - height)
    extra_w = max(0, (out_w - 1) * stride[1] + kernel[1] - 2 * padding[1] - width)
    if extra_h or extra_w:
        source = padded_map(source, (0, 0), (extra_h, extra_w), _INT8_MIN, source)
    # Dilation and ceil mode at their defaults: dropped, as upstream's lowering expects.
    node.args = (source, kernel, stride, padding)
    # The quantizer marked the pool for the portable kernel because of its ceil mode.
    node.meta.get("custom", {}).get("cortex_m", {}).pop("skip_quantized_max_pool2d", None)
