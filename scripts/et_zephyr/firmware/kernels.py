# SPDX-License-Identifier: Apache-2.0
"""Which kernels the firmware can link, and where each operator runs."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import executorch
import torch
from executorch.exir.dialects.edge._ops import EdgeOpOverload
from executorch.exir.operator.convert import to_out_variant
from torch.export import ExportedProgram
from torch.fx import Node

from ..errors import ExportError
from ..reference import own_ops

CORTEX_M = "cortex-m"
PORTABLE = "portable"
ETHOS_U = "ethos-u"
_PACKAGE = Path(next(iter(executorch.__path__)))
# Frames of these packages are the tools', not the model's.
# (this package: scripts/et_zephyr/, firmware/ being one of its stages)
_TOOL_DIRS = (str(Path(torch.__file__).parent), str(_PACKAGE), str(Path(__file__).parents[1]))


@cache
def available_kernels() -> frozenset[str]:
    """`namespace::name.overload` of every kernel the module can build."""
    portable = (_PACKAGE / "kernels/portable/functions.yaml").read_text()
    cortex_m = (_PACKAGE / "backends/cortex_m/ops/operators.yaml").read_text()
    names = {f"aten::{name}" for name in re.findall(r"^- op: (\S+)", portable, re.M)}
    # The dim-order conversions (dim_order_ops::_to_dim_order_copy.out, ...): portable too.
    names |= set(re.findall(r"^- func: (dim_order_ops::[\w.]+)\(", portable, re.M))
    names |= set(re.findall(r"^- func: (cortex_m::[\w.]+)\(", cortex_m, re.M))
    return frozenset(names | own_ops.KERNELS)


def runs_on(operator: str) -> str:
    """Where an operator of the .pte runs: CMSIS-NN backed or portable C++."""
    return CORTEX_M if operator.startswith(("cortex_m::", "et_zephyr::")) else PORTABLE


def out_variant_name(node: Node) -> str | None:
    """The name the .pte will call this node's operator by, if it has one: found as
    ExecuTorch's ToOutVarPass finds it (an Edge operator's own to_out_variant(), which
    also resolves aten::pow.Tensor_Scalar, where the plain aten lookup trips over
    aten::pow.int_to_int)."""
    target = getattr(node.target, "_op", node.target)
    if not isinstance(target, torch._ops.OpOverload):
        return None
    try:
        if isinstance(node.target, EdgeOpOverload):
            out = node.target.to_out_variant()
        else:
            out, _ = to_out_variant(target)
    except Exception:
        return f"{target._schema.name}.{target._schema.overload_name or 'default'}"
    return f"{out._schema.name}.{out._schema.overload_name}"


def check_kernels(program: ExportedProgram) -> None:
    """Fail, naming the node and its source line, on an operator with no kernel."""
    available = available_kernels()
    for node in program.graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        name = out_variant_name(node)
        if name is not None and name.startswith(_INTEGER_BLIND) and _reads_integers(node):
            raise ExportError(
                f"operator {name} (node '{node.name}'{source_line(node)}) was left on a "
                "portable kernel with integer tensors, which it would multiply as plain "
                "integers, ignoring their quantization: the quantizer could not match the "
                "layer; please report the model"
            )
        if name is not None and _int16_blind(name) and _touches_int16(node):
            raise ExportError(
                f"operator {name} (node '{node.name}'{source_line(node)}) has no INT16 kernel "
                "yet: export with --activations int8, or report the model"
            )
        if name is None or name in available:
            continue
        raise ExportError(
            f"operator {name} (node '{node.name}'{source_line(node)}) has no Cortex-M "
            "or portable kernel; express that part of the model with supported operators"
        )


# Portable multiply-accumulate kernels: given int8 or int16 tensors they compute integer
# sums with no zero points or scales (an unlowered layer between quantized ones).
_INTEGER_BLIND = ("aten::convolution.", "aten::linear.", "aten::mm.", "aten::bmm.", "aten::addmm.")


# Kernels of the Cortex-M backend and et-zephyr that take INT16 tensors; the others read
# int8 (the float edges take both).
_INT16_KERNELS = frozenset(
    {
        "cortex_m::quantize_per_tensor.out",
        "cortex_m::dequantize_per_tensor.out",
        "et_zephyr::quantized_linear_s16.out",
        "et_zephyr::quantized_conv2d_s16.out",
        "et_zephyr::quantized_depthwise_conv2d_s16.out",
        "et_zephyr::pad_s16.out",
        "et_zephyr::avg_pool2d_s16.out",
        "et_zephyr::max_pool2d_s16.out",
        "et_zephyr::add_s16.out",
        # INT8 activations; its cell state is int16 by design (carried with --stateful).
        "et_zephyr::quantized_lstm.out",
    }
)


def _int16_blind(name: str) -> bool:
    return name.startswith(("cortex_m::", "et_zephyr::")) and name not in _INT16_KERNELS


def _touches_int16(node: Node) -> bool:
    values = [arg.meta.get("val") for arg in node.all_input_nodes] + [node.meta.get("val")]
    return any(isinstance(v, torch.Tensor) and v.dtype == torch.int16 for v in values)


def _reads_integers(node: Node) -> bool:
    return any(
        isinstance(arg.meta.get("val"), torch.Tensor)
        and arg.meta["val"].dtype in (torch.int8, torch.int16)
        for arg in node.all_input_nodes
    )


def model_location(node: Node) -> str:
    """'file:line' of the model's code a node comes from (the last frame of its stack
    trace outside torch, ExecuTorch and et-export), or ''."""
    trace = node.meta.get("stack_trace") or ""
    locations = [
        (file, line)
        for file, line in re.findall(r'File "([^"]+)", line (\d+)', trace)
        if not file.startswith(_TOOL_DIRS)
    ]
    return f"{locations[-1][0]}:{locations[-1][1]}" if locations else ""


def source_line(node: Node) -> str:
    """', file:line' of the model's code a node comes from, for error messages, or ''."""
    location = model_location(node)
    return f", {location}" if location else ""
