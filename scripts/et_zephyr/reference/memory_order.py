# SPDX-License-Identifier: Apache-2.0
"""A tensor's elements in the order a device buffer holds them, and back."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def memory_order(tensor: torch.Tensor) -> list[int]:
    """The tensor's dimensions from the outermost in memory to the innermost."""
    return sorted(range(tensor.dim()), key=lambda dim: -tensor.stride(dim))


def inverse(order: Sequence[int]) -> list[int]:
    """The permutation that undoes `order`."""
    return sorted(range(len(order)), key=lambda position: order[position])


def flatten(tensor: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """The elements in memory order, and that order of the dimensions."""
    order = memory_order(tensor)
    return tensor.permute(order).contiguous().view(-1), order


def unflatten(flat: torch.Tensor, shape: Sequence[int], order: Sequence[int]) -> torch.Tensor:
    """flatten's inverse: a tensor of this logical shape whose memory is `flat`, its
    dimensions laid out in `order` (e.g. a program's dim order)."""
    physical = flat.view([shape[dim] for dim in order])
    return physical.permute(inverse(order))
