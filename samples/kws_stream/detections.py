# SPDX-License-Identifier: Apache-2.0
"""When the stream's scores name a keyword: src/detector.c's rule, for the host's side.

A keyword is heard at the frame where, for HOLD_FRAMES frames running, it has been the
best-scoring class by at least MARGIN over every other (float32 scores, the program's
dequantized logits: the difference is exact on both sides); it is heard again only
after another class has been best. Silence and unknown speech are never heard. Ties go
to the lower class.
"""

from __future__ import annotations

import numpy as np
from model import LABELS

HOLD_FRAMES = 5
MARGIN = 2.0  # in logits: the keyword's probability at least e^2 = 7.4 times any other's
NOT_KEYWORDS = (LABELS.index("_silence_"), LABELS.index("_unknown_"))


def detect(scores: np.ndarray) -> list[tuple[int, int]]:
    """(frame, class) of every detection in (frames, classes) float32 scores."""
    found = []
    best_before, run = -1, 0
    for frame, row in enumerate(scores.astype(np.float32)):
        best = int(np.argmax(row))  # the first of equal maxima, as the firmware's loop
        clear = row[best] - np.max(np.delete(row, best)) >= np.float32(MARGIN)
        run = run + 1 if best == best_before and clear else (1 if clear else 0)
        best_before = best
        if run == HOLD_FRAMES and best not in NOT_KEYWORDS:
            found.append((frame, best))
    return found
