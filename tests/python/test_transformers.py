# SPDX-License-Identifier: Apache-2.0
"""Transformers lower onto CMSIS-NN and et-zephyr's kernels, every operator in integers.

The encoders of tests/models/transformers.py (the firmware tests run the same ones)
and the passes that get them there, each on its own: attention written out, means as
matmuls, constant scales and requantize chains folded, elementwise functions as lookup
tables, LayerNorm on the integer kernel.
"""

from __future__ import annotations

import copy
import importlib.util
import math

import pytest
import torch
from conftest import REPO
from et_zephyr import api, pipeline
from et_zephyr.firmware.analysis import BYTE_COPIES
from et_zephyr.frontend.loading import ModelBundle
from et_zephyr.frontend.targets import resolve_target
from et_zephyr.passes.attention import decompose_attention
from et_zephyr.passes.cortex_m_passes import ScalarArgsToTensorsInPlace
from et_zephyr.passes.mean_as_matmul import means_to_matmuls
from et_zephyr.passes.requantization import fold_constant_scales, fold_requantize_chains
from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
from executorch.exir import to_edge
from executorch.exir.dialects._ops import ops as exir_ops
from torch import nn

_spec = importlib.util.spec_from_file_location(
    "transformers_models", REPO / "tests/models/transformers.py"
)
assert _spec is not None and _spec.loader is not None
transformers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(transformers)


def _export(factory, target: str = "cortex-m55") -> object:
    model, example, samples = factory()
    bundle = ModelBundle(model, example, samples)
    return api.export(bundle, api.ExportOptions(target=target, name="model"))


@pytest.mark.parametrize(
    ("factory", "layer_norms", "softmaxes", "permutes"),
    # nn.MultiheadAttention's q/k/v unflatten is a 5-D permute: beyond arm_transpose_s8.
    [("transformer", 2, 1, 0), ("transformer_sdpa", 4, 2, 0), ("transformer_mha", 4, 2, 2)],
)
def test_every_operator_of_an_encoder_is_integer(factory, layer_norms, softmaxes, permutes) -> None:
    artifacts = _export(getattr(transformers, factory))
    operators = artifacts.manifest["operators"]
    float_operators = {
        op for op, s in operators.items() if s["runs_on"] == "portable"
    } - BYTE_COPIES
    assert not float_operators
    # The heads' splits and merges on CMSIS-NN's transpose, not the portable permute.
    assert operators.get("aten::permute_copy.out", {"calls": 0})["calls"] == permutes
    assert operators["et_zephyr::quantized_layer_norm.out"]["calls"] == layer_norms
    assert operators["cortex_m::softmax.out"]["calls"] == softmaxes
    # The GELUs, one a block, as lookup tables.
    assert operators["cortex_m::quantized_activation.out"]["calls"] == layer_norms // 2
    # Two attention matmuls a block and the mean over the tokens.
    assert operators["cortex_m::quantized_batch_matmul.out"]["calls"] == 2 * softmaxes + 1
    macs = artifacts.manifest["macs"]
    assert macs["cmsis_nn"] == macs["total"] > 0
    agreement = artifacts.manifest["agreement"]
    assert agreement["top1_vs_fake_quant"] == 1.0
    assert agreement["max_steps_vs_fake_quant"] <= 2


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m4", "cortex-m33"])
def test_the_encoder_is_integer_on_every_tier(target: str) -> None:
    artifacts = _export(transformers.transformer, target)
    operators = artifacts.manifest["operators"]
    assert {op for op, s in operators.items() if s["runs_on"] == "portable"} <= BYTE_COPIES
    assert artifacts.manifest["agreement"]["top1_vs_fake_quant"] == 1.0
    assert artifacts.manifest["agreement"]["max_steps_vs_fake_quant"] <= 2


def test_the_temp_arena_holds_the_softmax_table() -> None:
    """et-zephyr's softmax kernel borrows 256 int32 exponentials from the temp arena
    (lib/src/kernels/softmax_table.cpp): a program with a softmax gets them, one
    without keeps what loading needs."""
    with_softmax = _export(transformers.transformer).manifest["memory"]["temp_allocator"]
    torch.manual_seed(0)
    linear = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    samples = [(torch.randn(1, 16),) for _ in range(8)]
    bundle = ModelBundle(linear, samples[0], samples)
    without = api.export(bundle, api.ExportOptions(name="model")).manifest["memory"]
    assert without["temp_allocator"] < 1024 <= with_softmax


