# SPDX-License-Identifier: Apache-2.0
"""Calibration data: from the factory, from .npz/.npy files, or random."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..errors import ExportError
from .loading import Inputs


def load_calibration_file(path: Path, example_inputs: Inputs) -> list[Inputs]:
    """Read samples stacked along the first axis, one array per model input.

    An .npy file holds the only input; an .npz file holds one array per input,
    taken in the order the arrays were saved.
    """
    if not path.is_file():
        raise ExportError(f"calibration file not found: {path}")
    try:
        loaded = np.load(path, allow_pickle=False)
        arrays = [loaded] if isinstance(loaded, np.ndarray) else [loaded[k] for k in loaded.files]
    except (OSError, ValueError) as error:
        raise ExportError(f"{path} is not a readable .npy/.npz file: {error}") from error
    if len(arrays) != len(example_inputs):
        raise ExportError(
            f"{path} holds {len(arrays)} arrays but the model takes {len(example_inputs)} inputs"
        )
    for index, (array, example) in enumerate(zip(arrays, example_inputs)):
        if tuple(array.shape[1:]) != tuple(example.shape):
            raise ExportError(
                f"{path}: input {index} samples have shape {tuple(array.shape[1:])}, "
                f"the model expects {tuple(example.shape)}"
            )
    count = len(arrays[0])
    if any(len(array) != count for array in arrays):
        raise ExportError(f"{path}: the arrays hold different numbers of samples")
    return [
        tuple(
            torch.from_numpy(np.ascontiguousarray(array[i])).to(example.dtype)
            for array, example in zip(arrays, example_inputs)
        )
        for i in range(count)
    ]


def random_calibration(count: int, example_inputs: Inputs, seed: int) -> list[Inputs]:
    """Samples drawn around each example input's own mean and spread."""
    generator = torch.Generator().manual_seed(seed)
    samples = []
    for _ in range(count):
        sample = []
        for example in example_inputs:
            values = example.float()
            spread = values.std().item() if values.numel() > 1 else 1.0
            noise = torch.randn(example.shape, generator=generator)
            sample.append((values.mean() + noise * (spread or 1.0)).to(example.dtype))
        samples.append(tuple(sample))
    return samples
