# SPDX-License-Identifier: Apache-2.0
"""Where each exposed MAC layer came from, and what the fake-quant and float models
compute there: the data `et-compare` sets beside the device's and the host's bytes.

A lowered Cortex-M node keeps, in its `from_node` provenance, the name of the node
of the captured graph it replaced (e.g. `conv2d_3`). In the fake-quant graph that
node, followed through the activations fused into the same kernel, ends in the
quantize that gives the layer's INT8 value; the node before that quantize, run in
the float graph (the same names: quantization only inserts nodes), gives its float
value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.fx import GraphModule, Interpreter, Node

from ..firmware.analysis import node_macs
from ..firmware.kernels import model_location
from ..frontend.loading import Inputs
from ..reference import own_ops

_QUANTIZE = torch.ops.quantized_decomposed.quantize_per_tensor.default


@dataclass(frozen=True)
class LayerOrigin:
    """One exposed layer: its number among the MAC layers (as --expose-activations counts
    them), its lowered node and operator, the PyTorch module and
    source line it came from, and the fake-quant graph's nodes for its INT8
    (`quantize_node`) and float (`float_node`) values; those are None where the
    provenance does not lead back to a quantized node."""

    layer: int
    node: str
    operator: str
    module: str
    module_type: str
    source: str
    quantize_node: str | None
    float_node: str | None
    scale: float | None
    zero_point: int | None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def origins(
    program: ExportedProgram, exposed: list[str], fake_quant: GraphModule
) -> list[LayerOrigin]:
    """The origin of each exposed node of the lowered program, in the order given."""
    graph = program.graph_module.graph
    mac_layers = [node for node in graph.nodes if node.op == "call_function" and node_macs(node)]
    number = {node.name: index for index, node in enumerate(mac_layers)}
    nodes = {node.name: node for node in graph.nodes}
    fq_nodes = {node.name: node for node in fake_quant.graph.nodes}
    return [_origin(number[name], nodes[name], fq_nodes) for name in exposed]


def layer_values(
    layers: list[LayerOrigin],
    fake_quant: GraphModule,
    float_graph: GraphModule,
    samples: list[Inputs],
    stream: bool = False,
) -> dict[str, np.ndarray]:
    """`layer_<j>_fake_quant` (INT8) and `layer_<j>_float` for each layer j, stacked
    over the samples, as logical (contiguous) arrays. `stream` (et-export --stateful):
    the samples are one stream, the recurrent layers' state carried, as the test vectors
    run."""
    arrays: dict[str, np.ndarray] = {}
    for role, graph, attribute in (
        ("fake_quant", fake_quant, "quantize_node"),
        ("float", float_graph, "float_node"),
    ):
        wanted = {getattr(layer, attribute) for layer in layers} - {None}
        with own_ops.carried_float_states(stream):
            runs = [_node_values(graph, sample, wanted) for sample in samples]
        for index, layer in enumerate(layers):
            name = getattr(layer, attribute)
            if name is not None:
                stacked = [run[name].contiguous().numpy() for run in runs]
                arrays[f"layer_{index}_{role}"] = np.stack(stacked)
    return arrays


def _origin(layer: int, node: Node, fq_nodes: dict[str, Node]) -> LayerOrigin:
    root = next((fq_nodes[n] for n in _provenance(node) if n in fq_nodes), None)
    module, module_type = _module(root if root is not None else node)
    source = model_location(root if root is not None else node)
    operator = str(getattr(node.target, "_name", node.target))
    quantize, before = _output_quantize(root) if root is not None else (None, None)
    scale = float(quantize.args[1]) if quantize is not None else None
    zero_point = int(quantize.args[2]) if quantize is not None else None
    return LayerOrigin(
        layer=layer,
        node=node.name,
        operator=operator,
        module=module,
        module_type=module_type,
        source=source,
        quantize_node=quantize.name if quantize is not None else None,
        float_node=before.name if before is not None else None,
        scale=scale,
        zero_point=zero_point,
    )


def _provenance(node: Node) -> list[str]:
    """Names along the node's `from_node` chain, nearest first."""
    names = []
    sources = list(node.meta.get("from_node") or [])
    while sources:
        source = sources.pop(0)
        names.append(source.name)
        sources.extend(getattr(source, "from_node", None) or [])
    return names


def _output_quantize(node: Node) -> tuple[Node | None, Node | None]:
    """The quantize that ends the layer's kernel (through fused activations such as
    relu, which have one user each), and the node it quantizes."""
    current = node
    for _ in range(8):
        users = list(current.users)
        quantize = next((user for user in users if user.target == _QUANTIZE), None)
        if quantize is not None:
            return quantize, current
        if len(users) != 1 or users[0].op != "call_function":
            return None, None
        current = users[0]
    return None, None


def _module(node: Node) -> tuple[str, str]:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "", ""
    path, module_type = list(stack.values())[-1]
    return str(path), str(module_type).rpartition(".")[2]


def _node_values(graph: GraphModule, sample: Inputs, wanted: set[str]) -> dict[str, torch.Tensor]:
    values: dict[str, torch.Tensor] = {}

    class Recorder(Interpreter):
        def run_node(self, node: Node) -> object:
            result = super().run_node(node)
            if node.name in wanted:
                values[node.name] = result.detach().clone()
            return result

    with torch.no_grad():
        Recorder(graph).run(*sample)
    return values
