# SPDX-License-Identifier: Apache-2.0
"""et-export's own graph passes change the work, never an output bit."""

import copy

import pytest
import torch
from et_zephyr import pipeline
from et_zephyr.targets import resolve_target
from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
from executorch.exir.dialects._ops import ops as exir_ops
from torch import nn

_CONV = exir_ops.edge.cortex_m.quantized_conv2d.default
_DEPTHWISE = exir_ops.edge.cortex_m.quantized_depthwise_conv2d.default


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
    prepared = pipeline.prepare_model(SingleChannelFrontEnd(), samples[0], samples)
    graph = pipeline.capture_graph(prepared.model, prepared.example_inputs)
    fake_quant = pipeline.quantize(graph, CortexMQuantizer(), prepared.calibration, lambda s: s)
    edge = pipeline.to_edge_dialect(fake_quant, prepared.example_inputs)
    return pipeline.lower_to_cortex_m(edge, resolve_target(target)), prepared.calibration


def _calls(program: torch.export.ExportedProgram) -> list[object]:
    return [node.target for node in program.graph.nodes if node.op == "call_function"]


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4", "cortex-m3"])
def test_single_channel_depthwise_becomes_a_bit_exact_convolution(target: str) -> None:
    upstream, samples = _lowered(target)
    assert _calls(upstream).count(_DEPTHWISE) == 2

    rewritten = copy.deepcopy(upstream)
    assert pipeline.convolve_single_channel_inputs(rewritten, resolve_target(target)) == 1

    assert _calls(rewritten).count(_DEPTHWISE) == 1
    assert _calls(rewritten).count(_CONV) == 1
    conv = next(node for node in rewritten.graph.nodes if node.target == _CONV)
    weight = rewritten.state_dict[rewritten.graph_signature.inputs_to_parameters[conv.args[1].name]]
    assert tuple(weight.shape) == (16, 5, 3, 1)  # OHWI, packed once at export
    expected = pipeline.run_on_host(upstream, samples)
    actual = pipeline.run_on_host(rewritten, samples)
    for before, after in zip(expected, actual, strict=True):
        assert torch.equal(before[0], after[0])
