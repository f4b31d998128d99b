# SPDX-License-Identifier: Apache-2.0
"""Transformer encoders written the usual PyTorch ways, for the device = host tests.

Each factory returns (model, example input, calibration samples): pre-norm encoder
blocks (LayerNorm, attention, a residual add, LayerNorm, an MLP with GELU, a residual
add), a mean over the tokens and a linear head. Attention is written three ways:
explicit `softmax(q @ kᵀ / √d) @ v`, `F.scaled_dot_product_attention` and
`nn.MultiheadAttention(batch_first=True)`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


class ExplicitAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class FunctionalAttention(ExplicitAttention):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class ModuleAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attention(x, x, x, need_weights=False)[0]


class Block(nn.Module):
    def __init__(self, attention: nn.Module, width: int, gelu: str) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attention = attention
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 2 * width), nn.GELU(approximate=gelu), nn.Linear(2 * width, width)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Encoder(nn.Module):
    def __init__(
        self, attention: type[nn.Module], blocks: int, width: int, heads: int, gelu: str
    ) -> None:
        super().__init__()
        self.blocks = nn.Sequential(
            *(Block(attention(width, heads), width, gelu) for _ in range(blocks))
        )
        self.head = nn.Linear(width, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x).mean(dim=1))


def _bundle(model: nn.Module, tokens: int, width: int) -> tuple:
    generator = torch.Generator().manual_seed(1)
    samples = [(torch.randn(1, tokens, width, generator=generator),) for _ in range(24)]
    return model.eval(), samples[0], samples


def transformer() -> tuple:
    """The one-block encoder of issue 13: 16 tokens of width 32, two heads."""
    torch.manual_seed(0)
    return _bundle(Encoder(ExplicitAttention, 1, 32, 2, "none"), 16, 32)


def transformer_sdpa() -> tuple:
    """Two blocks of width 64 over 49 tokens, four heads, scaled_dot_product_attention,
    tanh GELU."""
    torch.manual_seed(0)
    return _bundle(Encoder(FunctionalAttention, 2, 64, 4, "tanh"), 49, 64)


def transformer_mha() -> tuple:
    """Two blocks of width 32 over 49 tokens, nn.MultiheadAttention."""
    torch.manual_seed(0)
    return _bundle(Encoder(ModuleAttention, 2, 32, 4, "none"), 49, 32)
