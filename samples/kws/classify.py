# SPDX-License-Identifier: Apache-2.0
"""A keyword model's predictions for a batch of features, and its training mode."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.fx import GraphModule
from torchao.quantization.pt2e import move_exported_model_to_eval, move_exported_model_to_train

BATCH = 256


def set_training(model: nn.Module, training: bool) -> None:
    """train() or eval(); a model after et_zephyr.api.prepare_qat is a captured graph,
    whose dropout and BatchNorm torchao switches instead."""
    if isinstance(model, GraphModule):
        (move_exported_model_to_train if training else move_exported_model_to_eval)(model)
    else:
        model.train(training)


def predict(model: nn.Module, features: np.ndarray) -> np.ndarray:
    """Class indices for features (N, 1, 49, 10); the model is put in eval mode."""
    set_training(model, False)
    inputs = torch.from_numpy(features)
    with torch.no_grad():
        logits = [model(inputs[i : i + BATCH]) for i in range(0, len(inputs), BATCH)]
    return torch.cat(logits).argmax(dim=1).numpy()
