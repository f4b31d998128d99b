# SPDX-License-Identifier: Apache-2.0
"""The five-step flow ExecuTorch's Cortex-M documentation has a user write by hand:
torch.export -> prepare_pt2e with CortexMQuantizer -> calibrate -> convert_pt2e ->
to_edge -> CortexMPassManager -> to_executorch. The benchmarks set et-export beside it."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from et_zephyr.common.runtime_quiet import quiet_imports
from et_zephyr.common.timing import StepTimes

with quiet_imports():
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig
    from executorch.exir import (
        EdgeCompileConfig,
        EdgeProgramManager,
        ExecutorchProgramManager,
        to_edge,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e


def five_step(
    model: torch.nn.Module,
    example: tuple[torch.Tensor, ...],
    calibration: Sequence[tuple[torch.Tensor, ...]],
    target: str,
    times: StepTimes | None = None,
    channels_last: bool = False,
) -> ExecutorchProgramManager:
    """The model as the user wrote it (no rewrites), through upstream's steps for the
    target (`cortex-m55`, ...); with `channels_last` the model and its 4-D inputs in
    that memory format first, as upstream's own tests give them (its quantizer matches
    convolutions on channels-last tensors only)."""
    times = times or StepTimes()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        example, *calibration = (
            tuple(t.to(memory_format=torch.channels_last) if t.dim() == 4 else t for t in sample)
            for sample in (example, *calibration)
        )
    with quiet_imports():
        with times.step("capture"):
            model.eval()
            graph = torch.export.export(model, example).module(check_guards=False)
        with times.step("quantize"):
            prepared = prepare_pt2e(graph, CortexMQuantizer())
            for sample in calibration:
                prepared(*sample)
            quantized = convert_pt2e(prepared)
        with times.step("to_edge"):
            edge = to_edge(
                torch.export.export(quantized, example),
                compile_config=EdgeCompileConfig(
                    preserve_ops=[torch.ops.aten.linear.default], _check_ir_validity=False
                ),
            )
        with times.step("lowering"):
            config = CortexMTargetConfig.from_target_string(target)
            lowered = CortexMPassManager(edge.exported_program(), target_config=config).transform()
        with times.step("memory planning and serialization"):
            return EdgeProgramManager(
                {"forward": lowered}, compile_config=EdgeCompileConfig(_check_ir_validity=False)
            ).to_executorch()
