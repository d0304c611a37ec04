"""Turning next-token logits into a choice: temperature, top-k, top-p (nucleus), greedy.

Small pure functions with an explicit `torch.Generator`, so the same seed gives the same text
(nanochat's `sample_next_token` is the model). Shapes: logits (B, V) -> probabilities (B, V) -> ids (B, 1).
"""

from __future__ import annotations

import torch

from .errors import NonFiniteError


def filter_logits(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """Logits (B, V) after temperature, top-k and top-p; removed entries are -inf. temperature must be > 0."""
    if temperature <= 0:
        raise ValueError("temperature must be > 0 here; use greedy decoding for temperature 0")
    logits = logits / temperature
    vocab = logits.shape[-1]
    if top_k is not None and 0 < top_k < vocab:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]  # (B, 1) the k-th largest logit
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and 0.0 < top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)  # (B, V)
        cumulative = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
        # Drop a token when the tokens ranked above it already hold top_p of the mass; the best one always stays.
        drop_sorted = (cumulative - torch.softmax(sorted_logits, dim=-1)) >= top_p
        drop_sorted[..., 0] = False  # exactly: float rounding can leave the best one's "mass above" at 1e-17
        drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def next_token_probs(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """The distribution actually sampled from, (B, V). Temperature 0 is one-hot on the argmax."""
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(filter_logits(logits, temperature, top_k, top_p), dim=-1)


def sample_next_token(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    probs: torch.Tensor | None = None,
) -> torch.Tensor:
    """Pick the next token ids (B, 1) from logits (B, V). `probs`: next_token_probs of these logits and settings,
    when the caller has it already (the Sample page shows it): it is not computed twice."""
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)  # greedy: deterministic, no randomness consumed
    if probs is None:
        probs = next_token_probs(logits, temperature, top_k, top_p)
    try:
        return torch.multinomial(probs, num_samples=1, generator=generator)
    except RuntimeError as exc:  # multinomial checks for NaN/inf itself, so the healthy path pays nothing extra
        if torch.isfinite(logits).all():
            raise
        raise NonFiniteError(
            "the model's next-character scores are not finite (NaN or inf), so there is nothing to sample from: "
            "its weights or attention settings are broken (e.g. the naive softmax with a large attention scale). "
            "Pick an earlier checkpoint or a healthy run."
        ) from exc
