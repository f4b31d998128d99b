# SPDX-License-Identifier: Apache-2.0
"""The fake-quantized models `--precision auto` measures, one for each set of 16x8 layers,
each what `pipeline.quantize` would make of it, for a fraction of the time.

A model with a hundred candidate layers takes two hundred trials, and most of each went
into work the trials share: the quantizer's graph rewrites (the same for every set),
running the calibration through the model, and the observers' parameter search (a
histogram's, 2,048 bins). In a prepared model every observer passes its input on
unchanged, so an observer's state depends only on its kind and on the tensors it sees, in
the order it sees them. So the calibration runs once, keeping each tensor an all-INT8 or
an all-16x8 model observes; a trial's observer is then fed what it would have seen, once
for each kind and set of tensors over all the trials, and its parameters are computed
once. A tensor neither model observes takes one more calibration run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable

import torch
from torch.fx import GraphModule, Interpreter, Node
from torchao.quantization.pt2e import ObserverBase
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import Quantizer

from .. import pipeline
from ..frontend.streams import Stream
from ..passes.quantizer import EtZephyrQuantizer
from ..passes.quantizer_int16 import Int16Quantizer

# What sets an observer's kind apart from another's on the same tensors.
_KIND_ATTRIBUTES = (
    "dtype",
    "qscheme",
    "quant_min",
    "quant_max",
    "ch_axis",
    "bins",
    "eps",
    "reduce_range",
    "is_dynamic",
)


class QuantizationTrials:
    """Fake-quantized versions of `graph`, INT8 but for the layers asked for in 16x8."""

    def __init__(self, graph: GraphModule, calibration: list[Stream]) -> None:
        self._calibration = calibration
        # Every quantizer of a trial rewrites the graph as EtZephyrQuantizer does.
        self.annotated = EtZephyrQuantizer().transform_for_annotation(copy.deepcopy(graph))
        # Each observed tensor's value in each of the calibration's runs, in order.
        self._seen: dict[str, list[torch.Tensor]] = {}
        self.calibration_runs = 0
        # Calibrated observers by kind and the tensors they see.
        self._observers: dict[Hashable, ObserverBase] = {}

    def quantize(self, int16_layers: list[str]) -> GraphModule:
        """The graph quantized with `int16_layers` in 16x8, calibrated as the export
        calibrates it."""
        prepared = self._prepare(int16_layers)
        groups = _observer_groups(prepared)
        seen = self._recorded({name for key, _, _ in groups for name in key[1:]})
        for key, observer, calls in groups:
            if key not in self._observers:
                _replay(observer, [seen[name] for name in key[1:]])
                self._observers[key] = _with_cached_qparams(observer)
            for call in calls:
                setattr(prepared, str(call.target), self._observers[key])
        return convert_pt2e(prepared)

    def _prepare(self, int16_layers: list[str] | None) -> GraphModule:
        quantizer = (
            Int16Quantizer(int16_layers)
            if int16_layers is None or int16_layers
            else EtZephyrQuantizer()
        )
        return prepare_pt2e(copy.deepcopy(self.annotated), _Pretransformed(quantizer))

    def _recorded(self, names: set[str]) -> dict[str, list[torch.Tensor]]:
        """The calibration's values of `names` and more: a calibration run records what
        the all-INT8 and the all-16x8 models observe too, most trials' tensors."""
        missing = names - self._seen.keys()
        if missing:
            if not self._seen:
                missing |= {
                    name
                    for int16_layers in ([], None)
                    for key, _, _ in _observer_groups(self._prepare(int16_layers))
                    for name in key[1:]
                }
            recorder = _Recorder(self.annotated, missing)
            pipeline.calibrate(recorder.run, self._calibration)
            self._seen.update(recorder.seen)
            self.calibration_runs += 1
        return self._seen


class _Recorder(Interpreter):
    """Runs the graph, keeping the values of the named nodes."""

    def __init__(self, graph: GraphModule, names: set[str]) -> None:
        super().__init__(graph)
        self.seen: dict[str, list[torch.Tensor]] = {name: [] for name in names}

    def run_node(self, n: Node) -> object:
        result = super().run_node(n)
        if n.name in self.seen:
            self.seen[n.name].append(result)
        return result


class _Pretransformed(Quantizer):
    """A quantizer for a graph its rewrites have already been applied to."""

    def __init__(self, quantizer: Quantizer) -> None:
        super().__init__()
        self._quantizer = quantizer

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        return model

    def annotate(self, model: GraphModule) -> GraphModule:
        return self._quantizer.annotate(model)

    def validate(self, model: GraphModule) -> None:
        self._quantizer.validate(model)

    def prepare_obs_or_fq_callback(self, model: GraphModule, edge_or_node_to_obs_or_fq) -> None:  # type: ignore[no-untyped-def]
        self._quantizer.prepare_obs_or_fq_callback(model, edge_or_node_to_obs_or_fq)


def _replay(observer: ObserverBase, tensors: list[list[torch.Tensor]]) -> None:
    """Feed `observer` what the calibration showed it: each run, each of its tensors in
    graph order."""
    with torch.no_grad():
        for values in zip(*tensors, strict=True):
            for value in values:
                observer(value)


def _observer_groups(prepared: GraphModule) -> list[tuple[Hashable, ObserverBase, list[Node]]]:
    """Each observer in `prepared` with its calls, keyed by its kind and the tensors it
    watches in the order it sees them (one observer watches all the tensors that share
    their parameters)."""
    groups: dict[int, tuple[ObserverBase, list[Node]]] = {}
    for node in prepared.graph.nodes:
        if node.op == "call_module":
            module = prepared.get_submodule(str(node.target))
            if isinstance(module, ObserverBase):
                groups.setdefault(id(module), (module, []))[1].append(node)
    observer_calls = {call for _, calls in groups.values() for call in calls}
    return [
        ((_kind(observer), *(_watched(call, observer_calls) for call in calls)), observer, calls)
        for observer, calls in groups.values()
    ]


def _watched(call: Node, observer_calls: set[Node]) -> str:
    """The tensor an observer's call sees: observers pass their input on, and one may
    watch another's output (an INT16 output read by an INT8 operator)."""
    watched = call.args[0]
    while watched in observer_calls:
        assert isinstance(watched, Node)
        watched = watched.args[0]
    assert isinstance(watched, Node)
    return watched.name


def _kind(observer: ObserverBase) -> Hashable:
    return (type(observer), *(repr(getattr(observer, name, None)) for name in _KIND_ATTRIBUTES))


def _with_cached_qparams(observer: ObserverBase) -> ObserverBase:
    """`observer`, its quantization parameters computed the first time they are asked for
    (convert_pt2e asks each time; the state they come from no longer changes)."""
    compute: Callable[[], object] = observer.calculate_qparams
    cache: list[object] = []

    def calculate_qparams() -> object:
        if not cache:
            cache.append(compute())
        return cache[0]

    observer.calculate_qparams = calculate_qparams  # type: ignore[method-assign]
    return observer
