# SPDX-License-Identifier: Apache-2.0
"""Arm Ethos-U delegation: what the NPU supports runs there, the rest on Cortex-M.

Follows ExecuTorch's own mixed flow: quantize with the Ethos-U quantizer
(symmetric, per-channel weights, which the Cortex-M kernels also accept),
partition with EthosUPartitioner (Vela compiles each partition), then lower
what is left with the Cortex-M passes.
"""

from __future__ import annotations

import contextlib
import io

import torch
from executorch.exir import EdgeCompileConfig, EdgeProgramManager, to_edge_transform_and_lower
from torch.export import ExportedProgram
from torch.fx import GraphModule

from ..errors import ExportError
from ..firmware.analysis import OperatorStats, node_macs
from ..firmware.kernels import ETHOS_U
from ..frontend.loading import Inputs

NPUS = ("ethos-u55-128", "ethos-u65-256", "ethos-u85-256")


def compile_spec(npu: str):  # type: ignore[no-untyped-def]
    if npu not in NPUS:
        raise ExportError(f"unknown NPU '{npu}'; choose one of: {', '.join(NPUS)}")
    try:
        import ethosu.vela  # type: ignore[import-not-found]  # noqa: F401
    except ImportError as error:
        raise ExportError(
            "--npu needs Arm's Vela compiler: pip install ethos-u-vela==5.1.0"
        ) from error
    from executorch.backends.arm.ethosu import EthosUCompileSpec

    return EthosUCompileSpec(target=npu)


def quantizer(spec):  # type: ignore[no-untyped-def]
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )

    ethos_quantizer = EthosUQuantizer(spec)
    ethos_quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    return ethos_quantizer


def delegate_to_npu(quantized: GraphModule, example_inputs: Inputs, spec) -> EdgeProgramManager:  # type: ignore[no-untyped-def]
    """Export and hand every supported partition to the NPU."""
    from executorch.backends.arm.ethosu import EthosUPartitioner

    try:
        # Vela prints a performance report per partition: not for our user's terminal.
        with contextlib.redirect_stdout(io.StringIO()):
            return to_edge_transform_and_lower(
                torch.export.export(quantized, example_inputs),
                partitioner=[EthosUPartitioner(spec)],
                compile_config=EdgeCompileConfig(_check_ir_validity=False),
            )
    except Exception as error:
        lines = str(error).strip().splitlines()
        raise ExportError(f"Ethos-U lowering failed: {lines[0] if lines else error}") from error


def delegate_stats(program: ExportedProgram) -> dict[str, OperatorStats]:
    """One entry per partition the NPU runs, with the MACs of its operators."""
    stats = {}
    for node in program.graph_module.graph.nodes:
        if node.op != "get_attr" or not str(node.target).startswith("lowered_module"):
            continue
        lowered = getattr(program.graph_module, node.target)
        graph = lowered.original_module.graph_module
        calls = [n for n in graph.graph.nodes if n.op == "call_function"]
        stats[f"{ETHOS_U} partition {node.target}"] = OperatorStats(
            calls=1, macs=sum(node_macs(n) for n in calls), runs_on=ETHOS_U, nodes=[node.name]
        )
    return stats
