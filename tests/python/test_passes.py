# SPDX-License-Identifier: Apache-2.0
"""et-export's own graph passes change the work, never an output bit."""

import copy

import pytest
import torch
from conftest import CONV, DEPTHWISE, lowered_by_upstream
from et_zephyr import pipeline
from et_zephyr.frontend.targets import resolve_target
from torch import nn


class SingleChannelFrontEnd(nn.Module):
    """A KWS-like front end: a convolution of a one-channel input, then a depthwise one."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 16, (5, 3), stride=2, padding=(2, 1))
        self.depthwise = nn.Conv2d(16, 16, 3, padding=1, groups=16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.depthwise(torch.relu(self.conv(x)))


def _lowered(target: str) -> tuple[torch.export.ExportedProgram, list[tuple[torch.Tensor]]]:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    samples = [(torch.randn(1, 1, 20, 8, generator=generator),) for _ in range(8)]
    return lowered_by_upstream(SingleChannelFrontEnd(), samples[0], samples, target)


def _calls(program: torch.export.ExportedProgram) -> list[object]:
    return [node.target for node in program.graph.nodes if node.op == "call_function"]


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4", "cortex-m3"])
def test_single_channel_depthwise_becomes_a_bit_exact_convolution(target: str) -> None:
    upstream, samples = _lowered(target)
    assert _calls(upstream).count(DEPTHWISE) == 2

    rewritten = copy.deepcopy(upstream)
    assert pipeline.convolve_single_channel_inputs(rewritten, resolve_target(target)) == 1

    assert _calls(rewritten).count(DEPTHWISE) == 1
    assert _calls(rewritten).count(CONV) == 1
    conv = next(node for node in rewritten.graph.nodes if node.target == CONV)
    weight = rewritten.state_dict[rewritten.graph_signature.inputs_to_parameters[conv.args[1].name]]
    assert tuple(weight.shape) == (16, 5, 3, 1)  # OHWI, packed once at export
    expected = pipeline.run_on_host(upstream, samples, resolve_target(target))
    actual = pipeline.run_on_host(rewritten, samples, resolve_target(target))
    for before, after in zip(expected, actual, strict=True):
        assert torch.equal(before[0], after[0])


def test_each_export_preserves_the_same_operators(monkeypatch) -> None:
    """ExecuTorch's to_edge appends to the preserve list it is given: every export must
    hand it the same operators, not one that doubled with each export before it."""
    seen = []
    real_to_edge = pipeline.to_edge

    def recording_to_edge(program, compile_config):
        seen.append(len(compile_config.preserve_ops))
        return real_to_edge(program, compile_config=compile_config)

    monkeypatch.setattr(pipeline, "to_edge", recording_to_edge)
    model = nn.Sequential(nn.Linear(4, 4)).eval()
    example = (torch.randn(1, 4),)
    for _ in range(3):
        pipeline.to_edge_dialect(torch.export.export(model, example).module(), example)
    assert seen == [len(pipeline._PRESERVED_OPS)] * 3
