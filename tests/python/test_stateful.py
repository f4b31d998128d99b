# SPDX-License-Identifier: Apache-2.0
"""et-export --stateful: a recurrent model fed a stream a hop at a time, each whole LSTM
and GRU layer's state carried from one run to the next.

The carried states are the whole LSTM and GRU layers' and causal 1-D convolutions' past
frames. The kernels' arithmetic from a carried state is CMSIS-NN's own (test_reference_cmsis_nn
test_lstm[carried_state]); here: the host reference of a sequence fed in hops is the
whole sequence's, the exported program's stream (as the firmware runs it, from the
serialized program) is the test vectors', the state matters, the firmware build's
configuration carries the states, and what cannot be carried is a clear error."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO
from et_zephyr import api, pipeline
from et_zephyr.api import ExportOptions, export
from et_zephyr.artifacts import write_outputs
from et_zephyr.errors import ExportError
from et_zephyr.frontend.loading import ModelBundle
from et_zephyr.passes.causal_pads import CAUSAL_PAD
from et_zephyr.passes.recurrent_layers import WHOLE_GRU
from et_zephyr.reference import gru, lstm
from et_zephyr.reference.emulate import run_pte
from torch import nn


def _models(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / f"tests/models/{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


recurrent = _models("recurrent")
breadth = _models("breadth")

GENERATOR = REPO / "zephyr/cmake/et_zephyr_gen.py"


def _lstm_operands(features: int, hidden: int) -> tuple:
    torch.manual_seed(3)
    params = lstm.parameters(
        torch.randn(4 * hidden, features) * 0.5,
        torch.randn(4 * hidden, hidden) * 0.5,
        torch.randn(4 * hidden),
        0.05,
        -3,
        1 / 128,
        5,
        lstm.cell_scale_power(2.0),
    )
    return (*_kernel_operands(params, 5), params.cell_scale_power)


def _gru_operands(features: int, hidden: int) -> tuple:
    torch.manual_seed(3)
    params = gru.parameters(
        torch.randn(3 * hidden, features) * 0.5,
        torch.randn(3 * hidden, hidden) * 0.5,
        torch.randn(3 * hidden),
        torch.randn(3 * hidden),
        0.05,
        -3,
        1 / 128,
        5,
    )
    return _kernel_operands(params, 5)


def _kernel_operands(params: lstm.LstmParameters | gru.GruParameters, zero_point: int) -> tuple:
    """A layer's parameters as its kernel's arguments take them, then the output's zero
    point (reference/own_ops.py)."""
    return (
        params.input_weights,
        params.hidden_weights,
        params.input_biases,
        params.hidden_biases,
        params.gate_scales.flatten().tolist(),
        params.state_scales.tolist(),
        zero_point,
    )


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("hop", [1, 3, 7])
def test_a_sequence_fed_in_hops_is_the_whole_sequence(batch_first, hop) -> None:
    """Through the operators the program calls (their host references): each hop starts
    from the state the last one left in its state outputs."""
    batch, steps, features, hidden = 2, 21, 6, 9
    generator = torch.Generator().manual_seed(hop)
    shape = (batch, steps, features) if batch_first else (steps, batch, features)
    x = torch.randint(-128, 128, shape, dtype=torch.int8, generator=generator)
    time = 1 if batch_first else 0
    layers = {
        "lstm": (torch.ops.et_zephyr.quantized_lstm, _lstm_operands(features, hidden), 2),
        "gru": (torch.ops.et_zephyr.quantized_gru, _gru_operands(features, hidden), 1),
    }
    for name, (operator, operands, count) in layers.items():
        scratch = torch.empty(4 * batch * hidden * 2, dtype=torch.uint8)
        whole = operator(x, *operands, batch_first, False, *[None] * 2 * count, scratch)
        dtypes = (torch.int8, torch.int16)[:count]
        zero_point = operands[6]
        state = [torch.full((batch, hidden), zero_point, dtype=torch.int8)]
        state += [torch.zeros(batch, hidden, dtype=torch.int16)][: count - 1]
        pieces = []
        for start in range(0, steps, hop):
            chunk = x.narrow(time, start, min(hop, steps - start))
            written = [torch.empty(batch, hidden, dtype=t) for t in dtypes]
            pieces.append(operator(chunk, *operands, batch_first, False, *state, *written, scratch))
            state = written
        assert torch.equal(torch.cat(pieces, time), whole), name
        last = whole[:, -1] if batch_first else whole[-1]
        assert torch.equal(state[0], last), name
        assert len(torch.unique(whole)) > 4, name  # the outputs move


def _factory(name: str):
    return getattr(breadth if name == "sensor_stream" else recurrent, name)


def _stateful_export(factory: str, target: str, tmp_path: Path, **options) -> tuple[dict, Path]:
    bundle = ModelBundle(*_factory(factory)())
    artifacts = export(
        bundle,
        ExportOptions(target=target, name=factory, stateful=True, generated_vectors=8, **options),
    )
    write_outputs(artifacts, tmp_path)
    return artifacts.manifest, tmp_path


@pytest.mark.parametrize(
    ("factory", "target"),
    [
        ("lstm_kws_stream", "cortex-m4"),
        ("gru2_stream", "cortex-m55"),
        ("lstm_tagger_stream", "cortex-m3"),
        ("sensor_stream", "cortex-m4"),
    ],
)
def test_the_program_runs_its_vectors_as_one_stream(factory, target, tmp_path) -> None:
    manifest, out = _stateful_export(factory, target, tmp_path, vectors=12)
    states = manifest["states"]
    kinds = {
        "lstm_kws_stream": ["hidden", "cell"],
        "gru2_stream": ["hidden"] * 2,
        "lstm_tagger_stream": ["hidden", "cell"] * 2,
        "sensor_stream": ["frames", "frames", "hidden"],  # two causal paddings, a GRU
    }[factory]
    assert [s["name"].rsplit("_", 1)[1] for s in states] == kinds
    for state in states:
        assert state["dtype"] == ("int16" if state["name"].endswith("cell") else "int8")
        assert state["reset_value"] == 0 or state["dtype"] == "int8"
    if factory == "sensor_stream":  # each padding's past frames: [N, C, dilation * 2]
        assert [s["shape"] for s in states[:2]] == [[1, 6, 2], [1, 12, 4]]
    # The application sees the hop in and the model's output out, nothing of the states.
    bundle = _factory(factory)()
    assert [i["shape"] for i in manifest["inputs"]] == [list(bundle[1][0].shape)]
    assert len(manifest["outputs"]) == 1

    pte = (out / f"{factory}.pte").read_bytes()
    vectors = np.load(out / f"{factory}.vectors.npz")
    count = vectors["input_0"].shape[0]
    assert count == 12 + 8

    def reset() -> list[torch.Tensor]:
        return [
            torch.full(s["shape"], s["reset_value"], dtype=getattr(torch, s["dtype"]))
            for s in states
        ]

    carried, fresh_differs = reset(), 0
    isa = manifest["target"]["isa"]
    for k in range(count):
        x = torch.from_numpy(vectors["input_0"][k])
        output, *carried = run_pte(pte, (x, *carried), isa)
        np.testing.assert_array_equal(output.numpy(), vectors["output_0"][k])
        (from_nothing, *_) = run_pte(pte, (x, *reset()), isa)
        fresh_differs += not torch.equal(from_nothing, output)
    assert fresh_differs >= count // 2  # the carried state matters


def test_the_firmware_configuration_carries_the_states(tmp_path) -> None:
    manifest, out = _stateful_export("lstm_kws_stream", "cortex-m4", tmp_path / "export")
    hidden, cell = manifest["states"]
    import executorch

    command = [
        sys.executable, str(GENERATOR), "--pte", str(out / "lstm_kws_stream.pte"),
        "--name", "kws", "--manifest", str(out / "lstm_kws_stream.json"),
        "--conf", str(out / "lstm_kws_stream.conf"),
        "--schemas", str(out / "lstm_kws_stream.schemas.yaml"),
        "--executorch-dir", str(Path(executorch.__path__[0])), "--isa", "dsp",
        "--cpu", "cortex-m4", "--no-kernel-sources", "--out-dir", str(tmp_path / "gen"),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "2 carried state(s) 96 B" in run.stdout  # 32 B of h, 64 B of c, 16-aligned
    source = (tmp_path / "gen" / "kws_model.c").read_text()
    assert "static uint8_t kws_state_arena[96]" in source
    assert (
        "static const struct et_zephyr_state kws_states[] = "
        f"{{{{kws_state_arena + 0, 32, {hidden['reset_value']}}}, "
        "{kws_state_arena + 32, 64, 0}};"
    ) in source
    assert ".states = kws_states," in source and ".num_states = 2," in source
    # It compiles against the C API.
    compiled = subprocess.run(
        ["cc", "-c", "-Wall", "-Werror", f"-I{REPO / 'lib/include'}", f"-I{tmp_path / 'gen'}",
         str(tmp_path / "gen" / "kws_model.c"), "-o", str(tmp_path / "kws_model.o")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    assert cell["nbytes"] == 64 and hidden["nbytes"] == 32


def test_a_causal_model_fed_in_hops_computes_what_it_does_on_the_whole_sequence() -> None:
    """The float graph et-export calibrates and verifies with: its causal paddings carry
    their frames, so each hop's output is the model's on the sequence up to that hop."""
    model, hop, samples = breadth.sensor_stream()
    graph = pipeline.capture_graph(model, hop)
    api._rewrite_for_the_quantizer(graph, whole_layers=True, stateful=True)
    targets = [node.target for node in graph.graph.nodes]
    assert targets.count(CAUSAL_PAD) == 2 and WHOLE_GRU in targets
    (sequence,) = samples[0]
    hops = [(sequence[:, :, k : k + 4],) for k in range(0, 32, 4)]
    with torch.no_grad():
        streamed = pipeline.run_stream(graph, hops)
        for k, output in enumerate(streamed):
            whole = model(sequence[:, :, : 4 * (k + 1)])
            torch.testing.assert_close(output, whole, rtol=1e-5, atol=1e-5)
        # From nothing, every hop alone: the padding's zeros, another output.
        alone = graph(*hops[-1])
    assert not torch.allclose(alone, streamed[-1], atol=1e-3)


class _Convolutional(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * 2.0)


def _refusal(model: nn.Module, example: torch.Tensor, samples: list, **options) -> str:
    bundle = ModelBundle(model.eval(), (example,), [(s,) for s in samples])
    with pytest.raises(ExportError) as error:
        export(bundle, ExportOptions(target="cortex-m4", stateful=True, **options))
    return str(error.value)


def test_what_cannot_carry_a_state_is_refused_with_the_reason() -> None:
    hop, sequence = torch.randn(1, 2, 10), [torch.randn(1, 8, 10) for _ in range(8)]
    message = _refusal(_Convolutional(), hop, sequence)
    assert message.startswith("--stateful: the model has no whole LSTM or GRU layer")
    both_ways = recurrent.RecurrentKws(nn.GRU, 8, 1, bidirectional=True)
    message = _refusal(both_ways, hop, sequence)
    assert "--stateful: the recurrent layer 'gru'" in message and "both directions" in message
    assert "recurrent.py" in message  # the model's source line
    rnn = recurrent.RecurrentKws(nn.RNN, 8, 1)
    assert "nn.RNN layers run unrolled" in _refusal(rnn, hop, sequence)
    lstm_model = recurrent.RecurrentKws(nn.LSTM, 8, 1)
    message = _refusal(lstm_model, hop, sequence, unroll_recurrent=True)
    assert (
        message
        == "--stateful carries whole layers' state: it does not work with --unroll-recurrent"
    )
    odd = [torch.randn(1, 7, 10) for _ in range(8)]
    message = _refusal(lstm_model, hop, odd)
    assert "a sample has shapes [(1, 7, 10)]: with --stateful, expected [(1, 2, 10)]" in message


def test_the_manifest_of_a_program_without_states_lists_none(tmp_path) -> None:
    bundle = ModelBundle(*recurrent.gru())
    manifest = export(bundle, ExportOptions(target="cortex-m4")).manifest
    assert manifest["states"] == []
    assert json.dumps(manifest)  # serializable as written


def test_precision_auto_judges_a_stream_by_its_program() -> None:
    """lstm_kws_stream over its held-out streams' hops: INT8's trial (float states carried)
    is within 1.5 %, its program (INT8 and INT16 states) is not, so the head goes 16x8 and
    that program is within; the states are still carried."""
    artifacts = export(
        f"{REPO}/tests/models/recurrent.py:lstm_kws_stream",
        ExportOptions(
            target="cortex-m4",
            stateful=True,
            precision="auto",
            max_drop=0.015,
            drop_measure="error",
        ),
    )
    precision = artifacts.manifest["precision"]
    assert precision["int8_drop"] <= 0.015  # the trial alone would have kept INT8
    assert precision["int16_layers"] == ["linear"]
    assert precision["program_drop"] <= 0.015
    assert precision["program_drop"] == artifacts.manifest["agreement"]["relative_error_vs_float"]
    assert [s["name"].rsplit("_", 1)[1] for s in artifacts.manifest["states"]] == ["hidden", "cell"]
