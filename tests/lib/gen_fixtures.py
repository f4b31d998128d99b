# SPDX-License-Identifier: Apache-2.0
"""Generate the .pte fixtures of the lib/ host tests.

Usage: python3 gen_fixtures.py OUT_DIR
       python3 gen_fixtures.py --hostile KIND OUT.pte [IN.pte]
           one hostile program (tests/api): KIND offset, size or io_dtype edits IN.pte,
           scratch edits conv.pte

Writes into OUT_DIR:
  affine_relu.pte   forward(x: float32[2, 3]) = relu(x * 2 + 1), portable ops only
  missing_op.pte    forward(x: float32[4]) = etz_test::frobnicate(x) + 1, an operator
                    no kernel is registered for on the host
  accumulator.pte   forward(x: int16[4], s: int16[4]) = (x + s, x + s): a stateful
                    program's form (its last input and output a state the runtime
                    carries), on portable operators
  conv.pte          a CMSIS-NN convolution (et-export for cortex-m3, scalar tier: the
                    host's CMSIS-NN scratch sizes) with its planned scratch tensor
and hostile programs that pass the flatbuffer verifier, made by editing an exported
program with ExecuTorch's own schema classes (executorch.exir._serialize):
  hostile_offset.pte      affine_relu with a planned tensor moved past the end of its buffer
  hostile_size.pte        affine_relu with a planned tensor of shape [65536, 65536] float32
                          (16 GiB: in 32-bit arithmetic its byte size wraps to 0)
  hostile_io_dtype.pte    affine_relu whose input is int8 instead of float32
  hostile_scratch.pte     conv.pte with its scratch tensor half the size CMSIS-NN needs
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from et_zephyr.api import ExportOptions
from et_zephyr.api import export as et_export
from et_zephyr.frontend.loading import ModelBundle
from et_zephyr.planning.fast_memory import FastFirstPlanner
from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge
from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
from executorch.exir.passes.memory_planning_pass import MemoryPlanningPass
from executorch.exir.schema import Tensor


class AffineRelu(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * 2.0 + 1.0)


_LIB = torch.library.Library("etz_test", "DEF")
_LIB.define("frobnicate(Tensor x) -> Tensor")
_LIB.define("frobnicate.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")


@torch.library.impl(_LIB, "frobnicate", "CompositeExplicitAutograd")
def _frobnicate(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@torch.library.impl(_LIB, "frobnicate.out", "CompositeExplicitAutograd")
def _frobnicate_out(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    out.copy_(x)
    return out


class MissingOp(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.etz_test.frobnicate(x) + 1.0


class Accumulator(torch.nn.Module):
    """The running sum of its inputs, when the runtime feeds output 1 back as input 1."""

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        total = x + state
        return total, total.clone()


def export(
    module: torch.nn.Module,
    example: tuple[torch.Tensor, ...],
    out: Path,
    config: ExecutorchBackendConfig | None = None,
) -> None:
    ep = torch.export.export(module, example)
    edge = to_edge(ep, compile_config=EdgeCompileConfig(_check_ir_validity=False))
    out.write_bytes(edge.to_executorch(config).buffer)


class AffineChain(torch.nn.Module):
    """y = relu(2x + 1), z = 3y - 2, out = z + y: several intermediate tensors to plan."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x * 2.0 + 1.0)
        return (y * 3.0 - 2.0) + y


def export_two_buffers(out: Path) -> None:
    """AffineChain planned as et-export --fast-arena 40 plans: one 24-byte tensor in
    memory id 1, the rest in memory id 2."""
    planner = MemoryPlanningPass(memory_planning_algo=FastFirstPlanner(40))
    export(
        AffineChain(),
        (torch.zeros(2, 3),),
        out,
        ExecutorchBackendConfig(memory_planning_pass=planner),
    )


class Conv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def export_conv(out: Path) -> None:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(1, 2, 6, 6, generator=generator),) for _ in range(8)]
    bundle = ModelBundle(Conv().eval(), calibration[0], calibration)
    artifacts = et_export(bundle, ExportOptions(target="cortex-m3"))
    out.write_bytes(next(v for k, v in artifacts.files.items() if k.endswith(".pte")))


def _planned_tensors(plan) -> list[Tensor]:
    return [
        v.val
        for v in plan.values
        if isinstance(v.val, Tensor) and v.val.allocation_info is not None
    ]


def hostile(kind: str, pte: bytes) -> bytes:
    """@p pte with one defect of @p kind that ExecuTorch's flatbuffer verifier accepts."""
    program = deserialize_pte_binary(pte)
    plan = program.program.execution_plan[0]
    planned = _planned_tensors(plan)
    if kind == "offset":
        # The last planned tensor of the first buffer, placed to end 16 bytes past it.
        t = max(
            (t for t in planned if t.allocation_info.memory_id == 1),
            key=lambda t: t.allocation_info.memory_offset_low,
        )
        numel = 1
        for s in t.sizes:
            numel *= s
        nbytes = numel * {0: 1, 1: 1, 3: 4, 6: 4}[int(t.scalar_type)]
        t.allocation_info.memory_offset_low = plan.non_const_buffer_sizes[1] - nbytes + 16
    elif kind == "size":
        t = next(t for t in planned if len(t.sizes) == 2)
        t.sizes = [65536, 65536]
        t.dim_order = [0, 1]
    elif kind == "io_dtype":
        t = plan.values[plan.inputs[0]].val
        t.scalar_type = type(t.scalar_type)(1)  # int8
    elif kind == "scratch":
        op = next(i for i, o in enumerate(plan.operators) if o.name.endswith("quantized_conv2d"))
        call = next(
            ins.instr_args
            for chain in plan.chains
            for ins in chain.instructions
            if getattr(ins.instr_args, "op_index", None) == op
        )
        t = plan.values[call.args[12]].val  # the scratch argument
        t.sizes = [t.sizes[0] // 2]
    else:
        raise SystemExit(f"gen_fixtures: unknown hostile kind {kind!r}")
    return bytes(serialize_pte_binary(program))


def main() -> int:
    if sys.argv[1] == "--hostile":
        kind, dst = sys.argv[2:4]
        if kind == "scratch":
            export_conv(Path(dst))
            src = dst
        else:
            src = sys.argv[4]
        Path(dst).write_bytes(hostile(kind, Path(src).read_bytes()))
        return 0
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    export(AffineRelu(), (torch.zeros(2, 3),), out_dir / "affine_relu.pte")
    export(MissingOp(), (torch.zeros(4),), out_dir / "missing_op.pte")
    # Two tensors: one passed twice would be one input of the program.
    x, state = torch.zeros(4, dtype=torch.int16), torch.zeros(4, dtype=torch.int16)
    export(Accumulator(), (x, state), out_dir / "accumulator.pte")
    export_conv(out_dir / "conv.pte")
    export_two_buffers(out_dir / "two_buffers.pte")
    affine = (out_dir / "affine_relu.pte").read_bytes()
    for kind in ("offset", "size", "io_dtype"):
        (out_dir / f"hostile_{kind}.pte").write_bytes(hostile(kind, affine))
    (out_dir / "hostile_scratch.pte").write_bytes(
        hostile("scratch", (out_dir / "conv.pte").read_bytes())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
