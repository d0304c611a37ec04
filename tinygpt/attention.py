"""Scaled dot-product attention, written out, and the masks that decide who may look at whom.

Shape legend (used in every comment below):
    B batch, H heads, T query positions, S key positions (S == T without a KV cache), D head_dim = hidden_dim / H.

Mask convention, stated once and tested: a mask is a bool tensor (T, S) where True means "query t MAY attend to
key s". Disallowed scores are filled with -inf before the softmax, so they get exactly zero weight (a finite constant
like -1e4 can be out-learned at a high learning rate: minGPT#75, huggingface/transformers#17121).

The model's explicit path (the one the app visualises, model.MultiHeadAttention.forward) is these pieces in
order: `attention_scores`, `apply_mask`, `scores_to_weights`, then weights @ v; `attention()` is the same written as
one function, the reference the tests hold `fused_attention()` to. `fused_attention()` calls torch's
`F.scaled_dot_product_attention`, which never materialises the weights, for training steps that need none;
tests/test_attention.py proves both give the same values and gradients.

Left out: dropout inside attention on the fused path when weights are requested, ALiBi/rotary biases, padding masks
(every sequence here is full length).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .config import MASKS


def build_mask(mode: str, size: int, window: int = 16, device: torch.device | str | None = None) -> torch.Tensor:
    """The (T, T) bool matrix of a mask mode; True = query row may attend to key column."""
    return mask_rows(mode, 0, size, window, device)


def mask_rows(mode: str, past: int, new: int, window: int = 16, device=None) -> torch.Tensor:
    """Mask rows for `new` queries that follow `past` cached positions: (new, past + new).

    These are the last `new` rows of the full (S, S) mask, S = past + new; built directly, because a KV cache asks
    for one row per generated token and building S x S to keep one row would cost O(S^2) per token.
    """
    row = torch.arange(past, past + new, device=device).unsqueeze(1)  # (T, 1) query positions t
    col = torch.arange(past + new, device=device).unsqueeze(0)  # (1, S) key positions s
    if mode == "causal":
        return col <= row  # s <= t: the past and the present, never the future
    if mode == "none":
        return torch.ones(new, past + new, dtype=torch.bool, device=device)  # everyone sees everything
    if mode == "off_by_one":
        # The classic misaligned tril(diagonal=1): position t also sees t+1, the very token it must predict.
        return col <= row + 1
    if mode == "sliding_window":
        return (col <= row) & (col > row - window)  # causal, and only the last `window` positions
    raise ValueError(f"unknown mask mode {mode!r}; choose one of {', '.join(MASKS)}")


def scores_to_weights(scores: torch.Tensor, softmax: str = "stable") -> torch.Tensor:
    """Softmax over the key axis (last dim) of already-masked scores (-inf where masked)."""
    if softmax == "stable":
        # exp(x - max) == exp(x) / exp(max): the same weights, but exp never sees a positive number,
        # so it cannot overflow. torch.softmax does this subtraction internally.
        return torch.softmax(scores, dim=-1)
    if softmax == "naive":
        # Plain exp: a score above ~88 overflows float32 to inf, and inf / inf = NaN. Kept to show why.
        exps = torch.exp(scores)
        return exps / exps.sum(dim=-1, keepdim=True)
    raise ValueError(f"unknown softmax {softmax!r}; choose 'stable' or 'naive'")


def attention_scores(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    """q k^T * scale: how strongly each query matches each key, before the mask and the softmax."""
    return (q @ k.transpose(-2, -1)) * scale  # (B, H, T, D) @ (B, H, D, S) -> (B, H, T, S)


def apply_mask(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Scores with every disallowed (query, key) pair set to -inf, so the softmax gives it exactly zero weight."""
    return scores.masked_fill(~mask, float("-inf"))  # (T, S) broadcasts over B and H


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    softmax: str = "stable",
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T * scale, masked) v, explicitly. Returns (output (B,H,T,D), weights (B,H,T,S)).

    `weights` are the softmax output before any dropout (what the heatmaps show).
    """
    scores = attention_scores(q, k, scale)  # (B, H, T, S)
    if mask is not None:
        scores = apply_mask(scores, mask)
    weights = scores_to_weights(scores, softmax)  # (B, H, T, S), each row sums to 1
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights  # (B, H, T, S) @ (B, H, S, D) -> (B, H, T, D)


def fused_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mode: str,
    scale: float,
    window: int = 16,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """The same computation through torch's fused kernel (no weights). Stable softmax only."""
    size = q.shape[-2]
    if mode == "causal" and k.shape[-2] == size:
        # is_causal lets the kernel skip the upper triangle instead of reading a mask.
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True, scale=scale)
    if mode == "none" or (mode == "causal" and size == 1):  # one new query after a cache sees every key
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=scale)
    mask = mask_rows(mode, k.shape[-2] - size, size, window, q.device)  # (T, S), True = attend (same as SDPA)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale)


def attention_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each attention row, (..., T, S) -> (..., T). ln(S) is uniform; 0 is one-hot."""
    return -(weights * torch.log(weights.clamp_min(1e-12))).sum(dim=-1)
