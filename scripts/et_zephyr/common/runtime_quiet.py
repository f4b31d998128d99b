# SPDX-License-Identifier: Apache-2.0
"""Keep the PyTorch stack's import chatter and deprecation notes off the terminal.

torchao logs each optional CUDA extension it cannot load, torch and
ExecuTorch warn about their own internal deprecations, and torch's fake
tensors log the traceback of an operator that fails before raising it: noise
to a user who asked for a report (a failure is still told, in one line).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet_imports() -> Iterator[None]:
    # torch resets its loggers' levels on import, so silence logging as a whole.
    previous = logging.root.manager.disable
    logging.disable(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)
