# SPDX-License-Identifier: Apache-2.0
"""The generated kernel wrappers check each argument's EValue tag before converting it:
a verified program can still hand a kernel an int where it takes a tensor, and EValue's
to<T>() would abort the firmware (found by tests/fuzz on the wheel's own registration)."""

from __future__ import annotations

import pytest
from conftest import generator_module

GEN = generator_module()


@pytest.mark.parametrize(
    ("schema_type", "check"),
    [
        ("Tensor", "v->isTensor()"),
        ("Tensor(a!)", "v->isTensor()"),
        ("Tensor?", "(v->isNone() || v->isTensor())"),
        ("int", "v->isInt()"),
        ("SymInt", "v->isInt()"),
        ("ScalarType?", "(v->isNone() || v->isInt())"),
        ("float", "v->isDouble()"),
        ("bool", "v->isBool()"),
        ("Scalar", "v->isScalar()"),
        ("str", "v->isString()"),
        ("int[]", "v->isIntList()"),
        ("int[2]", "v->isIntList()"),
        ("int[]?", "(v->isNone() || v->isIntList())"),
        ("float[]", "v->isDoubleList()"),
        ("Tensor[]", "v->isTensorList()"),
        ("Tensor?[]", "v->isListOptionalTensor()"),
    ],
)
def test_each_schema_type_gets_its_tag_check(schema_type: str, check: str) -> None:
    assert GEN.arg_check(schema_type, "v") == check


def test_an_operator_returning_several_tensors_gets_one_list_for_them() -> None:
    """native_layer_norm.out returns three tensors: ExecuTorch's emitter passes them as
    one list after the 8 arguments, 9 values (a LayerNorm left in float failed every
    call when 11 were expected)."""
    args, returns = GEN.parse_schema(
        "aten::native_layer_norm.out(Tensor input, SymInt[] normalized_shape, Tensor? weight, "
        "Tensor? bias, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> "
        "(Tensor(a!), Tensor(b!), Tensor(c!))"
    )
    assert len(returns) == 3
    op = GEN.Op("aten::native_layer_norm.out", "", "torch::executor::layer_norm_out", args, returns)
    code = GEN.generate_registration([op], profiling=False)
    assert "if (stack.size() != 9" in code
    assert "stack[8]->isTensorList()" in code and "stack[9]" not in code


def test_a_string_argument_is_a_string_view() -> None:
    """aten::gelu.out's `str approximate` (a GELU left in float: --float-ops gelu)."""
    assert GEN.cpp_arg("str") == ("std::string_view", "to<std::string_view>()")


def test_a_wrapper_checks_every_argument_and_the_result_before_the_kernel() -> None:
    args, returns = GEN.parse_schema(
        "cortex_m::thing.out(Tensor input, int[] stride, int shift, Tensor? bias, *, "
        "Tensor(a!) out) -> Tensor(a!)"
    )
    op = GEN.Op("cortex_m::thing.out", "", "cortex_m::native::thing_out", args, returns)
    code = GEN.generate_registration([op], profiling=False)
    checks = code[code.index("if (stack.size() != 6") : code.index("context.fail")]
    for expected in (
        "stack[0]->isTensor()",
        "stack[1]->isIntList()",
        "stack[2]->isInt()",
        "(stack[3]->isNone() || stack[3]->isTensor())",
        "stack[4]->isTensor()",
        "stack[5]->isTensor()",
    ):
        assert expected in checks
    assert code.index("context.fail") < code.index("stack[0]->to<")


def test_an_operator_returning_nothing_still_gets_the_result_slot() -> None:
    """ExecuTorch passes a value for the result of every operator, a `-> ()` one too
    (split_with_sizes_copy.out): 5 values here, not 4, or the kernel call fails."""
    args, returns = GEN.parse_schema(
        "aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, "
        "Tensor(a!)[] out) -> ()"
    )
    assert returns == []
    op = GEN.Op("aten::split_with_sizes_copy.out", "", "torch::executor::split_out", args, [])
    code = GEN.generate_registration([op], profiling=False)
    assert "if (stack.size() != 5" in code
    assert "stack[3]->isTensorList()" in code and "stack[4]" not in code
    assert "void split_out(" in code


def test_an_own_operator_is_found_by_its_name(tmp_path) -> None:
    """et_zephyr::NAME.out is et_zephyr::native::NAME_out in lib/src/kernels/NAME.cpp."""
    kernel, source = GEN.own_kernel("et_zephyr::quantized_layer_norm.out")
    assert kernel == "et_zephyr::native::quantized_layer_norm_out"
    assert source.name == "quantized_layer_norm.cpp" and source.is_file()
    assert f"{kernel.rpartition('::')[2]}(" in source.read_text()
    assert GEN.own_kernel("et_zephyr::quantized_layer_norm") is None  # functional
    assert GEN.own_kernel("et_zephyr::no_such_operator.out") is None


def test_every_operator_et_export_may_emit_has_its_kernel_source() -> None:
    from et_zephyr.reference import own_ops

    for name in own_ops.KERNELS:
        assert GEN.own_kernel(name) is not None, name


def test_every_portable_operator_gets_a_registration() -> None:
    """Any operator et-export may leave on a portable kernel (a float fallback) must
    register: each schema of the portable library's functions.yaml, from torch, goes
    through the generator, and a several-result one gets its one list slot."""
    from pathlib import Path

    import executorch
    import torch
    import yaml

    functions = Path(next(iter(executorch.__path__))) / "kernels/portable/functions.yaml"
    generated = 0
    for entry in yaml.safe_load(functions.read_text()):
        if "op" not in entry:  # an ExecuTorch-only operator with its own schema
            continue
        name, _, overload = entry["op"].partition(".")
        schema = str(getattr(getattr(torch.ops.aten, name), overload)._schema)
        args, returns = GEN.parse_schema(schema)
        op = GEN.Op(f"aten::{entry['op']}", schema, "torch::executor::native::f", args, returns)
        code = GEN.generate_registration([op], profiling=False)
        assert f"if (stack.size() != {len(args) + 1}" in code
        generated += 1
    assert generated >= 200
