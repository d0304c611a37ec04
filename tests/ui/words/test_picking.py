"""The Sample page's notes on a checkpoint say what is true at that checkpoint (tinygpt/ui/words/picking.py).
Review: the latest checkpoint (13015) of a run whose mask was none in steps 10,647-11,199 and whose learning rate
then went to 0.1 read "This checkpoint trained with mask none ... the text falls apart ... Pick a checkpoint from
before the change", under a header naming the run "LR 0.003": it had trained 1,816 causal steps since the leak,
and its noise was the learning rate's (held-out loss 3.25), which the page never said."""

from __future__ import annotations

from tinygpt.ui.words import picking

CONFIG = {"model": {"mask": "causal", "vocab_size": 65}, "train": {"learning_rate": 0.003, "min_lr": 0.003}}
EVENTS = [
    {"kind": "knob", "knob": "mask", "step": 10647, "ok": True, "old": "causal", "new": "none"},
    {"kind": "knob", "knob": "mask", "step": 11199, "ok": True, "old": "none", "new": "causal"},
    {"kind": "knob", "knob": "learning_rate", "step": 12498, "ok": True, "old": 0.003, "new": 0.1},
    {
        "kind": "knob",
        "knob": "min_lr",
        "step": 12498,
        "ok": True,
        "old": 0.003,
        "new": 0.1,
        "coupled_to": "learning_rate",
    },
]
BATCH = [-0.04, -0.01, 0.0, 0.01, 0.04]
EVALS = [
    {"step": s, "val_loss": v, "val_batch_losses": [v + b for b in BATCH]}
    for s, v in ((9600, 1.886), (10500, 1.95), (10900, 0.19), (11100, 0.18), (12400, 1.934), (13000, 3.246))
]
CHECKPOINTS = [9500, 10500, 11000, 11500, 12000, 12500, 13000, 13015]


def test_a_leak_that_ended_before_the_checkpoint_is_said_not_blamed():
    notes = picking.checkpoint_notes(CONFIG, EVENTS, EVALS, 13015, CHECKPOINTS)
    leak = [text for kind, text in notes if text.startswith("This run trained")]
    assert len(leak) == 1 and "in steps 10,648-11,199" in leak[0] and "1,816 steps before this checkpoint" in leak[0]
    assert "falls apart" not in " ".join(t for _, t in notes) and "under mask causal since" in leak[0]


def test_a_checkpoint_far_above_the_runs_best_says_so_with_the_changes_since():
    notes = dict((text[:14], (kind, text)) for kind, text in picking.checkpoint_notes(CONFIG, EVENTS, EVALS, 13015,
                                                                                        CHECKPOINTS))  # fmt: skip
    kind, text = notes["Held-out loss "]
    assert (
        kind == "warning" and "Held-out loss at step 13,000: 3.246, 1.7× this run's best (1.886 at step 9,600" in text
    )
    assert "guessing uniformly scores 4.17" in text and "LR 0.003→0.1 @12498" in text
    assert "checkpoint from before that best is at step 9,500" in text
    # the best is the honest one: the 0.18 under mask none is copying, not a best
    assert not any("Held-out" in t for _, t in picking.checkpoint_notes(CONFIG, EVENTS, EVALS, 12400, CHECKPOINTS))


def test_the_far_above_best_note_says_what_held_out_text_it_rests_on():
    """A review's Sample note read "Held-out loss at step 2,000: 4.939, 1.9× this run's best" on 150 held-out
    characters, which only the Gradients page said."""
    sized = [{**e, "val_tokens": 150, "batch_shape": [12, 32]} for e in EVALS]
    notes = [t for _, t in picking.checkpoint_notes(CONFIG, EVENTS, sized, 13015, CHECKPOINTS)]
    [text] = [t for t in notes if t.startswith("Held-out loss")]
    assert ("Held-out loss at step 13,000 (on 5 batches (1,920 characters) drawn at random, overlapping, from 150 "
            "held-out characters (about 4 windows of 32), a gap beyond its ") in text


def test_a_checkpoint_under_the_leak_still_says_its_text_falls_apart():
    [(kind, text)] = picking.checkpoint_notes(CONFIG, EVENTS, EVALS, 11000, CHECKPOINTS)
    assert kind == "warning" and "falls apart" in text and "in steps 10,648-11,000" in text
    assert "Pick the checkpoint at step 10,500" in text
    assert "held-out 1.950 → 0.190" in text and "learned to copy" in text  # what the evals show, said


