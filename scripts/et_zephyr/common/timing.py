# SPDX-License-Identifier: Apache-2.0
"""Wall time per export step, for benchmarks/export.py and anyone tuning an export."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class StepTimes:
    """Seconds spent in each named step, in the order the steps first ran (a step that
    runs twice adds up)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed
