# SPDX-License-Identifier: Apache-2.0
"""Whole LSTM layers onto arm_lstm_unidirectional_s8 (et_zephyr::quantized_lstm).

After the Cortex-M passes an et_zephyr::lstm reads an int8 input and its output is
int8, their quantization folded into the node (`input_qparams`, `output_qparams`); its
weights are still float. Here they become the kernel's operands
(reference/lstm.py `parameters`: per gate and per operand symmetric int8 weights, the
input side's biases and both sides' zero-point terms summed into int32 vectors), and the
layer gets a planned scratch for its two int16 gate vectors and its int16 cell state.
"""

from __future__ import annotations

import torch
from executorch.backends.cortex_m.passes.aten_to_cortex_m_pass import (
    _create_uninitialized_alloc_node,
)
from executorch.backends.transforms.utils import get_param_tensor
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx import Node

from ..errors import ExportError
from ..firmware.kernel_scratch import resize_scratch
from ..firmware.kernels import source_line
from ..reference import (
    lstm,
    own_ops,  # noqa: F401  (defines et_zephyr::quantized_lstm)
)
from .int8_rewrites import add_constant

_WHOLE_LSTM = exir_ops.edge.et_zephyr.lstm.default
KERNEL = exir_ops.edge.et_zephyr.quantized_lstm.default
# quantized_lstm.cpp: temp1, temp2 and the cell state, int16 each.
_SCRATCH_VECTORS = 3


def lstm_scratch_bytes(batch: int, hidden: int) -> int:
    return _SCRATCH_VECTORS * batch * hidden * 2


def whole_lstms_to_kernel(program: ExportedProgram) -> int:
    """Each et_zephyr::lstm becomes et_zephyr::quantized_lstm. Returns how many."""
    graph = program.graph_module.graph
    changed = 0
    for node in list(graph.nodes):
        if node.target != _WHOLE_LSTM:
            continue
        x, weight_ih, weight_hh, bias, batch_first, last_step, power = node.args
        input_q, output_q = _int8_edges(node)
        params = lstm.parameters(
            _constant(program, weight_ih),
            _constant(program, weight_hh),
            None if bias is None else _constant(program, bias),
            float(input_q.scale),
            int(input_q.zp),
            float(output_q.scale),
            int(output_q.zp),
            int(power),
        )
        operands = [
            add_constant(program, graph, f"{node.name}_{name}", value)
            for name, value in (
                ("input_weights", params.input_weights),
                ("hidden_weights", params.hidden_weights),
                ("input_biases", params.input_biases),
                ("hidden_biases", params.hidden_biases),
            )
        ]
        with graph.inserting_before(node):
            scratch = _create_uninitialized_alloc_node(node, program)
        shape = x.meta["val"].shape
        resize_scratch(
            scratch,
            lstm_scratch_bytes(shape[0 if batch_first else 1], weight_hh.meta["val"].shape[1]),
        )
        node.target = KERNEL
        node.args = (
            x,
            *operands,
            params.gate_scales.flatten().tolist(),
            params.state_scales.tolist(),
            int(output_q.zp),
            params.cell_scale_power,
            bool(batch_first),
            bool(last_step),
            scratch,
        )
        node.meta["val"] = node.meta["val"].to(torch.int8)
        changed += 1
    program.graph_module.recompile()
    return changed


def _int8_edges(node: Node) -> tuple:
    qparams = [(node.meta.get(key) or {}).get(0) for key in ("input_qparams", "output_qparams")]
    if any(q is None or q.dtype != torch.int8 for q in qparams):
        raise ExportError(
            f"node '{node.name}'{source_line(node)}: an LSTM layer without int8 input and "
            "output; export with --unroll-recurrent"
        )
    return tuple(qparams)


def _constant(program: ExportedProgram, node: Node) -> torch.Tensor:
    tensor = get_param_tensor(program, node)
    assert tensor is not None, f"{node.name} is not a constant"
    return tensor.detach().float()
