# SPDX-License-Identifier: Apache-2.0
"""`et-export --io`: programs that take and give the INT8 tensors themselves.

The quantize at each input and the dequantize at each output leave the program; the
manifest says each edge's scale and zero point; the test vectors hold the INT8 inputs
(quantized as the C API's et_zephyr_quantize_int8() does) and the INT8 outputs, and the
serialized program reproduces them bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import KWS_MODEL, MODELS, REPO
from et_zephyr.api import ExportOptions, export
from et_zephyr.artifacts import Artifacts, write_outputs
from et_zephyr.cli import main
from et_zephyr.errors import ExportError
from et_zephyr.frontend.io_mode import IOMode, parse_io
from et_zephyr.reference import edges
from et_zephyr.reference.emulate import run_pte
from executorch.exir._serialize._program import deserialize_pte_binary

EDGE_OPERATORS = ("cortex_m::quantize_per_tensor.out", "cortex_m::dequantize_per_tensor.out")


def _replayed(artifacts: Artifacts, tmp_path) -> tuple[np.lib.npyio.NpzFile, list]:
    """The vectors, and the serialized program's outputs for each vector's inputs."""
    write_outputs(artifacts, tmp_path)
    name = artifacts.name
    vectors = np.load(tmp_path / f"{name}.vectors.npz")
    pte = (tmp_path / f"{name}.pte").read_bytes()
    count = len(artifacts.manifest["inputs"])
    isa = artifacts.manifest["target"]["isa"]
    results = []
    for v in range(len(vectors["input_0"])):
        inputs = tuple(torch.from_numpy(vectors[f"input_{i}"][v]) for i in range(count))
        results.append(run_pte(pte, inputs, isa))
    return vectors, results


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4", "cortex-m3"])
def test_int8_edges_leave_the_program_and_the_vectors_replay(tmp_path, target: str) -> None:
    options = ExportOptions(
        target=target, name="kws", io=IOMode("int8", "int8"), generated_vectors=6
    )
    artifacts = export(KWS_MODEL, options)
    manifest = artifacts.manifest
    assert manifest["io"] == {"inputs": "int8", "outputs": "int8"}
    assert not set(EDGE_OPERATORS) & set(manifest["operators"])
    ((spec_in,), (spec_out,)) = manifest["inputs"], manifest["outputs"]
    assert spec_in["dtype"] == spec_out["dtype"] == "int8"
    assert spec_in["scale"] > 0 and -128 <= spec_in["zero_point"] <= 127
    assert spec_out["scale"] > 0 and -128 <= spec_out["zero_point"] <= 127
    assert manifest["agreement"]["top1_vs_fake_quant"] == 1.0

    vectors, results = _replayed(artifacts, tmp_path / target)
    assert vectors["input_0"].dtype == np.int8 and len(vectors["input_0"]) == 10
    for v, (output,) in enumerate(results):
        assert output.dtype == torch.int8
        assert output.numpy().tobytes() == vectors["output_0"][v].tobytes()
    # Generated vectors: the firmware makes the floats from the recipe and quantizes them
    # with et_zephyr_quantize_int8(); the stored INT8 inputs are exactly that.
    float_export = export(KWS_MODEL, ExportOptions(target=target, generated_vectors=6))
    float_vectors = np.load(_written(float_export, tmp_path / f"{target}-float"))
    np.testing.assert_array_equal(vectors["input_0_recipe"], float_vectors["input_0_recipe"])
    for v in range(len(vectors["input_0"])):
        floats = torch.from_numpy(float_vectors["input_0"][v])
        quantized = edges.quantize_int8(floats, spec_in["scale"], spec_in["zero_point"])
        assert quantized.numpy().tobytes() == vectors["input_0"][v].tobytes()


def _written(artifacts: Artifacts, out_dir) -> str:
    write_outputs(artifacts, out_dir)
    return str(out_dir / f"{artifacts.name}.vectors.npz")


def test_one_side_int8(tmp_path) -> None:
    """INT8 in, float logits out: only the input's quantize goes."""
    options = ExportOptions(target="cortex-m33", name="kws", io=parse_io("input=int8"))
    artifacts = export(KWS_MODEL, options)
    operators = artifacts.manifest["operators"]
    assert "cortex_m::quantize_per_tensor.out" not in operators
    assert "cortex_m::dequantize_per_tensor.out" in operators
    assert [o["dtype"] for o in artifacts.manifest["outputs"]] == ["float32"]
    vectors, results = _replayed(artifacts, tmp_path)
    for v, (output,) in enumerate(results):
        assert output.dtype == torch.float32
        assert output.numpy().tobytes() == vectors["output_0"][v].tobytes()


