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
    # which 100 steps: "the first and last 100 steps" was read as the run's first 100 (a review)
    assert "the means of the first and last 100 of these 300 steps" in clip_caption(cosine_tail(0.3, 0.05), KNOBS,
                                                                                      "adamw")  # fmt: skip
    assert "The loss is rising" in clip_caption(cosine_tail(-0.3, 0.05), KNOBS, "adamw")


def test_sgd_effective_rate_uses_the_rate_now_and_old_records_say_the_set_rate():
    sgd = clip_caption(cosine_tail(0.3, 0.05), KNOBS, "sgd")
    assert "(about 0.00012)" in sgd  # 0.0003 (the last step's rate) x 0.4
    old = [{k: v for k, v in m.items() if k != "lr"} for m in cosine_tail(0.3, 0.05)]
    assert "at the set learning rate 0.003" in clip_caption(old, KNOBS, "adamw")


def lr_blowup(rise: float, clipped_every: int = 16) -> tuple[list[dict], list[dict]]:
    """300 steps after the learning rate went to 0.1 (review of the Gradients page): one step in `clipped_every`
    clipped (6%), the loss going from 1.71 up by `rise`, and evals every 100 steps: the run's best 1.5 before,
    then the held-out loss following the training loss."""
    records = [
        {"step": s, "loss": 1.71 + rise * (s - 12701) / 299 + 0.02 * (s % 3), "grad_norm": 1.9 if s % clipped_every
         else 1.0 / 0.53, "clipped": s % clipped_every == 0, "lr": 0.1}
        for s in range(12701, 13001)
    ]  # fmt: skip
    batches = [-0.05, -0.02, 0.0, 0.02, 0.05]
    evals = [{"step": s, "val_loss": v, "val_batch_losses": [v + b for b in batches]}
             for s, v in ((12400, 1.5), (12500, 1.52), (12600, 1.55), (12700, 1.71), (13000, 1.71 + rise))]  # fmt: skip
    return records, evals


def test_a_rising_loss_is_never_what_clipping_is_for_whatever_the_share_clipped():
    """Review: 19 of 300 steps clipped (6%) at lr 0.1 while the loss rose 1.71 -> 3.22 read "Occasional spikes
    capped at the threshold: what clipping is for": the share was judged before the loss."""
    records, evals = lr_blowup(1.5)
    for clipped in (records, [{**m, "clipped": m["step"] % 50 == 0} for m in records]):
        text = clip_caption(clipped, {"max_grad_norm": 1.0, "learning_rate": 0.003}, "adamw", evals)
        assert "what clipping is for" not in text and "The loss is rising" in text, text
        assert "Held-out loss 1.710 → 3.210" in text and "rising" in text
        assert "lower the learning rate" in text


def test_a_loss_that_stays_far_above_the_runs_best_is_no_healthy_clipping_either():
    """Later, the loss flat at 3.2 (twice the run's best): flat within noise over the window, still wrecked. The
    best is the run's own held-out loss, evals under a leaking mask left out (their 0.2 is copying)."""
    records, evals = lr_blowup(0.0)
    flat = [{**m, "loss": 3.22 + 0.02 * (m["step"] % 3)} for m in records]
    wrecked = [*evals[:3], {**evals[3], "val_loss": 3.21}, {"step": 13000, "val_loss": 3.22}]
    text = clip_caption(flat, {"max_grad_norm": 1.0}, "adamw", wrecked)
    assert "what clipping is for" not in text and "flat within noise" in text, text
    assert "Held-out loss 3.220 at step 13,000 is 2.1× this run's best, 1.500 at step 12,400" in text
    leaked = [{"step": 11000, "val_loss": 0.2}, *wrecked]
    assert "best, 1.500 at step 12,400" in clip_caption(flat, {"max_grad_norm": 1.0}, "adamw", leaked,
                                                        [("none", 10647, 11199)])  # fmt: skip
    healthy = [{**m, "loss": 1.5 - 0.1 * (m["step"] - 12701) / 299} for m in records]
    text = clip_caption(healthy, {"max_grad_norm": 1.0}, "adamw", evals[:3])
    assert "what clipping is for" in text and "The loss is falling" in text, text


