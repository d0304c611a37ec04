"""What a run's mask history means for the Train loss chart and the Attention page (tinygpt/ui/words/leaks.py),
from the run's config and knob events. Review: after the mask went to none both losses plunged to ~0.2 while the
chart's caption was the usual-case text; the Attention page showed a snapshot at step 10880, taken under mask none,
with captions about the causal mask and nothing saying so."""

from __future__ import annotations

from tinygpt.runs.knobs import leak_spans, mask_spans
from tinygpt.ui.charts.help import CHART_HELP
from tinygpt.ui.words import leaks

CONFIG = {"model": {"mask": "causal"}, "train": {"learning_rate": 0.003}}


def mask_event(step: int, old: str, new: str) -> dict:
    return {"kind": "knob", "knob": "mask", "step": step, "ok": True, "old": old, "new": new}


# The lecture run's history: the mask went to none at 10,647 and back at 11,199, the learning rate up after.
EVENTS = [
    mask_event(10647, "causal", "none"),
    mask_event(11199, "none", "causal"),
    {"kind": "knob", "knob": "learning_rate", "step": 12498, "ok": True, "old": 0.003, "new": 0.1},
]


def test_mask_spans_are_the_configs_mask_then_each_change_and_only_leaking_ones_leak():
    assert mask_spans(CONFIG, EVENTS, 14035) == [("causal", 0, 10647), ("none", 10647, 11199), ("causal", 11199, 14035)]
    assert leak_spans(CONFIG, EVENTS, 10880) == [("none", 10647, 10880)]
    window = [mask_event(50, "causal", "sliding_window"), mask_event(90, "sliding_window", "off_by_one")]
    assert leak_spans(CONFIG, window, 100) == [("off_by_one", 90, 100)]  # a window is causal: no leak


def test_the_loss_chart_says_in_which_steps_the_mask_leaked_and_what_the_held_out_loss_did_under_it():
    plunged = [{"step": 10600, "val_loss": 1.90}, {"step": 10800, "val_loss": 0.31}]
    during = leaks.loss_leak_note(CONFIG, EVENTS, 10880, plunged)
    assert during and "mask none from step 10,648" in during and "in force to the last step" in during, during
    assert "held-out loss fell (1.900 at step 10,600, 0.310 at step 10,800)" in during and "not learning" in during
    # Review: a branch's note said "both curves fall" while its held-out loss went 2.476 -> 2.468
    flat = [{"step": 10600, "val_loss": 2.476}, {"step": 10800, "val_loss": 2.468}]
    unmoved = leaks.loss_leak_note(CONFIG, EVENTS, 10880, flat)
    assert "did not fall (2.476 at step 10,600, 2.468 at step 10,800)" in unmoved and "fell" not in unmoved
    assert "Too few evals" in leaks.loss_leak_note(CONFIG, EVENTS, 10880)
    after = leaks.loss_leak_note(CONFIG, EVENTS, 14035)
    assert after and "mask none in steps 10,648-11,199" in after and "Mask causal from step 11,200" in after
    assert "not overfitting" in after
    assert leaks.loss_leak_note(CONFIG, EVENTS, 10000) is None  # before the leak: nothing to say
    assert leaks.loss_leak_note({"model": {"mask": "none"}}, [], 300).startswith("This run trained with mask none from")
    # A run under the leak from its start (a review: "Too few evals under it" beside 57 evals, 2.477 -> 0.07): its
    # first eval under the leak stands in for the one before
    from_start = leaks.loss_leak_note({"model": {"mask": "none"}}, [], 300,
                                      [{"step": 50, "val_loss": 2.477}, {"step": 300, "val_loss": 0.07}])  # fmt: skip
    assert "held-out loss fell (2.477 at step 50, 0.070 at step 300)" in from_start, from_start
    # A branch: its config holds its own mask; the steps before its branch point trained under the event's old one
    branch = leaks.loss_leak_note({"model": {"mask": "none"}}, [mask_event(200, "causal", "none")], 300)
    assert branch.startswith("This run trained with mask none from step 201"), branch
    window = [mask_event(50, "causal", "sliding_window")]
    assert leaks.loss_leak_note(CONFIG, window, 300) is None


def test_the_static_loss_help_calls_overfitting_only_under_unchanged_settings():
    """Both curves plunging under a leak is not overfitting, and a val rising once the leak ends neither."""
    help_text = CHART_HELP["loss_chart"]
    assert "With the settings unchanged, validation loss rising" in help_text
    assert "shows the next character" in help_text


def test_a_snapshot_taken_under_a_leaking_mask_says_so_with_its_steps():
    note = leaks.snapshot_note(CONFIG, EVENTS[:1], 10880)  # watched live: the mask is still none
    assert note and "snapshot (step 10,880) was taken under mask none from step 10,648" in note, note
    later = leaks.snapshot_note(CONFIG, EVENTS, 10880)  # the review's view, after the mask went back
    assert later and "snapshot (step 10,880) was taken under mask none in steps 10,648-11,199" in later, later
    assert "right of the diagonal" in note
    assert "under mask none in steps 10,648-11,199" in leaks.snapshot_note(CONFIG, EVENTS, 11000)  # its whole stretch
    assert leaks.snapshot_note(CONFIG, EVENTS, 10500) is None and leaks.snapshot_note(CONFIG, EVENTS, 12000) is None
    assert "checkpoint (step 10,900)" in leaks.snapshot_note(CONFIG, EVENTS, 10900, "checkpoint")


