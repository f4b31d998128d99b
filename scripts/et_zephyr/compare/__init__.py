# SPDX-License-Identifier: Apache-2.0
"""Layer by layer: the device against the host reference, the host's INT8 against
fake-quant, fake-quant against float (what `west et-compare` prints).

Reads an export folder (NAME.json, NAME.vectors.npz and, written with
`--expose-activations all --layer-data`, NAME.layers.npz: without it, the table
has the device-vs-host column only) and the device's output: the
"ET_OUTPUT <input> <output> <hex>" lines of samples/kws's runner, or its
"ET_CRC <input> <output> <size> <crc32>" lines, which say only whether bytes differ.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..common.table import format_table
from ..errors import ExportError

_OUTPUT_LINE = re.compile(r"ET_OUTPUT (\d+) (\d+) ([0-9a-f]*)\s*$")
_CRC_LINE = re.compile(r"ET_CRC (\d+) (\d+) (\d+) ([0-9a-f]{8})\s*$")


@dataclass(frozen=True)
class DeviceLog:
    """What the device printed, by (input, output): bytes, or (size, CRC-32)."""

    outputs: dict[tuple[int, int], bytes]
    crcs: dict[tuple[int, int], tuple[int, int]]


@dataclass(frozen=True)
class Difference:
    """How two INT8 tensors of the same layer differ over the compared inputs."""

    elements: int
    differing: int
    max_steps: int

    def describe(self) -> str:
        if self.differing == 0:
            return "identical"
        return f"{self.differing} of {self.elements} differ, up to {self.max_steps} steps"


@dataclass(frozen=True)
class LayerRow:
    """One exposed layer's comparisons; None where the data for one is missing."""

    index: int
    origin: dict[str, object]
    device_vs_host: Difference | None
    device_crc_differs: bool | None
    host_vs_fake_quant: Difference | None
    fake_quant_steps_vs_float: float | None
    fake_quant_relative_error: float | None

    @property
    def device_differs(self) -> bool:
        if self.device_vs_host is not None:
            return self.device_vs_host.differing > 0
        return bool(self.device_crc_differs)


@dataclass(frozen=True)
class Comparison:
    name: str
    vectors: list[int]
    stored_vectors: list[int]
    rows: list[LayerRow]
    outputs_differing: list[int]

    @property
    def first_divergent(self) -> LayerRow | None:
        return next((row for row in self.rows if row.device_differs), None)


def read_log(text: str) -> DeviceLog:
    outputs: dict[tuple[int, int], bytes] = {}
    crcs: dict[tuple[int, int], tuple[int, int]] = {}
    for line in text.splitlines():
        line = line.strip()
        if match := _OUTPUT_LINE.search(line):
            outputs[(int(match.group(1)), int(match.group(2)))] = bytes.fromhex(match.group(3))
        elif match := _CRC_LINE.search(line):
            key = (int(match.group(1)), int(match.group(2)))
            crcs[key] = (int(match.group(3)), int(match.group(4), 16))
    if not outputs and not crcs:
        raise ExportError("the device log has no ET_OUTPUT or ET_CRC lines")
    return DeviceLog(outputs, crcs)


def compare(export_dir: Path, log: DeviceLog) -> Comparison:
    manifest, vectors, layer_arrays = _load_export(export_dir)
    outputs = manifest["outputs"]
    layers = manifest.get("exposed_layers") or [
        {"node": name} for name in manifest.get("exposed_activations") or []
    ]
    first_layer_output = len(outputs) - len(layers)
    seen = sorted({key[0] for key in (*log.outputs, *log.crcs)})
    available = vectors["output_0_bytes"].shape[0]
    if any(v >= available for v in seen):
        raise ExportError(
            f"the device log has test input {max(seen)}, the export only {available}: "
            "is it the log of this build?"
        )
    # Fake-quant against float on the realistic inputs only: the generated ones reach
    # 16x the calibration range, where clipping is the point, not an error.
    stored = [v for v in range(available) if not vectors["input_0_recipe"][v].any()]
    rows = []
    for index, origin in enumerate(layers):
        output = first_layer_output + index
        rows.append(
            _layer_row(
                index, origin, output, outputs[output], (seen, stored), log, vectors, layer_arrays
            )
        )
    differing = [
        o
        for o in range(first_layer_output)
        if any(_device_differs(log, vectors, v, o) for v in seen)
    ]
    return Comparison(str(manifest["name"]), seen, stored, rows, differing)


def _load_export(
    export_dir: Path,
) -> tuple[dict, dict[str, np.ndarray], dict[str, np.ndarray]]:
    manifests = sorted(export_dir.glob("*.json"))
    if len(manifests) != 1:
        raise ExportError(f"expected one et-export manifest (NAME.json) in {export_dir}")
    manifest = json.loads(manifests[0].read_text())
    name = manifest["name"]
    arrays = []
    for suffix in ("vectors", "layers"):
        path = export_dir / f"{name}.{suffix}.npz"
        if not path.exists() and suffix == "layers":
            # Exported without --layer-data: device vs host only.
            arrays.append({})
            continue
        if not path.exists():
            raise ExportError(f"no {path.name} in {export_dir}")
        with np.load(path) as data:
            arrays.append({key: data[key] for key in data.files})
    return manifest, arrays[0], arrays[1]