def test_held_out_noise_counts_the_held_out_texts_own_size_and_says_it():
    """A review's 200-character run read "Held-out loss 3.446 → 3.668 (steps 100 → 300, +0.222 ± 0.069): rising"
    on a held-out split of 20 characters, about one window of 16: the ± was the eval batches' spread alone. The
    noise is now the lab's held-out noise (the same windows paired, the split's own size counted), and the size is
    said; on a long split the same change is judged as before, paired."""
    records = [{"step": s, "loss": 2.0, "grad_norm": 0.5, "clipped": False, "lr": 1e-3} for s in range(101, 301)]

    def evals(tokens: int) -> list[dict]:
        shape = [16, 16]
        noise = [0.04, -0.03, 0.05, -0.06, 0.0]
        return [{"step": 100, "val_loss": 3.446, "val_batch_losses": [3.446 + b for b in noise],
                 "val_tokens": tokens, "batch_shape": shape},
                {"step": 300, "val_loss": 3.668, "val_batch_losses": [3.668 + b * 1.5 for b in noise],
                 "val_tokens": tokens, "batch_shape": shape}]  # fmt: skip

    tiny = clip_caption(records, KNOBS, "adamw", evals(20))
    # what the eval read, and the split it drew it from (a review: "on 111,540 held-out characters" for 2,560 read)
    assert ("on 5 batches (1,280 characters) drawn at random, overlapping, from 20 held-out characters (about 1 "
            "window of 16)") in tiny, tiny
    assert "too little held-out text to tell" in tiny and "rising" not in tiny, tiny
    long = clip_caption(records, KNOBS, "adamw", evals(111_540))
    assert "on 5 batches (1,280 characters) drawn at random from 111,540 held-out characters (about 6,971 windows of " \
        "16)" in long and ": rising." in long, long


def test_over_fitting_is_not_blamed_on_the_learning_rate():
    """A review's 1.5 kB run at lr 0.0003 → 0.0002 (17% of steps clipped) read "Held-out loss 4.939 … 1.9× this
    run's best … lower the learning rate" while its training loss fell to 0.15: over-fitting, not the rate. The rate
    is still blamed where the training loss itself went bad (tested above: flat at 3.22, twice the best)."""
    records = [{"step": s, "loss": 0.6 - 0.45 * (s - 1701) / 299 + 0.01 * (s % 3),
                "grad_norm": 0.8 if s % 6 else 1.2, "clipped": s % 6 == 0,
                "lr": 0.0003 - 0.0001 * (s - 1701) / 299} for s in range(1701, 2001)]  # fmt: skip
    batches = [-0.05, -0.02, 0.0, 0.02, 0.05]
    evals = [{"step": s, "val_loss": v, "val_batch_losses": [v + b for b in batches]}
             for s, v in ((100, 2.589), (1000, 4.2), (1600, 4.6), (2000, 4.939))]  # fmt: skip
    text = clip_caption(records, {"max_grad_norm": 1.0, "learning_rate": 0.0003}, "adamw", evals)
    assert "1.9× this run's best" in text and "over-fitting" in text, text
    assert "lower the learning rate" not in text


def test_a_share_that_is_not_all_never_reads_100_percent():
    """A review read "Clipped on 299 of the last 300 steps (100%)"."""
    records = [{"step": s, "loss": 2.0, "grad_norm": 2.0, "clipped": s != 1, "lr": 1e-3} for s in range(1, 301)]
    assert "299 of the last 300 steps (99%, to step 300)" in clip_caption(records, KNOBS, "adamw")


