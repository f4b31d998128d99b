# SPDX-License-Identifier: Apache-2.0
"""What the serialized program calls: operator counts, MACs and placement."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from math import prod

import torch
from executorch.exir import memory
from torch.fx import GraphModule, Node

from .kernels import CORTEX_M, ETHOS_U, PORTABLE, runs_on

# Operators that multiply-accumulate, by name without namespace or overload.
MAC_OPERATORS = frozenset(
    {
        "quantized_conv2d",
        "quantized_depthwise_conv2d",
        "quantized_transpose_conv2d",
        "quantized_linear",
        "quantized_linear_s16",
        "quantized_conv2d_s16",
        "quantized_depthwise_conv2d_s16",
        "quantized_batch_matmul",
        "quantized_lstm",
        "quantized_gru",
        "convolution",
        "linear",
        "addmm",
        "mm",
        "bmm",
    }
)


@dataclass
class OperatorStats:
    """One operator of the program: how often it is called, where, how much work."""

    calls: int = 0
    macs: int = 0
    runs_on: str = ""
    nodes: list[str] = field(default_factory=list)
    # Calls that read or write a floating-point tensor.
    float_calls: int = 0
    # Bytes the calls write (for the layout copies' line in the report).
    output_bytes: int = 0


def operator_stats(graph: GraphModule) -> dict[str, OperatorStats]:
    """Per operator (`namespace::name.overload`), in first-call order."""
    stats: dict[str, OperatorStats] = {}
    for node in graph.graph.nodes:
        name = _operator_name(node)
        if name is None:
            continue
        entry = stats.setdefault(name, OperatorStats(runs_on=runs_on(name)))
        entry.calls += 1
        entry.macs += node_macs(node)
        entry.nodes.append(node.name)
        tensors = _tensors(node)
        entry.float_calls += any(t.dtype.is_floating_point for t in tensors)
        entry.output_bytes += sum(t.numel() * t.element_size() for t in _tensors(node, False))
    return stats


def _tensors(node: Node, inputs: bool = True) -> list[torch.Tensor]:
    """The node's output tensors, and its input tensors too with `inputs`."""
    sources = [*node.all_input_nodes, node] if inputs else [node]
    values = [source.meta.get("val") for source in sources]
    flat = [v for value in values for v in (value if isinstance(value, (list, tuple)) else [value])]
    return [v for v in flat if isinstance(v, torch.Tensor)]


def node_macs(node: Node) -> int:
    """Multiply-accumulates one call of this node performs."""
    schema = getattr(node.target, "_schema", None)
    base = schema.name.split("::")[-1] if schema is not None else ""
    if base not in MAC_OPERATORS:
        return 0
    out, first = _value(node), _value(node.args[0])
    if base in ("quantized_conv2d", "quantized_conv2d_s16"):  # weight: [C_out, kH, kW, C_in]
        return out.numel() * prod(_value(node.args[1]).shape[1:])
    if base in ("quantized_depthwise_conv2d", "quantized_depthwise_conv2d_s16"):
        # weight: [1, kH, kW, C_out]
        weight = _value(node.args[1])
        return out.numel() * weight.shape[1] * weight.shape[2]
    if base == "quantized_transpose_conv2d":  # every input element meets the kernel
        return first.numel() * _value(node.args[1]).numel() // first.shape[1]
    if base == "convolution":  # weight: [C_out, C_in / groups, kH, kW]
        return out.numel() * prod(_value(node.args[1]).shape[1:])
    if base in ("quantized_lstm", "quantized_gru"):  # each step, each gate: over x and h
        features, hidden = first.shape[-1], out.shape[-1]
        gates = 4 if base == "quantized_lstm" else 3
        return first.numel() // features * gates * hidden * (features + hidden)
    if base == "addmm":
        return out.numel() * _value(node.args[1]).shape[-1]
    # linear, quantized_linear(_s16), mm, bmm, quantized_batch_matmul (whose second
    # argument is a zero point): reduce the first input's last dimension.
    return out.numel() * first.shape[-1]


