# SPDX-License-Identifier: Apache-2.0
"""Preserved operators that no Cortex-M pass lowered become portable operators."""

from __future__ import annotations

import torch
from et_zephyr import pipeline
from et_zephyr.firmware.kernels import check_kernels
from et_zephyr.passes.float_fallback import decompose_float_preserved_ops
from executorch.exir import EdgeCompileConfig, to_edge
from torch import nn


class FloatTail(nn.Module):
    """Every operator et-export preserves through to_edge, on rank-2 and rank-3 inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(6, 5)
        self.second = nn.Linear(5, 4, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.silu(self.first(x))
        y = nn.functional.hardswish(y) + nn.functional.hardsigmoid(y)
        return self.second(y)


def test_float_linear_and_activations_become_portable_operators() -> None:
    model = FloatTail().eval()
    for shape in ((3, 6), (2, 3, 6)):
        x = torch.randn(*shape)
        exported = torch.export.export(model, (x,))
        edge = to_edge(
            exported,
            compile_config=EdgeCompileConfig(
                preserve_ops=list(pipeline._PRESERVED_OPS), _check_ir_validity=False
            ),
        )
        program = edge.exported_program()
        names = {str(n.target) for n in program.graph_module.graph.nodes}
        assert any("linear" in name for name in names) and any("silu" in name for name in names)
        decomposed = decompose_float_preserved_ops(program)
        check_kernels(decomposed)  # every operator now has a portable kernel
        names = {str(n.target) for n in decomposed.graph_module.graph.nodes}
        for preserved in ("linear", "silu", "hardswish", "hardsigmoid"):
            assert not any(preserved in name for name in names), preserved
        with torch.no_grad():
            expected = model(x)
            got = decomposed.module()(x)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_a_program_without_leftovers_is_returned_as_it_is() -> None:
    model = nn.Sequential(nn.ReLU()).eval()
    edge = to_edge(torch.export.export(model, (torch.randn(2, 3),)))
    program = edge.exported_program()
    assert decompose_float_preserved_ops(program) is program
