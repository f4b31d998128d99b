# SPDX-License-Identifier: Apache-2.0
"""et-compare on device logs made from the host reference, exact and with one fault;
et-export --layer-data; the generator's injected fault (CONFIG_ET_ZEPHYR_TEST_FAULT_*).

The firmware runs of `west et-compare` (QEMU) are in test_compare_qemu.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zlib
from pathlib import Path

import executorch
import numpy as np
import pytest
from conftest import MODELS, REPO
from et_zephyr.api import ExportOptions, export
from et_zephyr.artifacts import write_outputs
from et_zephyr.compare import cli as compare_cli
from et_zephyr.compare import compare, read_log, render
from et_zephyr.errors import ExportError

GEN = REPO / "zephyr/cmake/et_zephyr_gen.py"
WHEEL = Path(list(executorch.__path__)[0])
STORED, GENERATED = 3, 2


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    options = ExportOptions(
        name="layered",
        expose_activations="all",
        layer_data=True,
        vectors=STORED,
        generated_vectors=GENERATED,
    )
    out_dir = tmp_path_factory.mktemp("layered")
    write_outputs(export(f"{MODELS}:layered_cnn", options), out_dir)
    return out_dir


def _host_bytes(out_dir: Path) -> dict[tuple[int, int], bytearray]:
    with np.load(out_dir / "layered.vectors.npz") as data:
        outputs = sorted(
            int(k.split("_")[1])
            for k in data.files
            if k.endswith("_bytes") and k.startswith("output_")
        )
        return {
            (v, o): bytearray(data[f"output_{o}_bytes"][v].tobytes())
            for o in outputs
            for v in range(data["output_0_bytes"].shape[0])
        }


def _log(values: dict[tuple[int, int], bytearray], crc: bool = False) -> str:
    lines = ["*** Booting Zephyr OS ***"]
    for (v, o), data in sorted(values.items()):
        if crc:
            lines.append(f"ET_CRC {v} {o} {len(data)} {zlib.crc32(bytes(data)):08x}")
        else:
            lines.append(f"ET_OUTPUT {v} {o} {bytes(data).hex()}")
    return "\n".join(lines + ["ET_DONE PASS"]) + "\n"


def _perturbed(out_dir: Path, layer: int) -> dict[tuple[int, int], bytearray]:
    """One INT8 step off in `layer`'s activation and every later one, as a wrong kernel
    whose error flows down the network would leave them."""
    values = _host_bytes(out_dir)
    first = 1  # output 0 is the model's; 1.. the exposed layers in execution order
    for (_, o), data in values.items():
        if o >= first + layer:
            data[len(data) // 3] ^= 1
    return values


def test_layer_data_names_each_layers_module_and_source_line(exported: Path) -> None:
    manifest = json.loads((exported / "layered.json").read_text())
    layers = manifest["exposed_layers"]
    assert [layer["module"] for layer in layers] == ["stem", "depthwise", "pointwise", "head"]
    assert [layer["operator"] for layer in layers] == [
        "cortex_m::quantized_conv2d",
        "cortex_m::quantized_depthwise_conv2d",
        "cortex_m::quantized_conv2d",
        "cortex_m::quantized_linear",
    ]
    lines = MODELS.read_text().splitlines()
    for layer in layers:
        file, _, line = layer["source"].rpartition(":")
        assert Path(file) == MODELS
        assert f"self.{layer['module']}(" in lines[int(line) - 1]
    with np.load(exported / "layered.layers.npz") as data:
        for index in range(len(layers)):
            assert data[f"layer_{index}_fake_quant"].dtype == np.int8
            assert data[f"layer_{index}_float"].shape == data[f"layer_{index}_fake_quant"].shape
            assert data[f"layer_{index}_float"].shape[0] == STORED + GENERATED


def test_identical_log_reports_no_difference(exported: Path) -> None:
    comparison = compare(exported, read_log(_log(_host_bytes(exported))))
    assert comparison.first_divergent is None
    assert comparison.outputs_differing == []
    assert comparison.vectors == list(range(STORED + GENERATED))
    assert comparison.stored_vectors == list(range(STORED))
    for row in comparison.rows:
        assert row.device_vs_host is not None and row.device_vs_host.differing == 0
        # The first layer sees the same INT8 input in both: at most one step of rounding.
        assert row.host_vs_fake_quant is not None
        assert row.fake_quant_relative_error is not None
        assert 0 < row.fake_quant_relative_error < 0.5
    first = comparison.rows[0].host_vs_fake_quant
    assert first is not None and first.max_steps <= 1


@pytest.mark.parametrize("layer", [0, 1, 2, 3])
def test_first_divergent_layer_is_the_perturbed_one(exported: Path, layer: int) -> None:
    comparison = compare(exported, read_log(_log(_perturbed(exported, layer))))
    first = comparison.first_divergent
    assert first is not None and first.index == layer
    assert first.device_vs_host is not None
    assert first.device_vs_host.differing == STORED + GENERATED
    assert first.device_vs_host.max_steps == 1
    assert all(row.device_vs_host.differing == 0 for row in comparison.rows[:layer])  # type: ignore[union-attr]


def test_crc_log_still_finds_the_layer(exported: Path) -> None:
    comparison = compare(exported, read_log(_log(_perturbed(exported, 2), crc=True)))
    first = comparison.first_divergent
    assert first is not None and first.index == 2
    assert first.device_vs_host is None and first.device_crc_differs is True
    assert comparison.outputs_differing == []


def test_cli_prints_the_table_writes_the_plot_and_exits_1(
    exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "uart.txt"
    log.write_text(_log(_perturbed(exported, 1)))
    plot = tmp_path / "layers.png"
    status = compare_cli.main(
        ["--log", str(log), "--export-dir", str(exported), "--plot", str(plot)]
    )
    out = capsys.readouterr().out
    assert status == 1
    assert "first layer where the device differs: #1 depthwise" in out
    assert re.search(r"at (\S*/)?models\.py:\d+$", out, re.M), out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    log.write_text(_log(_host_bytes(exported)))
    assert (
        compare_cli.main(["--log", str(log), "--export-dir", str(exported), "--plot", str(plot)])
        == 0
    )
    assert "device = host reference on every layer" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("booted\nET_DONE PASS\n", "no ET_OUTPUT or ET_CRC lines"),
        ("ET_OUTPUT 99 0 00\n", "the device log has test input 99"),
        ("ET_OUTPUT 0 1 00\n", "the device printed 1 bytes for"),
        ("ET_CRC 0 1 800 00000000\n", "the device log lacks input 0 output 0"),
    ],
)
def test_bad_logs_get_one_line(
    exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    log = tmp_path / "uart.txt"
    log.write_text(text)
    assert compare_cli.main(["--log", str(log), "--export-dir", str(exported)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_export_without_layer_data_compares_device_and_host_only(
    exported: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    manifest = json.loads((exported / "layered.json").read_text())
    manifest["exposed_layers"] = None
    (plain / "layered.json").write_text(json.dumps(manifest))
    (plain / "layered.vectors.npz").write_bytes((exported / "layered.vectors.npz").read_bytes())
    comparison = compare(plain, read_log(_log(_perturbed(exported, 2))))
    first = comparison.first_divergent
    assert first is not None and first.index == 2
    assert first.origin == {"node": manifest["exposed_activations"][2]}
    assert all(row.host_vs_fake_quant is None for row in comparison.rows)
    assert "n/a" in render(comparison)


def test_export_folder_without_a_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="expected one et-export manifest"):
        compare(tmp_path, read_log("ET_OUTPUT 0 0 00\n"))


def test_inject_wants_an_operator() -> None:
    with pytest.raises(ExportError, match="OP\\[:CALL\\]"):
        compare_cli._fault_kconfig("conv:two")
    assert compare_cli._fault_kconfig("cortex_m::quantized_conv2d.out:2") == {
        "CONFIG_ET_ZEPHYR_TEST_FAULT_OPERATOR": '"cortex_m::quantized_conv2d.out"',
        "CONFIG_ET_ZEPHYR_TEST_FAULT_CALL": "2",
    }


def _generate(exported: Path, out_dir: Path, *fault: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(GEN),
            "--pte",
            str(exported / "layered.pte"),
            "--name",
            "layered",
            "--manifest",
            str(exported / "layered.json"),
            "--schemas",
            str(exported / "layered.schemas.yaml"),
            "--executorch-dir",
            str(WHEEL),
            "--isa",
            "mve",
            "--cpu",
            "cortex-m55",
            "--scratch-kernel",
            "depthwise_conv_mve",
            "--scratch-kernel",
            "conv_mve",
            "--no-kernel-sources",
            "--out-dir",
            str(out_dir),
            *fault,
        ],
        capture_output=True,
        text=True,
    )


def test_generator_perturbs_only_the_chosen_call(exported: Path, tmp_path: Path) -> None:
    result = _generate(
        exported,
        tmp_path,
        "--fault-operator",
        "cortex_m::quantized_conv2d.out",
        "--fault-call",
        "1",
    )
    assert result.returncode == 0, result.stderr
    registration = (tmp_path / "et_zephyr_registration.cpp").read_text()
    assert registration.count("fault_calls++") == 1
    # The stem and the pointwise convolution: 2 calls per inference, the second perturbed.
    assert "fault_calls++ % 2u == 1u" in registration
    conv = registration.index('"cortex_m::quantized_conv2d.out"')
    assert registration.index("fault_calls++") > conv
    assert registration.index("fault_calls++") < registration.index("}),", conv)
    compiled = subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-fno-exceptions",
            "-fno-rtti",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-isystem",
            str(WHEEL / "include"),
            "-isystem",
            str(WHEEL / "include/executorch/runtime/core/portable_type/c10"),
            "-DC10_USING_CUSTOM_GENERATED_MACROS",
            "-c",
            str(tmp_path / "et_zephyr_registration.cpp"),
            "-o",
            str(tmp_path / "registration.o"),
        ],
        capture_output=True,
        text=True,
    )
    assert compiled.returncode == 0, compiled.stderr

    plain = _generate(exported, tmp_path / "plain")
    assert plain.returncode == 0
    assert "fault_calls" not in (tmp_path / "plain/et_zephyr_registration.cpp").read_text()


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (
            ["--fault-operator", "cortex_m::quantized_conv2d.out", "--fault-call", "2"],
            "runs 2 time(s) per inference",
        ),
        (["--fault-operator", "aten::tanh.out"], "the model calls no such operator"),
    ],
)
def test_generator_refuses_a_fault_that_cannot_happen(
    exported: Path, tmp_path: Path, fault: list[str], message: str
) -> None:
    result = _generate(exported, tmp_path, *fault)
    assert result.returncode == 1
    assert message in result.stderr


def test_the_device_runner_is_the_modules_test_application() -> None:
    """et-compare builds tests/models of the module it is installed from."""
    from et_zephyr.compare.device_run import RUNNER_APP

    assert RUNNER_APP == REPO / "tests" / "models"
    assert "et_zephyr_add_model" in (RUNNER_APP / "CMakeLists.txt").read_text()
