"""Two evals of one run compared (pure: no torch, no Streamlit): what an eval recorded of its held-out batches
(`eval_split`, `batch_losses`), the noise of its mean (`eval_variance`) and the difference of two evals with the lab's
held-out noise (`eval_gap`), which the Train and Gradients pages' captions, the Sample page's notes and the Model health
checklist (tinygpt.lab.health.held_out_check) all read."""

from __future__ import annotations

import math

from .verdict import NOISE_SIGMAS, Difference, held_out_variance


def eval_split(record: dict) -> tuple[int, int] | None:
    """(held-out characters, context) an eval recorded, or None (an older run's eval)."""
    tokens, shape = record.get("val_tokens"), record.get("batch_shape")
    if not isinstance(tokens, int) or not isinstance(shape, (list, tuple)) or len(shape) != 2:
        return None
    if not all(isinstance(v, int) and v > 0 for v in shape) or tokens < 2:
        return None
    return tokens, shape[1]


SCANT_WINDOWS = 20  # held-out windows of the context's length that do not overlap: fewer, and a flat change is no news


def split_windows(record: dict) -> tuple[int, int] | None:
    """(whole windows of its context the eval's held-out split holds, the context), or None (an older run's)."""
    split = eval_split(record)
    return None if split is None else (split[0] // split[1], split[1])


def scant_held_out(record: dict) -> bool:
    """Whether an eval's held-out split holds fewer than SCANT_WINDOWS windows of its context: too little text for
    a change within the noise to say the loss did not move (Train's caption and Model health say so alike)."""
    windows = split_windows(record)
    return windows is not None and windows[0] < SCANT_WINDOWS


def batch_losses(record: dict) -> list[float]:
    return [b for b in record.get("val_batch_losses") or () if isinstance(b, (int, float)) and math.isfinite(b)]


def eval_variance(record: dict) -> float:
    """The squared standard error of an eval's loss as the lab counts it (`held_out_variance`: the batches' spread,
    and the held-out text's own size where the eval recorded it). Called with two batch losses or more."""
    batches, split = batch_losses(record), eval_split(record)
    if split is None:
        return mean_variance(batches)
    return held_out_variance(batches, tuple(record["batch_shape"]), split[0])


def mean_variance(values: list[float]) -> float:
    """The squared standard error of the mean of `values`: their sample variance over their count."""
    mean = sum(values) / len(values)
    return sum((x - mean) ** 2 for x in values) / (len(values) - 1) / len(values)


def eval_gap(then: dict, now: dict) -> Difference | None:
    """now's held-out loss minus then's (two evals of one run), with the lab's held-out noise
    (tinygpt.lab.verdict.held_out_variance): paired batch by batch when both scored the same windows (every eval of a
    run draws them with one seed, so a hard passage is hard for both), and counting the held-out text's own size, so
    20 held-out characters are not read as 20 pieces of evidence (a review's caption said "+0.222 ± 0.069: rising"
    on them, from the batches' spread alone). None without two batch losses on each side."""
    sides = [batch_losses(e) for e in (then, now)]
    if len(sides[0]) < 2 or len(sides[1]) < 2:
        return None
    mean = round(now["val_loss"] - then["val_loss"], 3)
    split = eval_split(now)
    if split is not None and eval_split(then) == split and then.get("batch_shape") == now.get("batch_shape") \
            and len(sides[0]) == len(sides[1]):
        diffs = [b - a for a, b in zip(*sides, strict=True)]
        variance = held_out_variance(diffs, tuple(now["batch_shape"]), split[0])
        return Difference(mean, math.sqrt(variance), len(diffs), paired=True)
    variances = [eval_variance(e) for e in (then, now)]
    return Difference(mean, math.sqrt(sum(variances)), 1, paired=False)


def draw_noise(then: dict, now: dict) -> float | None:
    """The squared standard error of now - then from the batches' paired spread alone (what a sceptic recomputes
    from evals.jsonl), without the held-out text's own sampling that `eval_gap` adds; None where the two evals
    scored different windows or too few batches. A review recomputed ±0.095 at 3 s.e. beside a caption's ±0.277
    and called the two captions' rules inconsistent: the caption now says both."""
    sides = [batch_losses(e) for e in (then, now)]
    if len(sides[0]) < 2 or len(sides[0]) != len(sides[1]) or then.get("batch_shape") != now.get("batch_shape"):
        return None
    return mean_variance([b - a for a, b in zip(*sides, strict=True)])


def gap_words(gap: Difference) -> str:
    """ "+0.188 ± 0.277": a difference and its noise at NOISE_SIGMAS standard errors, as every caption writes one."""
    return f"{gap.mean:+.3f} ± {NOISE_SIGMAS * gap.standard_error:.3f}"
