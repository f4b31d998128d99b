# SPDX-License-Identifier: Apache-2.0
"""Portable operators in a channels-last model compute on the device what the host
reference says (et_zephyr/reference/dim_orders.py).

ExecuTorch 1.4's portable cat and slice_copy index by the default dim order: given
channels-last tensors, cat computed other bytes than torch.cat (the kernels test's
width concatenations, outputs 10 and 11) and slice_copy refused the call (0x12).
Concatenations and slices of channels-last int8 maps now run on et-zephyr's kernels in
that order (passes/dim_order_kernels.py). Without a device: the serialized program must hand
every aten:: (portable) kernel tensors in the default dim order, every et_zephyr:: one
and every Cortex-M convolution channels-last ones, and
the emulation, which refuses anything else as the device's kernels would mishandle it,
must reproduce the reference bytes.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from conftest import REPO
from et_zephyr.api import ExportOptions, export
from et_zephyr.errors import ExportError
from et_zephyr.firmware.kernels import available_kernels
from et_zephyr.reference import dim_orders
from et_zephyr.reference.emulate import run_pte
from executorch.exir._serialize._program import deserialize_pte_binary
from executorch.exir.schema import Tensor, TensorList

LAYOUTS = f"{REPO / 'tests/models/layouts.py'}:layouts"


def _export(target: str) -> tuple[bytes, dict[str, np.ndarray], dict]:
    artifacts = export(LAYOUTS, ExportOptions(target=target, name="layouts", vectors=4))
    with np.load(io.BytesIO(artifacts.files["layouts.vectors.npz"])) as data:
        vectors = {name: data[name] for name in data.files}
    return artifacts.files["layouts.pte"], vectors, artifacts.manifest


def _tensors(plan: object, index: int) -> list[Tensor]:
    value = plan.values[index].val  # type: ignore[attr-defined]
    items = value.items if isinstance(value, TensorList) else [index]
    tensors = [plan.values[item].val for item in items]  # type: ignore[attr-defined]
    return [tensor for tensor in tensors if isinstance(tensor, Tensor)]


def _replay(pte: bytes, vectors: dict[str, np.ndarray], manifest: dict) -> None:
    outputs = manifest["outputs"]
    for v in range(len(vectors["input_0"])):
        results = run_pte(
            pte, (torch.from_numpy(vectors["input_0"][v]),), manifest["target"]["isa"]
        )
        for o, result in enumerate(results):
            physical = result.permute(outputs[o]["dim_order"]).contiguous().numpy().tobytes()
            assert physical == vectors[f"output_{o}_bytes"][v].tobytes(), (v, o)


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_portable_operators_get_default_dim_orders_and_reproduce_the_reference(
    target: str,
) -> None:
    pte, vectors, manifest = _export(target)
    plan = deserialize_pte_binary(pte).program.execution_plan[0]
    called = set()
    for instruction in plan.chains[0].instructions:
        call = instruction.instr_args
        name = plan.operators[call.op_index].name
        called.add(name)
        tensors = [tensor for index in call.args for tensor in _tensors(plan, index)]
        if name.startswith("aten::"):
            for tensor in tensors:
                assert list(tensor.dim_order) == list(range(len(tensor.sizes))), name
        if name.startswith("et_zephyr::"):
            # The module's byte movers read and write the model's layout (a dimension of
            # size 1 may sit anywhere in a dim order).
            for t in tensors:
                large = [d for d in t.dim_order if t.sizes[d] != 1]
                assert large == [d for d in (0, 2, 3, 1) if t.sizes[d] != 1], name
        if name.startswith("cortex_m::quantized_") and "conv2d" in name:
            activation = tensors[0]
            sizes = list(activation.sizes)
            if sizes[1] > 1 and sizes[2] * sizes[3] > 1:
                assert list(activation.dim_order) == [0, 2, 3, 1], name
    assert {"et_zephyr::concatenate", "et_zephyr::slice"} <= called
    assert not {"aten::cat", "aten::slice_copy"} & called
    _replay(pte, vectors, manifest)


def test_without_the_copies_the_emulation_refuses_what_the_device_mishandles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The program as et-export wrote it before: channels-last tensors into aten::cat."""
    from et_zephyr import api

    monkeypatch.setattr(dim_orders, "default_dim_order_for_portable", lambda program: 0)
    monkeypatch.setattr(api, "kernels_in_dim_order", lambda program: 0)
    pte, vectors, manifest = _export("cortex-m4")
    with pytest.raises(ExportError, match=r"aten::(cat|slice_copy).*dim order \[0, 2, 3, 1\]"):
        _replay(pte, vectors, manifest)


def test_the_step_is_idempotent_and_its_copies_have_kernels() -> None:
    assert "dim_order_ops::_to_dim_order_copy.out" in available_kernels()
    from et_zephyr import pipeline
    from et_zephyr.frontend.loading import load_model
    from et_zephyr.frontend.targets import resolve_target
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer

    bundle = load_model(LAYOUTS)
    assert bundle.calibration is not None
    prepared = pipeline.prepare_model(bundle.model, bundle.example_inputs, bundle.calibration)
    graph = pipeline.capture_graph(prepared.model, prepared.example_inputs)
    calibration = [[sample] for sample in prepared.calibration[:4]]  # one-hop streams
    quantized = pipeline.quantize(graph, CortexMQuantizer(), calibration, iter)
    edge = pipeline.to_edge_dialect(quantized, prepared.example_inputs)
    lowered = pipeline.lower_to_cortex_m(edge, resolve_target("cortex-m4"))
    # One default-order copy of the input, read by both concatenations and both slices;
    # copies back to channels-last for both concatenations and for x[:, :3], not for
    # x[:, :1] (one channel: the same bytes).
    assert dim_orders.default_dim_order_for_portable(lowered) == 4
    assert dim_orders.default_dim_order_for_portable(lowered) == 0
