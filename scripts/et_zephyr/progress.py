# SPDX-License-Identifier: Apache-2.0
"""Progress bars for the long steps, shown only on a terminal."""

from __future__ import annotations

from collections.abc import Iterable

from tqdm import tqdm

from .loading import Inputs


def calibration_progress(samples: Iterable[Inputs]) -> Iterable[Inputs]:
    return tqdm(samples, desc="calibrating", unit="sample", leave=False, disable=None)