def test_float_ops_keep_the_named_operators_in_float() -> None:
    model, example, samples = transformers.transformer()
    options = api.ExportOptions(name="model", float_ops=frozenset({"layer_norm", "gelu"}))
    warnings: list[str] = []
    options.warn = warnings.append
    operators = api.export(ModelBundle(model, example, samples), options).manifest["operators"]
    portable = {op: s["calls"] for op, s in operators.items() if s["runs_on"] == "portable"}
    assert portable.pop("aten::native_layer_norm.out") == 2
    assert portable.pop("aten::gelu.out") == 1
    assert set(portable) <= BYTE_COPIES
    assert "et_zephyr::quantized_layer_norm.out" not in operators
    assert "cortex_m::quantized_activation.out" not in operators
    assert any("aten::native_layer_norm.out, aten::gelu.out" in w for w in warnings)


def test_float_ops_keep_only_the_named_function() -> None:
    """exp stays float, the GELU is still a table."""
    model, example, samples = transformers.transformer()
    options = api.ExportOptions(name="model", float_ops=frozenset({"exp"}))
    operators = api.export(ModelBundle(model, example, samples), options).manifest["operators"]
    assert operators["cortex_m::quantized_activation.out"]["calls"] == 1
    assert operators["et_zephyr::quantized_layer_norm.out"]["calls"] == 2


class ProjectedScores(nn.Module):
    """An int8 linear's output into a matmul: the retrace in ExecuTorch v1.4.1's
    ReplaceScalarWithTensorArgPass typed it int32 and the matmul failed."""

    def __init__(self) -> None:
        super().__init__()
        self.query = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(self.query(x), x.transpose(1, 2))


def test_an_int8_linear_into_a_matmul_lowers() -> None:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(2)
    samples = [(torch.randn(1, 4, 8, generator=generator),) for _ in range(12)]
    artifacts = _export(lambda: (ProjectedScores().eval(), samples[0], samples))
    assert artifacts.manifest["operators"]["cortex_m::quantized_batch_matmul.out"]["calls"] == 1


@pytest.mark.parametrize("kwargs", [{}, {"scale": 0.3}], ids=["default scale", "explicit scale"])
def test_attention_written_out_computes_the_same(kwargs) -> None:
    class Attention(nn.Module):
        def forward(self, q, k, v):
            return nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)

    q, k, v = (torch.randn(1, 3, 7, 8) for _ in range(3))
    graph = pipeline.capture_graph(Attention(), (q, k, v))
    assert decompose_attention(graph) == 1
    targets = [n.target for n in graph.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.scaled_dot_product_attention.default not in targets
    expected = nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)
    torch.testing.assert_close(graph(q, k, v), expected)


def test_masked_and_causal_attention_stay_whole() -> None:
    class Causal(nn.Module):
        def forward(self, q, k, v):
            return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    q = torch.randn(1, 2, 5, 4)
    graph = pipeline.capture_graph(Causal(), (q, q, q))
    assert decompose_attention(graph) == 0


@pytest.mark.parametrize(
    ("shape", "dim", "keepdim"),
    [((1, 16, 32), 1, False), ((2, 5, 6), -1, True), ((3, 4), 0, False), ((9,), 0, False),
     ((2, 3, 5), 0, True)],
)  # fmt: skip
def test_a_mean_is_a_matmul_with_the_same_result(shape, dim, keepdim) -> None:
    class Mean(nn.Module):
        def forward(self, x):
            return x.mean(dim=dim, keepdim=keepdim)

    x = torch.randn(*shape)
    graph = pipeline.capture_graph(Mean(), (x,))
    assert means_to_matmuls(graph) == 1
    targets = {n.target for n in graph.graph.nodes if n.op == "call_function"}
    assert torch.ops.aten.bmm.default in targets and torch.ops.aten.mean.dim not in targets
    torch.testing.assert_close(graph(x), x.mean(dim=dim, keepdim=keepdim))


def test_image_means_are_left_to_pooling() -> None:
    class ImageMean(nn.Module):
        def forward(self, x):
            return x.mean(dim=(2, 3))

    graph = pipeline.capture_graph(ImageMean(), (torch.randn(1, 4, 5, 5),))
    assert means_to_matmuls(graph) == 0


class ScaledScores(nn.Module):
    """Attention's core, the scale a division: q @ kᵀ / √d, softmax, @ v."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        return scores.softmax(dim=-1) @ v


def _samples(count: int) -> list[tuple[torch.Tensor, ...]]:
    generator = torch.Generator().manual_seed(5)
    return [
        tuple(torch.randn(1, 6, 8, generator=generator) * 2 for _ in range(3)) for _ in range(count)
    ]


def _fake_quant(model: nn.Module, samples: list[tuple[torch.Tensor, ...]]):
    graph = pipeline.capture_graph(model, samples[0])
    streams = [[sample] for sample in samples]  # one hop each
    return pipeline.quantize(graph, CortexMQuantizer(), streams, lambda s: s)


_DIV = torch.ops.aten.div.Tensor
_DQ = torch.ops.quantized_decomposed.dequantize_per_tensor.default
_Q = torch.ops.quantized_decomposed.quantize_per_tensor.default


def test_a_constant_scale_folds_into_the_dequantize() -> None:
    samples = _samples(8)
    graph = _fake_quant(ScaledScores(), samples)
    before = copy.deepcopy(graph)
    divisions = [n for n in graph.graph.nodes if n.target == _DIV]
    assert len(divisions) == 1
    scale = float(divisions[0].args[0].args[1])
    assert fold_constant_scales(graph) == 1
    assert not [n for n in graph.graph.nodes if n.target == _DIV]
    scales = [float(n.args[1]) for n in graph.graph.nodes if n.target == _DQ]
    assert any(math.isclose(s, scale / math.sqrt(8), rel_tol=1e-6) for s in scales)
    for sample in samples:
        torch.testing.assert_close(graph(*sample), before(*sample))


def test_the_softmax_requantize_chain_goes_and_with_it_the_clamp() -> None:
    samples = _samples(8)
    graph = _fake_quant(ScaledScores(), samples)
    softmax_out = [
        n for n in graph.graph.nodes
        if n.target == _Q and any("softmax" in str(a.target) for a in n.all_input_nodes)
    ]  # fmt: skip
    assert len(softmax_out) == 1
    second_scale = next(iter(next(iter(softmax_out[0].users)).users)).args[1]
    # The matmul's own observer clips the attention weights above 255 * its scale.
    assert 255 * second_scale < 1.0
    assert fold_requantize_chains(graph) == 1
    # The matmul now reads the softmax's bytes with the softmax's own parameters.
    reader = next(iter(softmax_out[0].users))
    assert reader.target == _DQ and reader.args[1:] == softmax_out[0].args[1:]
    assert not [n for n in graph.graph.nodes if n.target == _Q and n.args[0].target == _DQ]


def test_scalar_arguments_become_tensors_in_place() -> None:
    class Shifted(nn.Module):
        def forward(self, x):
            return x + 1.5

    program = to_edge(torch.export.export(Shifted(), (torch.randn(2, 3),))).exported_program()
    add = next(n for n in program.graph.nodes if n.op == "call_function")
    add.target, add.args = exir_ops.edge.aten.add.Scalar, (add.args[0], 1.5)
    ScalarArgsToTensorsInPlace().call(program.graph_module)
    assert add.target == exir_ops.edge.aten.add.Tensor
    constant = add.args[1]
    assert constant.target == exir_ops.edge.aten.full.default and constant.args == ((1,), 1.5)
    x = torch.randn(2, 3)
    torch.testing.assert_close(program.module()(x), x + 1.5)


@pytest.mark.parametrize(
    "function",
    [nn.GELU(), nn.GELU(approximate="tanh"), nn.ELU(), nn.LeakyReLU(0.2), torch.exp,
     lambda x: x**2],
    ids=["gelu", "gelu-tanh", "elu", "leaky-relu", "exp", "square"],
)  # fmt: skip
def test_elementwise_functions_become_lookup_tables(function) -> None:
    class Mlp(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.second = nn.Linear(8, 16), nn.Linear(16, 4)

        def forward(self, x):
            return self.second(function(self.first(x)))

    torch.manual_seed(3)
    generator = torch.Generator().manual_seed(4)
    samples = [(torch.randn(1, 8, generator=generator),) for _ in range(16)]
    edge = pipeline.to_edge_dialect(_fake_quant(Mlp().eval(), samples), samples[0])
    lowered = pipeline.lower_to_cortex_m(edge, resolve_target("cortex-m55"))
    targets = [str(n.target) for n in lowered.graph.nodes if n.op == "call_function"]
    assert sum("quantized_activation" in t for t in targets) == 1
    assert not [t for t in targets if "aten" in t and "linear" not in t]