def test_a_branch_whose_held_out_loss_did_not_fall_under_the_leak_is_not_said_to_copy():
    """Review: a branch at step 200 with mask none read "The model learned to copy the next character" while its
    held-out loss went 2.476 -> 2.468 (and the steps before 200, its causal parent's, were not under the leak)."""
    branch = {"model": {"mask": "none"}, "train": {"learning_rate": 0.002}}
    events = [{"kind": "knob", "knob": "mask", "step": 200, "ok": True, "old": "causal", "new": "none"}]
    evals = [{"step": 200, "val_loss": 2.476}, {"step": 300, "val_loss": 2.468}]
    [(kind, text)] = picking.checkpoint_notes(branch, events, evals, 300, [200, 300])
    assert "in steps 201-300" in text and "did not fall under it (held-out 2.476 → 2.468)" in text
    assert "learned to copy" not in text and "Pick the checkpoint at step 200" in text


def test_the_leak_note_covers_only_the_steps_the_checkpoint_trained():
    """Review: checkpoint 3,500 of a run whose mask was none in steps 3,215-3,892 read "trained under mask none in
    steps 3,215-3,892": a checkpoint holds no step after its own."""
    events = [
        {"kind": "knob", "knob": "mask", "step": 3215, "ok": True, "old": "causal", "new": "none"},
        {"kind": "knob", "knob": "mask", "step": 3892, "ok": True, "old": "none", "new": "causal"},
    ]
    [(kind, text)] = picking.checkpoint_notes(CONFIG, events, [], 3500, [3000, 3500, 4000])
    assert kind == "warning" and "This checkpoint (step 3,500) trained under mask none in steps 3,216-3,500" in text
    assert "3,892" not in text
    ongoing = picking.checkpoint_notes(CONFIG, events[:1], [], 3500, [3000, 3500])  # still none: up to it too
    assert "in steps 3,216-3,500" in ongoing[0][1]
    # the checkpoint at the change's own step trained none of its steps under it: the change applied after it
    assert picking.checkpoint_notes(CONFIG, events, [], 3215, [3000, 3215]) == []


def test_the_header_names_the_knobs_in_force_at_the_checkpoint_beside_the_runs_name():
    at = picking.at_checkpoint(CONFIG, EVENTS, 13015)
    assert at == "at this checkpoint: LR 0.1 (changed at step 12,498)"  # min_lr moved with it: one change
    header = picking.generated_header("2L×1H×128 · shakespeare · LR 0.003", 13015, at)
    assert "LR 0.003, step 13015; at this checkpoint: LR 0.1 (changed at step 12,498); the prompt" in header
    assert picking.at_checkpoint(CONFIG, EVENTS, 10500) == ""
    assert picking.at_checkpoint(CONFIG, EVENTS, 11000) == "at this checkpoint: mask none (changed at step 10,647)"
    # the checkpoint's own config wins: the knobs its weights trained under
    saved = {"model": {"mask": "causal"}, "train": {"learning_rate": 0.1, "min_lr": 0.1}}
    assert picking.at_checkpoint(CONFIG, [], 13015, saved) == "at this checkpoint: LR 0.1 (changed live)"
    # a window that does nothing under the mask then is not said (a review: "window 4 (changed at step 257)" of a
    # checkpoint trained causal); under the sliding window it is
    window = [{"kind": "knob", "knob": "window", "step": 257, "ok": True, "old": 8, "new": 4}]
    assert "window" not in picking.at_checkpoint({**CONFIG, "model": {"mask": "causal", "window": 8}}, window, 600)
    sliding = {**CONFIG, "model": {"mask": "sliding_window", "window": 8}}
    assert picking.at_checkpoint(sliding, window, 600) == "at this checkpoint: window 4 (changed at step 257)"


def test_a_held_out_rise_with_a_falling_training_loss_is_over_fitting_and_not_blamed_on_later_changes():
    """A review's learner trained on 12 kB of source code: held-out loss 1.749 at step 650, rising from there (1.860
    at 1,000, 2.216 at 5,000) while the training loss fell to 0.39; the note read "the model has lost much of what it
    had learned, and its text shows it. Changed since that best: LR 0.002→0.005 @5474 ...", changes made long after
    the rise began."""
    evals = [{"step": s, "val_loss": v, "val_batch_losses": [v + b for b in BATCH]}
             for s, v in ((650, 1.749), (1000, 1.860), (3000, 2.112), (5000, 2.216), (6000, 2.263))]  # fmt: skip
    events = [{"kind": "knob", "knob": "learning_rate", "step": 5474, "ok": True, "old": 0.002, "new": 0.005,
               "request": "r1"}]  # fmt: skip
    metrics = [{"step": s, "loss": 2.0 - 1.6 * s / 6000} for s in range(1, 6001)]  # 2.0 falling to 0.4
    [(kind, text)] = picking.checkpoint_notes(CONFIG, events, evals, 6000, [500, 6000], metrics)
    assert kind == "warning" and "1.3× this run's best (1.749 at step 650" in text
    assert "training loss fell from" in text and "(over-fitting)" in text and "lost much" not in text
    assert "LR 0.002→0.005 @5474; the held-out loss had risen already, to 1.860 at step 1,000, before" in text


