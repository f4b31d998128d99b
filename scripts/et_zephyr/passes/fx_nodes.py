# SPDX-License-Identifier: Apache-2.0
"""New nodes in a captured ATen graph, with the fake value the quantizer reads, and new
outputs of a lowered program."""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.graph_signature import OutputKind, OutputSpec, TensorArgument
from torch.fx import GraphModule, Node
from torch.fx.node import map_arg


def call(graph: GraphModule, source: Node, target: object, *args: object, **kwargs: object) -> Node:
    """`target(*args, **kwargs)` before the graph's insertion point, its value computed on
    the fake tensors of its inputs, its source line and module the ones of `source` (the
    node it replaces), so reports still point at the model's code."""
    node = graph.graph.call_function(target, args, kwargs)
    values = map_arg(args, lambda a: a.meta["val"])
    leaves = pytree.tree_leaves(values)
    fake = next(v for v in leaves if isinstance(v, torch.Tensor))
    with fake.fake_mode:
        node.meta["val"] = target(*values, **kwargs)
    for key in ("stack_trace", "nn_module_stack"):
        if key in source.meta:
            node.meta[key] = source.meta[key]
    return node


def constant(
    graph: GraphModule,
    source: Node,
    name: str,
    value: torch.Tensor,
    memory_format: torch.memory_format = torch.contiguous_format,
) -> Node:
    """A buffer of the graph holding `value` (copied, in `memory_format`), read by a
    get_attr node named after `source`, the node it serves, with a fake value in its fake
    mode."""
    attribute = f"_{source.name}_{name}"
    tensor = value.detach().clone(memory_format=memory_format)
    graph.register_buffer(attribute, tensor)
    node = graph.graph.get_attr(attribute)
    fake = source.args[0].meta["val"]
    node.meta["val"] = fake.fake_mode.from_tensor(tensor, static_shapes=True)
    return node


def attribute(graph: GraphModule, node: Node) -> torch.Tensor:
    """The tensor a get_attr node reads (a weight, a buffer) from the graph module."""
    value = graph
    for name in str(node.target).split("."):
        value = getattr(value, name)
    assert isinstance(value, torch.Tensor)
    return value


def pair(values: object) -> list[int]:
    """An operator's int-or-pair argument (stride, padding, ...) as two ints."""
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    return [int(v) for v in (values * 2 if len(values) == 1 else values)]


def append_outputs(program: ExportedProgram, nodes: list[Node]) -> None:
    """Make the nodes the program's last outputs: its graph, signature and calling
    convention (a flat tuple of all outputs)."""
    output = program.graph_module.graph.output_node()
    output.args = (tuple(output.args[0]) + tuple(nodes),)
    for node in nodes:
        spec = OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(name=node.name), target=None)
        program.graph_signature.output_specs.append(spec)
    signature = program.module_call_graph[0].signature
    assert signature is not None
    signature.out_spec = pytree.tree_structure(tuple(output.args[0]))
    program.graph_module.recompile()
