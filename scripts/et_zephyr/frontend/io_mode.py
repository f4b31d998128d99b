# SPDX-License-Identifier: Apache-2.0
"""`--io`: whether the program takes and gives float32 or the integer tensors themselves.

`float` (the default) keeps the quantize at each input and the dequantize at each output
in the program; `int8` removes them, so an application that has INT8 data (a sensor
pipeline, another model) feeds it directly and no float buffer takes RAM; `int16` does
the same for a 16x8 program's INT16 edges (`--activations int16`). The two sides can
differ: `input=int8,output=float` keeps float logits out. The graph step is
int8_edges.py; this module is only the option, so `et-export --help` imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from ..errors import ExportError

EdgeType = Literal["float", "int8", "int16"]
_TYPES: tuple[EdgeType, ...] = ("float", "int8", "int16")
_SIDES = ("input", "output")

SYNTAX = (
    "float, int8, int16, or input=float|int8|int16,output=float|int8|int16 "
    "(a side left out stays float)"
)


@dataclass(frozen=True)
class IOMode:
    """The type of the program's inputs and of its outputs (exposed activations are
    integer in every mode)."""

    inputs: EdgeType = "float"
    outputs: EdgeType = "float"

    def __str__(self) -> str:
        if self.inputs == self.outputs:
            return self.inputs
        return f"input={self.inputs},output={self.outputs}"

    def to_json(self) -> dict[str, str]:
        return {"inputs": self.inputs, "outputs": self.outputs}


def parse_io(text: str) -> IOMode:
    """An IOMode from `--io`'s text; ExportError naming the syntax when it is not one."""
    if text in _TYPES:
        edge = cast(EdgeType, text)
        return IOMode(edge, edge)
    chosen: dict[str, EdgeType] = {}
    for part in text.split(","):
        side, _, edge = part.partition("=")
        if side not in _SIDES or edge not in _TYPES or side in chosen:
            raise ExportError(f"--io '{text}' is not {SYNTAX}")
        chosen[side] = cast(EdgeType, edge)
    return IOMode(chosen.get("input", "float"), chosen.get("output", "float"))


FLOAT_IO = IOMode()
