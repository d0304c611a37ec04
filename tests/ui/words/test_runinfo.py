"""Pure page logic: what a page says about a run (tinygpt/ui/words/runinfo.py) and the step slider (playback.py)."""

from __future__ import annotations

import pytest

from tinygpt.runs.owners import Actor
from tinygpt.schedule import lr_at
from tinygpt.ui.attention import playback
from tinygpt.ui.host import runlist
from tinygpt.ui.words import picking, runinfo, schedule_words


def test_knob_note_follows_the_workers_structured_answer():
    assert runinfo.knob_note([], "r1", "mask", "none")[0] == "info"
    ok = [{"kind": "knob", "knob": "mask", "request": "r1", "ok": True, "old": "causal", "new": "none", "step": 7}]
    assert runinfo.knob_note(ok, "r1", "mask", "none") == ("success", "mask → none: applied after step 7, from step 8")
    refused = [{"kind": "knob", "knob": "window", "request": "r2", "ok": False, "error": "too long", "message": "no"}]
    assert runinfo.knob_note(refused, "r2", "window", 99) == ("error", "window → 99: not applied: too long")
    assert runinfo.knob_note(ok + refused, "r3", "mask", "none")[0] == "info"  # another request's answer


def test_event_notes_list_changes_not_refusals():
    events = [
        {"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "none", "step": 3, "message": "changed"},
        {"kind": "knob", "knob": "mask", "ok": False, "error": "bad", "step": 4, "message": "refused"},
        {"kind": "nonfinite", "step": 9, "message": "nan"},
    ]
    assert runinfo.event_notes(events) == "mask causal→none @3 · nan"  # the markers' own words
    # Past the limit the older ones are counted, not dropped unsaid (a review: 5 of 7 changes listed under ①-⑦)
    many = [{"kind": "knob", "knob": "warmup_steps", "ok": True, "old": w, "new": w + 1, "step": w} for w in range(7)]
    assert runinfo.event_notes(many) == "2 earlier (on the chart) · " + " · ".join(
        f"warmup {w}→{w + 1} @{w}" for w in range(2, 7)
    )


def test_nearest_checkpoint_and_snapshot():
    assert runinfo.nearest_checkpoint([0, 100, 200], 150) == 100
    assert runinfo.nearest_checkpoint([100, 200], 50) == 100
    assert runinfo.nearest_checkpoint([], 50) is None
    assert runinfo.nearest_snapshot([0, 10, 20], 15) == 10


def test_playback_plays_from_the_start_then_one_snapshot_per_tick_then_stops():
    steps = [0, 10, 20]
    first = playback.advance(steps, 20, playing=True, started=False, follow=True)
    assert (first.step, first.started, first.follow, first.done) == (0, True, False, False)
    second = playback.advance(steps, first.step, playing=True, started=True, follow=False)
    assert second.step == 10 and not second.done
    last = playback.advance(steps, 20, playing=True, started=True, follow=False)
    assert last.done and last.step == 20


def test_playback_follows_the_newest_snapshot_until_the_learner_scrubs():
    assert playback.advance([0, 10, 20], 10, playing=False, started=False, follow=True).step == 20
    assert playback.advance([0, 10, 20], 10, playing=False, started=False, follow=False).step == 10
    assert playback.advance([0, 10], None, playing=False, started=False, follow=False).step == 10


# ---------------------------------------------------------------- what each run really did (live knob changes)

CONFIG = {
    "model": {"num_layers": 2, "num_heads": 4, "hidden_dim": 64, "mask": "causal", "attn_scale": "head_dim"},
    "train": {"learning_rate": 0.002, "min_lr": 0.0002, "warmup_steps": 30, "max_grad_norm": 1.0},
    "data": {"source": "synthetic:copy"},
}
EVENTS = [  # the cheating run of the issue: scale off at 1130, mask none at 1810
    {"kind": "knob", "knob": "attn_scale", "ok": True, "old": "head_dim", "new": "none", "step": 1130},
    {"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "none", "step": 1810},
    {"kind": "knob", "knob": "window", "ok": False, "error": "no", "step": 1900},
]


def test_runs_show_the_live_changes_and_the_knobs_of_the_best_val_loss():
    assert runinfo.knob_history(EVENTS) == ["scaling head_dim→none @1130", "mask causal→none @1810"]
    evals = [{"step": 1000, "val_loss": 1.9}, {"step": 2000, "val_loss": 0.126}]
    # 0.126 was reached while cheating (mask none from 1810): no model's that predicts. The best under a causal
    # mask is the run's best (a review read a leak's 0.0601 for a run whose best after it was 1.093)
    assert runinfo.best_eval(CONFIG, EVENTS, evals) == (1000, 1.9, [])
    step, loss, under = runinfo.best_eval(CONFIG, EVENTS, evals[1:])  # every eval under the leak: it, said so
    assert (step, loss) == (2000, 0.126) and under == ["scaling none", "mask none"]
    # The eval at the step the mask went back ran before the change (it applies from the next step): a leak's too
    # (a review read "0.1539 @850" for a run whose mask went none → causal at 850)
    back = [*EVENTS, {"kind": "knob", "knob": "mask", "ok": True, "old": "none", "new": "causal", "step": 2000}]
    assert runinfo.best_eval(CONFIG, back, evals) == (1000, 1.9, [])
    assert runinfo.best_eval(CONFIG, [], evals)[2] == []
    assert runinfo.knobs_at(CONFIG, EVENTS, 1500)["mask"] == "causal"
    # A run started with a leaking mask changed nothing live, and its best is still the mask's: it says so.
    leaky = {**CONFIG, "model": {**CONFIG["model"], "mask": "off_by_one"}}
    assert runinfo.best_eval(leaky, [], evals)[2] == ["mask off_by_one"]


def test_settings_that_differ_count_live_changes_and_compare_charts_mark_them():
    from tinygpt.ui.charts import compare

    two_heads = {**CONFIG, "model": {**CONFIG["model"], "num_heads": 2}}
    diff = compare.config_diff({"A": CONFIG, "B": two_heads}, events={"A": EVENTS, "B": []})
    rows = {r["setting"]: r for r in diff}
    assert rows["model.mask"]["A"] == "causal→none @1810" and rows["model.mask"]["B"] == "causal"
    assert {"model.num_heads", "model.mask", "model.attn_scale"} <= set(rows)  # not only num_heads 4 vs 2
    series = {"A": [{"step": s, "loss": 2.0} for s in range(1, 2001, 10)], "B": [{"step": 1, "loss": 2.0}]}
    spec = compare.compare_chart(series, "loss", events={"A": EVENTS})
    labels = [r["label"] for r in spec["datasets"]["compare_knobs"]]
    assert labels == ["A: scaling head_dim→none @1130", "A: mask causal→none @1810"]


def test_a_learner_queued_behind_prepared_runs_is_told_so_and_no_impossible_number():
    """The review (2 slots, the lecture run in one, 15 prepared runs ahead under the slot rule): a learner read
    "Starts in about 14 s, when a training slot frees up"; their run started 248 s later."""
    behind = {"position": 16, "prepared": False, "prepared_ahead": 15, "live_ahead": 0, "seconds": 248.0}
    said = runinfo.queue_words(behind)
    assert said == ("Queued: prepared runs (the lesson's long runs, a lab batch) train first in the free training "
                    "slot (15 ahead of it, about 4 min 08 s)")  # fmt: skip
    assert "Starts in" not in said and "14 s" not in said
    unmeasured = runinfo.queue_words({**behind, "prepared_ahead": 15, "live_ahead": 1, "seconds": None})
    assert unmeasured.endswith("it starts not before the 15 ahead of it and 1 live run(s) have trained (no pace "
                               "measured yet)")  # fmt: skip
    assert not any(ch.isdigit() for ch in unmeasured.replace("15", "").replace("1 live", ""))  # no seconds at all


def test_queue_words_for_a_plain_wait_a_prepared_run_and_slots_held_until_stopped():
    plain = {"position": 2, "prepared": False, "prepared_ahead": 0, "live_ahead": 1, "seconds": 14.0}
    assert runinfo.queue_words(plain) == "Starts in about 14 s, when a training slot frees up (1 run(s) ahead of it)"
    assert runinfo.queue_words({**plain, "live_ahead": 0, "seconds": 0.0}).startswith("Starts within seconds, when")
    # A prepared run behind other prepared runs waits for them plainly: "prepared runs train first" is not news
    mine = {"position": 3, "prepared": True, "prepared_ahead": 2, "live_ahead": 0, "seconds": 60.0}
    assert (
        runinfo.queue_words(mine) == "Starts in about 1 min 00 s, when a training slot frees up (2 run(s) ahead of it)"
    )
    assert runinfo.queue_words({**plain, "seconds": None}) == (
        "Waiting for a training slot (1 run(s) ahead of it): no run has a measured pace yet to say when"
    )
    forever = runinfo.queue_words({**plain, "seconds": float("inf")})
    assert forever.startswith("Starts only when someone stops a run") and "about" not in forever
    assert runinfo.queue_words(None) == "Waiting for a training slot"


def test_a_finished_runs_tokens_per_s_is_its_recent_steps_not_the_last_status_write():
    """Issue 24 finding 4: a finished 3000-step run said "753 tokens/s" (status.json's wall-clock rate over its
    last few steps and the final eval) while its steps ran at 8k-34k tokens/s."""
    metrics = [{"step": s, "time": s * 0.05, "tokens_per_s": 10_000.0 + (s % 2) * 2_000} for s in range(1, 3001)]
    status = {"state": "finished", "step": 3000, "max_steps": 3000, "tokens_per_s": 752.7, "reason": "max_steps"}
    line = runinfo.status_line(status, metrics)
    assert "753" not in line
    rate = runinfo.recent_tokens_per_s(metrics)
    assert 10_000 < rate < 12_000  # the harmonic mean: total tokens over total step time
    assert f"{rate:,.0f} tokens/s" in line
    assert runinfo.recent_tokens_per_s([]) is None
    assert "tokens/s" not in runinfo.status_line({"state": "queued", "step": 0, "max_steps": 10}, [])


def test_a_paused_runs_speed_is_its_last_measured_not_a_current_one():
    """A paused run showed "12,346 tokens/s" as if it still trained: only a running run's speed is current; any
    other state says the last measured speed as such, without the GFLOP/s of a live measurement."""
    metrics = [{"step": s, "time": s * 0.1, "tokens_per_s": 12_345.6} for s in range(1, 51)]
    status = {"step": 50, "max_steps": 150, "train_flops_per_token": 5.0e6, "matmul_peak_gflops": 160.0}
    running = runinfo.status_line({**status, "state": "running"}, metrics)
    assert "· 12,346 tokens/s · " in running and "GFLOP/s" in running and "last measured" not in running
    for state_ in ("paused", "stopped", "finished", "diverged"):
        line = runinfo.status_line({**status, "state": state_}, metrics)
        assert "last measured 12,346 tokens/s" in line and "GFLOP/s" not in line, line
        assert line.count("tokens/s") == 1


# --- readable names where a run is picked (issue 24 finding 5) --------------------------------------------------

_CFG = {
    "model": {"num_layers": 2, "num_heads": 4, "hidden_dim": 64, "mask": "causal"},
    "train": {"learning_rate": 0.002},
    "data": {"source": "shakespeare"},
    "learner": {"id": "me", "name": "anna"},
}
_MASK_NONE_AT_100 = [{"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "none", "step": 100}]


def test_the_sample_picker_names_runs_as_runs_does():
    name = "2L×4H×64 · shakespeare · LR 0.002 #2"
    label = picking.pick_label("C8grKhNsuilD6cG9", name, _CFG, me_id="me")
    assert label == f"{name} · yours"  # the name tells twins apart: no id to read
    theirs = picking.pick_label("X" * 16, name, _CFG, me_id="other", current=True)
    assert "anna's" in theirs and "(current)" in theirs
    assert picking.pick_label("X" * 16, "", _CFG, me_id=None).startswith("X" * 16)  # unreadable: id
    assert picking.pick_status("running", 2113) == "running · step 2,113"
    assert picking.pick_status("running", 775, "07:31:05") == (
        "running · step 775 at 07:31:05, when this page read it (Train follows it live)"
    )
    # ended where it stands: no reading time to take for the time it finished (a review)
    assert picking.pick_status("finished", 300, "19:30:45") == "finished · step 300"


def test_a_picker_label_does_not_change_while_its_run_trains():
    """Review: labels carried the live step ("… · running · step 2113"); the browser sends back the label it
    showed, which a moment later matched no option, so the pick fell back to the current run and Open opened,
    and Branch branched, another run. A label is the same at every step and state."""
    name = "2L×1H×128 · text · LR 0.1"
    labels = {picking.pick_label("R" * 16, name, _CFG, me_id="me") for _ in ("running", "finished")}
    assert len(labels) == 1 and "step" not in labels.pop()


def test_sample_says_which_run_and_step_and_why_a_cheating_run_babbles():
    source = picking.sample_source("C8grKhNsuilD6cG9", "2L×4H×64 · shakespeare · LR 0.002", 300)
    assert "**2L×4H×64 · shakespeare · LR 0.002** (run `C8grKhNsuilD6cG9`)" in source and "step 300" in source
    # the live changes the name leaves out, as the checkpoint has them (a review: "LR 0.002" at 0.02 since 831)
    changed = picking.sample_source("C8grKhNsuilD6cG9", "2L×4H×64", 300, at="at this checkpoint: LR 0.02 (changed "
                                    "at step 831)")  # fmt: skip
    assert "its checkpoint at step 300 (at this checkpoint: LR 0.02 (changed at step 831))." in changed
    # no run in view (the sidebar says so): the page says it picked this one itself (a review read both at once)
    alone = picking.sample_source("C8grKhNsuilD6cG9", "2L×4H×64", 300, none_in_view=True)
    assert alone.endswith("No run is in view, as the sidebar says: this page picked it (the **Run** box above).")
    [(kind, note)] = picking.checkpoint_notes(_CFG, _MASK_NONE_AT_100, [], 300)
    assert kind == "warning" and "mask none in steps 101-300" in note and "next character" in note
    assert picking.checkpoint_notes(_CFG, _MASK_NONE_AT_100, [], 50) == []  # that checkpoint predates the switch
    assert picking.checkpoint_notes(_CFG, [], [], 300) == []  # an honest run: nothing to explain
    back = [*_MASK_NONE_AT_100, {"kind": "knob", "knob": "mask", "ok": True, "old": "none", "new": "causal",
                                 "step": 200}]  # fmt: skip
    [(kind, note)] = picking.checkpoint_notes(_CFG, back, [], 300)
    assert kind == "info" and "steps 101-200" in note  # switched back: said, not blamed (tests/ui/words/test_picking)
    window = {**_CFG, "model": {**_CFG["model"], "mask": "sliding_window"}}
    assert picking.checkpoint_notes(window, [], [], 300) == []  # a sliding window does not see the future


def test_the_room_chart_draws_every_run_of_the_table_that_has_a_step():
    """Issue 24 finding 4: the Room's loss chart said "no runs yet" over six finished runs listed under it."""
    rows = [{"learner": f"l{i}", "run": f"r{i}", "name": f"2L×4H×64 · n{i}", "state": "finished", "step": 300}
            for i in range(6)]  # fmt: skip
    drawn, note = picking.room_chart_runs(rows)
    assert [run for run, _ in drawn] == [f"r{i}" for i in range(6)] and note == ""  # all drawn: nothing to say
    assert drawn[0][1] == "l0 · 2L×4H×64 · n0"  # readable: learner and run name, not the id
    assert picking.room_chart_runs([]) == ([], "")
    twins = [{**rows[0], "run": "a1"}, {**rows[0], "run": "b2", "name": rows[0]["name"] + " #2"}]
    labels = [label for _, label in picking.room_chart_runs(twins)[0]]
    assert labels == ["l0 · 2L×4H×64 · n0", "l0 · 2L×4H×64 · n0 #2"]  # the names tell twins apart: no id


def test_the_room_chart_keeps_a_learners_finished_runs_beside_the_prepared_runs_that_train():
    """The review: with the instructor's prepared runs training (and queued), the chart drew only the live runs, so
    a learner's finished runs, listed in the table, were missing from it without a word."""
    anna = [{"learner": "anna", "run": f"a{i}", "name": f"anna's {i}", "state": "finished", "step": 300}
            for i in range(2)]  # fmt: skip
    prepared = [{"learner": "teacher", "run": f"p{i}", "name": f"prep {i}", "state": "running", "step": 40}
                for i in range(2)]  # fmt: skip
    waiting = [{"learner": "teacher", "run": f"q{i}", "name": f"prep q{i}", "state": "queued", "step": 0}
               for i in range(15)]  # fmt: skip
    drawn, note = picking.room_chart_runs(waiting + prepared + anna)
    assert [run for run, _ in drawn] == ["p0", "p1", "a0", "a1"]  # the live ones first, then the rest
    said = "The chart draws 4 of the 19 runs in the table; not drawn: 15 run(s) at step 0, no loss to draw yet"
    assert note == said + " (15 queued)."
    many = [{**anna[0], "run": f"x{i}"} for i in range(picking.ROOM_CHART_MAX + 4)]
    drawn, note = picking.room_chart_runs(prepared + many)
    assert len(drawn) == picking.ROOM_CHART_MAX and [run for run, _ in drawn[:2]] == ["p0", "p1"]
    assert f"6 run(s) past the chart's {picking.ROOM_CHART_MAX} panels (6 finished)" in note


def test_the_tables_lead_with_the_name_and_keep_the_id_last(tmp_path):
    """Issue 36: the Runs table's first column was the id, and three default runs had the same name."""
    from tinygpt.runs.store import RunStore

    store = RunStore(tmp_path)
    for _ in range(3):
        with store.create({**_CFG, "model": {**_CFG["model"], "max_seq_len": 32}}, owner="app"):
            pass
    for rows in (runlist.run_rows(store), runlist.room_rows(store)):
        names = [r["name"] for r in rows]
        assert len(set(names)) == 3 and sorted(names)[0] == "2L×4H×64 · shakespeare · LR 0.002"
        assert list(rows[0])[-1] == "run" and list(rows[0])[0] in ("name", "learner")
    assert list(runlist.run_rows(store)[0])[0] == "name"
    assert runlist.run_names(store) == {r["run"]: r["name"] for r in runlist.run_rows(store)}


def test_the_clipping_caption_is_the_runs_share_and_what_it_means_here():
    """Issue 24 finding 4: the demo clipped nearly every step while the caption said that many clipped steps mean
    the learning rate is too high (under AdamW a steady clip rescales the moments, not the update's size)."""
    from tinygpt.ui.charts.help import CHART_HELP

    assert "learning rate is too high" not in CHART_HELP["grad_norm_chart"]  # a fixed verdict, true or not
    every = [{"step": s, "loss": 3 - s / 300, "grad_norm": 2.5, "clipped": True} for s in range(1, 301)]
    text = runinfo.clip_caption(every, {"max_grad_norm": 1.0, "learning_rate": 0.002}, "adamw")
    assert "300 of the last 300 steps (100%, to step 300)" in text and "0.002" in text and "AdamW" in text
    assert "0.4×" in text  # 1.0 / 2.5: the factor each clipped gradient was scaled by
    assert "falling" in text  # the loss fell: the caption says so instead of blaming the learning rate
    rising = [{**m, "loss": 1 + m["step"] / 100} for m in every]
    assert "rising" in runinfo.clip_caption(rising, {"max_grad_norm": 1.0, "learning_rate": 0.002}, "adamw")
    sgd = runinfo.clip_caption(every, {"max_grad_norm": 1.0, "learning_rate": 0.1}, "sgd")
    assert "SGD" in sgd and "0.04" in sgd  # the effective step: lr × 0.4
    few = [{**m, "clipped": m["step"] % 50 == 0} for m in every]
    assert "6 of the last 300 steps (2%, to step 300)" in runinfo.clip_caption(few, {"max_grad_norm": 1.0}, "adamw")
    assert "no step was clipped" in runinfo.clip_caption([{**m, "clipped": False} for m in every],
                                                         {"max_grad_norm": 1.0}, "adamw").lower()  # fmt: skip
    assert "off" in runinfo.clip_caption(every, {"max_grad_norm": 0.0}, "adamw")
    assert runinfo.clip_caption([], {"max_grad_norm": 1.0}, "adamw") == ""


def test_a_run_that_trains_until_stopped_says_so_instead_of_an_eta():
    """Issue 20 finding 7: the Lecture preset's run has no planned end: the status line says "until stopped" (no
    "/ 1,000,000", no 9-hour ETA), there is no progress bar, the planned learning rate follows the run instead
    of a million-step axis, and a queue does not promise a slot it holds."""
    from tinygpt.config import UNTIL_STOPPED

    metrics = [{"step": s, "time": s * 0.01} for s in range(1, 200)]
    status = {"state": "running", "step": 199, "max_steps": UNTIL_STOPPED, "tokens_per_s": 50_000}
    line = runinfo.status_line(status, metrics)
    assert "until stopped" in line and "ETA" not in line and "1,000,000" not in line, line
    assert line.startswith("step 199 ·")
    assert runinfo.eta_seconds(metrics, 199, UNTIL_STOPPED) is None
    assert runinfo.progress_fraction(status) is None
    assert "until stopped" not in runinfo.status_line({**status, "state": "stopped"}, metrics)
    config = {"train": {"max_steps": UNTIL_STOPPED, "learning_rate": 3e-3, "min_lr": 3e-3, "warmup_steps": 50}}
    plan = runinfo.lr_schedule(config, {}, points=200, now=4000)
    assert plan[0][0] == 4001 and plan[-1][0] == 5000 and {lr for _, lr in plan} == {3e-3}  # constant, from now on
    start = runinfo.lr_schedule(config, {}, points=200)  # before the first step: past the warmup
    assert start[-1][0] == 100 and start[0][1] < 3e-3
    short = {"train": {"max_steps": 300, "learning_rate": 2e-3, "min_lr": 2e-4, "warmup_steps": 30}}
    assert runinfo.lr_schedule(short, {}, now=100)[-1][0] == 300  # a planned end is drawn whole, as before


def test_the_induction_verdict_has_a_bar_and_an_honest_estimate_while_its_runs_train():
    """Issue 20 finding 9: the induction experiment took over 7 minutes to a verdict on a loaded server with no
    estimate of when it would end. The estimate is the slowest run's remaining steps at its own recent pace."""
    fast = [{"step": s, "time": s / 40} for s in range(1, 1001)]  # 40 steps/s
    slow = [{"step": s, "time": s / 20} for s in range(1, 501)]  # 20 steps/s
    assert runinfo.step_rate(fast) == pytest.approx(40)
    runs = {
        "2 layers": ({"state": "running", "step": 500, "max_steps": 3000}, slow),
        "1 layer (control)": ({"state": "running", "step": 1000, "max_steps": 3000}, fast),
    }
    fraction, text = runinfo.verdict_progress(runs)
    assert fraction == pytest.approx(1500 / 6000)
    assert "Verdict in about 2 min 05 s" in text, text  # (3000 - 500) / 20 s for the slower run, not the faster
    assert "2 layers: step 500 / 3,000 at 20 steps/s" in text and "at 40 steps/s" in text
    queued = {**runs, "1 layer (control)": ({"state": "queued", "step": 0, "max_steps": 3000, "queue_position": 1}, [])}
    fraction, text = runinfo.verdict_progress(queued)
    assert text.startswith("No estimate yet: 1 layer (control) is not training now") and "position 1" in text
    assert "Verdict in about" not in text  # a run waiting for a slot has no pace to extrapolate
    ended = {label: ({"state": "finished", "step": 3000, "max_steps": 3000}, m) for label, (_, m) in runs.items()}
    assert runinfo.verdict_progress(ended)[0] == 1.0


def test_the_room_chart_draws_the_learners_runs_first_then_the_instructors():
    """The review: the instructor's lecture and twenty prepared runs came among (and before) the learners' runs, and
    with 36 panels at most they could push a learner's run out of the chart."""
    mine = [{"learner": "teacher", "run": f"t{i}", "name": f"prep {i}", "state": state, "step": 50,
             "whose": "instructor"} for i, state in enumerate(("running", "finished"))]  # fmt: skip
    cli = [{"learner": "-", "run": "c0", "name": "cli", "state": "running", "step": 9, "whose": "no learner"}]
    theirs = [{"learner": f"l{i}", "run": f"l{i}", "name": f"n{i}", "state": state, "step": 300, "whose": "learner"}
              for i, state in enumerate(("finished", "running", "finished"))]  # fmt: skip
    drawn, note = picking.room_chart_runs(mine + cli + theirs)  # the table's order: newest first
    assert [run for run, _ in drawn] == ["l1", "l0", "l2", "t0", "c0", "t1"]  # learners', each part live first
    crowd = [{**mine[1], "run": f"p{i}"} for i in range(picking.ROOM_CHART_MAX)]
    drawn, note = picking.room_chart_runs(crowd + theirs)
    assert [run for run, _ in drawn[:3]] == ["l1", "l0", "l2"] and len(drawn) == picking.ROOM_CHART_MAX
    assert "3 run(s) past the chart's" in note  # the instructor's, not the learners'


def test_the_status_line_says_the_newest_step_of_the_status_and_the_records_beside_it():
    """A lesson pane read "by step 836 it is 2.04" (from the records) above "run: step 819" (from status.json,
    rewritten every few tenths of a second): the line now says the newer of the two."""
    metrics = [{"step": s, "loss": 2.0, "time": s * 0.05, "tokens_per_s": 1000.0} for s in range(800, 837)]
    line = runinfo.status_line({"state": "running", "step": 819, "max_steps": 2000}, metrics)
    assert line.startswith("step 836 / 2,000"), line
    assert runinfo.status_line({"state": "paused", "step": 900}, metrics).startswith("step 900")


def test_the_sidebars_run_line_says_the_knobs_that_moved_since_the_name():
    """Review: the lecture run's name read "LR 0.003" in the sidebar beside a slider at 0.1."""
    from tinygpt.ui.words import picking

    config = {"model": {"mask": "causal"}, "train": {"learning_rate": 0.003}}
    lr = {"kind": "knob", "knob": "learning_rate", "old": 0.003, "new": 0.1, "step": 4208, "ok": True}
    assert picking.now_unlike_the_name(config, []) == ""
    assert picking.now_unlike_the_name(config, [lr]) == "now LR 0.1 (changed at step 4,208)"
    back = {**lr, "old": 0.1, "new": 0.003, "step": 5000}
    assert picking.now_unlike_the_name(config, [lr, back]) == ""  # back where the name says


def test_the_hold_note_is_true_for_its_owner_a_watcher_and_the_instructor():
    """A review: a learner watching another learner's held run read "Resume and Step stay off until the instructor
    resumes it" (off for them anyway: not their run), and its owner "You can still ... start a run of your own",
    which the hold now refuses (tinygpt.ui.people.admission.check_hold)."""
    anna, ben = Actor("a" * 16, "anna"), Actor("b" * 16, "ben")
    teacher = Actor("c" * 16, "teacher", instructor=True)
    config = {"learner": {"id": anna.id, "name": "anna"}}
    hold = {"by": "the instructor", "step": 0, "at": 0.0}
    assert runinfo.hold_note({}, config, anna) is None
    kind, owner = runinfo.hold_note(hold, config, anna)
    assert kind == "warning" and "**Resume** and **Step** stay off" in owner
    assert "you cannot start, branch or resume a run, until the instructor lets go of it" in owner
    assert "of your own" not in owner
    assert runinfo.hold_note(hold, config, ben) == ("info", "Paused and held by the instructor.")
    kind, mine = runinfo.hold_note(hold, config, teacher)
    assert mine.startswith("You paused this run and hold it: anna cannot resume it, nor start, branch or resume any")


def test_a_branchs_speed_and_eta_are_its_own_steps_not_its_parents():
    """A review: a queued branch that had never trained read "step 500 / 700 · last measured 23,610 tokens/s", its
    parent's speed, copied with the history."""
    parent = [{"step": s, "tokens_per_s": 23610.0, "time": 1000.0 + s / 10} for s in range(451, 501)]
    config = {"branch": {"step": 500, "changes": {"learning_rate": 0.005}}}
    queued = runinfo.status_line({"state": "queued", "step": 500, "max_steps": 700}, parent, config)
    assert "tokens/s" not in queued and queued.startswith("step 500 / 700")
    own = [{"step": s, "tokens_per_s": 5000.0, "time": 9000.0 + s / 5} for s in range(501, 521)]
    running = runinfo.status_line({"state": "running", "step": 520, "max_steps": 700}, parent + own, config)
    assert "5,000 tokens/s" in running and "ETA 36 s" in running  # 180 steps at its own 5 steps a second
    assert "23,610" in runinfo.status_line({"state": "queued", "step": 500, "max_steps": 700}, parent, {})


def test_the_runs_tables_first_columns_give_names_and_losses_room():
    """A review at 1280x720 with Large fonts: owners cut to "patient-koa", a best val loss to "mask off_by…"."""
    assert list(runinfo.RUNS_TABLE_WIDTHS) == runinfo.RUNS_TABLE_FIRST
    widths = [runinfo.RUNS_TABLE_WIDTHS[c]["width"] for c in runinfo.RUNS_TABLE_FIRST]
    # all five beside a 1280 px window's sidebar: the grid shows 818 px there (a review measured 850 scroll 32)
    assert sum(widths) <= 818 and min(widths[1], widths[4]) >= 140
    large = runinfo.runs_table_widths(True)  # Large fonts' wider sidebar leaves ~72 px less (a browser test)
    assert sum(c["width"] for c in large.values()) <= 850 - 72 and large["owner"] == runinfo.RUNS_TABLE_WIDTHS["owner"]


def test_the_lr_note_says_the_runs_own_schedule():
    train = {"max_steps": 300, "learning_rate": 0.002, "min_lr": 0.0002, "warmup_steps": 0}
    # a review read "a linear warmup, then a cosine decay" under a run with warmup 0
    note = schedule_words.lr_note({"train": train}, {})
    assert note == ("This run's settings: no warmup (it starts at the peak, 0.002), then a cosine decay to the floor, "
                    "0.0002, at step 300.")
    # a warmup longer than the run never reaches the peak: said, with where it ends (lr_at of the last step)
    long = schedule_words.lr_note({"train": {**train, "max_steps": 100, "warmup_steps": 200}}, {})
    assert "without reaching the peak" in long and "ends at 0.001" in long
    flat = schedule_words.lr_note({"train": {**train, "min_lr": 0.002, "warmup_steps": 10}}, {})
    assert flat.endswith("then it stays there (its floor is its peak).")
    assert "trains until stopped" in schedule_words.lr_note({"train": {**train, "max_steps": 1_000_000}}, {})
    assert schedule_words.lr_note({}, {}) == ""


def test_the_lr_note_of_a_run_changed_live_says_what_moved_never_a_schedule_it_did_not_have():
    """A review read a finished run's schedule as if its last knobs had held from step 0: "a linear warmup over 200
    steps to 0.005" of a run that warmed up over 1,000 steps to 0.002 until its LR and warmup moved (412, 488).
    Another read two warmup changes merged into one, and a plan "from now on" that warmed up again long after
    warmup had ended."""
    train = {"max_steps": 3000, "learning_rate": 0.002, "min_lr": 0.0002, "warmup_steps": 1000}
    now = {"learning_rate": 0.005, "min_lr": 0.0005, "warmup_steps": 200}  # min_lr moved with the LR: not said
    events = [
        {"kind": "knob", "ok": True, "knob": "learning_rate", "old": 0.002, "new": 0.005, "step": 412},
        {"kind": "knob", "ok": True, "knob": "min_lr", "old": 0.0002, "new": 0.0005, "step": 412,
         "coupled_to": "learning_rate"},
        {"kind": "knob", "ok": True, "knob": "warmup_steps", "old": 1000, "new": 139, "step": 450},
        {"kind": "knob", "ok": True, "knob": "warmup_steps", "old": 139, "new": 200, "step": 488},
    ]  # fmt: skip
    ended = schedule_words.lr_note({"train": train}, now, ended=True, events=events)
    assert ended.startswith("This run's settings: a linear warmup over 1,000 steps to 0.002"), ended
    assert ended.endswith("Changed live (LR 0.002 → 0.005 at step 412, warmup 1000 → 139 at step 450, warmup "
                          "139 → 200 at step 488); the floor moved with the rate, 0.0002 → 0.0005: the line shows "
                          "the rates it used."), ended
    # two LR changes: every floor, in order (a review read "0.0002 → 5e-05", the 0.0006 between left out)
    twice = [*events, {"kind": "knob", "ok": True, "knob": "learning_rate", "old": 0.005, "new": 0.0005, "step": 900},
             {"kind": "knob", "ok": True, "knob": "min_lr", "old": 0.0005, "new": 5e-05, "step": 900,
              "coupled_to": "learning_rate"}]  # fmt: skip
    lowered = schedule_words.lr_note({"train": train}, {**now, "learning_rate": 0.0005, "min_lr": 5e-05}, ended=True,
                                     events=twice)  # fmt: skip
    assert "the floor moved with the rate, 0.0002 → 0.0005 → 5e-05: the line shows" in lowered, lowered
    live = schedule_words.lr_note({"train": train}, now, events=events, step=2000)
    rate = lr_at(2000, 0.005, 0.0005, 200, 3000)
    assert live.endswith(f"from here: a cosine decay from {rate:.3g} now to the floor, 0.0005, at step 3,000."), live
    early = schedule_words.lr_note({"train": train}, now, events=events, step=150)
    assert early.endswith("from here: warming up to 0.005 by step 200, then a cosine decay to the floor, 0.0005, at "
                          "step 3,000."), early


def test_the_lr_note_at_the_edges_of_warmup_and_floor():
    """A review's edge cases: a warmup as long as the run reaches its peak at the last step (not "longer than"); a
    floor equal to the peak decays nothing, a run until stopped included; a warmup of 1 step starts at the peak."""
    train = {"max_steps": 300, "learning_rate": 0.002, "min_lr": 0.0002, "warmup_steps": 300}
    assert "over all its 300 steps to 0.002, reached at the last step" in schedule_words.lr_note({"train": train}, {})
    lecture = {**train, "max_steps": 1_000_000, "min_lr": 0.002, "warmup_steps": 50}
    assert schedule_words.lr_note({"train": lecture}, {}).endswith("then it stays there (its floor is its peak).")
    assert "no warmup (it starts at the peak" in schedule_words.lr_note({"train": {**train, "warmup_steps": 1}}, {})


def test_a_warmup_raised_past_the_runs_end_warms_up_to_its_last_step():
    train = {"max_steps": 300, "learning_rate": 0.002, "min_lr": 0.0002, "warmup_steps": 30}
    events = [{"kind": "knob", "ok": True, "knob": "warmup_steps", "old": 30, "new": 500, "step": 100}]
    note = schedule_words.lr_note({"train": train}, {"warmup_steps": 500}, events=events, step=120)
    last = lr_at(299, 0.002, 0.0002, 500, 300)
    assert note.endswith(f"from here: warming up toward 0.002 to its last step, {last:.3g}."), note