def test_under_a_leaking_mask_the_caption_judges_no_trend_and_claims_nothing_about_it():
    """A review: "The loss is falling (0.953 → 0.183 …). Held-out loss 2.727 → 0.223 (steps 300 → 600 …): falling."
    on a run switched to mask none at step 348: both fell by copying the character to predict. A later review:
    "both losses fall by copying it" where both rose after a switch at step 292 of 300. The caption now judges no
    trend across a leak and says how many of its steps the leak covers, nothing more."""
    records = cosine_tail(0.8, 0.05)  # steps 1701-2000, the loss plunging
    evals = [{"step": 1700, "val_loss": 2.727}, {"step": 2000, "val_loss": 0.223}]
    text = clip_caption(records, KNOBS, "adamw", evals, [("none", 1800, 2000)])
    assert "falling" not in text and "Held-out loss" not in text and "fall" not in text, text
    # steps 1,801-2,000 trained under it: "from step 1,801", as Train says (a review read Gradients' "from step 723"
    # beside Train's "applied after step 723, from step 724")
    assert ("Mask none from step 1,801 (200 of these 300 steps) shows each position the character it must predict "
            "(a leak)") in text, text
    assert text.startswith("Clipped on 300 of the last 300 steps (100%, to step 2,000)"), text
    ended = clip_caption(records, KNOBS, "adamw", evals, [("off_by_one", 1500, 1750)])
    assert "Mask off_by_one in steps 1,501-1,750 (50 of these 300 steps)" in ended, ended
    assert "falling" in clip_caption(records, KNOBS, "adamw", evals, [("none", 100, 1500)])  # before these steps


def test_a_training_loss_far_under_the_held_out_loss_is_said_with_both_readings():
    """A review's 2 kB run: Train read "too little held-out text to tell whether it moved" beside a training loss
    0.80 nats under the held-out loss, and nothing said so."""
    metrics = [{"step": s, "loss": 0.32 + 0.01 * (s % 3), "grad_norm": 0.5, "lr": 1e-3} for s in range(700, 801)]
    evals = [{"step": 700, "val_loss": 1.139}, {"step": 800, "val_loss": 1.124}]
    text = clip_caption(metrics, {"max_grad_norm": 1.0, "learning_rate": 1e-3}, "adamw", evals)
    assert "is 0.79 nats under the held-out loss at step 800 (1.124)" in text, text
    # still falling (at its best): no over-fitting yet, both readings (a review read "it has learned that text by
    # heart" of a 26 kB run whose held-out loss fell at every eval)
    assert "at its best so far, so no over-fitting shows yet: the held-out text is unlike the training text" in text
    close = [{"step": 700, "val_loss": 0.45}, {"step": 800, "val_loss": 0.44}]  # 0.11 apart: nothing said
    assert "by heart" not in clip_caption(metrics, {"max_grad_norm": 1.0, "learning_rate": 1e-3}, "adamw", close)
    # risen from its best: learning it by heart
    rose = [{"step": 700, "val_loss": 1.02}, {"step": 800, "val_loss": 1.124}]
    text = clip_caption(metrics, {"max_grad_norm": 1.0, "learning_rate": 1e-3}, "adamw", rose)
    assert "Its held-out loss has risen from its best, 1.020 at step 700: it is learning that text by heart." in text
    # a rise within the evals' noise is no rise (a review: 0.059 over the best called "by heart" beside ± 0.452)
    noisy = [{"step": 700, "val_loss": 2.565, "val_batch_losses": [2.1, 3.0, 2.6, 2.5, 2.625], "val_tokens": 150,
              "batch_shape": [16, 32]},
             {"step": 800, "val_loss": 2.624, "val_batch_losses": [2.2, 3.1, 2.6, 2.5, 2.72], "val_tokens": 150,
              "batch_shape": [16, 32]}]  # fmt: skip
    text = clip_caption(metrics, {"max_grad_norm": 1.0, "learning_rate": 1e-3}, "adamw", noisy)
    # nor "no over-fitting": too little held-out text to tell (a review's 1.5 kB run rose +0.760 ± 0.943 and read it)
    assert "Its held-out loss is +0.059 ± " in text and "above its best, 2.565 at step 700, within its noise: too " \
        "little held-out text to tell whether the model is learning its training text by heart." in text, text
    assert "no over-fitting" not in text
    clear = [noisy[0], {**noisy[1], "val_loss": 3.024, "val_batch_losses": [2.6, 3.5, 3.0, 2.9, 3.12]}]
    text = clip_caption(metrics, {"max_grad_norm": 1.0, "learning_rate": 1e-3}, "adamw", clear)
    assert "Its held-out loss has risen from its best, 2.565 at step 700 (+0.459 ± " in text, text
    assert "beyond its noise): it is learning that text by heart." in text
    # the eval's own training-split score where it has one: the same moment as the held-out loss
    scored = [{"step": 700, "val_loss": 2.70, "train_loss": 2.4}, {"step": 800, "val_loss": 2.654, "train_loss": 2.292}]
    text = clip_caption(metrics, {"max_grad_norm": 1.0, "learning_rate": 1e-3}, "adamw", scored)
    assert "The training split scored 2.292 at step 800's eval, 0.36 nats under the held-out loss at step 800" in text


