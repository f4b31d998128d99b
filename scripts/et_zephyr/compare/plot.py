# SPDX-License-Identifier: Apache-2.0
"""et-compare's per-layer error, as a picture: where along the network each gap opens."""

from __future__ import annotations

from pathlib import Path

from . import Comparison


def plot(comparison: Comparison, path: Path) -> None:
    """Three panels over the layers: elements where the device differs from the host,
    the host's largest distance from fake-quant, fake-quant's relative error from float."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = comparison.rows
    x = list(range(len(rows)))
    labels = [
        f"{row.origin.get('layer', row.index)} {row.origin.get('module') or ''}" for row in rows
    ]
    device = [
        (row.device_vs_host.differing if row.device_vs_host else int(bool(row.device_crc_differs)))
        for row in rows
    ]
    host_fq = [row.host_vs_fake_quant.max_steps if row.host_vs_fake_quant else 0 for row in rows]
    fq_float = [100 * (row.fake_quant_relative_error or 0.0) for row in rows]

    figure, axes = plt.subplots(3, 1, sharex=True, figsize=(max(6.0, 0.5 * len(rows) + 3), 7))
    first = comparison.first_divergent
    colors = ["#c0392b" if d else "#2e86c1" for d in device]
    axes[0].bar(x, device, color=colors)
    axes[0].set_ylabel("device ≠ host\n(elements)")
    title = f"{comparison.name}: {len(comparison.vectors)} test inputs"
    if first is not None:
        layer = first.origin.get("layer", first.index)
        title += f"; first difference at layer {layer} ({first.origin.get('module')})"
        for axis in axes:
            axis.axvline(first.index, color="#c0392b", linestyle="--", linewidth=1)
    else:
        title += "; device = host on every layer"
    axes[0].set_title(title)
    axes[1].bar(x, host_fq, color="#7d3c98")
    axes[1].set_ylabel("host INT8 vs\nfake-quant (steps)")
    axes[2].plot(x, fq_float, marker="o", color="#117a65")
    axes[2].set_ylabel("fake-quant vs\nfloat (% rel.)")
    axes[2].set_xticks(x)
    axes[2].set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
