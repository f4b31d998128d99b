# SPDX-License-Identifier: Apache-2.0
"""Progress bars for the long steps, shown only on a terminal."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from tqdm import tqdm

Sample = TypeVar("Sample")


def calibration_progress(samples: Iterable[Sample]) -> Iterable[Sample]:
    return tqdm(samples, desc="calibrating", unit="sample", leave=False, disable=None)