def test_the_caption_names_the_threshold_the_chart_no_longer_labels():
    """The chart's "clip threshold 1" lay under the clipped points (a review): the caption beside it says it."""
    records = [{"step": s, "loss": 2.0, "grad_norm": 2.5, "clipped": True, "lr": 1e-3} for s in range(1, 301)]
    assert "scaled to the threshold 1, by about 0.4×" in clip_caption(records, KNOBS, "adamw")
    leaking = clip_caption(records, KNOBS, "adamw", [], [("none", 100, 300)])
    assert "to the threshold 1." in leaking, leaking


def test_far_above_its_best_the_caption_says_that_gap_and_not_an_undecided_one_beside_it():
    """A review's 4 kB run: "Held-out loss 2.469 → 3.233 (steps 50 → 350, +0.764 ± 0.923 …): too little held-out
    text to tell whether it moved" and then "3.233 … is 1.4× this run's best … lost much of what it had learned"."""
    records = [{"step": s, "loss": 0.2, "grad_norm": 2.0, "clipped": True, "lr": 1e-3} for s in range(51, 351)]
    shape, tokens = [8, 64], 400  # 6 windows of 64: scant
    spread = (-0.3, 0.3, -0.1, 0.1)  # the best's gap clears its noise, the window's start does not

    def ev(step, loss, wide):
        return {"step": step, "val_loss": loss, "val_tokens": tokens, "batch_shape": shape,
                "val_batch_losses": [loss + wide * b for b in spread * 5]}  # fmt: skip
    evals = [ev(50, 2.469, 3.0), ev(100, 2.354, 0.0), ev(350, 3.233, 0.0)]
    text = clip_caption(records, KNOBS, "adamw", evals)
    assert "1.4× this run's best, 2.354 at step 100, +0.879 ± " in text and "beyond its noise" in text, text
    assert "too little held-out text to tell" not in text, text


def test_a_change_too_small_to_tell_on_a_short_text_says_what_the_batches_alone_give():
    """A review recomputed ±0.095 from five paired batches that all rose, beside the caption's "+0.188 ± 0.277 …: too
    little held-out text to tell", and read the page's noise rules as inconsistent: both numbers are said now."""
    shape, tokens = [16, 32], 300  # 9 windows of 32: scant
    rise = [0.162, 0.129, 0.302, 0.184, 0.161]
    then = {"step": 900, "val_loss": 3.489, "val_tokens": tokens, "batch_shape": shape,
            "val_batch_losses": [3.489] * 5}  # fmt: skip
    now = {**then, "step": 1200, "val_loss": 3.677, "val_batch_losses": [3.489 + r for r in rise]}
    records = [{"step": s, "loss": 1.0, "grad_norm": 0.5, "clipped": False, "lr": 1e-3} for s in range(901, 1201)]
    text = clip_caption(records, KNOBS, "adamw", [then, now])
    assert "too little held-out text to tell whether it moved over these steps; the batches' spread alone " in text
    assert "widened because they re-read a short held-out text" in text, text