def test_the_step_by_step_panels_say_their_checkpoints_mask_and_the_grids_when_they_differ():
    caption = leaks.checkpoint_caption(CONFIG, EVENTS, 10500, 10880)
    assert "checkpoint at step 10,500 (the latest at or before step 10,880)" in caption and "mask causal." in caption
    assert "The grid above, at step 10,880, was taken under mask none." in caption
    assert "grid above" not in leaks.checkpoint_caption(CONFIG, EVENTS, 10500, 10400)


def test_a_snapshot_under_a_leak_names_the_mask_the_run_had_outside_it():
    """A review: "Scrub to a step outside that stretch to see the heads the causal mask trains" of a run that
    trained under a sliding window of 8 before its leak, never under causal."""
    window = {"model": {"mask": "sliding_window", "window": 8}}
    change = [{"kind": "knob", "knob": "mask", "old": "sliding_window", "new": "none", "step": 1009, "ok": True}]
    note = leaks.snapshot_note(window, change, 1500)
    assert note.endswith("the heads the sliding_window mask trains."), note
    from_start = leaks.snapshot_note({"model": {"mask": "none"}}, [], 100)  # a leak from step 0, still on
    assert "Scrub" not in from_start, from_start


def test_copying_is_said_only_for_a_fall_beyond_its_noise_and_below_the_runs_best_without_the_leak():
    """Two reviews on short texts: "Under it the held-out loss fell (3.549 at step 650, 3.451 at step 800): the model
    copies the character it must predict" where two of five batches rose, and a fall out of an over-fitted model's
    held-out loss (4.257 -> 4.003, near ln V, its best 3.385) while its training loss jumped from 0.65 to 3.96."""
    events = [mask_event(650, "causal", "none"), mask_event(800, "none", "causal")]

    def ev(step, loss, spread):
        return {"step": step, "val_loss": loss, "val_tokens": 2_000, "batch_shape": [16, 32],
                "val_batch_losses": [loss + d for d in spread]}  # fmt: skip
    wobble = [ev(50, 3.0, [0.0] * 5), ev(650, 3.549, [0.0] * 5),
              ev(800, 3.451, [-0.354, 0.294, -0.400, -0.398, 0.364])]  # fmt: skip
    noisy = leaks.loss_leak_note(CONFIG, events, 900, wobble)
    assert "did not fall beyond its noise (3.549 at step 650, 3.451 at step 800, -0.098 ± " in noisy, noisy
    assert "copies" not in noisy and "(mask none: every position sees the characters after it)" in noisy
    overfit = [ev(50, 3.385, [0.0] * 5), ev(650, 4.257, [0.01, -0.01] * 3), ev(800, 4.003, [0.01, -0.01] * 3)]
    said = leaks.loss_leak_note(CONFIG, events, 900, overfit)
    assert "fell (4.257 at step 650, 4.003 at step 800, -0.254 ± " in said, said
    assert "but stayed above the run's best without the leak (3.385 at step 50): no copying shows" in said
    copying = [ev(50, 2.2, [0.0] * 5), ev(650, 2.4, [0.01, -0.01] * 3), ev(800, 0.3, [0.01, -0.01] * 3)]
    plunge = leaks.loss_leak_note(CONFIG, events, 900, copying)
    assert "below the run's best without the leak (2.200 at step 50): the model copies" in plunge, plunge


def test_runs_compared_name_the_ones_that_trained_under_a_leak():
    """A review compared an off-by-one run with a causal one on Runs: its curves far below, under "the gap between
    the lines is the effect of what differs", and nothing said it was copying."""
    leaky = {"model": {"mask": "off_by_one"}, "train": {"max_steps": 300}}
    causal = {"model": {"mask": "causal"}, "train": {"max_steps": 300}}
    metrics = [{"step": s, "loss": 1.0} for s in (1, 300)]
    note = leaks.compared_note({"off": (leaky, [], metrics), "causal": (causal, [], metrics)})
    assert note.startswith("«off» trained with mask off_by_one from step 1: "), note
    assert "causal" not in note.split(":")[0] and "copying, not a better setting" in note
    # a live change to none and back: the steps said
    events = [{"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "none", "step": 100},
              {"kind": "knob", "knob": "mask", "ok": True, "old": "none", "new": "causal", "step": 200}]
    note = leaks.compared_note({"causal": (causal, events, metrics)})
    assert note.startswith("«causal» trained with mask none in steps 101-200"), note
    assert leaks.compared_note({"causal": (causal, [], metrics)}) is None
