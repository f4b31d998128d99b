# SPDX-License-Identifier: Apache-2.0
"""The built-in KWS DS-CNN through every target tier."""

import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from et_zephyr.frontend.targets import TARGETS
from et_zephyr.planning.memory import align
from et_zephyr.reference.emulate import run_pte
from executorch.exir._serialize._program import deserialize_pte_binary

KWS_MACS = 2_656_768
TIER_OF = {"cortex-m0": "scalar", "cortex-m4": "dsp", "cortex-m55": "mve"}


def pte_operators(pte: bytes) -> set[str]:
    plan = deserialize_pte_binary(pte).program.execution_plan[0]
    return {f"{op.name}.{op.overload}" for op in plan.operators}


@pytest.mark.parametrize("target", TARGETS)
def test_every_target_exports_kws(export_kws, target: str) -> None:
    result = export_kws(target)
    manifest = result.manifest
    assert manifest["target"]["cpu"] == target
    assert manifest["macs"]["total"] == KWS_MACS
    assert manifest["pte_bytes"] == result.path(".pte").stat().st_size
    for suffix in (".pte", ".ops.yaml", ".conf", ".json", ".schemas.yaml", ".vectors.npz"):
        assert result.path(suffix).stat().st_size > 0


@pytest.mark.parametrize("target", sorted(TIER_OF))
def test_all_kws_macs_land_on_cmsis_nn(export_kws, target: str) -> None:
    manifest = export_kws(target).manifest
    assert manifest["target"]["isa"] == TIER_OF[target]
    assert manifest["macs"]["cmsis_nn"] == KWS_MACS
    assert all(op.startswith("cortex_m::") for op in manifest["operators"])


@pytest.mark.parametrize("target", sorted(TIER_OF))
def test_ops_yaml_lists_exactly_the_pte_operators(export_kws, target: str) -> None:
    result = export_kws(target)
    listed = yaml.safe_load(result.path(".ops.yaml").read_text())
    called = pte_operators(result.path(".pte").read_bytes())
    assert set(listed["operators"]) == called
    assert set(listed["et_kernel_metadata"]) == called
    schemas = yaml.safe_load(result.path(".schemas.yaml").read_text())
    assert set(schemas) == called
    assert all(schema.startswith(f"{op}(") for op, schema in schemas.items())
    assert listed["include_all_operators"] is False
    # The convolutions take and give int8 (dtype 1) channels_last tensors: dim order 0,2,3,1,
    # or 0,2,1,3 for the one-channel input (the same bytes).
    conv_keys = listed["et_kernel_metadata"]["cortex_m::quantized_conv2d.out"]
    assert conv_keys
    for key in conv_keys:
        assert key.startswith(("v1/1;0,2,3,1|", "v1/1;0,2,1,3|")), key
        assert key.endswith("|1;0,2,3,1|1;0,2,3,1"), key


def test_program_schema_headers_declare_every_schema_table(export_kws) -> None:
    """NAME.schema/ spares the firmware build flatc: it must be flatc's output for the
    ExecuTorch release that serialized the .pte, for every table the runtime reads."""
    import executorch

    result = export_kws("cortex-m55")
    schema_dir = result.path(".schema")
    package = Path(list(executorch.__path__)[0]) / "schema"
    for schema in ("program", "scalar_type"):
        header = (schema_dir / f"{schema}_generated.h").read_text()
        assert "static_assert(FLATBUFFERS_VERSION_MAJOR == 24" in header
        declarations = re.findall(
            r"^(?:table|enum|union|struct) (\w+)", (package / f"{schema}.fbs").read_text(), re.M
        )
        assert declarations
        for name in declarations:
            assert re.search(rf"^(?:struct|enum class) {name}\b", header, re.M), name
    program_header = (schema_dir / "program_generated.h").read_text()
    assert '#include "scalar_type_generated.h"' in program_header
    assert "inline bool VerifyProgramBuffer(" in program_header


@pytest.mark.parametrize("target", sorted(TIER_OF))
def test_kconfig_fragment_carries_the_planned_sizes(export_kws, target: str) -> None:
    result = export_kws(target)
    conf = dict(re.findall(r"^(CONFIG_\w+)=(\d+)$", result.path(".conf").read_text(), re.M))
    plan = deserialize_pte_binary(result.path(".pte").read_bytes()).program.execution_plan[0]
    memory = result.manifest["memory"]
    planned = sum(align(size) for size in plan.non_const_buffer_sizes[1:])
    assert int(conf["CONFIG_ET_ZEPHYR_PLANNED_ARENA_SIZE"]) == planned
    assert int(conf["CONFIG_ET_ZEPHYR_METHOD_ARENA_SIZE"]) == memory["method_allocator"]
    assert int(conf["CONFIG_ET_ZEPHYR_TEMP_ARENA_SIZE"]) == memory["temp_allocator"]
    # One value table entry of 16 bytes per value is the floor of the method arena.
    assert memory["method_allocator"] >= 16 * len(plan.values)
    assert memory["planned_lower_bound"] <= planned
    assert int(conf["CONFIG_ET_ZEPHYR_KERNEL_SLOTS"]) >= len(plan.operators)


