# SPDX-License-Identifier: Apache-2.0
"""The short human report printed at the end of an export."""

from __future__ import annotations

from pathlib import Path

from ..common.table import format_table
from ..firmware.kernels import CORTEX_M, ETHOS_U, PORTABLE
from ..reference.dim_orders import same_bytes
from . import Artifacts

_PLACES = {CORTEX_M: "Cortex-M", PORTABLE: "portable", ETHOS_U: "Ethos-U"}


def render_report(artifacts: Artifacts, out_dir: Path | None = None) -> str:
    manifest = artifacts.manifest
    target = manifest["target"]
    npu = manifest["npu"]
    with_npu = f" + {npu}" if npu else ""
    lines = [f"et-export: {artifacts.name} for {target['cpu']} ({target['isa'].upper()}){with_npu}"]
    rows = [("operator", "calls", "MACs", "runs on")]
    for name, stats in artifacts.stats.items():
        rows.append((name, str(stats.calls), f"{stats.macs:,}", _PLACES[stats.runs_on]))
    lines += ["", *format_table(rows, left=(0, 3)), ""]
    macs = manifest["macs"]
    share = 100.0 * macs["cmsis_nn"] / macs["total"] if macs["total"] else 100.0
    lines.append(f"MACs on CMSIS-NN   {macs['cmsis_nn']:,} of {macs['total']:,} ({share:.1f} %)")
    if npu:
        npu_share = 100.0 * macs["ethos_u"] / macs["total"] if macs["total"] else 0.0
        lines.append(f"MACs on Ethos-U    {macs['ethos_u']:,} ({npu_share:.1f} %)")
    copies = manifest["layout_copies"]
    lines.append(
        f"layout copies      {copies['calls']} an inference, {copies['bytes']:,} B written"
    )
    lines.append(f"program            {manifest['pte_bytes']:,} B")
    memory = manifest["memory"]
    planned = sum(entry["bytes"] for entry in memory["planned"])
    buffers = ""
    if len(memory["planned"]) > 1:
        parts = [f"{e['bytes']:,} B in memory id {e['mem_id']}" for e in memory["planned"]]
        buffers = f": {' + '.join(parts)}"
    lines.append(
        f"arena              planned {planned:,} B{buffers} (lower bound "
        f"{memory['planned_lower_bound']:,} B), method {memory['method_allocator']:,} B, "
        f"temp {memory['temp_allocator']:,} B"
    )
    states = manifest.get("states") or []
    if states:
        kept = sum(state["nbytes"] for state in states)
        lines.append(
            f"state              {len(states)} states ({kept:,} B) kept from run to "
            "run by the runtime; et_zephyr_reset_state() starts anew"
        )
    for kernel in target.get("scratch_for", []):
        lines.append(
            f"firmware needs     CONFIG_ET_ZEPHYR_{kernel.upper()}=y (scratch planned for it)"
        )
    without_fallback = target.get("kernels_without_fallback", [])
    if without_fallback:
        lines.append(
            f"upstream fallback  not built for {', '.join(without_fallback)}: they take every "
            "call (CONFIG_ET_ZEPHYR_KERNEL_FALLBACKS=y builds it)"
        )
    agreement = manifest["agreement"]
    if agreement is not None:
        reference = agreement["reference"]
        output = "the float output" if reference == "float" else f"{reference}'s output"
        top1 = ""
        if agreement["top1_vs_float"] is not None:
            top1 = (
                f"top-1 {100 * agreement['top1_vs_fake_quant']:.0f} % vs fake-quant, "
                f"{100 * agreement['top1_vs_float']:.0f} % vs {reference}; "
            )
        lines.append(
            f"agreement          {agreement['samples']} held-out inputs: {top1}largest error "
            f"{_steps(agreement['max_steps_vs_fake_quant'])} vs fake-quant, "
            f"{_steps(agreement['max_steps_vs_float'])} vs {reference} "
            f"({100 * agreement['relative_error_vs_float']:.2f} % of {output}'s range)"
        )
    edges = [
        f"{role} {index} {entry['dtype']} (scale {entry['scale']:.6g}, "
        f"zero point {entry['zero_point']})"
        for role, key in (("input", "inputs"), ("output", "outputs"))
        if manifest["io"][key] != "float"
        for index, entry in enumerate(manifest[key])
        if entry["dtype"] in ("int8", "int16") and entry["scale"] is not None
    ]
    if edges:
        lines.append(f"integer edges      {'; '.join(edges)}")
    layouts = [
        f"{role} {index} {entry['shape']} {_layout_name(entry['dim_order'])}"
        for role, key in (("input", "inputs"), ("output", "outputs"))
        for index, entry in enumerate(manifest[key])
        if not same_bytes(entry["shape"], entry["dim_order"])
    ]
    if layouts:
        lines.append(f"memory layout      {'; '.join(layouts)}")
    precision = manifest.get("precision")
    if precision:
        lines.append(_precision_line(precision))
    int16 = manifest.get("int16_tensors") or []
    if int16:
        names = ", ".join(int16[:_LISTED]) + (
            f" and {len(int16) - _LISTED} more" if len(int16) > _LISTED else ""
        )
        lines.append(f"INT16 activations  {len(int16)}: {names}")
    if manifest["exposed_activations"]:
        exposed = ", ".join(manifest["exposed_activations"])
        lines.append(f"extra outputs      {exposed}")
    if npu:
        lines.append("test vectors       none: the host cannot run the NPU's part")
    if out_dir is not None:
        lines.append(f"written to         {out_dir}/")
        # Files in a folder (NAME.schema/...) are listed as the folder.
        entries = dict.fromkeys(
            name.split("/")[0] + ("/" if "/" in name else "") for name in artifacts.files
        )
        lines.append("                   " + "  ".join(entries))
    return "\n".join(lines)


def _precision_line(precision: dict) -> str:
    layers = precision["int16_layers"]
    chosen = ", ".join(layers) if layers else "none"
    measure = {"top1": "top-1 disagreement", "error": "relative RMS error"}[precision["measure"]]
    drop, limit = precision["drop"], precision["max_drop"]
    program = precision.get("program_drop")
    worst = drop if program is None else max(drop, program)
    within = "within" if worst <= limit else "NOT within"
    measured = f"{100 * drop:.2f} %"
    if program is not None:
        measured = f"{measured} fake-quantized, {100 * program:.2f} % the program"
    return (
        f"precision auto     16x8 on {len(layers)} layer{'' if len(layers) == 1 else 's'} "
        f"({chosen}): {measure} vs float {measured} (INT8 everywhere: "
        f"{100 * precision['int8_drop']:.2f} %), {within} --max-drop {100 * limit:g} %"
    )


# INT16 activations named in the report; the manifest has them all.
_LISTED = 6


def _layout_name(order: list[int]) -> str:
    """NHWC for a channels-last image, NLC for a sequence, else the dim order."""
    known = {(0, 2, 3, 1): "NHWC (dim order 0, 2, 3, 1)", (0, 2, 1): "NLC (dim order 0, 2, 1)"}
    return known.get(tuple(order), f"dim order {', '.join(map(str, order))}")


def _steps(count: float) -> str:
    return f"{count:g} step" + ("" if count == 1 else "s")
