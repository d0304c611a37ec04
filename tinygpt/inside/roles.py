"""Every head's role scores on many windows of text at once: a role score with its spread (tinygpt.inside.heads
scores one probe text; the lesson's multiple-heads step judges on held-out windows, each window one sample).

Shapes: W windows, L layers, H heads, T positions.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..attention import mask_rows
from ..model import TinyGPT
from ..probes import attention_forward
from .heads import role_keys, stripe_score, uniform_baseline
from .maps import HOOK_LOCK


@torch.no_grad()
def window_role_scores(model: TinyGPT, idx: torch.Tensor, roles: Sequence[str] = ("previous", "first", "self")):
    """{role: (W, L, H) scores} and {role: baseline} of the model's attention on W windows idx (W, T) of ordinary
    text, one score per window: what the lesson's multiple-heads step judges a head's role on, with the windows'
    spread as its noise (a review: one 32-character probe called a head at 2.06x "specialised" on a 2x bar).
    Eval mode for the forward (no dropout), restored after."""
    was_training = model.training
    model.eval()
    try:
        with HOOK_LOCK:
            _, maps = attention_forward(model, idx)  # L x (W, H, T, T)
    finally:
        model.train(was_training)
    weights = torch.stack(maps, dim=1).float().cpu().numpy()  # (W, L, H, T, T)
    T = weights.shape[-1]
    mask = mask_rows(model.config.mask, 0, T, model.config.window).cpu().numpy()  # (T, T) bool
    scores, baselines = {}, {}
    for role in roles:
        rows, keys = role_keys(role, T)
        scores[role] = stripe_score(weights, rows, keys)  # (W, L, H)
        baselines[role] = uniform_baseline(mask, rows, keys)
    return scores, baselines