def test_int8_edges_with_two_inputs_and_exposed_activations(tmp_path) -> None:
    options = ExportOptions(
        target="cortex-m55", io=IOMode("int8", "int8"), expose_activations="all"
    )
    artifacts = export(f"{MODELS}:two_inputs", options)
    inputs = artifacts.manifest["inputs"]
    assert [i["dtype"] for i in inputs] == ["int8", "int8"]
    # Each input keeps its own quantization: the context is three times wider.
    assert inputs[1]["scale"] > 2 * inputs[0]["scale"]
    vectors, results = _replayed(artifacts, tmp_path)
    for v, outputs in enumerate(results):
        assert len(outputs) == 3
        for o, output in enumerate(outputs):
            assert output.numpy().tobytes() == vectors[f"output_{o}"][v].tobytes()


def test_int8_inputs_save_the_float_input_in_the_planned_arena() -> None:
    """With float edges the 12 KiB float input and its INT8 copy are live together; with
    INT8 edges the whole plan is smaller than the float input alone."""
    float_input, int8_input = 3 * 32 * 32 * 4, 3 * 32 * 32

    def planned(io: IOMode) -> int:
        memory = export(f"{MODELS}:strided_stem", ExportOptions(io=io)).manifest["memory"]
        total = sum(buffer["bytes"] for buffer in memory["planned"])
        assert total == memory["planned_lower_bound"]
        return total

    assert planned(IOMode()) >= float_input + int8_input
    assert planned(IOMode("int8", "int8")) < float_input


def test_program_inputs_are_int8_in_the_serialized_program() -> None:
    artifacts = export(KWS_MODEL, ExportOptions(io=IOMode("int8", "float"), name="kws"))
    plan = deserialize_pte_binary(artifacts.files["kws.pte"]).program.execution_plan[0]
    (index,) = plan.inputs
    assert plan.values[index].val.scalar_type == 1  # ScalarType.CHAR: int8


def test_an_output_that_is_not_dequantized_is_refused() -> None:
    with pytest.raises(ExportError, match=r"output 0 .* is not a dequantized INT8 tensor"):
        export(f"{MODELS}:argmax_head", ExportOptions(io=IOMode("float", "int8")))


@pytest.mark.parametrize("text", ["int4", "input=int8,input=float", "inputs=int8", ""])
def test_bad_io_text_is_one_line(capsys, text: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([f"{MODELS}:tiny", "--io", text])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--io" in error and "input=float|int8|int16,output=float|int8|int16" in error


def test_int16_edges_of_an_int8_program_are_one_clear_error() -> None:
    with pytest.raises(ExportError, match=r"input 0 is INT8 in the program, not INT16"):
        export(f"{MODELS}:tiny", ExportOptions(io=IOMode("int16", "float")))


def test_io_text() -> None:
    assert parse_io("int8") == IOMode("int8", "int8")
    assert parse_io("output=int8") == IOMode("float", "int8")
    assert str(parse_io("input=int8,output=float")) == "input=int8,output=float"
    assert str(IOMode("int8", "int8")) == "int8"


def test_cli_reports_the_int8_edges(tmp_path, capsys) -> None:
    out_dir = tmp_path / "out"
    assert main([f"{MODELS}:small_cnn", "--io", "int8", "-o", str(out_dir), "--name", "m"]) == 0
    report = capsys.readouterr().out
    assert "integer edges      input 0 int8 (scale " in report
    assert "; output 0 int8 (scale " in report


def test_a_view_that_becomes_an_output_gets_default_order_bytes(tmp_path) -> None:
    """operators.py's flattened average pool is an output: with INT8 outputs its view_copy
    stays a portable kernel call (not a view of the pool's memory), which takes only the
    default dim order; the emulator, which checks that as the device does, replays it."""
    model = f"{REPO / 'tests/models/operators.py'}:ops"
    artifacts = export(model, ExportOptions(name="ops", io=IOMode("int8", "int8")))
    operators = artifacts.manifest["operators"]
    assert "aten::view_copy.out" in operators
    assert "dim_order_ops::_to_dim_order_copy.out" in operators
    vectors, results = _replayed(artifacts, tmp_path)
    for v, outputs in enumerate(results):
        for o, output in enumerate(outputs):
            assert output.numpy().tobytes() == vectors[f"output_{o}"][v].tobytes()
