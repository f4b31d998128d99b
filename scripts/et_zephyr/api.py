# SPDX-License-Identifier: Apache-2.0
"""The Python API of et-export; the command line is a thin layer over it.

result = export("samples/kws/model.py:kws", ExportOptions(target="cortex-m55"))
write_outputs(result, Path("build/et/kws"))
print(render_report(result))
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch.fx import GraphModule
from torchao.quantization.pt2e import move_exported_model_to_eval
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_qat_pt2e
from torchao.quantization.pt2e.quantizer import Quantizer

from . import pipeline
from .artifacts import Artifacts, TestVectors, build_artifacts, layers, test_inputs
from .artifacts.io_spec import program_io, with_program_dim_orders, without_states
from .common.timing import StepTimes
from .errors import ExportError, first_line
from .firmware.analysis import (
    int8_operators,
    int16_tensors,
    mac_totals,
    operator_stats,
    portable_arithmetic,
    portable_mac_operators,
)
from .firmware.kernel_scratch import kernels_without_fallback, plan_own_kernel_scratch
from .firmware.kernels import check_kernels
from .frontend.calibration import load_calibration_file, random_calibration
from .frontend.constant_inputs import bind_constant_inputs
from .frontend.io_mode import FLOAT_IO, IOMode
from .frontend.loading import Inputs, ModelBundle, load_model
from .frontend.streams import Stream, as_streams, concatenated, hops
from .frontend.targets import DEFAULT_TARGET, Target, resolve_target
from .passes import cortex_m_passes, int8_edges, npu
from .passes.attention import decompose_attention
from .passes.avg_pool_kernels import ceil_mode_avg_pools_to_kernel
from .passes.carried_state import CarriedState, carry_states
from .passes.causal_pads import causal_pads
from .passes.channel_shuffle import channel_shuffles
from .passes.constant_weights import check_constant_weights
from .passes.dim_order_kernels import kernels_in_dim_order
from .passes.explicit_padding import explicit_padding
from .passes.flatten_into_linear import flatten_into_linear
from .passes.float_fallback import decompose_float_preserved_ops
from .passes.glu_as_gate import glu_as_gate
from .passes.int8_edges import EdgeQuantization
from .passes.mean_as_matmul import means_to_matmuls
from .passes.one_d_as_two_d import one_d_as_two_d
from .passes.prelu_in_int8 import prelu_in_int8
from .passes.quantizer import cortex_m_quantizer
from .passes.quantizer_int16 import Int16Quantizer
from .passes.quantizer_qat import QatQuantizer
from .passes.recurrent import unroll_recurrent
from .passes.recurrent_kernels import whole_layers_to_kernels
from .passes.recurrent_layers import calibrate_cell_states, recurrent_layers_whole
from .passes.requantization import fold_constant_scales, fold_requantize_chains
from .passes.resize_kernels import bilinear_resizes_to_kernel
from .passes.spatial_means_as_pools import spatial_means_as_pools
from .passes.transpose_conv_rows import crop_transpose_conv_rows
from .passes.transpose_conv_variants import plain_transpose_convs
from .planning.compaction import compact_program
from .planning.layout_views import input_dim_orders, plan_layout_views
from .planning.memory import arena_sizes, planned_lower_bound
from .precision.search import PrecisionChoice, choose_int16_layers
from .precision.search import program_drop as precision_program_drop
from .reference import dim_orders
from .reference.verify import Agreement, compare

Warn = Callable[[str], None]
HELD_OUT_MIN = 4
# In the meta of prepare_qat's model: et-export lowers it as export_qat does.
QAT_MARK = "et_zephyr_qat"


@dataclass
class ExportOptions:
    """Everything `et-export` can be told besides the model."""

    target: str = DEFAULT_TARGET
    isa: str | None = None
    name: str | None = None
    calibration_file: Path | None = None
    calib_random: int | None = None
    verify: bool = True
    strict: bool = False
    vectors: int = 4
    generated_vectors: int = 0
    npu: str | None = None
    expose_activations: tuple[int, ...] | Literal["all"] = ()
    layer_data: bool = False
    io: IOMode = FLOAT_IO
    fast_arena: int | None = None
    # Planned bytes under which speed is not traded for a smaller plan (None: smallest).
    arena_budget: int | None = None
    kernels: str = "et-zephyr"
    # The activations' width: "int16" quantizes 16x8 (passes/quantizer_int16.py).
    activations: Literal["int8", "int16"] = "int8"
    # Layers (node names) quantized 16x8 among INT8 ones: what --precision auto chooses.
    int16_layers: tuple[str, ...] = ()
    # "auto": choose int16_layers so the held-out drop against float is within max_drop
    # (precision/search.py).
    precision: Literal["auto"] | None = None
    max_drop: float = 0.01
    # How the drop is measured: "top1" or "error" (None: top1 for class scores).
    drop_measure: Literal["top1", "error"] | None = None
    # Operators to keep in float on portable kernels (cortex_m_passes.FLOAT_OPS).
    float_ops: frozenset[str] = frozenset()
    # Every recurrent layer as its time steps (passes/recurrent.py), LSTMs and GRUs too.
    unroll_recurrent: bool = False
    # Recurrent layers' state and causal paddings' frames carried from run to run
    # (passes/carried_state.py).
    stateful: bool = False
    times: StepTimes = field(default_factory=StepTimes)
    seed: int = 0
    progress: pipeline.Progress = field(default=lambda samples: samples)
    # Wraps the layers --precision auto tries one by one (a progress bar).
    layer_progress: Callable[[list[str]], Iterable[str]] = field(default=lambda layers: layers)
    warn: Warn = field(default=lambda message: None)


def export(model: str | ModelBundle, options: ExportOptions) -> Artifacts:
    """Export a model to a Cortex-M program and everything the build needs."""
    _seed_everything(options.seed)
    step = options.times.step
    target = resolve_target(options.target, options.isa)
    _check_float_ops(options.float_ops)
    _check_stateful(options)
    _check_activations(options)
    with step("load model"):
        bundle = bind_constant_inputs(load_model(model) if isinstance(model, str) else model)
    name = options.name or _default_name(bundle)
    if isinstance(bundle.model, GraphModule) and bundle.model.meta.get(QAT_MARK):
        _check_qat_options(options)
        named = dataclasses.replace(options, name=name)
        return export_qat(bundle.model, bundle.example_inputs, named, bundle.calibration or None)
    _check_example_inputs(bundle)
    calibration, held_out = _split_data(bundle, options)
    _check_sample_shapes(bundle, calibration + held_out, options.stateful)

    npu_spec = npu.compile_spec(options.npu) if options.npu else None

    with step("capture"):
        prepared = pipeline.prepare_model(bundle.model, bundle.example_inputs, calibration)
        if prepared.channels_last:
            held_out = [pipeline.to_channels_last(sample) for sample in held_out]
        graph = pipeline.capture_graph(prepared.model, prepared.example_inputs)
    calibration_streams = as_streams(
        prepared.calibration, prepared.example_inputs, options.stateful
    )
    with step("quantize"):
        for node in pipeline.fold_batch_norm(graph):
            options.warn(f"BatchNorm '{node}' follows no Conv or Linear: it stays in float")
        pipeline.scale_alpha_operands(graph)
        # Ethos-U's quantizer knows nothing of whole layers: unrolled, they go to the NPU.
        whole_layers = not options.unroll_recurrent and npu_spec is None
        _rewrite_for_the_quantizer(graph, whole_layers=whole_layers, stateful=options.stateful)
        calibrate_cell_states(graph, calibration_streams)

    def quantize_and_lower(
        options: ExportOptions, choice: PrecisionChoice | None = None
    ) -> Artifacts:
        with options.times.step("quantize"):
            quantizer = npu.quantizer(npu_spec) if npu_spec else _quantizer(options)
            # Quantization rewrites the graph it is given; et-compare's float values need
            # it as it was, its nodes named as the quantizer's own passes rename them (a
            # whole recurrent layer's, e.g.).
            float_graph = None
            if options.layer_data or options.stateful:
                float_graph = quantizer.transform_for_annotation(copy.deepcopy(graph))
            source = copy.deepcopy(graph) if options.precision == "auto" else graph
            fake_quant = pipeline.quantize(source, quantizer, calibration_streams, options.progress)
        return _lower(
            fake_quant, prepared, held_out, target, name, options, npu_spec, float_graph, choice
        )

    if options.precision != "auto":
        return quantize_and_lower(options)

    def lowered(int16_layers: tuple[str, ...]) -> Agreement | None:
        """The agreement of the program with these layers 16x8, its warnings unsaid."""
        trial = dataclasses.replace(
            options,
            int16_layers=int16_layers,
            warn=lambda message: None,
            layer_data=False,
            times=StepTimes(),  # counted in the precision step
        )
        agreement = quantize_and_lower(trial).manifest["agreement"]
        return Agreement(**agreement) if isinstance(agreement, dict) else None

    with step("precision"):
        choice = choose_int16_layers(
            graph,
            calibration_streams,
            as_streams(held_out, prepared.example_inputs, options.stateful),
            options.max_drop,
            options.drop_measure,
            options.layer_progress,
            lowered if options.verify else lambda layers: None,
        )
    chosen = dataclasses.replace(options, int16_layers=choice.int16_layers)
    return quantize_and_lower(chosen, choice)


def prepare_qat(model: torch.nn.Module, example_inputs: Inputs) -> GraphModule:
    """A model to fine-tune with quantization-aware training, then `export_qat`.

    Uses the same quantizer as `export`, its observers as fake quantizers
    (passes/quantizer_qat.py), so training rounds as the Cortex-M kernels do and
    the ranges it learns are the ones they get. BatchNorm is folded into the Conv or Linear
    before it with its running statistics first, as `export` folds it (fine-tuning
    with them frozen; a Linear's BatchNorm has no QAT form to train through). Feed it
    channels_last batches when the model convolves (`prepared.meta["channels_last"]`
    says), and call torchao's `move_exported_model_to_train` before training.
    """
    prepared = pipeline.prepare_model(model, example_inputs, [])
    graph = pipeline.capture_graph(prepared.model.eval(), prepared.example_inputs)
    pipeline.fold_batch_norm(graph)
    _rewrite_for_the_quantizer(graph)
    qat_model = prepare_qat_pt2e(graph, QatQuantizer(cortex_m_quantizer()))
    qat_model.meta["channels_last"] = prepared.channels_last
    qat_model.meta[QAT_MARK] = True
    return qat_model


def load_qat(model: torch.nn.Module, example_inputs: Inputs, trained: Path | str) -> GraphModule:
    """`prepare_qat(model, example_inputs)` with the state of one fine-tuned before and
    saved with `torch.save(prepared.state_dict(), trained)`: what a factory returns for
    et-export to lower the QAT-trained model as `export_qat` does."""
    qat_model = prepare_qat(model, example_inputs)
    try:
        qat_model.load_state_dict(torch.load(trained, weights_only=True))
    except (OSError, RuntimeError) as error:
        raise ExportError(
            f"{trained}: not the state of this model after prepare_qat: {first_line(error)}"
        ) from error
    return qat_model


def _rewrite_for_the_quantizer(
    graph: GraphModule, whole_layers: bool = False, stateful: bool = False
) -> None:
    """The model's forms the Cortex-M quantizer does not match, as ones it does: string
    paddings, GLUs, PReLUs, the 1-D family, spatial means, flattens of channels-last
    maps into linears, channel shuffles,
    dilated, grouped and output-padded transpose convolutions, transpose convolutions
    CMSIS-NN pads wrongly, attention, recurrent layers (LSTMs and GRUs whole where they
    can be, `whole_layers`, and every one of them `stateful`, whose causal paddings carry
    their frames; QAT trains through the unrolled form), other means."""
    check_constant_weights(graph)
    if stateful:
        causal_pads(graph)
    explicit_padding(graph)
    glu_as_gate(graph)
    prelu_in_int8(graph)
    one_d_as_two_d(graph)
    spatial_means_as_pools(graph)
    flatten_into_linear(graph)
    channel_shuffles(graph)
    plain_transpose_convs(graph)
    crop_transpose_conv_rows(graph)
    decompose_attention(graph)
    if whole_layers:
        recurrent_layers_whole(graph, stateful)
    unroll_recurrent(graph)
    means_to_matmuls(graph)


def export_qat(
    trained: GraphModule,
    example_inputs: Inputs,
    options: ExportOptions,
    held_out: list[Inputs] | None = None,
) -> Artifacts:
    """Lower a model trained after `prepare_qat` like `export` does.

    The fake-quant model stands in for the float one in the agreement report:
    after QAT there is no separate float model.
    """
    _seed_everything(options.seed)
    target = resolve_target(options.target, options.isa)
    _check_float_ops(options.float_ops)
    samples = held_out or random_calibration(HELD_OUT_MIN, example_inputs, options.seed + 1)
    if trained.meta.get("channels_last"):
        example_inputs = pipeline.to_channels_last(example_inputs)
        samples = [pipeline.to_channels_last(sample) for sample in samples]
    fake_quant = convert_pt2e(move_exported_model_to_eval(trained))
    prepared = pipeline.Prepared(fake_quant, example_inputs, [], trained.meta["channels_last"])
    return _lower(fake_quant, prepared, samples, target, options.name or "model", options)


def _lower(
    fake_quant: GraphModule,
    prepared: pipeline.Prepared,
    held_out: list[Inputs],
    target: Target,
    name: str,
    options: ExportOptions,
    npu_spec: object | None = None,
    float_graph: GraphModule | None = None,
    precision: PrecisionChoice | None = None,
) -> Artifacts:
    step = options.times.step
    fold_constant_scales(fake_quant)
    fold_requantize_chains(fake_quant)
    with step("to_edge"):
        if npu_spec is None:
            edge = pipeline.to_edge_dialect(fake_quant, prepared.example_inputs)
            edge, quantized_edges = int8_edges.take_int8_edges(edge, options.io)
        elif options.io != FLOAT_IO:
            raise ExportError(f"--io {options.io} does not work with --npu yet")
        else:
            edge = npu.delegate_to_npu(fake_quant, prepared.example_inputs, npu_spec)
            quantized_edges = EdgeQuantization()
    with step("lowering"):
        lowered = decompose_float_preserved_ops(
            pipeline.lower_to_cortex_m(edge, target, options.float_ops)
        )
        pipeline.remove_noop_pads(lowered)
        pipeline.convolve_single_channel_inputs(lowered, target)
        # Before the float weights it leaves behind are dropped.
        whole_layers_to_kernels(lowered)
        pipeline.drop_unused_constants(lowered)
        bilinear_resizes_to_kernel(lowered)
        ceil_mode_avg_pools_to_kernel(lowered, target)
        kernels_in_dim_order(lowered)
        dim_orders.default_dim_order_for_portable(lowered)
        # After the dim orders are final: the kernel runs channels-last tensors only.
        scratch_for = plan_own_kernel_scratch(lowered, target, options.kernels)
        exposed = pipeline.expose_activations(lowered, options.expose_activations)
        # Last: the runtime takes a program's last inputs and outputs for its states.
        states = carry_states(lowered) if options.stateful else []
        check_kernels(lowered)
        plan_layout_views(lowered)
        io = without_states(program_io(lowered, quantized_edges), len(states))
    held_out_streams = as_streams(held_out, prepared.example_inputs, options.stateful)
    vectors = None
    host_held_out: list[tuple[torch.Tensor, ...]] = []
    if npu_spec is None:
        # The host cannot run the NPU's part: no reference for a delegated program.
        with step("host reference"):
            # Run once for what the verification and the stored test vectors both need:
            # each held-out stream from reset states, its hops in order.
            needed = len(held_out) if options.verify else max(0, options.vectors - 1)
            for stream in held_out_streams[:needed]:
                host_held_out += pipeline.run_on_host(
                    lowered,
                    [int8_edges.program_inputs(hop, quantized_edges) for hop in stream],
                    target,
                    states,
                )
            vectors = _test_vectors(
                lowered,
                prepared.example_inputs,
                held_out_streams,
                host_held_out,
                target,
                options,
                quantized_edges,
                states,
            )
    layer_data = None
    if options.layer_data:
        if vectors is None or float_graph is None:
            raise ExportError("--layer-data needs a float model and a host reference (no --npu)")
        origins = layers.origins(lowered, exposed, fake_quant)
        values = layers.layer_values(
            origins, fake_quant, float_graph, vectors.float_inputs, stream=bool(states)
        )
        layer_data = (origins, values)
    agreement = None
    if options.verify and npu_spec is None:
        with step("verification"), torch.no_grad():
            # A stateful model's float layers run each stream carrying their state, as
            # the program does; the model's own would start every hop from nothing.
            float_model = float_graph if states and float_graph else prepared.model
            agreement = compare(
                [int8_edges.float_outputs(o, quantized_edges)[0] for o in host_held_out],
                [_first(r) for s in held_out_streams for r in pipeline.run_stream(fake_quant, s)],
                [_first(r) for s in held_out_streams for r in pipeline.run_stream(float_model, s)],
                io[1][0].scale,
            )
            if float_model is fake_quant:  # export_qat's: no float model but the trained one
                agreement = dataclasses.replace(agreement, reference="the QAT model")
    with step("memory planning and serialization"):
        program = pipeline.plan_within_peak(
            lowered, target, options.fast_arena, options.arena_budget
        )
        # After planning, which may have given a layer the upstream kernel's scratch.
        without_fallback = kernels_without_fallback(lowered, target, options.kernels)
        pte, serialized = compact_program(program.buffer)
        final_graph = program.exported_program().graph_module
    with step("report"):
        stats = operator_stats(final_graph) | npu.delegate_stats(program.exported_program())
        stranded = portable_mac_operators(stats)
        if stranded:
            _warn_or_refuse(
                f"MAC-bearing operators left on portable kernels: {', '.join(stranded)}", options
            )
        arithmetic = portable_arithmetic(stats)
        if arithmetic:
            _warn_or_refuse(
                f"operators left in float on portable kernels: {', '.join(arithmetic)} "
                "(their float rounding on the device may differ from the host reference's)",
                options,
            )
        program_drop = (
            precision_program_drop(precision.measure, agreement)
            if precision and agreement
            else None
        )
        if precision and program_drop is not None and program_drop > precision.max_drop:
            # Even with every candidate in 16x8 (the search stops at the first set whose
            # program is within).
            _warn_or_refuse(
                f"--precision auto: the program is {100 * program_drop:.2f} % from the float "
                f"model, above --max-drop {100 * precision.max_drop:g} % with every layer "
                "that has an s16 kernel in 16x8",
                options,
            )
        int8 = int8_operators(final_graph) if options.activations == "int16" else []
        if int8:
            options.warn(
                f"no 16x8 kernel for {', '.join(int8)}: they run INT8, converted from and to "
                "INT16 where they meet"
            )
        return build_artifacts(
            name=name,
            target=target,
            pte=pte,
            io=with_program_dim_orders(io, serialized.execution_plan[0]),
            stats=stats,
            macs=mac_totals(stats),
            arenas=arena_sizes(serialized.execution_plan[0], target.isa),
            lower_bound=planned_lower_bound(final_graph, target.isa),
            vectors=vectors,
            agreement=agreement,
            npu=options.npu,
            exposed=exposed,
            layer_data=layer_data,
            io_mode=options.io,
            states=states,
            scratch_for=scratch_for,
            kernels_without_fallback=without_fallback,
            int16_tensors=int16_tensors(final_graph),
            precision=precision.to_json(program_drop) if precision else None,
        )


def _test_vectors(
    lowered: torch.export.ExportedProgram,
    example_inputs: Inputs,
    held_out: list[Stream],
    host_held_out: list[tuple[torch.Tensor, ...]],
    target: Target,
    options: ExportOptions,
    quantized_edges: EdgeQuantization,
    states: list[CarriedState],
) -> TestVectors:
    """Stored test inputs (the example and held-out ones), then those the firmware
    generates (float32, quantized by the firmware where an input is INT8), with the host
    reference for all of them; `host_held_out` is the reference for the first held-out
    inputs, already run. A stateful program's vectors are hops of the held-out streams
    and then generated ones, all one stream from reset states, as the firmware runs them."""
    hops = concatenated([[example_inputs], *held_out])
    stored = hops[: options.vectors]
    recipes = test_inputs.recipes(hops, options.generated_vectors, options.seed)
    orders = input_dim_orders(lowered)
    generated = [test_inputs.materialize(row, example_inputs, orders) for row in recipes]
    samples = stored + generated
    program_samples = [int8_edges.program_inputs(sample, quantized_edges) for sample in samples]
    if states:
        outputs = pipeline.run_on_host(lowered, program_samples, target, states)
    else:
        reused = host_held_out[: len(stored) - 1]
        fresh = [program_samples[0], *program_samples[1 + len(reused) :]]
        first, *rest = pipeline.run_on_host(lowered, fresh, target)
        outputs = [first, *reused, *rest]
    return TestVectors(program_samples, outputs, [None] * len(stored) + list(recipes), samples)


def _warn_or_refuse(message: str, options: ExportOptions) -> None:
    """A warning, or with --strict the export's error."""
    if options.strict:
        raise ExportError(message + " (--strict)")
    options.warn(message)


def _quantizer(options: ExportOptions) -> Quantizer:
    if options.activations == "int16":
        return Int16Quantizer()
    if options.int16_layers:
        return Int16Quantizer(options.int16_layers)
    return cortex_m_quantizer()


def _check_float_ops(names: frozenset[str]) -> None:
    unknown = sorted(names - set(cortex_m_passes.FLOAT_OPS))
    if unknown:
        raise ExportError(
            f"--float-ops: no integer lowering named {', '.join(unknown)} "
            f"(one of: {', '.join(cortex_m_passes.FLOAT_OPS)})"
        )


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _default_name(bundle: ModelBundle) -> str:
    return bundle.source.stem if bundle.source is not None else "model"


def _split_data(bundle: ModelBundle, options: ExportOptions) -> tuple[list[Inputs], list[Inputs]]:
    """Calibration samples, and held-out samples that calibration never saw."""
    if options.calibration_file is not None:
        samples = load_calibration_file(options.calibration_file, bundle.example_inputs)
    elif options.calib_random is not None:
        options.warn(
            f"calibrating on {options.calib_random} random inputs: "
            "the quantized model's accuracy is meaningless"
        )
        samples = random_calibration(options.calib_random, bundle.example_inputs, options.seed)
    elif bundle.calibration:
        samples = list(bundle.calibration)
    else:
        raise ExportError(
            "no calibration data: return it from the factory, or pass --calib FILE "
            "or --calib-random N"
        )
    if len(samples) >= 2 * HELD_OUT_MIN:
        cut = len(samples) - max(HELD_OUT_MIN, len(samples) // 4)
        return samples[:cut], samples[cut:]
    synthetic = random_calibration(HELD_OUT_MIN, bundle.example_inputs, options.seed + 1)
    return samples, synthetic


def _check_example_inputs(bundle: ModelBundle) -> None:
    """Run the float model once so shape mistakes surface as one clear line."""
    try:
        with torch.no_grad():
            pipeline.to_inference_mode(bundle.model)(*bundle.example_inputs)
    except Exception as error:
        shapes = ", ".join(str(tuple(t.shape)) for t in bundle.example_inputs)
        raise ExportError(
            f"the model rejects its example inputs of shape {shapes}: {first_line(error)}"
        ) from error


def _check_activations(options: ExportOptions) -> None:
    if options.precision == "auto" and (options.activations == "int16" or options.int16_layers):
        raise ExportError("--precision auto chooses the 16x8 layers itself: not with --activations")
    if options.precision == "auto" and options.npu:
        raise ExportError("--precision auto does not work with --npu yet")
    if options.precision == "auto" and not 0.0 <= options.max_drop < 1.0:
        raise ExportError(f"--max-drop {options.max_drop:g}: a fraction, from 0 to below 1")
    if options.activations != "int16" and not options.int16_layers:
        return
    if options.npu:
        raise ExportError("--activations int16 runs on CMSIS-NN's s16 kernels: not with --npu")


def _check_qat_options(options: ExportOptions) -> None:
    """A model trained after prepare_qat is INT8 with the ranges it learned."""
    flags = {
        "--activations int16": options.activations == "int16" or bool(options.int16_layers),
        "--precision auto": options.precision == "auto",
        "--calib": options.calibration_file is not None,
        "--calib-random": options.calib_random is not None,
        "--npu": options.npu is not None,
        "--stateful": options.stateful,
    }
    for flag, given in flags.items():
        if given:
            raise ExportError(
                f"{flag} does not apply to a model trained after prepare_qat: "
                "it is INT8, with the ranges it learned"
            )


def _check_stateful(options: ExportOptions) -> None:
    if options.stateful and (options.unroll_recurrent or options.npu):
        flag = "--unroll-recurrent" if options.unroll_recurrent else "--npu"
        raise ExportError(f"--stateful carries whole layers' state: it does not work with {flag}")


def _check_sample_shapes(bundle: ModelBundle, samples: list[Inputs], stateful: bool) -> None:
    expected = [tuple(t.shape) for t in bundle.example_inputs]
    if stateful:
        for sample in samples:
            hops(sample, bundle.example_inputs)  # a whole number of hops, or an error
        return
    for sample in samples:
        if [tuple(t.shape) for t in sample] != expected:
            got = [tuple(t.shape) for t in sample]
            raise ExportError(f"a calibration sample has shapes {got}, expected {expected}")


def _first(result: object) -> torch.Tensor:
    return result[0] if isinstance(result, (tuple, list)) else result  # type: ignore[return-value]
