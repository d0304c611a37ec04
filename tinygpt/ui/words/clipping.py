"""What gradient clipping did on a run, in one sentence computed from its records (shown under the gradient-norm
chart on Train and Gradients)."""

from __future__ import annotations

import math

CLIP_WINDOW = 300  # steps the clipping caption describes: the recent past, not the warmup's first spikes


def clip_caption(metrics: list[dict], knobs: dict, optimizer: str = "adamw") -> str:
    """What gradient clipping did on the run's last CLIP_WINDOW steps and what that means at this learning rate,
    from the records: the share of clipped steps, the typical scale factor (threshold / norm), and whether the
    loss fell meanwhile. Under AdamW a gradient scaled by a steady factor scales Adam's moments alike, so the
    update barely changes; under SGD the step itself shrinks by that factor."""
    clip = knobs.get("max_grad_norm") or 0.0
    recent = [m for m in metrics[-CLIP_WINDOW:] if isinstance(m.get("grad_norm"), (int, float))]
    if not recent:
        return ""
    if clip <= 0:
        return "Clipping is off for this run: every step uses the whole gradient."
    clipped = [m for m in recent if m.get("clipped")]
    n, k = len(recent), len(clipped)
    share = f"{k} of the last {n} steps ({100 * k / n:.0f}%)"
    if not k:
        return f"No step was clipped in the last {n}: the gradient norm stayed under the threshold {clip:g}."
    factors = sorted(clip / m["grad_norm"] for m in clipped if m["grad_norm"] > 0)
    factor = factors[len(factors) // 2] if factors else 1.0  # the median clipped step's scale
    lr = knobs.get("learning_rate")
    at_lr = f" at learning rate {lr:g}" if isinstance(lr, (int, float)) else ""
    text = f"Clipped on {share}{at_lr}, each clipped gradient scaled by about {factor:.2g}×."
    if k < 0.2 * n:
        return text + " Occasional spikes capped at the threshold: what clipping is for."
    if optimizer == "sgd":
        effective = f" (about {lr * factor:.2g})" if isinstance(lr, (int, float)) else ""
        text += f" Under SGD that shrinks the step itself: the effective learning rate is lower{effective}."
    else:
        text += (" Under AdamW a steady scale changes little: Adam divides each step by the gradient's running size, "
                 "so clipping this often alone does not mean the learning rate is too high.")  # fmt: skip
    losses = [m["loss"] for m in recent if isinstance(m.get("loss"), (int, float)) and math.isfinite(m["loss"])]
    if len(losses) >= 20:
        tenth = max(2, len(losses) // 10)
        early, late = sum(losses[:tenth]) / tenth, sum(losses[-tenth:]) / tenth
        if late < early:
            text += f" The loss is falling ({early:.2f} → {late:.2f} over these steps): training is fine."
        else:
            text += f" The loss is rising ({early:.2f} → {late:.2f}): try a lower learning rate or a longer warmup."
    return text
