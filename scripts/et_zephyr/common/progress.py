# SPDX-License-Identifier: Apache-2.0
"""Progress bars for the long steps, shown only on a terminal."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from tqdm import tqdm

Sample = TypeVar("Sample")


def calibration_progress(samples: Iterable[Sample]) -> Iterable[Sample]:
    return tqdm(samples, desc="calibrating", unit="sample", leave=False, disable=None)


def layer_progress(layers: Iterable[Sample]) -> Iterable[Sample]:
    """--precision auto's trials, a layer at a time."""
    return tqdm(layers, desc="trying 16x8 layers", unit="layer", leave=False, disable=None)
