"""The learning-rate schedule: linear warmup, then a cosine down to a floor (nanoGPT's, and GPT-3's).

Pure arithmetic, no torch: the trainer sets each step's rate from it, and the app draws the planned curve with the
same function (so the chart is the schedule the run follows, not a copy of it).
"""

from __future__ import annotations

import math


def lr_at(step: int, learning_rate: float, min_lr: float, warmup_steps: int, max_steps: int) -> float:
    """Learning rate for optimisation step `step` (0-based).

    1. warmup: linear from learning_rate / warmup_steps up to learning_rate over the first `warmup_steps` steps;
    2. decay: cosine from learning_rate down to min_lr between warmup_steps and max_steps;
    3. after max_steps: min_lr.
    """
    if step < warmup_steps:
        return learning_rate * (step + 1) / warmup_steps
    if step >= max_steps:
        return min_lr
    progress = (step - warmup_steps) / max(1, max_steps - warmup_steps)  # 0 -> 1
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))  # 1 -> 0
    return min_lr + cosine * (learning_rate - min_lr)


def moved_floor(min_lr: float, old_lr: float, new_lr: float) -> float:
    """min_lr at the same ratio to a new learning rate, rounded to 12 significant digits so 1e-4 * 2 reads 0.0002
    (not 0.00019999999999999998) in the event log, and never above the new learning rate."""
    if min_lr == old_lr:  # the floor is the peak: it stays the peak, exactly
        return new_lr
    return min(float(f"{min_lr / old_lr * new_lr:.12g}"), new_lr)