def _layer_row(
    index: int,
    origin: dict,
    output: int,
    spec: dict,
    inputs: tuple[list[int], list[int]],
    log: DeviceLog,
    vectors: dict[str, np.ndarray],
    layer_arrays: dict[str, np.ndarray],
) -> LayerRow:
    seen, stored = inputs
    host = vectors[f"output_{output}"][seen].astype(np.int64)
    device_vs_host = None
    crc_differs = None
    if all((v, output) in log.outputs for v in seen):
        device = np.stack([_logical(log.outputs[(v, output)], spec) for v in seen])
        device_vs_host = _difference(device, host)
    elif all((v, output) in log.crcs for v in seen):
        crc_differs = any(_device_differs(log, vectors, v, output) for v in seen)
    host_vs_fq = None
    steps_vs_float = None
    relative = None
    fake_quant = layer_arrays.get(f"layer_{index}_fake_quant")
    if fake_quant is not None:
        fake_quant = fake_quant[stored].astype(np.int64)
        host_vs_fq = _difference(vectors[f"output_{output}"][stored].astype(np.int64), fake_quant)
        real = layer_arrays.get(f"layer_{index}_float")
        if real is not None and origin.get("scale"):
            scale = float(origin["scale"])
            dequantized = (fake_quant - int(origin["zero_point"])) * scale
            error = dequantized - real[stored].astype(np.float64)
            steps_vs_float = float(np.abs(error).max() / scale)
            norm = float(np.linalg.norm(real[stored]))
            relative = float(np.linalg.norm(error) / norm) if norm else 0.0
    return LayerRow(
        index, origin, device_vs_host, crc_differs, host_vs_fq, steps_vs_float, relative
    )


def _logical(data: bytes, spec: dict) -> np.ndarray:
    """Device bytes (in the tensor's dim order) as the logical INT8 array."""
    order = list(spec["dim_order"])
    shape = [spec["shape"][d] for d in order]
    if len(data) != int(np.prod(shape)):
        raise ExportError(
            f"the device printed {len(data)} bytes for {spec['name']}, which has "
            f"{int(np.prod(shape))}: is the log of this build?"
        )
    physical = np.frombuffer(data, dtype=np.int8).reshape(shape)
    return physical.transpose(np.argsort(order)).astype(np.int64)


def _difference(a: np.ndarray, b: np.ndarray) -> Difference:
    if a.shape != b.shape:
        raise ExportError(f"shapes {a.shape} and {b.shape} differ: is the log of this build?")
    steps = np.abs(a - b)
    return Difference(int(a.size), int((steps != 0).sum()), int(steps.max(initial=0)))


def _device_differs(log: DeviceLog, vectors: dict[str, np.ndarray], v: int, o: int) -> bool:
    host = vectors[f"output_{o}_bytes"][v].tobytes()
    if (v, o) in log.outputs:
        return log.outputs[(v, o)] != host
    if (v, o) in log.crcs:
        return log.crcs[(v, o)] != (len(host), zlib.crc32(host))
    raise ExportError(f"the device log lacks input {v} output {o}")


def render(comparison: Comparison) -> str:
    """The table a person reads, and the verdict under it."""
    header = [
        "#",
        "module",
        "operator",
        "device vs host",
        "host INT8 vs fake-quant",
        "fake-quant vs float",
    ]
    rows = [header]
    for row in comparison.rows:
        origin = row.origin
        if row.device_vs_host is not None:
            device = row.device_vs_host.describe()
        elif row.device_crc_differs is not None:
            device = "differs (CRC)" if row.device_crc_differs else "identical (CRC)"
        else:
            device = "not printed"
        host_fq = row.host_vs_fake_quant.describe() if row.host_vs_fake_quant else "n/a"
        if row.fake_quant_steps_vs_float is not None and row.fake_quant_relative_error is not None:
            fq_float = (
                f"{row.fake_quant_steps_vs_float:.2f} steps max, "
                f"{100 * row.fake_quant_relative_error:.2f} % rel."
            )
        else:
            fq_float = "n/a"
        if "module" in origin:
            module = f"{origin['module'] or '(model)'} ({origin.get('module_type') or '?'})"
        else:  # exported without --layer-data: only the node is known
            module = str(origin.get("node"))
        operator = str(origin.get("operator", "")).removeprefix("cortex_m::")
        rows.append(
            [str(origin.get("layer", row.index)), module, operator, device, host_fq, fq_float]
        )
    inputs = len(comparison.vectors)
    stored = len(comparison.stored_vectors)
    lines = [
        f"{comparison.name}: {len(comparison.rows)} layers; device vs host on the {inputs} test "
        f"inputs the device ran, quantization on the {stored} stored (realistic) ones",
        "",
    ]
    lines += format_table(rows, left=(1, 2, 3, 4, 5))
    lines.append("")
    first = comparison.first_divergent
    if first is None:
        lines.append("device = host reference on every layer")
    else:
        origin = first.origin
        source = _relative(str(origin.get("source") or "")) or "an unknown line"
        lines.append(
            f"first layer where the device differs: #{origin.get('layer', first.index)} "
            f"{origin.get('module') or '(model)'} ({origin.get('operator')}, node "
            f"{origin.get('node')}) at {source}"
        )
    if comparison.outputs_differing:
        outputs = ", ".join(str(o) for o in comparison.outputs_differing)
        lines.append(f"model outputs that differ: {outputs}")
    return "\n".join(lines)


def _relative(source: str) -> str:
    """A source path relative to the working folder when it is inside it."""
    path = Path(source)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return source
