"""tinygpt/inside/heads.py: the phase-change finder on scores that went non-finite."""

from __future__ import annotations

import math

from tinygpt.inside.heads import find_jump, find_rise


def test_a_diverging_runs_non_finite_scores_give_no_rise_and_no_error():
    """The grid's naive softmax on the Vim manual failed at step 70 with StopIteration: its last scores were NaN,
    the rise NaN, and the midpoint search found nothing (inside the training loop, which then failed the run)."""
    nan_tail = [(s, 0.1) for s in range(0, 60, 10)] + [(60, math.nan), (70, math.inf), (80, math.nan)]
    assert find_rise(nan_tail, 0.1) is None and find_jump(nan_tail, 0.1) is None
    jumped = [(s, 0.05) for s in range(0, 50, 10)] + [(50, 0.6), (60, math.nan), (70, 0.62), (80, 0.61)]
    rise = find_rise(jumped, 0.1)  # the finite points still tell a rise
    assert rise is not None and rise.step == 50


def test_the_running_median_equals_the_median_of_each_points_neighbourhood():
    # The training loop asks for jumps on every snapshot of a long run: the vectorised running median must give the
    # very numbers the per-point np.median gave (ends cut short, even-sized windows included).
    import numpy as np

    from tinygpt.inside.heads import running_median

    rng = np.random.default_rng(0)
    for n in [*range(12), 50, 501]:
        for half in range(4):
            values = rng.normal(size=n).tolist()
            expected = [np.median(values[max(0, i - half) : i + half + 1]) for i in range(n)]
            assert running_median(values, half).tolist() == expected
