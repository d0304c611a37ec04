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
