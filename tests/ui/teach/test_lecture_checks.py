"""The lecture run's checks (tinygpt/ui/teach/lecture_checks.py): each step judged on its own stretch of the run,
in windows of steps read exactly, with numbers that do not drift."""

from tinygpt.ui.teach import lesson
from tinygpt.ui.teach.lesson import Evidence, RunData


def metrics(losses, start=1):
    return [{"step": start + i, "loss": v} for i, v in enumerate(losses)]


def knob(name, old, new, step):
    return {"kind": "knob", "ok": True, "knob": name, "old": old, "new": new, "step": step}


def test_step_one_is_judged_before_the_first_knob_change_not_on_the_damage_later_steps_did():
    """Review: after step 12, Back to step 1 read "the check saw it · right" above "Not seen: ... by step 13015 it
    is 3.22; it fell by 0.98": step 1 judged on the run's tail, after steps 4 and 7 had broken it."""
    losses = [4.2] + [2.0] * 999 + [0.2] * 500 + [3.3] * 500  # learns; mask off at 1000; lr 0.1 at 1500
    events = [knob("mask", "causal", "none", 1000), knob("mask", "none", "causal", 1200),
              knob("learning_rate", 0.003, 0.1, 1500)]  # fmt: skip
    run = RunData("r", "running", metrics(losses), events, vocab_size=65, evals=[{"step": 900, "val_loss": 2.1},
                  {"step": 1100, "val_loss": 0.5}])  # fmt: skip
    check = lesson.loss_from_uniform(Evidence(runs={"lecture": run}))
    assert check.passed is True, check.text
    assert "by step 1000, before mask changed at step 1000" in check.text and "2.00" in check.text, check.text
    assert "3.3" not in check.text
    # the headline's number is a 20-step mean, said (a review read "2.48 by step 108" as the loss at that step)
    assert check.headline.endswith("by step 1000 (the mean of steps 981–1000), before the first knob change: down "
                                   "2.20; held-out 2.10 at step 900"), check.headline  # fmt: skip
    assert "0.50" not in check.text  # the eval after the mask changed is not step 1's


def test_a_knob_check_reads_steps_not_thinned_records_and_its_numbers_do_not_drift():
    """Review, step 4: "mean of 20 steps each side, 69 steps since" where the reader's series was thinned (every
    8th record kept): 20 records spanned 160 steps, and the event's numbers drifted (1.70 → 0.29, later 0.16)."""
    full = metrics([2.0] * 1000 + [1.5] * 10 + [0.3] * 290 + [0.1] * 700)  # mask off at step 1000
    thinned = [m for m in full if m["step"] % 8 == 1 or m["step"] > 1900]  # the reader's old part: every 8th
    exact_calls = []

    def exact(lo, hi):
        exact_calls.append((lo, hi))
        return [m for m in full if lo <= m["step"] <= hi]

    events = [knob("mask", "causal", "none", 1000)]
    run = RunData("r", "running", thinned, events, exact=exact,
                  evals=[{"step": 1000, "val_loss": 2.1}, {"step": 1100, "val_loss": 0.4}])  # fmt: skip
    check = lesson.knob_effect("mask", "none", rise=False, min_change=1.0)(Evidence(runs={"lecture": run}))
    assert check.passed is True, check.text
    assert "mean of steps 981–1000" in check.text and "fell from 2.00 to 0.90" in check.text, check.text
    assert exact_calls  # the thinned stretch was read exactly
    later = RunData("r", "running", thinned + metrics([0.05] * 500, start=2001), events, exact=exact,
                    evals=[*run.evals, {"step": 1200, "val_loss": 0.1}])  # fmt: skip
    assert lesson.knob_effect("mask", "none", rise=False, min_change=1.0)(Evidence(runs={"lecture": later})).text \
        == check.text  # fmt: skip


def test_the_patience_is_counted_in_steps_and_a_next_change_settles_an_unjudged_knob():
    check = lesson.knob_effect("learning_rate", 0.1, rise=True)
    flat = metrics([2.0] * 100 + [2.05] * 80)  # 80 steps after the change, no rise yet
    run = RunData("r", "running", flat[::4] + flat[-5:], [knob("learning_rate", 0.003, 0.1, 100)],
                  exact=lambda lo, hi: [m for m in flat if lo <= m["step"] <= hi])  # fmt: skip
    waiting = check(Evidence(runs={"lecture": run}))
    assert waiting.passed is None and not waiting.settled and "80 steps since" in waiting.text, waiting.text
    run.events = [*run.events, knob("learning_rate", 0.1, 0.003, 180)]  # the next step put it back
    closed = check(Evidence(runs={"lecture": run}))
    assert closed.passed is None and closed.settled and "step 180" in closed.text, closed.text


def test_the_lecture_checks_say_training_loss_and_name_the_held_out_loss_beside_it():
    run = RunData("r", "running", metrics([4.2] + [2.0] * 199), vocab_size=65,
                  evals=[{"step": 100, "val_loss": 2.31}, {"step": 200, "val_loss": 2.11}])  # fmt: skip
    check = lesson.loss_from_uniform(Evidence(runs={"lecture": run}))
    assert "training loss" in check.text and "training loss" in check.headline
    assert "held-out loss 2.11 at step 200" in check.text, check.text
    run.events = [knob("mask", "causal", "none", 150)]
    run.metrics = metrics([2.0] * 150 + [0.2] * 50)
    run.evals = [{"step": 100, "val_loss": 2.31}, {"step": 160, "val_loss": 0.5}]
    mask = lesson.knob_effect("mask", "none", rise=False, min_change=1.0)(Evidence(runs={"lecture": run}))
    assert mask.text.startswith("The training loss fell") and "training loss" in mask.headline
    assert "held-out loss 2.31 at step 100, held-out loss 0.50 at step 160" in mask.text  # 160: inside its window
    # the projector's line (the headline) names the held-out loss too (a review: only the learners' detail did)
    assert mask.headline.endswith("; held-out 2.31 → 0.50 (copying: the evals leak too)"), mask.headline
    assert "by step 170 after mask causal → none" in mask.headline  # the window that decided, not the loss now
    assert "No model predicts unseen text at 0.50 nats a character" in mask.text
    assert "this fall is copying, not learning" in mask.text
    run.events, run.metrics, run.evals = [], metrics([4.2] + [2.0] * 199), [{"step": 200, "val_loss": 2.11}]
    assert lesson.loss_from_uniform(Evidence(runs={"lecture": run})).headline.endswith("; held-out 2.11 at step 200")


