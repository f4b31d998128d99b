# SPDX-License-Identifier: Apache-2.0
"""Load the user's model: a Python factory or a saved torch.export program."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..errors import ExportError

Inputs = tuple[torch.Tensor, ...]
# Example inputs that may be Python numbers: they become constants (frontend/constant_inputs.py).
NUMBERS = (bool, int, float)


@dataclass
class ModelBundle:
    """What et-export works on: a module, example inputs and calibration data."""

    model: torch.nn.Module
    example_inputs: Inputs
    calibration: list[Inputs] = field(default_factory=list)
    source: Path | None = None


def load_model(spec: str) -> ModelBundle:
    """Load `path/to/file.py:factory` or `path/to/program.pt2`."""
    if spec.endswith(".pt2"):
        return _load_exported_program(Path(spec))
    path_text, sep, factory_name = spec.rpartition(":")
    if not sep or not path_text.endswith(".py") or not factory_name:
        raise ExportError(
            f"model '{spec}' is neither 'path/to/file.py:factory' nor a '.pt2' program"
        )
    return _load_factory(Path(path_text), factory_name)


def _load_factory(path: Path, factory_name: str) -> ModelBundle:
    if not path.is_file():
        raise ExportError(f"model file not found: {path}")
    module_name = f"_et_zephyr_model_{uuid.uuid4().hex}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:
        raise ExportError(f"importing {path} failed: {_describe(error)}") from error
    finally:
        del sys.modules[module_name]
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ExportError(f"{path} has no function '{factory_name}'")
    try:
        result = factory()
    except Exception as error:
        raise ExportError(f"{path}:{factory_name}() raised {_describe(error)}") from error
    return _bundle_from_factory_result(result, f"{path}:{factory_name}", path)


def _bundle_from_factory_result(result: object, where: str, path: Path) -> ModelBundle:
    if not isinstance(result, tuple) or len(result) not in (2, 3):
        raise ExportError(
            f"{where}() must return (model, example_inputs) or "
            "(model, example_inputs, calibration_inputs)"
        )
    model, example_inputs = result[0], _as_inputs(result[1], where, "example inputs")
    if not isinstance(model, torch.nn.Module):
        raise ExportError(f"{where}() returned a {type(model).__name__}, not a torch.nn.Module")
    calibration = []
    if len(result) == 3 and result[2] is not None:
        calibration = [_as_inputs(sample, where, "calibration inputs") for sample in result[2]]
    return ModelBundle(model, example_inputs, calibration, path)


def _as_inputs(value: object, where: str, what: str) -> Inputs:
    """Tensors (dense copies); Python numbers pass through, to become constants of the
    program (frontend/constant_inputs.py)."""
    if isinstance(value, torch.Tensor):
        value = (value,)
    if isinstance(value, (tuple, list)) and all(
        isinstance(v, (torch.Tensor, *NUMBERS)) for v in value
    ):
        return tuple(_dense(v) if isinstance(v, torch.Tensor) else v for v in value)  # type: ignore[misc]
    raise ExportError(f"{where}(): {what} must be a tensor or a tuple of tensors (and numbers)")


def _dense(tensor: torch.Tensor) -> torch.Tensor:
    """A copy with ordinary strides: a view's odd strides on size-1 dimensions
    (e.g. numpy's `a[np.newaxis]` gives 0) would reach the program, which
    cannot represent them."""
    return tensor.detach().clone(memory_format=torch.contiguous_format)


def _load_exported_program(path: Path) -> ModelBundle:
    if not path.is_file():
        raise ExportError(f"model file not found: {path}")
    try:
        program = torch.export.load(path)
    except Exception as error:
        raise ExportError(f"{path} is not a torch.export program: {_describe(error)}") from error
    example = program.example_inputs
    if example is None:
        raise ExportError(f"{path} was saved without example inputs; re-export it with them")
    args, _ = example
    return ModelBundle(program.module(check_guards=False), tuple(args), [], path)


def _describe(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
