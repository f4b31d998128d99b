# SPDX-License-Identifier: Apache-2.0
"""New nodes in a captured ATen graph, with the fake value the quantizer reads."""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree
from torch.fx import GraphModule, Node
from torch.fx.node import map_arg


def call(graph: GraphModule, source: Node, target: object, *args: object) -> Node:
    """`target(*args)` before the graph's insertion point, its value computed on the
    fake tensors of its inputs, its source line the one of `source` (the node it
    replaces), so reports still point at the model's code."""
    node = graph.graph.call_function(target, args)
    values = map_arg(args, lambda a: a.meta["val"])
    leaves = pytree.tree_leaves(values)
    fake = next(v for v in leaves if isinstance(v, torch.Tensor))
    with fake.fake_mode:
        node.meta["val"] = target(*values)
    node.meta["stack_trace"] = source.meta.get("stack_trace")
    return node
