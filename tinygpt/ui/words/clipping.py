"""What gradient clipping did on a run, in one sentence computed from its records (shown under the gradient-norm
chart on Train and Gradients)."""

from __future__ import annotations

import math

from tinygpt.lab.verdict import NOISE_SIGMAS, Difference, clears

CLIP_WINDOW = 300  # steps the clipping caption describes: the recent past, not the warmup's first spikes
MIN_TREND_STEPS = 30  # losses needed to judge their trend: 10 a third, enough for each third's spread


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
    rates = [m["lr"] for m in clipped if isinstance(m.get("lr"), (int, float))]
    lr = rates[-1] if rates else knobs.get("learning_rate")  # the rate now: the last clipped step's
    at_lr = _rates_said(rates, knobs.get("learning_rate"))
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
    return text + _trend_said(losses)


def _rates_said(rates: list[float], set_rate: object) -> str:
    """ " at learning rate 0.00037 → 0.0003": the rates the clipped steps' own records had (the schedule's, not the
    peak setting), first to last when they moved one way, their range otherwise; the set rate only for records
    that carry none (older runs)."""
    if not rates:
        return f" at the set learning rate {set_rate:g}" if isinstance(set_rate, (int, float)) else ""
    first, last, low, high = rates[0], rates[-1], min(rates), max(rates)
    if f"{low:.2g}" == f"{high:.2g}":
        return f" at learning rate {last:.2g}"
    steps = list(zip(rates, rates[1:], strict=False))
    if all(b <= a for a, b in steps) or all(b >= a for a, b in steps):
        return f" at learning rate {first:.2g} → {last:.2g} (the schedule's, on these steps)"
    return f" at learning rates between {low:.2g} and {high:.2g}"


def _mean_variance(values: list[float]) -> float:
    """The squared standard error of the mean of `values`: their sample variance over their count."""
    mean = sum(values) / len(values)
    return sum((x - mean) ** 2 for x in values) / (len(values) - 1) / len(values)


def _trend_said(losses: list[float]) -> str:
    """Whether the loss fell over these steps, judged against the steps' own noise: the mean of the last third
    minus the mean of the first third, with the standard errors of the two means (each third's spread over
    sqrt(n), a trend inside a third only widening it) added, decided as the lab decides a gap
    (tinygpt.lab.verdict.clears: the interval mean ± NOISE_SIGMAS s.e. wholly below zero is falling, wholly
    above is rising, straddling zero is flat within noise). Empty below MIN_TREND_STEPS losses."""
    if len(losses) < MIN_TREND_STEPS:
        return ""
    third = len(losses) // 3
    early, late = losses[:third], losses[-third:]
    means = [sum(part) / third for part in (early, late)]
    variances = [_mean_variance(part) for part in (early, late)]
    shown = [round(mean, 3) for mean in means]  # the change said is the one between the means as shown
    change = Difference(shown[1] - shown[0], math.sqrt(sum(variances)), third, paired=False)
    rising, _ = clears(change, 0.0)
    said = (
        f"{shown[0]:.3f} → {shown[1]:.3f}, the means of the first and last {third} steps, a change of "
        f"{change.mean:+.3f} ± {NOISE_SIGMAS * change.standard_error:.3f} ({NOISE_SIGMAS} s.e. from each third's "
        "own spread)"
    )
    if rising is False:
        return f" The loss is falling ({said}): training is fine."
    if rising:
        return f" The loss is rising ({said}): try a lower learning rate or a longer warmup."
    return f" The loss is flat within noise over these steps ({said})."
