# SPDX-License-Identifier: Apache-2.0
"""Whole LSTM and GRU layers onto their integer kernels: et_zephyr::quantized_lstm
(CMSIS-NN's arm_lstm_unidirectional_s8) and et_zephyr::quantized_gru (et-zephyr's, from
the same pieces).

After the Cortex-M passes an et_zephyr::lstm or et_zephyr::gru reads an int8 input and
its output is int8, their quantization folded into the node (`input_qparams`,
`output_qparams`); its weights are still float. Here they become the kernel's operands
(reference/lstm.py and reference/gru.py `parameters`: per gate and per side symmetric
int8 weights, biases and zero-point terms summed into int32 vectors), and the layer gets
a planned scratch for its int16 vectors (an LSTM's two gates and cell state, a GRU's
four gate vectors).
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
    gru,
    lstm,
    own_ops,  # noqa: F401  (defines et_zephyr::quantized_lstm and ::quantized_gru)
)
from .int8_rewrites import add_constant

_WHOLE_LSTM = exir_ops.edge.et_zephyr.lstm.default
_WHOLE_GRU = exir_ops.edge.et_zephyr.gru.default
LSTM_KERNEL = exir_ops.edge.et_zephyr.quantized_lstm.default
GRU_KERNEL = exir_ops.edge.et_zephyr.quantized_gru.default
_INT16_BYTES = 2


def lstm_scratch_bytes(batch: int, hidden: int) -> int:
    """quantized_lstm.cpp: two gate vectors and the cell state, all batches at once."""
    return 3 * batch * hidden * _INT16_BYTES


def gru_scratch_bytes(hidden: int) -> int:
    """quantized_gru.cpp: r, z and the candidate's two sides, one sequence at a time."""
    return 4 * hidden * _INT16_BYTES


def whole_layers_to_kernels(program: ExportedProgram) -> int:
    """Each et_zephyr::lstm and et_zephyr::gru becomes its kernel. Returns how many."""
    graph = program.graph_module.graph
    changed = 0
    for node in list(graph.nodes):
        if node.target == _WHOLE_LSTM:
            _lstm_to_kernel(program, node)
        elif node.target == _WHOLE_GRU:
            _gru_to_kernel(program, node)
        else:
            continue
        node.meta["val"] = node.meta["val"].to(torch.int8)
        changed += 1
    program.graph_module.recompile()
    return changed


def _lstm_to_kernel(program: ExportedProgram, node: Node) -> None:
    x, weight_ih, weight_hh, bias, batch_first, last_step, power = node.args
    input_q, output_q = _int8_edges(node)
    params = lstm.parameters(
        _constant(program, weight_ih),
        _constant(program, weight_hh),
        _constant(program, bias),
        float(input_q.scale),
        int(input_q.zp),
        float(output_q.scale),
        int(output_q.zp),
        int(power),
    )
    batch = x.meta["val"].shape[0 if batch_first else 1]
    scratch = _scratch(program, node, lstm_scratch_bytes(batch, weight_hh.meta["val"].shape[1]))
    node.target = LSTM_KERNEL
    node.args = (
        x,
        *_operands(program, node, params),
        params.gate_scales.flatten().tolist(),
        params.state_scales.tolist(),
        int(output_q.zp),
        params.cell_scale_power,
        bool(batch_first),
        bool(last_step),
        *[None] * 4,  # no carried state (passes/carried_state.py gives one)
        scratch,
    )


def _gru_to_kernel(program: ExportedProgram, node: Node) -> None:
    x, weight_ih, weight_hh, bias_ih, bias_hh, batch_first, last_step = node.args
    input_q, output_q = _int8_edges(node)
    params = gru.parameters(
        _constant(program, weight_ih),
        _constant(program, weight_hh),
        _constant(program, bias_ih),
        _constant(program, bias_hh),
        float(input_q.scale),
        int(input_q.zp),
        float(output_q.scale),
        int(output_q.zp),
    )
    scratch = _scratch(program, node, gru_scratch_bytes(weight_hh.meta["val"].shape[1]))
    node.target = GRU_KERNEL
    node.args = (
        x,
        *_operands(program, node, params),
        params.gate_scales.flatten().tolist(),
        params.state_scales.tolist(),
        int(output_q.zp),
        bool(batch_first),
        bool(last_step),
        None,  # no carried state (passes/carried_state.py gives one)
        None,
        scratch,
    )


def _operands(program: ExportedProgram, node: Node, params: object) -> list[Node]:
    """The layer's weights and biases as constants of the program."""
    graph = program.graph_module.graph
    return [
        add_constant(program, graph, f"{node.name}_{name}", getattr(params, name))
        for name in ("input_weights", "hidden_weights", "input_biases", "hidden_biases")
    ]


def _scratch(program: ExportedProgram, node: Node, nbytes: int) -> Node:
    with program.graph_module.graph.inserting_before(node):
        scratch = _create_uninitialized_alloc_node(node, program)
    resize_scratch(scratch, nbytes)
    return scratch


def _int8_edges(node: Node) -> tuple:
    qparams = [(node.meta.get(key) or {}).get(0) for key in ("input_qparams", "output_qparams")]
    if any(q is None or q.dtype != torch.int8 for q in qparams):
        raise ExportError(
            f"node '{node.name}'{source_line(node)}: a recurrent layer without int8 input and "
            "output; export with --unroll-recurrent"
        )
    return tuple(qparams)


def _constant(program: ExportedProgram, node: Node | None) -> torch.Tensor | None:
    if node is None:
        return None
    tensor = get_param_tensor(program, node)
    assert tensor is not None, f"{node.name} is not a constant"
    return tensor.detach().float()
