# SPDX-License-Identifier: Apache-2.0
"""Float DSCNN predictions for a batch of features."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

BATCH = 256


def predict(model: nn.Module, features: np.ndarray) -> np.ndarray:
    """Class indices for features (N, 1, 49, 10); the model is put in eval mode."""
    model.eval()
    inputs = torch.from_numpy(features)
    with torch.no_grad():
        logits = [model(inputs[i : i + BATCH]) for i in range(0, len(inputs), BATCH)]
    return torch.cat(logits).argmax(dim=1).numpy()