def test_scratch_is_sized_per_isa_tier(export_kws) -> None:
    mve = export_kws("cortex-m55").manifest["memory"]["planned"]
    dsp = export_kws("cortex-m55", "dsp").manifest["memory"]["planned"]
    assert export_kws("cortex-m55", "dsp").manifest["target"]["isa"] == "dsp"
    assert mve != dsp


@pytest.mark.parametrize("target", sorted(TIER_OF))
def test_serialized_program_reproduces_the_vectors_bit_exactly(export_kws, target: str) -> None:
    result = export_kws(target)
    pte = result.path(".pte").read_bytes()
    vectors = np.load(result.path(".vectors.npz"))
    assert len(vectors["input_0"]) == 4
    for index, sample in enumerate(vectors["input_0"]):
        (output,) = run_pte(pte, (torch.from_numpy(sample),), result.manifest["target"]["isa"])
        assert output.numpy().tobytes() == vectors["output_0"][index].tobytes()
        assert output.numpy().tobytes() == vectors["output_0_bytes"][index].tobytes()


def test_vectors_hold_inputs_in_device_memory_order(export_kws) -> None:
    result = export_kws("cortex-m55")
    vectors = np.load(result.path(".vectors.npz"))
    plan = deserialize_pte_binary(result.path(".pte").read_bytes()).program.execution_plan[0]
    (spec,) = result.manifest["inputs"]
    assert spec["dim_order"] == plan.values[plan.inputs[0]].val.dim_order
    physical = vectors["input_0"][0].transpose(spec["dim_order"])
    assert vectors["input_0_bytes"][0].tobytes() == np.ascontiguousarray(physical).tobytes()
    assert spec["scale"] > 0 and -128 <= spec["zero_point"] <= 127


def test_int8_program_agrees_with_the_fake_quant_model(export_kws) -> None:
    agreement = export_kws("cortex-m55").manifest["agreement"]
    assert agreement["samples"] >= 4
    assert agreement["top1_vs_fake_quant"] == 1.0
    assert agreement["max_steps_vs_fake_quant"] <= 2


def test_export_is_deterministic(export_kws, tmp_path) -> None:
    from conftest import KWS_MODEL
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.artifacts import write_outputs

    first = export_kws("cortex-m55")
    write_outputs(export(KWS_MODEL, ExportOptions(target="cortex-m55", name="kws")), tmp_path)
    written = sorted(path.relative_to(first.out_dir) for path in first.out_dir.rglob("*"))
    assert written == sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*"))
    for path in written:
        if (tmp_path / path).is_file():
            assert (tmp_path / path).read_bytes() == (first.out_dir / path).read_bytes(), path


def test_exposed_activations_are_extra_outputs_reproduced_bit_exactly(tmp_path) -> None:
    from conftest import KWS_MODEL
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.artifacts import write_outputs

    options = ExportOptions(target="cortex-m33", name="kws", expose_activations=(0, 4, 8))
    artifacts = export(KWS_MODEL, options)
    write_outputs(artifacts, tmp_path)
    outputs = artifacts.manifest["outputs"]
    assert [o["dtype"] for o in outputs] == ["float32", "int8", "int8", "int8"]
    assert [o["name"] for o in outputs[1:]] == artifacts.manifest["exposed_activations"]
    assert all(o["shape"] == [1, 64, 25, 5] for o in outputs[1:])
    vectors = np.load(tmp_path / "kws.vectors.npz")
    pte = (tmp_path / "kws.pte").read_bytes()
    for index, sample in enumerate(vectors["input_0"]):
        results = run_pte(pte, (torch.from_numpy(sample),), artifacts.manifest["target"]["isa"])
        for position, result in enumerate(results):
            expected = vectors[f"output_{position}_bytes"][index].tobytes()
            physical = result.permute(*outputs[position]["dim_order"]).contiguous()
            assert physical.numpy().tobytes() == expected


def test_exposing_a_layer_the_model_lacks_is_refused() -> None:
    from conftest import KWS_MODEL
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.errors import ExportError

    with pytest.raises(ExportError, match="cannot expose MAC layer 10: the model has 10"):
        export(KWS_MODEL, ExportOptions(expose_activations=(10,)))


def test_no_pad_that_pads_nothing_is_left(export_kws) -> None:
    from executorch.exir._serialize._program import deserialize_pte_binary

    pte = export_kws("cortex-m55").path(".pte").read_bytes()
    plan = deserialize_pte_binary(pte).program.execution_plan[0]
    pads = [op_index for op_index, op in enumerate(plan.operators) if op.name == "cortex_m::pad"]
    for instruction in plan.chains[0].instructions:
        call = instruction.instr_args
        if call.op_index in pads:
            pre_pad, post_pad = (plan.values[call.args[i]].val.items for i in (1, 2))
            values = [plan.values[i].val.int_val for i in [*pre_pad, *post_pad]]
            assert any(values), "a cortex_m::pad with all-zero padding is a plain copy"
