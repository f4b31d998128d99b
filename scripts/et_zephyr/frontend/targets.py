# SPDX-License-Identifier: Apache-2.0
"""Cortex-M targets and their CMSIS-NN ISA tiers."""

from __future__ import annotations

from dataclasses import dataclass

from executorch.backends.cortex_m.library import cmsis_nn
from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig

from ..errors import ExportError

CPUS = ("m0", "m0plus", "m3", "m4", "m7", "m23", "m33", "m35p", "m55", "m85")
TARGETS = tuple(f"cortex-{cpu}" for cpu in CPUS)
ISAS = ("scalar", "dsp", "mve")
DEFAULT_TARGET = "cortex-m55"


@dataclass(frozen=True)
class Target:
    """A Cortex-M core and the CMSIS-NN ISA tier the model is lowered for."""

    name: str
    isa: str
    config: CortexMTargetConfig


def resolve_target(name: str, isa: str | None = None) -> Target:
    """Validate a target and optional ISA override as ExecuTorch does."""
    if name not in TARGETS:
        raise ExportError(f"unknown target '{name}'; choose one of: {', '.join(TARGETS)}")
    cpu = CortexM[name.removeprefix("cortex-").upper()]
    backend = None if isa is None else getattr(cmsis_nn.Backend, _isa_backend_name(isa))
    try:
        config = CortexMTargetConfig(cpu=cpu, isa=backend)
        resolved = config.backend
    except ValueError as error:
        supported = _supported_isas(cpu)
        raise ExportError(
            f"ISA '{isa}' is not available on {name}; it supports: {', '.join(supported)}"
        ) from error
    return Target(name=name, isa=resolved.name.lower(), config=config)


def _isa_backend_name(isa: str) -> str:
    if isa not in ISAS:
        raise ExportError(f"unknown ISA '{isa}'; choose one of: {', '.join(ISAS)}")
    return isa.upper()


def _supported_isas(cpu: CortexM) -> list[str]:
    supported = []
    for isa in ISAS:
        try:
            CortexMTargetConfig(cpu=cpu, isa=getattr(cmsis_nn.Backend, isa.upper()))
        except ValueError:
            continue
        supported.append(isa)
    return supported
