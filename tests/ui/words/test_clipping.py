"""The clipping caption's learning rate and loss trend come from the steps it describes (review of the Gradients
page: "at learning rate 0.003" on steps whose records said 0.00037 -> 0.0003, and a 0.01-nat drop inside the
steps' noise called "falling")."""

from __future__ import annotations

import math
import random

from tinygpt.ui.words.clipping import clip_caption

KNOBS = {"max_grad_norm": 1.0, "learning_rate": 0.003}  # the peak setting, which no step of the window had


def cosine_tail(drop: float, noise: float, seed: int = 0) -> list[dict]:
    """The last 300 steps of a cosine schedule (lr 0.00037 -> 0.0003), every step clipped, the loss falling by
    `drop` with gaussian noise of `noise` per step."""
    rng = random.Random(seed)
    records = []
    for i, step in enumerate(range(1701, 2001)):
        lr = 0.0003 + 0.00007 * (1 + math.cos(math.pi * i / 299)) / 2
        loss = 1.69 - drop * i / 299 + rng.gauss(0, noise)
        records.append({"step": step, "loss": loss, "grad_norm": 2.5, "clipped": True, "lr": lr})
    return records


def test_the_caption_says_the_rates_the_steps_had_not_the_peak_setting():
    text = clip_caption(cosine_tail(0.01, 0.05), KNOBS, "adamw")
    assert "at learning rate 0.00037 → 0.0003" in text, text
    assert "learning rate 0.003" not in text and "(about" not in text


def test_a_drop_inside_the_steps_noise_is_flat_within_noise_not_falling():
    text = clip_caption(cosine_tail(0.01, 0.05), KNOBS, "adamw")
    assert "flat within noise" in text and "falling" not in text and "training is fine" not in text, text
    assert "± " in text  # the noise it was judged against is said


def test_a_drop_well_above_the_noise_is_falling_and_a_rise_is_rising():
    assert "The loss is falling" in clip_caption(cosine_tail(0.3, 0.05), KNOBS, "adamw")
    assert "The loss is rising" in clip_caption(cosine_tail(-0.3, 0.05), KNOBS, "adamw")


def test_sgd_effective_rate_uses_the_rate_now_and_old_records_say_the_set_rate():
    sgd = clip_caption(cosine_tail(0.3, 0.05), KNOBS, "sgd")
    assert "(about 0.00012)" in sgd  # 0.0003 (the last step's rate) x 0.4
    old = [{k: v for k, v in m.items() if k != "lr"} for m in cosine_tail(0.3, 0.05)]
    assert "at the set learning rate 0.003" in clip_caption(old, KNOBS, "adamw")
