# SPDX-License-Identifier: Apache-2.0
"""The command line as a user meets it: help, report, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import MODELS, REPO


def et_export(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "scripts"))
    return subprocess.run(
        [sys.executable, "-m", "et_zephyr.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def assert_clean_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def test_help_explains_the_outputs(tmp_path: Path) -> None:
    result = et_export("--help", cwd=tmp_path)
    assert result.returncode == 0
    for words in ("NAME.ops.yaml", "NAME.conf", "--target", "--calib-random", "--strict"):
        assert words in result.stdout


def test_report_and_default_output_folder(tmp_path: Path) -> None:
    result = et_export(f"{MODELS}:tiny", "--target", "cortex-m33", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out_dir = tmp_path / "build/et/models"
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "models.conf",
        "models.json",
        "models.ops.yaml",
        "models.pte",
        "models.schema",
        "models.schemas.yaml",
        "models.vectors.npz",
    ]
    assert sorted(p.name for p in (out_dir / "models.schema").iterdir()) == [
        "program_generated.h",
        "scalar_type_generated.h",
    ]
    assert "et-export: models for cortex-m33 (DSP)" in result.stdout
    assert "cortex_m::quantized_linear.out" in result.stdout
    assert "MACs on CMSIS-NN   192 of 192 (100.0 %)" in result.stdout


def test_report_names_the_kernels_built_without_fallback(tmp_path: Path) -> None:
    kws = f"{REPO / 'samples/kws/model.py'}:kws"
    helium = et_export(kws, "--target", "cortex-m55", "--vectors", "1", cwd=tmp_path)
    assert helium.returncode == 0, helium.stderr
    assert (
        "upstream fallback  not built for conv_mve, depthwise_conv_mve: they take every call"
        in helium.stdout
    )
    dsp = et_export(kws, "--target", "cortex-m33", "--vectors", "1", cwd=tmp_path)
    assert dsp.returncode == 0, dsp.stderr
    assert "upstream fallback" not in dsp.stdout


def test_json_prints_the_manifest(tmp_path: Path) -> None:
    result = et_export(f"{MODELS}:tiny", "--name", "tiny", "--json", "-o", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads((tmp_path / "out/tiny.json").read_text())


def test_calibration_from_npz_file(tmp_path: Path) -> None:
    samples = np.random.default_rng(0).normal(size=(12, 1, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=samples)
    result = et_export(
        f"{MODELS}:tiny_without_calibration", "--calib", "calib.npz", "-o", "out", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr


def test_random_calibration_warns(tmp_path: Path) -> None:
    result = et_export(
        f"{MODELS}:tiny_without_calibration", "--calib-random", "8", "-o", "out", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "warning: calibrating on 8 random inputs" in result.stderr


def test_mac_operator_on_portable_kernel_warns_and_strict_fails(tmp_path: Path) -> None:
    relaxed = et_export(f"{MODELS}:volume_conv", "-o", "relaxed", cwd=tmp_path)
    assert relaxed.returncode == 0, relaxed.stderr
    assert "aten::convolution.out" in relaxed.stderr
    strict = et_export(f"{MODELS}:volume_conv", "--strict", "-o", "strict", cwd=tmp_path)
    assert_clean_error(strict, "MAC-bearing operators left on portable kernels")
    assert not (tmp_path / "strict").exists()


def test_float_arithmetic_on_a_portable_kernel_warns_and_strict_fails(tmp_path: Path) -> None:
    relaxed = et_export(f"{MODELS}:float_norm", "-o", "relaxed", cwd=tmp_path)
    assert relaxed.returncode == 0, relaxed.stderr
    warnings = [line for line in relaxed.stderr.splitlines() if "left in float" in line]
    assert len(warnings) == 1 and "aten::native_layer_norm.out" in warnings[0]
    strict = et_export(f"{MODELS}:float_norm", "--strict", "-o", "strict", cwd=tmp_path)
    assert_clean_error(strict, "operators left in float on portable kernels")
    assert not (tmp_path / "strict").exists()


@pytest.mark.parametrize(
    ("model", "extra", "message"),
    [
        ("missing.py:factory", (), "model file not found: missing.py"),
        (f"{MODELS}:nowhere", (), "has no function 'nowhere'"),
        (f"{MODELS}:raising", (), "raising() raised RuntimeError: dataset missing"),
        (f"{MODELS}:not_a_module", (), "not a torch.nn.Module"),
        (f"{MODELS}:wrong_input_shape", (), "rejects its example inputs of shape (1, 9)"),
        (f"{MODELS}:tiny_without_calibration", (), "no calibration data"),
        (f"{MODELS}:unsupported_operator", (), "operator aten::i0.out (node 'aten_i0_default'"),
        (f"{MODELS}:dynamic_filter", (), "operator aten::conv2d (node 'conv2d', "),
        (f"{MODELS}:tiny", ("--target", "cortex-m0", "--isa", "mve"), "not available on"),
        (f"{MODELS}:tiny", ("--target", "cortex-m9"), "unknown target 'cortex-m9'"),
        (f"{MODELS}:tiny", ("--calib", "none.npz"), "calibration file not found: none.npz"),
        ("model.onnx", (), "neither 'path/to/file.py:factory' nor a '.pt2' program"),
        (f"{MODELS}:tiny", ("--float-ops", "gelu,softmax"), "no integer lowering named softmax"),
    ],
)
def test_bad_input_gives_one_line_and_writes_nothing(
    tmp_path: Path, model: str, extra: tuple[str, ...], message: str
) -> None:
    result = et_export(model, *extra, "-o", "out", cwd=tmp_path)
    assert_clean_error(result, message)
    assert not (tmp_path / "out").exists()


def test_unsupported_operator_names_its_source_line(tmp_path: Path) -> None:
    result = et_export(f"{MODELS}:unsupported_operator", "-o", "out", cwd=tmp_path)
    line = next(n for n, text in enumerate(MODELS.read_text().splitlines(), 1) if "i0(" in text)
    assert_clean_error(result, f"{MODELS}:{line})")


def test_unwritable_output_folder(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    result = et_export(f"{MODELS}:tiny", "-o", "a-file/out", cwd=tmp_path)
    assert_clean_error(result, "cannot write to output folder a-file/out")


def test_wrong_calibration_shape(tmp_path: Path) -> None:
    np.save(tmp_path / "calib.npy", np.zeros((4, 1, 7), dtype=np.float32))
    result = et_export(f"{MODELS}:tiny", "--calib", "calib.npy", "-o", "out", cwd=tmp_path)
    assert_clean_error(result, "input 0 samples have shape (1, 7), the model expects (1, 8)")


def test_a_failing_upstream_pass_is_one_line_naming_it(tmp_path, monkeypatch, capsys) -> None:
    from et_zephyr import cli
    from et_zephyr.passes import cortex_m_passes
    from executorch.exir.pass_base import ExportPass

    class DecomposeSomethingPass(ExportPass):
        def call(self, graph_module):
            raise RuntimeError("expected scalar type torch.int8 but found torch.int32")

    monkeypatch.setattr(cortex_m_passes, "pass_list", lambda float_ops: [DecomposeSomethingPass])
    monkeypatch.delenv("ET_EXPORT_TRACEBACK", raising=False)
    out = tmp_path / "out"
    assert cli.main([f"{MODELS}:tiny", "-o", str(out)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(errors) == 1
    assert errors[0].startswith("error: lowering to Cortex-M failed: ")
    assert "DecomposeSomethingPass" in errors[0] and "torch.int32" in errors[0]
    assert not out.exists()


def test_an_unexpected_failure_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from et_zephyr import api, cli

    def broken(model, options):
        raise RuntimeError("tensor sizes disagree\nsecond line")

    monkeypatch.setattr(api, "export", broken)
    monkeypatch.delenv("ET_EXPORT_TRACEBACK", raising=False)
    out = tmp_path / "out"
    assert cli.main([f"{MODELS}:tiny", "-o", str(out)]) == 1
    stderr = capsys.readouterr().err
    assert stderr.strip() == (
        "error: unexpected RuntimeError: tensor sizes disagree "
        "(set ET_EXPORT_TRACEBACK=1 to see where)"
    )
    assert not out.exists()
    monkeypatch.setenv("ET_EXPORT_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="tensor sizes disagree"):
        cli.main([f"{MODELS}:tiny", "-o", str(out)])