def test_with_clipping_off_the_loss_and_held_out_words_remain():
    """A review's run with clip 0 over-fitted (held-out 2.141 at step 350, 2.952 at the end) and the caption said
    only "Clipping is off for this run"; the same run clipped read "learning that text by heart"."""
    metrics = [{"step": s, "loss": 0.32 + 0.01 * (s % 3), "grad_norm": 0.5, "lr": 1e-3} for s in range(700, 801)]
    rose = [{"step": 700, "val_loss": 1.02}, {"step": 800, "val_loss": 1.124}]
    text = clip_caption(metrics, {"max_grad_norm": 0.0, "learning_rate": 1e-3}, "adamw", rose)
    assert text.startswith("Clipping is off for this run: every step uses the whole gradient."), text
    assert "Its held-out loss has risen from its best, 1.020 at step 700: it is learning that text by heart." in text
    leaky = clip_caption(metrics, {"max_grad_norm": 0.0, "learning_rate": 1e-3}, "adamw", rose, [("none", 750, 800)])
    assert leaky.startswith("Clipping is off for this run") and "(a leak)" in leaky and "by heart" not in leaky


def test_a_branch_reads_only_its_own_steps_after_the_branch():
    """A branch's metrics begin with its parent's steps, trained at the parent's settings: the caption reads the
    steps after the branch step alone (a review: "at learning rate 0.0012 → 5e-05", 200 of 300 steps the parent's)."""
    steps = cosine_tail(0.01, 0.05)  # steps 1701-2000
    text = clip_caption(steps, KNOBS, "adamw", since=1900)
    assert text.startswith("Clipped on 100 of its 100 steps since the branch at step 1,900 (100%)"), text
    own = [m["lr"] for m in steps if m["step"] > 1900]
    assert f"at learning rate {own[0]:.2g} → {own[-1]:.2g}" in text, text
    assert clip_caption(steps, KNOBS, "adamw", since=2000) == (
        "Not enough data: no step of its own since the branch at step 2,000 yet.")  # fmt: skip
    assert clip_caption(steps, KNOBS, "adamw", since=1000).startswith("Clipped on 300 of the last 300 steps")


def test_a_run_whose_rate_was_lowered_already_is_not_told_to_lower_it():
    """Review 3 of stop 56: a branch ran at lr 0.001 (a third of its preset's rate) since its parent's stretch at
    0.1 wrecked it; its loss flat at 1.6× its best read "lower the learning rate", advice it had taken. The rate
    after the best was 100× the window's: the caption says so and points at a checkpoint from before the damage."""
    records, evals = lr_blowup(0.0)  # steps 12,701-13,000 at 0.1: the damage
    lowered = [{**m, "step": m["step"] + 300, "lr": 0.001, "loss": 3.22 + 0.02 * (m["step"] % 3)} for m in records]
    history = [{**m, "loss": 3.2} for m in records] + lowered  # the window is steps 13,001-13,300, all at 0.001
    spread = (-0.05, -0.02, 0.0, 0.02, 0.05)
    wrecked = [*evals[:3], {**evals[3], "val_loss": 3.21},
               *({"step": s, "val_loss": v, "val_batch_losses": [v + b for b in spread]}
                 for s, v in ((13000, 3.22), (13300, 3.21)))]  # fmt: skip
    text = clip_caption(history, {"max_grad_norm": 1.0, "learning_rate": 0.001}, "adamw", wrecked)
    assert "lost much of what it had learned" in text and "lower the learning rate" not in text, text
    assert ("The learning rate is lower already: it reached 0.1 at step 12,701, after the best held-out loss (step "
            "12,400), and is 0.001 now, yet the loss has not come back down.") in text, text
    assert "resume from a checkpoint at or before step 12,400" in text
    # the checkpoint it keeps, named (a review was sent to step 1,400, pruned; the newest before it was 800)
    kept = clip_caption(history, {"max_grad_norm": 1.0, "learning_rate": 0.001}, "adamw", wrecked,
                        checkpoints=(12000, 12500, 13000))  # fmt: skip
    assert "resume from its checkpoint at step 12,000, the newest at or before the best." in kept, kept
    none_kept = clip_caption(history, {"max_grad_norm": 1.0, "learning_rate": 0.001}, "adamw", wrecked,
                             checkpoints=(12500, 13000))  # fmt: skip
    assert "it keeps no checkpoint at or before step 12,400 to resume from: start a new run." in none_kept
    # still at the rate that did it: the advice to lower it stands
    at_peak = clip_caption([{**m, "loss": 3.2} for m in records] + [{**m, "lr": 0.1} for m in lowered],
                           {"max_grad_norm": 1.0}, "adamw", wrecked)  # fmt: skip
    assert "lower the learning rate (or resume" in at_peak and "lower already" not in at_peak, at_peak


