# SPDX-License-Identifier: Apache-2.0
"""benchmarks/peers: the TFLite Micro firmware's model header (which operators a .tflite
uses, and the resolver methods that register them) and the side-by-side table.

The .tflite models here are built with the flatbuffers builder in the layout of
TensorFlow Lite's schema (Model: version, operator_codes, subgraphs; SubGraph's
operators; Operator's opcode_index; OperatorCode's deprecated_builtin_code and
builtin_code), so the reader is checked against what the schema says, not against
itself.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import flatbuffers
import pytest
from conftest import REPO

PEERS = REPO / "benchmarks" / "peers"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


model_header = _load("model_header", PEERS / "tflm_app" / "model_header.py")


def _vector_of_tables(builder: flatbuffers.Builder, tables: list[int]) -> int:
    builder.StartVector(4, len(tables), 4)
    for table in reversed(tables):
        builder.PrependUOffsetTRelative(table)
    return builder.EndVector()


def tflite(codes: list[tuple[int, int]], operators: list[int]) -> bytes:
    """A model with these (deprecated_builtin_code, builtin_code) operator codes and one
    subgraph whose operators use the codes at these indices."""
    builder = flatbuffers.Builder(256)
    code_tables = []
    for deprecated, code in codes:
        builder.StartObject(4)
        builder.PrependInt8Slot(0, deprecated, 0)
        builder.PrependInt32Slot(2, 1, 0)  # version
        builder.PrependInt32Slot(3, code, 0)
        code_tables.append(builder.EndObject())
    operator_tables = []
    for index in operators:
        builder.StartObject(1)
        builder.PrependUint32Slot(0, index, 0)
        operator_tables.append(builder.EndObject())
    operator_vector = _vector_of_tables(builder, operator_tables)
    builder.StartObject(4)
    builder.PrependUOffsetTRelativeSlot(3, operator_vector, 0)
    subgraph = builder.EndObject()
    subgraphs = _vector_of_tables(builder, [subgraph])
    code_vector = _vector_of_tables(builder, code_tables)
    builder.StartObject(3)
    builder.PrependUint32Slot(0, 3, 0)
    builder.PrependUOffsetTRelativeSlot(1, code_vector, 0)
    builder.PrependUOffsetTRelativeSlot(2, subgraphs, 0)
    model = builder.EndObject()
    builder.Finish(model, file_identifier=b"TFL3")
    return bytes(builder.Output())


def test_only_the_codes_operators_use_are_read() -> None:
    # CONV_2D (3) as old converters wrote it (the deprecated int8 field only), QUANTIZE
    # (114) in both fields, GELU (150: past int8, so the deprecated field says
    # PLACEHOLDER_FOR_GREATER_OP_CODES, 127) and an unused DEQUANTIZE (6).
    buffer = tflite([(3, 0), (114, 114), (6, 6), (127, 150)], operators=[0, 1, 0, 3])
    assert model_header.operator_codes(buffer) == [3, 114, 150]


def test_not_a_tflite_file_is_refused() -> None:
    with pytest.raises(ValueError, match="not a TensorFlow Lite flatbuffer"):
        model_header.operator_codes(b"\x00" * 64)


SCHEMA = """\
enum BuiltinOperator : int32_t {
  BuiltinOperator_ADD = 0,
  BuiltinOperator_CONV_2D = 3,
  BuiltinOperator_QUANTIZE = 114,
"""
RESOLVER = """\
  TfLiteStatus AddAdd(const TFLMRegistration& registration = Register_ADD()) {
    return AddBuiltin(BuiltinOperator_ADD, registration, ParseAdd);
  }
  TfLiteStatus AddConv2D(
      const TFLMRegistration& registration = Register_CONV_2D()) {
    return AddBuiltin(BuiltinOperator_CONV_2D, registration, ParseConv2D);
  }
  TfLiteStatus AddQuantize() {
    return AddBuiltin(BuiltinOperator_QUANTIZE, Register_QUANTIZE(),
                      ParseQuantize);
  }
"""


@pytest.fixture
def tflm(tmp_path: Path) -> Path:
    for relative, text in ((model_header.SCHEMA, SCHEMA), (model_header.RESOLVER, RESOLVER)):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    return tmp_path


def test_the_header_registers_each_operator_once(tflm: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(tflite([(3, 0), (114, 114)], operators=[0, 1, 0]))
    out = tmp_path / "peer_model.h"
    assert model_header.main([str(model), str(out), "--tflm", str(tflm)]) == 0
    text = out.read_text()
    assert "#define PEER_NUM_OPS 2" in text
    assert "(resolver).AddConv2D(); (resolver).AddQuantize();" in text
    assert f"static const uint8_t peer_model[{model.stat().st_size}]" in text


def test_an_operator_the_resolver_lacks_is_named(
    tflm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(tflite([(9, 9)], operators=[0]))  # FULLY_CONNECTED: not in RESOLVER
    assert model_header.main([str(model), str(tmp_path / "h.h"), "--tflm", str(tflm)]) == 1
    assert "uses builtin operator(s) [9]" in capsys.readouterr().err


def test_the_table_sets_each_runtime_beside_the_other(tmp_path: Path) -> None:
    side_by_side = _load("side_by_side", PEERS / "side_by_side.py")
    ours = side_by_side.Row("mps2/an386/qemu", tmp_path, flash=100, ram=50, windows=[1000])
    ours.cycles = (1500, 1400, 1600)
    peer = side_by_side.Row("mps2/an386/qemu", tmp_path, flash=200, ram=60, windows=[1700])
    peer.cycles = (2100, 2000, 2200)
    pair = side_by_side.Pair("kws", tmp_path / "kws.tflite", "m.py:kws")
    table = side_by_side.render([(pair, "mps2/an386/qemu", ours, peer)])
    rows = table.splitlines()[2:]
    assert rows[0].split()[2:6] == ["et-zephyr", "100", "B", "50"]
    assert "1.70x instructions, 1.40x cycles" in rows[1]
    with pytest.raises(SystemExit):
        side_by_side.parse_args(["--pair", "kws=only.tflite", "-b", "x", "--workspace", "."])