def test_the_sample_charts_say_when_the_sliders_moved_since_the_last_generate():
    """A review: temperature 0 and top-k 3 on the sliders beside the last Generate's smooth temperature-0.8 bars."""
    from tinygpt.ui.words.picking import stale_sample_note

    assert stale_sample_note((0.8, 0, 1.0), (0.8, 0, 1.0)) == ""
    assert stale_sample_note(None, (0.8, 0, 1.0)) == ""  # an older session's sample: nothing to compare
    said = stale_sample_note((0.8, 0, 1.0), (0.0, 3, 1.0))
    assert said == ("These charts are the last **Generate**'s (temperature 0.8, top-k off, top-p off). Press "
                    "**Generate** to draw them at temperature 0, top-k 3, top-p off (greedy: always the likeliest "
                    "character)."), said  # fmt: skip


def test_the_header_says_what_a_sample_was_drawn_with_and_a_long_prompt_what_the_model_read():
    """Review 4 of stop 56: "1e3" typed in Top-k reached the page as 1, and 200 spaces came out under a header that
    named no top-k; a 6,009-character prompt was echoed whole although the model read its last 32 characters."""
    greedy = picking.generated_header("run", 300, "", (0.8, 1, 1.0))
    assert ("; drawn at temperature 0.8, top-k 1, top-p off (greedy: always the likeliest character); the "
            "prompt") in greedy
    plain = picking.generated_header("run", 300, "", (0.8, 0, 0.9))
    assert "drawn at temperature 0.8, top-k off, top-p 0.9;" in plain and "greedy" not in plain
    assert "greedy" in picking.sampling_words(0.0, 0, 1.0)
    assert picking.generated_header("run", 300, "") == ("**Generated** (run, step 300; the prompt, then the model's "
                                                        "continuation)")
    assert picking.prompt_note(32, 32) == ""
    assert picking.prompt_note(6009, 32) == (
        "The model reads only the last 32 characters of this 6,009-character prompt (its context, max_seq_len 32): "
        "the characters before them are shown but do not steer what it writes.")


def test_a_run_in_view_without_a_checkpoint_is_said_in_words_before_another_run_is_sampled():
    """Review 5 of stop 56: a learner's own queued run was in view; the page sampled the lecture run, said only in a
    grey line under the picker."""
    said = picking.no_checkpoint_yet("2L×4H×64 · typing_part2.py · LR 0.002", "queued")
    assert said.startswith("The run in view, **2L×4H×64 · typing_part2.py · LR 0.002**, has no checkpoint to sample "
                           "from yet: it is queued")
    assert "this page samples the run in the **Run** box below, another run" in said
    assert "it is starting" in picking.no_checkpoint_yet("r", "starting")
    assert "it has saved none yet" in picking.no_checkpoint_yet("r", "running")


def test_a_checkpoints_lr_setting_is_said_beside_the_rate_its_step_trained_at():
    """Review 6 of stop 56: "at this checkpoint: LR 0.0005 (changed at step 607)" of a step that trained at 5e-05
    (the cosine's floor): the setting is the schedule's peak, not the rate."""
    metrics = [{"step": s, "lr": 5e-05 if s > 1400 else 0.0005} for s in range(1, 1501, 50)]
    assert picking.rate_at(metrics, 1500) == 5e-05 and picking.rate_at(metrics, 0) is None
    at = picking.at_checkpoint(CONFIG, EVENTS, 13015, rate=0.000123)
    assert at == "at this checkpoint: LR 0.1 (changed at step 12,498), the schedule's rate at this step 0.000123"
    assert picking.at_checkpoint(CONFIG, EVENTS, 11000, rate=0.002) == ("at this checkpoint: mask none (changed at "
                                                                        "step 10,647)")  # no LR said: no rate
