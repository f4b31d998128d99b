# SPDX-License-Identifier: Apache-2.0
"""The export pipeline, one named step per concern, in the order they run.

prepare_model -> capture_graph -> fold_batch_norm -> scale_alpha_operands
-> explicit_padding, one_d_as_two_d, spatial_means_as_pools, crop_transpose_conv_rows
   (passes/)
-> decompose_attention (passes/attention.py)
-> unroll_recurrent (passes/recurrent.py)
-> means_to_matmuls (passes/mean_as_matmul.py)
-> choose_int16_layers (precision/search.py, with --precision auto) -> quantize
   (passes/quantizer.py, quantizer_int16.py with --activations int16 or mixed)
-> fold_constant_scales -> fold_requantize_chains (passes/requantization.py)
-> to_edge_dialect -> take_int8_edges (passes/int8_edges.py, with --io int8)
-> lower_to_cortex_m (16x8 layers first: passes/int16_lowering.py)
-> decompose_float_preserved_ops (passes/float_fallback.py)
-> remove_noop_pads -> convolve_single_channel_inputs -> drop_unused_constants
-> default_dim_order_for_portable (reference/dim_orders.py)
-> plan_own_kernel_scratch (firmware/kernel_scratch.py)
-> check_kernels (firmware/kernels.py) -> expose_activations (if asked)
-> run_on_host (the reference) -> plan_within_peak (planning/offset_planner.py,
   fast_memory.py; own Helium kernels' scratch fitted where the plan peaks)
-> compact_program (planning/compaction.py)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
from executorch.backends.cortex_m.passes.scratch_buffer_sizes import (
    required_cmsis_nn_buffer_sizes,
)
from executorch.exir import (
    EdgeCompileConfig,
    EdgeProgramManager,
    ExecutorchBackendConfig,
    ExecutorchProgramManager,
    to_edge,
)
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx import GraphModule, Interpreter, Node
from torch.fx.node import Argument
from torch.fx.node import Target as CallTarget
from torchao.quantization.pt2e import move_exported_model_to_eval
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import Quantizer
from torchao.quantization.pt2e.utils import _fuse_conv_bn_, _fuse_linear_bn_

from . import reference
from .errors import ExportError, first_line
from .firmware.analysis import node_macs
from .firmware.kernel_scratch import (
    conv_mve_scratch_floor,
    depthwise_mve_scratch_bytes,
    resize_scratch,
)
from .firmware.kernels import out_variant_name, source_line
from .frontend.loading import Inputs
from .frontend.streams import Stream
from .frontend.targets import Target
from .passes import cortex_m_passes
from .passes.carried_state import CarriedState
from .passes.fx_nodes import append_outputs
from .planning.fast_memory import FastFirstPlanner
from .planning.layout_views import LayoutViewsPlanning, as_view_copies
from .planning.memory import live_at_peak
from .planning.offset_planner import planning_suite
from .reference import own_ops

Progress = Callable[[list[Stream]], Iterable[Stream]]

_CONVOLUTIONS = {
    torch.ops.aten.conv1d.default,
    torch.ops.aten.conv1d.padding,
    torch.ops.aten.conv2d.default,
    torch.ops.aten.conv2d.padding,
    torch.ops.aten.conv_transpose1d.default,
    torch.ops.aten.conv_transpose2d.input,
    torch.ops.aten.convolution.default,
}
_CONVOLUTION_MODULES = (
    torch.nn.Conv1d,
    torch.nn.Conv2d,
    torch.nn.ConvTranspose1d,
    torch.nn.ConvTranspose2d,
)
_CORTEX_M_PAD = exir_ops.edge.cortex_m.pad.default
_CORTEX_M_CONV = exir_ops.edge.cortex_m.quantized_conv2d.default
_CORTEX_M_DEPTHWISE_CONV = exir_ops.edge.cortex_m.quantized_depthwise_conv2d.default
_ALPHA_OPERATORS = {torch.ops.aten.add.Tensor, torch.ops.aten.sub.Tensor}
_BATCH_NORMS = {
    torch.ops.aten.batch_norm.default,
    torch.ops.aten._native_batch_norm_legit_no_training.default,
}
# Kept whole through to_edge so the Cortex-M passes can match them (as
# ExecuTorch's own Cortex-M tests do). A tuple: to_edge appends to the list it is
# given, so each export hands it a fresh copy.
_PRESERVED_OPS = (
    torch.ops.aten.linear.default,
    torch.ops.aten.hardsigmoid.default,
    torch.ops.aten.hardsigmoid_.default,
    torch.ops.aten.hardswish.default,
    torch.ops.aten.hardswish_.default,
    torch.ops.aten.silu.default,
)


@dataclass
class Prepared:
    """The model and its data, in the memory format the kernels want."""

    model: torch.nn.Module
    example_inputs: Inputs
    calibration: list[Inputs]
    channels_last: bool


def prepare_model(
    model: torch.nn.Module, example_inputs: Inputs, calibration: list[Inputs]
) -> Prepared:
    """Inference mode, and channels_last when the model convolves.

    The Cortex-M quantizer lowers convolutions only when activations are NHWC;
    in NCHW it silently leaves them in float on portable kernels.
    """
    model = to_inference_mode(model)
    if not _convolves(model, example_inputs):
        return Prepared(model, example_inputs, calibration, channels_last=False)
    model = model.to(memory_format=torch.channels_last)
    return Prepared(
        model,
        to_channels_last(example_inputs),
        [to_channels_last(sample) for sample in calibration],
        channels_last=True,
    )


def to_inference_mode(model: torch.nn.Module) -> torch.nn.Module:
    """eval(), or for a loaded torch.export program, which refuses eval(), the
    inference forms of its dropout and BatchNorm."""
    try:
        return model.eval()
    except NotImplementedError:
        assert isinstance(model, GraphModule)
        return move_exported_model_to_eval(model)


def _convolves(model: torch.nn.Module, example_inputs: Inputs) -> bool:
    """Whether the model runs a convolution (1-D ones run as 2-D ones of height 1): a
    convolution module says so without tracing (the export is then done once);
    functional convolutions and loaded programs are traced to find out."""
    if any(isinstance(module, _CONVOLUTION_MODULES) for module in model.modules()):
        return True
    return _has_convolution(capture_graph(model, example_inputs))


def _has_convolution(graph: GraphModule) -> bool:
    return any(node.target in _CONVOLUTIONS for node in graph.graph.nodes)


def to_channels_last(inputs: Inputs) -> Inputs:
    return tuple(t.clone(memory_format=torch.channels_last) if t.dim() == 4 else t for t in inputs)


def capture_graph(model: torch.nn.Module, example_inputs: Inputs) -> GraphModule:
    """torch.export the model into an ATen graph for PT2E quantization."""
    try:
        exported = torch.export.export(model, example_inputs)
    except Exception as error:
        raise ExportError(f"torch.export failed: {first_line(error)}") from error
    # The guards would reject the channels_last strides of later calls.
    return exported.module(check_guards=False)


def fold_batch_norm(graph: GraphModule) -> list[str]:
    """Fold BatchNorm into the Conv or Linear before it.

    Returns the BatchNorm nodes that could not be folded (not after a Conv or
    Linear): those stay in float.
    """
    _fuse_conv_bn_(graph)
    _fuse_linear_bn_(graph)
    return [node.name for node in graph.graph.nodes if node.target in _BATCH_NORMS]


def scale_alpha_operands(graph: GraphModule) -> int:
    """Write `add(x, y, alpha=a)` (and `sub`) as `add(x, y * a)`: the Cortex-M passes
    refuse an alpha ("Expecting kwargs for aten op IR to be empty"), an explicit scaling
    quantizes like any other product. Returns how many changed."""
    changed = 0
    for node in list(graph.graph.nodes):
        alpha = node.kwargs.get("alpha", 1) if node.target in _ALPHA_OPERATORS else 1
        if alpha == 1 or not isinstance(node.args[1], torch.fx.Node):
            continue
        operand = node.args[1]
        with graph.graph.inserting_before(node):
            scaled = graph.graph.call_function(torch.ops.aten.mul.Tensor, (operand, alpha))
        value = operand.meta.get("val")
        if value is not None:
            with value.fake_mode:
                scaled.meta["val"] = value * alpha
        scaled.meta["stack_trace"] = node.meta.get("stack_trace")
        node.args = (node.args[0], scaled, *node.args[2:])
        node.kwargs = {key: v for key, v in node.kwargs.items() if key != "alpha"}
        changed += 1
    graph.recompile()
    return changed


def quantize(
    graph: GraphModule, quantizer: Quantizer, calibration: list[Stream], progress: Progress
) -> GraphModule:
    """PT2E post-training quantization: CortexMQuantizer, or Ethos-U's with an NPU. Each
    calibration stream's hops run in order, the recurrent layers' state carried."""
    prepared = prepare_pt2e(graph, quantizer)
    calibrate(prepared, progress(calibration))
    return convert_pt2e(prepared)


def calibrate(model: Callable[..., object], calibration: Iterable[Stream]) -> None:
    """Run every calibration stream through the model, without gradients."""
    with torch.no_grad():
        for stream in calibration:
            run_stream(model, stream)


def run_stream(model: Callable[..., object], stream: Stream) -> list[object]:
    """The model's results for each hop in order, its whole recurrent layers (float, before
    lowering) starting each hop from the state the one before left."""
    with own_ops.carried_float_states(len(stream) > 1):
        return [model(*hop) for hop in stream]


def to_edge_dialect(quantized: torch.nn.Module, example_inputs: Inputs) -> EdgeProgramManager:
    """Re-export the quantized graph and convert it to the Edge dialect."""
    try:
        exported = torch.export.export(quantized, example_inputs)
        return to_edge(
            exported,
            compile_config=EdgeCompileConfig(
                preserve_ops=list(_PRESERVED_OPS),
                _check_ir_validity=False,
                _core_aten_ops_exception_list=[torch.ops.aten.max_pool2d.default],
            ),
        )
    except Exception as error:
        raise ExportError(f"conversion to the Edge dialect failed: {first_line(error)}") from error


def lower_to_cortex_m(
    edge: EdgeProgramManager, target: Target, float_ops: frozenset[str] = frozenset()
) -> ExportedProgram:
    """Replace quantized patterns with cortex_m::* operators for the target's ISA.

    CMSIS-NN scratch buffers are sized here, per ISA tier: a program lowered for
    one tier must not run on firmware built for another. ExecuTorch's pass list runs
    with the passes that retrace the graph replaced, and elementwise functions
    the quantizer left in float as lookup tables (passes/cortex_m_passes.py); those named in
    `float_ops` stay float.
    """
    manager = CortexMPassManager(
        edge.exported_program(),
        passes=cortex_m_passes.pass_list(float_ops),
        target_config=target.config,
    )
    try:
        # Without autograd: a 16x8 layer's float bias (a parameter, quantized only when the
        # layer is lowered) would have it trace the int16 operator, which it refuses.
        with torch.no_grad():
            return manager.transform()
    except Exception as error:
        # ExecuTorch names the pass in the message and the failure in the cause.
        cause = f": {first_line(error.__cause__)}" if error.__cause__ else ""
        raise ExportError(f"lowering to Cortex-M failed: {first_line(error)}{cause}") from error


def remove_noop_pads(program: ExportedProgram) -> int:
    """Drop cortex_m::pad calls that pad nothing (e.g. before an average pool):
    each would copy a whole activation. Returns how many went."""
    graph = program.graph_module.graph
    removed = 0
    for node in list(graph.nodes):
        if node.target != _CORTEX_M_PAD:
            continue
        _, pre_pad, post_pad = node.args[:3]
        if any(pre_pad) or any(post_pad):
            continue
        node.replace_all_uses_with(node.args[0])
        graph.erase_node(node)
        removed += 1
    program.graph_module.recompile()
    return removed


def convolve_single_channel_inputs(program: ExportedProgram, target: Target) -> int:
    """Lower depthwise convolutions of one input channel as regular convolutions.

    Upstream lowers a convolution with one input channel (a KWS model's first layer) as a
    depthwise one with a depth multiplier of C_out, which CMSIS-NN runs either through its
    slow generic kernel or, on MVE, by transposing the weights to OHWI on every inference and
    calling the convolution. The arithmetic is the same; the OHWI weights are made here, once.
    Returns how many convolutions changed.
    """
    graph = program.graph_module.graph
    parameters = program.graph_signature.inputs_to_parameters
    changed = 0
    for node in list(graph.nodes):
        if node.target != _CORTEX_M_DEPTHWISE_CONV:
            continue
        x, weight, bias, stride, padding, dilation, _, *quantization, scratch = node.args
        if x.meta["val"].shape[1] != 1 or len(weight.users) != 1 or weight.name not in parameters:
            continue
        # Depthwise weights are [1, H, W, C_out]; a convolution's are [C_out, H, W, C_in].
        name = parameters[weight.name]
        ohwi = program.state_dict[name].permute(3, 1, 2, 0).contiguous()
        program.state_dict[name] = torch.nn.Parameter(ohwi, requires_grad=False)
        weight.meta["val"] = weight.meta["val"].new_empty(ohwi.shape)
        with graph.inserting_before(node):
            conv = graph.call_function(
                _CORTEX_M_CONV,
                (x, weight, bias, stride, padding, dilation, *quantization, scratch),
            )
        conv.meta = node.meta
        node.replace_all_uses_with(conv)
        graph.erase_node(node)
        (scratch_bytes,) = required_cmsis_nn_buffer_sizes(conv, target.config.backend)
        resize_scratch(scratch, scratch_bytes)
        changed += 1
    program.graph_module.recompile()
    return changed


def drop_unused_constants(program: ExportedProgram) -> int:
    """Remove weights no operator reads any more, so they are not serialized.

    Lowering repacks weights (e.g. OIHW to NHWC) and leaves the originals
    behind. Returns the number of bytes dropped.
    """
    graph = program.graph_module.graph
    placeholders = {node.name: node for node in graph.nodes if node.op == "placeholder"}
    constant_kinds = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
    dropped = 0
    for spec in list(program.graph_signature.input_specs):
        node = placeholders.get(spec.arg.name)
        if spec.kind not in constant_kinds or node is None or node.users:
            continue
        if spec.kind == InputKind.CONSTANT_TENSOR:
            tensor = program.constants.pop(spec.target)
        else:
            tensor = program.state_dict.pop(spec.target)
        dropped += tensor.numel() * tensor.element_size()
        program.graph_signature.input_specs.remove(spec)
        graph.erase_node(node)
    program.graph_module.recompile()
    return dropped


def expose_activations(
    program: ExportedProgram, layers: Sequence[int] | Literal["all"]
) -> list[str]:
    """Make the outputs of these MAC layers (0 = the first conv or linear to run;
    "all": every one) extra program outputs, so a device test can compare them too.

    A wrong kernel can hide in a final output that barely moves; it cannot hide
    in the activation it computed. Returns the exposed nodes' names.
    """
    graph = program.graph_module.graph
    mac_layers = [node for node in graph.nodes if node.op == "call_function" and node_macs(node)]
    if layers == "all":
        layers = range(len(mac_layers))
    for layer in layers:
        if not 0 <= layer < len(mac_layers):
            raise ExportError(
                f"cannot expose MAC layer {layer}: the model has {len(mac_layers)} (0-based)"
            )
    chosen = [mac_layers[layer] for layer in layers]
    append_outputs(program, chosen)
    return [node.name for node in chosen]


def run_on_host(
    program: ExportedProgram,
    samples: list[Inputs],
    target: Target,
    states: Sequence[CarriedState] = (),
) -> list[tuple[torch.Tensor, ...]]:
    """Run the lowered program with the cortex_m ops' host implementations.

    These compute the device's integer arithmetic for the target's ISA tier
    (ExecuTorch's, or et_zephyr.reference's where ExecuTorch's is not exact), so
    their outputs are the bytes the device must reproduce. A stateful program
    (`states`) runs the samples as one stream, as the runtime does: from reset states,
    each run's final states the next one's inputs; its outputs are then the others.
    """
    interpreter = _NamingFailures(program.module(check_guards=False))
    carried = [state.reset() for state in states]
    outputs = []
    with torch.no_grad(), reference.installed(target.isa):
        for sample in samples:
            result = interpreter.run(*sample, *carried)
            result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            if carried:
                result, carried = result[: -len(carried)], list(result[-len(carried) :])
            outputs.append(result)
    return outputs


class _NamingFailures(Interpreter):
    """Runs the program; an operator that fails says which, at which node and model line
    (an operator's arguments the device kernel would refuse too, e.g.)."""

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__(module)
        # torch would add the graph's text to the message: the error stays one line.
        self.extra_traceback = False

    def call_function(
        self, target: CallTarget, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> object:
        # Where torch's kernel is not the device's arithmetic (int8 resizing, e.g.).
        kernel = reference.portable_kernel(target)
        if kernel is not None:
            return kernel(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def run_node(self, node: Node) -> object:
        try:
            return super().run_node(node)
        except Exception as error:
            if node.op != "call_function":
                raise
            name = out_variant_name(node) or str(node.target)
            raise ExportError(
                f"the host reference of {name} (node '{node.name}'{source_line(node)}) "
                f"failed: {first_line(error)}"
            ) from error


def plan_within_peak(
    program: ExportedProgram,
    target: Target,
    fast_arena: int | None = None,
    budget: int | None = None,
) -> ExecutorchProgramManager:
    """plan_and_serialize, then, while the plan peaks where one of et-zephyr's Helium
    convolution kernels runs, that layer given what lets the plan shrink, planned again
    for as long as the plan gets smaller: a convolution's patch scratch cut to the least
    its kernel gathers patches with (smaller chunks), a 3x3 depthwise layer CMSIS-NN's
    scratch (its output may then overlap its input, and the upstream kernel runs it).
    Speed never at the cost of the arena (firmware/kernel_scratch.py, planning/overlap.py),
    unless the plan already fits `budget` bytes: then none of this."""
    planned = plan_and_serialize(program, target, fast_arena)
    if target.isa != "mve" or fast_arena is not None:
        return planned
    layers = {
        n.name: n
        for n in program.graph_module.graph.nodes
        if n.target in (_CORTEX_M_CONV, _CORTEX_M_DEPTHWISE_CONV)
    }
    while budget is None or _planned_bytes(planned) > budget:
        final = planned.exported_program().graph_module
        live = live_at_peak(final, target.isa)
        cuts = [
            cut
            for node in final.graph.nodes
            if node.name in layers
            and (node.name in live or node.args[-1].name in live)
            and (cut := _peak_scratch(layers[node.name], target))
        ]
        if not cuts:
            return planned
        for scratch, _, size in cuts:
            resize_scratch(scratch, size)
        candidate = plan_and_serialize(program, target, fast_arena)
        if _planned_bytes(candidate) >= _planned_bytes(planned):
            for scratch, size, _ in cuts:
                resize_scratch(scratch, size)
            return planned
        planned = candidate
    return planned


def _peak_scratch(layer: Node, target: Target) -> tuple[Node, int, int] | None:
    """(scratch, its size, the size that may shrink the plan) of a layer alive where the
    plan peaks, or None."""
    scratch = layer.args[-1]
    size = scratch.meta["val"].numel()
    if layer.target == _CORTEX_M_CONV:
        floor = conv_mve_scratch_floor(layer)
        return (scratch, size, floor) if floor is not None and floor < size else None
    if depthwise_mve_scratch_bytes(layer) is None:
        return None
    # Once given, its scratch is the upstream size and nothing more is offered.
    (upstream,) = required_cmsis_nn_buffer_sizes(layer, target.config.backend)
    return (scratch, size, upstream) if upstream > size else None


def _planned_bytes(program: ExecutorchProgramManager) -> int:
    return sum(program.executorch_program.execution_plan[0].non_const_buffer_sizes[1:])


def plan_and_serialize(
    program: ExportedProgram, target: Target, fast_arena: int | None = None
) -> ExecutorchProgramManager:
    """Memory-plan activations and scratch, then serialize to a .pte.

    One planned buffer, the smaller of ExecuTorch's greedy plan and an offset-based one
    (planning/offset_planner.py, where outputs overlap inputs as the target's kernels allow), or
    with `fast_arena` two: the largest tensors in memory id 1 up to that many bytes, the
    rest in memory id 2 (planning/fast_memory.py).
    Works on a copy: the host reference keeps running the functional graph.
    """
    serialized = copy.deepcopy(program)
    as_view_copies(serialized)
    edge = EdgeProgramManager(
        {"forward": serialized},
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    planner = (
        FastFirstPlanner(fast_arena, target.isa)
        if fast_arena is not None
        else planning_suite(target.isa)
    )
    config = ExecutorchBackendConfig(
        memory_planning_pass=LayoutViewsPlanning(memory_planning_algo=planner)
    )
    try:
        return edge.to_executorch(config)
    except Exception as error:
        raise ExportError(f"serialization failed: {first_line(error)}") from error