def test_the_held_out_loss_after_a_change_is_read_from_the_window_that_decided_not_just_after_the_change():
    """A review: 3 steps after mask → none the eval read 2.37 (the model had not yet learned to copy) against 2.02
    before, and the pane put "held-out loss rose" beside a 1-nat fall; the next eval read 0.52."""
    run = RunData("r", "running", metrics([2.0] * 297 + [1.9] * 80 + [0.8] * 40), vocab_size=65,
                  events=[knob("mask", "causal", "none", 297)],
                  evals=[{"step": 200, "val_loss": 2.02}, {"step": 300, "val_loss": 2.37},
                         {"step": 400, "val_loss": 0.52}])  # fmt: skip
    mask = lesson.knob_effect("mask", "none", rise=False, min_change=1.0)(Evidence(runs={"lecture": run}))
    assert mask.passed is True, mask.text
    assert "held-out loss 2.02 at step 200, held-out loss 0.52 at step 400" in mask.text, mask.text
    assert "2.37" not in mask.text


def test_a_knob_seen_on_the_training_loss_waits_for_the_held_out_loss_and_is_not_seen_where_it_does_not_follow():
    """The mission: a verdict on training loss alone called a pitfall reproduced on a short text where the held-out
    loss showed nothing. The room watches the training loss, but "seen" needs the held-out loss (the run's fixed
    held-out windows) to move as far the same way."""
    up = lesson.knob_effect("learning_rate", 0.1, rise=True)
    losses = metrics([0.3] * 100 + [1.2] * 300)  # memorised a short text (0.3), then LR 0.1 at step 100 breaks it
    events = [knob("learning_rate", 0.003, 0.1, 100)]
    run = RunData("r", "running", losses[:130], events, evals=[{"step": 100, "val_loss": 3.52}], eval_interval=50)
    waiting = up(Evidence(runs={"lecture": run}))
    assert waiting.passed is None and not waiting.settled, waiting.text
    assert "the held-out loss must rise by 0.3 too (the next eval: step 150)" in waiting.text, waiting.text
    run.metrics, run.evals = losses, [{"step": s, "val_loss": 3.52 + 0.01 * (s > 100)} for s in range(100, 401, 50)]
    flat = up(Evidence(runs={"lecture": run}))  # patience over: 300 steps and the held-out loss never followed
    assert flat.passed is False, flat.text
    assert "held-out loss 3.52 at step 100, held-out loss 3.53 at step 400" in flat.text, flat.text
    assert flat.headline.endswith("but held-out 3.52 → 3.53, not the 0.3-nat rise"), flat.headline
    run.evals = [{"step": 100, "val_loss": 3.52}, {"step": 150, "val_loss": 3.6}, {"step": 200, "val_loss": 4.1}]
    seen = up(Evidence(runs={"lecture": run}))  # the first eval that followed decides, and stays
    assert seen.passed is True and seen.headline.endswith("; held-out 3.52 → 4.10"), seen.headline


def test_a_stretch_that_ends_without_a_held_out_eval_is_not_enough_data_never_seen():
    down = lesson.knob_effect("mask", "none", rise=False, min_change=1.0)
    events = [knob("mask", "causal", "none", 100), knob("mask", "none", "causal", 140)]  # put back 40 steps later
    run = RunData("r", "running", metrics([2.0] * 100 + [0.3] * 40 + [2.0] * 100), events,
                  evals=[{"step": 100, "val_loss": 2.1}, {"step": 150, "val_loss": 2.1}], eval_interval=50)  # fmt: skip
    check = down(Evidence(runs={"lecture": run}))
    assert check.passed is None and check.settled, check.text
    assert "no held-out eval came between step 101 and step 139" in check.text, check.text
    early = RunData("r", "running", metrics([2.0] * 30 + [0.3] * 40), [knob("mask", "causal", "none", 30)],
                    evals=[{"step": 50, "val_loss": 0.4}], eval_interval=50)  # fmt: skip
    first = down(Evidence(runs={"lecture": early}))  # changed before the run's first eval: nothing to compare with
    assert first.passed is None and first.settled and "no held-out eval before the change" in first.text


def test_step_one_needs_the_held_out_loss_below_uniform_guessing_too():
    memorised = RunData("r", "stopped", metrics([4.2] + [1.5] * 200), vocab_size=65,
                        evals=[{"step": 100, "val_loss": 3.6}, {"step": 200, "val_loss": 3.9}])  # fmt: skip
    check = lesson.loss_from_uniform(Evidence(runs={"lecture": memorised}))
    assert check.passed is False, check.text
    assert "the held-out loss 3.90 at step 200 is 0.27 below ln V, less than 1.0" in check.text, check.text
    memorised.state = "running"
    assert lesson.loss_from_uniform(Evidence(runs={"lecture": memorised})).passed is None  # a later eval may fall
