# SPDX-License-Identifier: Apache-2.0
"""Generate the .pte fixtures of the lib/ host tests.

Usage: python3 gen_fixtures.py OUT_DIR

Writes into OUT_DIR:
  affine_relu.pte   forward(x: float32[2, 3]) = relu(x * 2 + 1), portable ops only
  missing_op.pte    forward(x: float32[4]) = etz_test::frobnicate(x) + 1, an operator
                    no kernel is registered for on the host
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from executorch.exir import EdgeCompileConfig, to_edge


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


def export(module: torch.nn.Module, example: tuple[torch.Tensor, ...], out: Path) -> None:
    ep = torch.export.export(module, example)
    edge = to_edge(ep, compile_config=EdgeCompileConfig(_check_ir_validity=False))
    out.write_bytes(edge.to_executorch().buffer)


def main() -> int:
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    export(AffineRelu(), (torch.zeros(2, 3),), out_dir / "affine_relu.pte")
    export(MissingOp(), (torch.zeros(4),), out_dir / "missing_op.pte")
    return 0


if __name__ == "__main__":
    sys.exit(main())