def test_a_run_that_lost_ground_under_a_high_rate_says_so_below_the_far_above_bar():
    """Review 6 of stop 56: a rate of 0.1 took a run from its best held-out 2.736 (step 250) to 3.18 (1.16x, under
    FAR_ABOVE_BEST's 1.25x; +0.446 ± 0.088 paired) and its caption read "Occasional spikes capped at the threshold:
    what clipping is for" and "flat within noise", at 0.1 and after the rate came down to 0.0005 alike."""
    spread = (-0.05, -0.02, 0.0, 0.02, 0.05)
    evals = [{"step": s, "val_loss": v, "val_batch_losses": [v + b for b in spread]}
             for s, v in ((200, 2.80), (250, 2.736), (350, 3.240), (650, 3.182), (950, 3.183))]  # fmt: skip
    high = [{"step": s, "loss": 3.17 + 0.01 * (s % 3), "grad_norm": 1.9 if s % 20 else 2.5, "clipped": s % 20 == 0,
             "lr": 0.1} for s in range(280, 887)]  # fmt: skip
    low = [{**m, "step": s, "lr": 0.0005} for m, s in zip(high, range(887, 983), strict=False)]
    before = [{"step": s, "loss": 2.41, "grad_norm": 0.5, "clipped": False, "lr": 0.002} for s in range(1, 280)]
    at_high = clip_caption(before + high[:490], {"max_grad_norm": 1.0}, "adamw", evals[:4])  # read at step 769
    assert "what clipping is for" not in at_high, at_high
    assert ("is above this run's best, 2.736 at step 250, +0.446 ± 0.072, beyond its noise: the model has lost some "
            "of what it had learned since step 250.") in at_high, at_high
    assert "lower the learning rate (or resume" in at_high
    lowered = clip_caption(before + high + low, {"max_grad_norm": 1.0}, "adamw", evals)
    assert "lost some of what it had learned since step 250" in lowered and "what clipping is for" not in lowered
    # lowered 96 steps before the window's end: the rate now is what the advice is about (review 6's paused run)
    assert ("The learning rate is lower already: it reached 0.1 at step 280, after the best held-out loss (step "
            "250), and is 0.0005 now") in lowered, lowered
    assert "lower the learning rate (or resume" not in lowered
    # a small drift inside LOST_NATS is no loss of ground
    small = [*evals[:2], {"step": 650, "val_loss": 2.80, "val_batch_losses": [2.80 + b for b in spread]}]
    assert "lost some" not in clip_caption(before + high[:490], {"max_grad_norm": 1.0}, "adamw", small)