def _value(node: object) -> torch.Tensor:
    assert isinstance(node, Node)
    value = node.meta["val"]
    return value[0] if isinstance(value, (tuple, list)) else value


def int16_tensors(graph: GraphModule) -> list[str]:
    """The operators' outputs that are INT16 activations (et-export --activations int16)."""
    return [
        node.name
        for node in graph.graph.nodes
        if node.op == "call_function"
        and node.target is not memory.alloc
        and isinstance(node.meta.get("val"), torch.Tensor)
        and node.meta["val"].dtype == torch.int16
    ]


def int8_operators(graph: GraphModule) -> list[str]:
    """The integer operators that write INT8 tensors, but for the quantizations of float
    values (in a 16x8 program: those with no s16 kernel, which run INT8)."""
    names: dict[str, None] = {}
    for node in graph.graph.nodes:
        name, value = _operator_name(node), node.meta.get("val")
        if name is None or not isinstance(value, torch.Tensor):
            continue
        if value.dtype == torch.int8 and name.startswith(("cortex_m::", "et_zephyr::")):
            names[name] = None
    names.pop("cortex_m::quantize_per_tensor.out", None)
    return list(names)


def _operator_name(node: Node) -> str | None:
    """`namespace::name.overload` of an operator call, or None for other nodes."""
    schema = getattr(node.target, "_schema", None)
    if node.op != "call_function" or schema is None:
        return None
    return f"{schema.name}.{schema.overload_name or 'default'}"


def mac_totals(stats: dict[str, OperatorStats]) -> dict[str, int]:
    return {
        "total": sum(s.macs for s in stats.values()),
        "cmsis_nn": sum(s.macs for s in stats.values() if s.runs_on == CORTEX_M),
        "ethos_u": sum(s.macs for s in stats.values() if s.runs_on == ETHOS_U),
    }


def portable_mac_operators(stats: dict[str, OperatorStats]) -> list[str]:
    """MAC-bearing operators left on portable kernels (slow, float or naive)."""
    return [name for name, s in stats.items() if s.macs and s.runs_on == PORTABLE]


# Copies that change only a tensor's layout (dim order), not its values.
LAYOUT_COPIES = frozenset(
    {
        "dim_order_ops::_clone_dim_order.out",
        "dim_order_ops::_to_dim_order_copy.out",
    }
)
# Portable operators that only move or fill bytes: exact whatever the core, so the host
# reference and the device agree on them by construction.
BYTE_COPIES = LAYOUT_COPIES | frozenset(
    {
        "aten::alias_copy.out",
        "aten::clone.out",
        "aten::permute_copy.out",
        "aten::view_copy.out",
        "aten::split_with_sizes_copy.out",
        "aten::split_copy.Tensor_out",
        "aten::select_copy.int_out",
        "aten::slice_copy.Tensor_out",
        "aten::unsqueeze_copy.out",
        "aten::squeeze_copy.dims_out",
        "aten::squeeze_copy.dim_out",
        "aten::expand_copy.out",
        "aten::cat.out",
        "aten::stack.out",
        "aten::upsample_nearest2d.vec_out",
        "aten::constant_pad_nd.out",
        "aten::full.out",
        "dim_order_ops::_clone_dim_order.out",
    }
)


def portable_arithmetic(stats: dict[str, OperatorStats]) -> list[str]:
    """Operators computing in float on portable kernels without MACs (element-wise and
    reduction tails): their float math is the device's libm and compiler, which the
    host reference need not match to the bit. Judged by the tensors each call reads
    and writes: an integer clamp or a copy of bytes is exact on any core."""
    return [
        name
        for name, s in stats.items()
        if s.runs_on == PORTABLE and not s.macs and s.float_calls and name not in BYTE_COPIES
    ]


def layout_copies(stats: dict[str, OperatorStats]) -> tuple[int, int]:
    """How many layout copies the program makes an inference, and the bytes they write."""
    copies = [s for name, s in stats.items() if name in LAYOUT_COPIES]
    return sum(s.calls for s in copies), sum(s.output_bytes for s in copies)


def histogram(stats: dict[str, OperatorStats]) -> Counter[str]:
    return Counter({name: s.calls for name, s in stats.items()})
