"""The lesson's steps and checks (tinygpt/ui/teach/lesson.py): every check computed from run data, never canned."""

import math
from pathlib import Path

import pytest

from tinygpt.ui.teach import lesson, lesson_checks
from tinygpt.ui.teach.lesson import Evidence, RunData


def metrics(losses, start=1):
    return [{"step": start + i, "loss": v} for i, v in enumerate(losses)]


def knob(name, old, new, step):
    return {"kind": "knob", "ok": True, "knob": name, "old": old, "new": new, "step": step}


def test_the_lesson_follows_the_course_in_order():
    sections = [s.section for s in lesson.STEPS]
    order = ["Tensors", "Shape contracts", "1/√d", "Causal masking", "Multiple heads", "Residual",
             "Optimisation", "eight pitfalls", "health checklist", "induction", "ablation", "logit lens"]  # fmt: skip
    assert len(sections) == len(order)
    for section, word in zip(sections, order, strict=True):
        assert word in section
    assert all(s.page in lesson.PAGE_NAMES for s in lesson.STEPS)


def test_every_step_with_answers_asks_its_question():
    """A review's step 4 read "The mask is switched off ...: it can now see the character it must predict." above
    the answers "the loss plunges / goes up / stays about the same": a statement, no question to answer."""
    for step in lesson.STEPS:
        if step.answers is not None:
            assert step.predict.rstrip().endswith("?"), step.key


def test_loss_from_uniform_waits_then_reports_the_numbers():
    run = RunData("r", vocab_size=65, metrics=metrics([4.2] * 10))
    assert lesson.loss_from_uniform(Evidence(runs={"lecture": run})).passed is None
    run.metrics = metrics([4.2] + [2.4] * 80)
    waiting = lesson.loss_from_uniform(Evidence(runs={"lecture": run}))  # the held-out loss must fall too
    assert waiting.passed is None and "the held-out loss must be 1.0 below ln V too" in waiting.text, waiting.text
    run.evals = [{"step": 80, "val_loss": 2.5}]
    check = lesson.loss_from_uniform(Evidence(runs={"lecture": run}))
    assert check.passed is True and "4.20" in check.text and "2.40" in check.text
    assert f"{math.log(65):.2f}" in check.text
    run.metrics = metrics([4.2] + [3.9] * 80)  # still training: the fall may come yet (no early "not seen")
    assert lesson.loss_from_uniform(Evidence(runs={"lecture": run})).passed is None
    run.state = "stopped"
    assert lesson.loss_from_uniform(Evidence(runs={"lecture": run})).passed is False
    assert lesson.loss_from_uniform(Evidence()).passed is None


def test_the_fall_said_is_the_difference_of_the_values_shown():
    """Review, lesson step 1: "4.20 ... 2.25: it fell by 1.96" while the values shown differ by 1.95 (4.196 - 2.245
    = 1.951 was rounded on its own). The fall said, and judged, is the shown values' difference."""
    run = RunData("r", vocab_size=65, metrics=metrics([4.196] + [2.245] * 80), evals=[{"step": 70, "val_loss": 2.3}])
    check = lesson.loss_from_uniform(Evidence(runs={"lecture": run}))
    assert "4.20" in check.text and "2.25" in check.text, check.text
    assert "fell by 1.95" in check.text and "down 1.95" in check.headline, check.text
    # Review: "...; held-out loss 1.97 at step 3300: it fell by 2.37" read as the held-out loss's fall: said first
    held = RunData("r", vocab_size=65, metrics=metrics([4.196] + [2.245] * 80), evals=[{"step": 70, "val_loss": 2.3}])
    text = lesson.loss_from_uniform(Evidence(runs={"lecture": held})).text
    assert ": it fell by 1.95; the held-out loss 2.30 at step 70, 1.87 below ln V" in text, text
    edge = RunData("r", vocab_size=65, metrics=metrics([4.2] + [3.2] * 80),  # 4.20 - 3.20 is 0.9999... in floats
                   evals=[{"step": 80, "val_loss": 3.1}])  # fmt: skip
    assert lesson.loss_from_uniform(Evidence(runs={"lecture": edge}), min_fall=1.0).passed is True


def test_knob_effect_says_rose_or_fell_from_the_values_shown():
    check = lesson.knob_effect("mask", "none", rise=True, min_change=0.3)
    events = [knob("mask", "causal", "none", 50)]
    run = RunData("r", metrics=metrics([2.104] * 50 + [2.396] * 60), events=events,  # 2.10 -> 2.40: a 0.30 rise
                  evals=[{"step": 50, "val_loss": 2.2}, {"step": 100, "val_loss": 2.5}])  # fmt: skip
    result = check(Evidence(runs={"lecture": run}))
    assert "from 2.10 to 2.40" in result.text and result.passed is True, result.text


def test_knob_effect_measures_each_side_of_the_change():
    check = lesson.knob_effect("mask", "none", rise=False)
    run = RunData("r", metrics=metrics([2.2] * 100), events=[], evals=[{"step": 100, "val_loss": 2.3}])
    assert check(Evidence(runs={"lecture": run})).passed is None  # no switch yet
    run.events = [knob("mask", "causal", "none", 100)]
    run.metrics = metrics([2.2] * 100 + [0.3] * 5)
    assert check(Evidence(runs={"lecture": run})).passed is None  # 5 of 20 steps since
    run.metrics = metrics([2.2] * 100 + [0.3] * 30)
    result = check(Evidence(runs={"lecture": run}))  # seen in training, held-out to come
    assert result.passed is None and "the held-out loss must fall by 0.3 too" in result.text
    run.evals = [*run.evals, {"step": 125, "val_loss": 0.5}]
    result = check(Evidence(runs={"lecture": run}))
    assert result.passed is True and "fell from 2.20 to 0.30" in result.text and "step 100" in result.text
    run.metrics = metrics([2.2] * 100 + [2.6] * 30)  # disturbed first: not judged yet
    assert check(Evidence(runs={"lecture": run})).passed is None
    run.metrics = metrics([2.2] * 100 + [2.1] * 400)
    assert check(Evidence(runs={"lecture": run})).passed is False
    up = lesson.knob_effect("learning_rate", 0.1, rise=True)
    run.events = [knob("learning_rate", 0.002, 0.1, 100)]
    run.metrics = metrics([2.0] * 100 + [3.1] * 30)
    run.evals = [{"step": 100, "val_loss": 2.1}, {"step": 125, "val_loss": 3.0}]
    assert up(Evidence(runs={"lecture": run})).passed is True
    run.metrics = metrics([2.0] * 100 + [1.9] * 400)
    assert up(Evidence(runs={"lecture": run})).passed is False


def test_heads_differ_reads_the_latest_snapshot_and_waits_for_the_run_to_end():
    """Each score is judged against its role's uniform baseline from the same record (more in test_heads_check.py)."""
    base = {"previous": 0.1, "self": 0.1}
    flat = {"step": 50, "roles": {"previous": [[0.3, 0.31], [0.3, 0.32]]}, "baselines": base}  # 3x each, one role
    run = RunData("r", state="running", scores=[flat])
    assert lesson.heads_differ(Evidence(runs={"heads": run})).passed is None  # roles still forming
    run.state = "finished"
    assert lesson.heads_differ(Evidence(runs={"heads": run})).passed is False  # every head on the same job
    jobs = {"previous": [[0.8, 0.1], [0.1, 0.1]], "self": [[0.1, 0.1], [0.1, 0.25]]}
    run.scores = [flat, {"step": 60, "roles": jobs, "baselines": base}]
    check = lesson.heads_differ(Evidence(runs={"heads": run}))
    assert check.passed is True and "L0H0" in check.text and "0.80" in check.text and "step 60" in check.text
    assert "L1H1 attends to itself (0.25 vs 0.10 uniform" in check.text
    assert lesson.heads_differ(Evidence()).passed is None


def test_knobs_moved_by_one_click_are_one_change_and_a_later_change_ends_the_window():
    check = lesson.knob_effect("mask", "none", rise=False, min_change=1.0)
    events = [knob("attn_scale", "none", "head_dim", 100), knob("mask", "causal", "none", 101)]
    # 2.0 under the old settings; 2.8 for the step between the two knobs (not counted as "before"); then 0.2
    losses = [2.0] * 100 + [2.8] + [0.2] * 40
    run = RunData("r", metrics=metrics(losses), events=events,
                  evals=[{"step": 100, "val_loss": 2.1}, {"step": 130, "val_loss": 0.4}])  # fmt: skip
    result = check(Evidence(runs={"lecture": run}))
    assert result.passed is True and "from 2.00 to 0.20" in result.text
    assert "scaling none → head_dim, mask causal → none" in result.text  # each knob by its word
    run.events = [*events, knob("mask", "none", "causal", 125)]  # the next step put it back: its loss is not ours
    run.metrics = metrics(losses[:125] + [2.5] * 40)
    run.evals = [{"step": 100, "val_loss": 2.1}, {"step": 124, "val_loss": 0.4}, {"step": 150, "val_loss": 2.6}]
    assert check(Evidence(runs={"lecture": run})).passed is True


def test_verdict_checks_and_the_pitfall_count():
    check = lesson.experiment_verdict("mask", "Causal mask")
    assert check(Evidence()).passed is None
    assert check(Evidence(verdicts={"mask": {"reproduced": None, "sentence": "Still training."}})).passed is None
    seen = check(Evidence(verdicts={"mask": {"reproduced": True, "sentence": "leak 0.4"}}))
    assert seen.passed is True and "leak 0.4" in seen.text
    verdicts = {k: {"reproduced": True, "sentence": ""} for k in lesson.PITFALLS}
    assert lesson.all_pitfalls(Evidence(verdicts=verdicts)).passed is True
    verdicts["softmax"] = {"reproduced": None, "sentence": ""}
    assert "softmax" in lesson.all_pitfalls(Evidence(verdicts=verdicts)).text
    verdicts["softmax"] = {"reproduced": False, "sentence": ""}
    assert lesson.all_pitfalls(Evidence(verdicts=verdicts)).passed is False


def test_which_pitfalls_crash_is_graded_on_the_runs_that_ended_early():
    """Step 8 asks "how many crash?" and confirms "almost none": a reviewer saw two runs halt (the naive softmax
    diverged, the shape contract stopped its run at step 0) while the check, which counted only reproductions,
    graded "a few" wrong. The check now counts the runs that ended early; a guard's stop is named, not counted."""
    verdicts = {k: {"reproduced": True, "sentence": ""} for k in lesson.PITFALLS}
    verdicts["softmax"]["halted"] = {"naive softmax": {"state": "diverged", "step": 50}}
    verdicts["shape_drift"]["halted"] = {"bug + shape contracts": {"state": "failed", "step": 0}}
    check = lesson.all_pitfalls(Evidence(verdicts=verdicts))
    assert check.passed is True, check.text
    assert f"1 of {len(lesson.PITFALLS)} crashed" in check.text and "diverged at step 50" in check.text
    assert "Not counted as crashes: 'bug + shape contracts'" in check.text
    assert "shape contract, stopped it)" in check.text
    assert "1 of" in check.short
    verdicts["warmup"]["halted"] = {"no warmup, lr 1e-2": {"state": "diverged", "step": 12}}
    two = lesson.all_pitfalls(Evidence(verdicts=verdicts))
    assert two.passed is False and f"2 of {len(lesson.PITFALLS)} crashed" in two.short, two.short


def health_rows(rows_ok: bool, leak_ok: bool, *extra: dict) -> list[dict]:
    """lab.health_checks rows: the two checks the health step names, with numbers, and any others."""
    rows = {"check": "attention rows sum to 1", "result": "pass" if rows_ok else "FAIL",
            "measured": "2.4e-07" if rows_ok else "0.31", "threshold": "< 1e-04"}  # fmt: skip
    leak = {"check": "no future leak", "result": "pass" if leak_ok else "FAIL",
            "measured": "0" if leak_ok else "1.7", "threshold": "== 0 exactly"}  # fmt: skip
    return [rows, leak, *extra]


def test_health_passes_only_when_the_bug_fails_both_named_checks_and_the_correct_run_passes_them():
    ok, bad = health_rows(True, True), health_rows(False, False)
    caught = lesson.health_catches(Evidence(health={"correct": ok, "silent bug": bad}))
    assert caught.passed is True
    for said in ("attention rows sum to 1 FAIL (0.31, needs < 1e-04)", "no future leak FAIL (1.7",
                 "no future leak pass (0, needs == 0 exactly)", "2.4e-07"):  # fmt: skip
        assert said in caught.text, caught.text
    # A check both runs fail (the demo clips the gradient on most steps) decides nothing either way.
    clip = {"check": "clipping not hiding a rising loss", "result": "FAIL"}
    clipped = lesson.health_catches(Evidence(health={"correct": ok + [clip], "silent bug": bad + [clip]}))
    # ... but is said: a review read "'correct' passes both" above a table where it FAILed the clip check
    assert clipped.passed
    assert "it FAILs clipping not hiding a rising loss: about its training, not the bug" in clipped.text
    assert "'correct' passes both (one other FAIL)" in clipped.headline
    # The bug fails one named check only: not what the step promised.
    one = lesson.health_catches(Evidence(health={"correct": ok, "silent bug": health_rows(False, True)}))
    assert one.passed is False and "'silent bug' passes no future leak" in one.text
    # The correct run fails a named check too: the check is not telling the bug apart.
    both = lesson.health_catches(Evidence(health={"correct": health_rows(True, False), "silent bug": bad}))
    assert both.passed is False and "'correct' fails no future leak" in both.text


def test_health_fails_when_the_bug_fails_only_loss_still_decreasing():
    """Issue 33 finding 8: the step passed when the bug failed only "loss still decreasing"."""
    loss = {"check": "training loss still decreasing", "result": "FAIL", "measured": "0.01", "threshold": "> noise"}
    check = lesson.health_catches(Evidence(health={"correct": health_rows(True, True),
                                                   "silent bug": health_rows(True, True, loss)}))  # fmt: skip
    assert check.passed is False
    assert "'silent bug' passes attention rows sum to 1 and no future leak" in check.text


def test_health_says_not_enough_data_when_a_run_or_a_named_check_is_missing():
    ok, bad = health_rows(True, True), health_rows(False, False)
    assert lesson.health_catches(Evidence()).passed is None
    assert lesson.health_catches(Evidence(health={"correct": ok})).passed is None
    missing = lesson.health_catches(Evidence(health={"correct": ok, "silent bug": bad[:1]}))
    assert missing.passed is None and "'silent bug' no future leak: not run" in missing.text
    unjudged = [{**bad[0], "result": "not enough data"}, bad[1]]
    check = lesson.health_catches(Evidence(health={"correct": ok, "silent bug": unjudged}))
    assert check.passed is None and "not enough data" in check.text.lower()


def ablation(head: str = "L1H2", **changes: float) -> dict:
    """Evidence.ablation: every head's second-copy loss change, (2, 4), L1H2 the copier unless `changes` say."""
    deltas = [[0.02, 0.05, -0.01, 0.03], [0.04, 0.01, 0.46, 0.00]]
    for name, value in changes.items():
        deltas[int(name[1])][int(name[3])] = value
    return {"head": head, "deltas": deltas, "step": 3000, "where": "the second copy"}


def test_ablation_passes_when_the_named_head_stands_out_and_names_the_largest():
    check = lesson.ablation_hurts(Evidence(ablation=ablation()))
    assert check.passed is True
    assert "L1H2" in check.text and "+0.460" in check.text and "step 3000" in check.text
    assert "+0.020 on average, the most L0H1 at +0.050" in check.text  # the others' mean and largest, named
    assert "L1H2 has the largest effect" in check.text
    assert "first copy" not in check.text  # not measured: not said
    # the first copy's change said beside it (a review: "the first copy's" graded wrong with only the second measured)
    first = lesson.ablation_hurts(Evidence(ablation={**ablation(), "first": 0.004}))
    assert "on the probes' first copy, random characters no context predicts, it adds +0.004" in first.text
    # Issue 33 finding 8: the heatmap showed L0H3 largest while the check praised L1H2, whose effect was nothing.
    other = lesson.ablation_hurts(Evidence(ablation=ablation(L0H3=0.442, L1H2=-0.038)))
    assert other.passed is False and "the largest effect is L0H3's" in other.text
    assert "-0.038" in other.text and "+0.442" in other.text
    # The lesson's browser run: the induction head +0.671 and another head larger still (an induction circuit is
    # more than one head). The answer to the step's question holds, and the check names the larger head.
    both = lesson.ablation_hurts(Evidence(ablation=ablation(L1H2=0.671, L0H3=0.9)))
    assert both.passed is True and "the largest effect is L0H3's: the copying needs that head too" in both.text
    # Every head matters about as much: not clearly above the others' mean.
    alike = {f"L{i}H{j}": 0.40 for i in range(2) for j in range(4)}
    flat = lesson.ablation_hurts(Evidence(ablation=ablation(**{**alike, "L1H2": 0.45})))
    assert flat.passed is False and "under 0.1 nats above the others' mean" in flat.text
    small = lesson.ablation_hurts(Evidence(ablation=ablation(L1H2=0.06)))
    assert small.passed is False and "under 0.1 nats" in small.text


def test_ablation_says_what_the_head_that_matters_more_does_from_its_own_role_scores():
    """Review 1 (stop 52): the room heard "L1H1, the induction head, matters" and then "the largest is L0H3's +1.000:
    the copying needs that head too", no word of what L0H3 does. Its role scores say: it attends one back."""
    jobs = {"L0H3": {"role": "previous", "score": 0.8699, "baseline": 0.0987, "step": 3000},
            "L1H2": {"role": "induction", "score": 0.47, "baseline": 0.0424, "step": 3000}}  # fmt: skip
    both = lesson.ablation_hurts(Evidence(ablation={**ablation(L1H2=0.671, L0H3=1.0), "jobs": jobs}))
    assert both.passed is True
    assert ("the copying needs that head too. In the snapshot at step 3000 L0H3 attends one character back, 0.87 vs "
            "0.10 uniform (8.8x); a previous-token head in an earlier layer is an induction head's usual partner"
            ) in both.text  # fmt: skip
    assert "the largest is L0H3's +1.000, a previous-token head: the copying" in both.headline
    assert len(both.headline) <= lesson_checks.HEADLINE_LIMIT
    # a head with no role at 2x uniform: nothing invented; one in the same layer: no partner sentence
    bare = lesson.ablation_hurts(Evidence(ablation={**ablation(L1H2=0.671, L0H3=1.0), "jobs": {}}))
    assert "L0H3's +1.000: the copying needs that head too" in bare.headline and "uniform" not in bare.text
    same = {"L1H0": {"role": "first", "score": 0.4, "baseline": 0.1, "step": 3000}}
    beside = lesson.ablation_hurts(Evidence(ablation={**ablation(L1H2=0.671, L1H0=1.0), "jobs": same}))
    assert "L1H0 attends to the first character, 0.40 vs 0.10 uniform (4.0x)" in beside.text
    assert "partner" not in beside.text
    # the verdict's head is one of several playing its role: said (a review's step 10 named three heads for one jump)
    alike = {**jobs, "L1H0": {"role": "induction", "score": 0.37, "baseline": 0.0424, "step": 3000},
             "L1H3": {"role": "induction", "score": 0.41, "baseline": 0.0424, "step": 3000}}  # fmt: skip
    many = lesson.ablation_hurts(Evidence(ablation={**ablation(L1H2=0.671, L0H3=1.0), "jobs": alike}))
    assert "; L1H0 and L1H3 score as induction heads too (2x uniform or more)" in many.text
    one = lesson.ablation_hurts(Evidence(ablation={**ablation(L1H2=0.671), "jobs": {**jobs, "L1H0": alike["L1H0"]}}))
    assert "; L1H0 scores as an induction head too (2x uniform or more)" in one.text


def test_ablation_says_not_enough_data_when_it_was_not_measured():
    assert lesson.ablation_hurts(Evidence()).passed is None
    assert lesson.ablation_hurts(Evidence(ablation=ablation(head="L5H0"))).passed is None
    assert lesson.ablation_hurts(Evidence(ablation=ablation(L1H2=math.nan))).passed is None
    assert lesson.ablation_hurts(Evidence(ablation=ablation(L0H0=math.nan))).passed is None


def test_lens_check():
    lens = {"names": ["embed", "L0", "L1"], "hits": [3, 10, 25], "positions": 40}
    assert "L1 25/40" in lesson.lens_sharpens(Evidence(lens=lens)).text
    assert lesson.lens_sharpens(Evidence(lens={**lens, "hits": [3, 3, 4]})).passed is False


def test_the_room_file_and_following(tmp_path):
    assert lesson.read_room(tmp_path / "new")["step"] is None
    assert lesson.write_room(tmp_path / "new", step=0)["step"] == 0  # a runs folder not made yet
    lesson.write_room(tmp_path, step=3, runs={"lecture": {"run": "abc"}})
    room = lesson.write_room(tmp_path, measured={"memory": {"x": 1}})
    assert room["step"] == 3 and room["runs"]["lecture"] == {"run": "abc"} and room["measured"]["memory"]
    assert lesson.write_room(tmp_path, step=99)["step"] == len(lesson.STEPS) - 1
    (tmp_path / lesson.ROOM_FILE).write_text("{not json")
    assert lesson.read_room(tmp_path)["step"] is None
    # The room moves: the pane goes along; the learner looks around: it stays until the next move.
    assert lesson.follow(None, None, 2) == (2, 2)
    assert lesson.follow(5, 2, 2) == (5, 2)
    assert lesson.follow(5, 2, 3) == (3, 3)
    assert lesson.follow(None, None, None) == (0, None)


def test_the_instructors_next_moves_a_learners_pane_and_a_learner_may_look_around(runs_dir):
    """Two sessions on one runs folder (AppTest): the instructor starts the lesson and moves it; the learner's pane
    follows every move, and between moves stays where the learner browsed."""
    from streamlit.testing.v1 import AppTest

    from tinygpt.runs.owners import Actor

    def session(instructor: bool) -> AppTest:
        at = AppTest.from_file(str(Path(__file__).resolve().parents[3] / "app.py"), default_timeout=90)
        at.session_state["learner"] = Actor("t" if instructor else "l", "someone", instructor)
        at.run()
        assert not at.exception, at.exception
        return at

    def heading(at: AppTest) -> str:
        return next((str(m.value) for m in at.sidebar.markdown if str(m.value).startswith("**Lesson")), "")

    teacher = session(True)
    learner = session(False)
    assert heading(learner) == ""  # no lesson yet: no pane
    teacher.sidebar.button[0].click().run()  # "Teach the lesson"
    assert heading(teacher).startswith("**Lesson 1/")
    learner.run()
    assert heading(learner).startswith("**Lesson 1/")
    next_button = next(b for b in teacher.sidebar.button if b.label == "Next")
    next_button.click().run()
    assert lesson.read_room(runs_dir)["step"] == 1
    learner.run()
    assert heading(learner).startswith("**Lesson 2/")
    next(b for b in learner.sidebar.button if b.label == "Back").click().run()
    assert heading(learner).startswith("**Lesson 1/")  # looking around: the room stays at step 2
    assert lesson.read_room(runs_dir)["step"] == 1
    assert any(b.label == "Back to the room's step" for b in learner.sidebar.button)
    next(b for b in teacher.sidebar.button if b.label == "Next").click().run()
    learner.run()
    assert heading(learner).startswith("**Lesson 3/")  # the room's next move takes the learner along
    assert not learner.exception and not teacher.exception


def test_after_next_the_check_slot_names_the_new_step_before_its_check_is_computed(runs_dir, monkeypatch):
    """Reproduces the rehearsal: after Next, every screen showed the previous step's check ("seen") under the new
    step's title for 15 s and more, while the new step's check read its runs: the browser keeps an element until
    the script overwrites it. Now the check's slot is overwritten first, with the step it checks."""
    from streamlit.delta_generator import DeltaGenerator
    from streamlit.testing.v1 import AppTest

    from tinygpt.runs.owners import Actor
    from tinygpt.ui.teach import lesson_view

    drawn: list[str] = []  # the elements in the order the browser gets them, and where the check was computed
    enqueue, evidence = DeltaGenerator._enqueue, lesson_view.evidence

    def spy_enqueue(self, delta_type, element_proto, *args, **kwargs):
        drawn.append(str(getattr(element_proto, "body", "")))
        return enqueue(self, delta_type, element_proto, *args, **kwargs)

    def spy_evidence(*args, **kwargs):
        drawn.append("<computing the check>")
        return evidence(*args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "_enqueue", spy_enqueue)
    monkeypatch.setattr(lesson_view, "evidence", spy_evidence)
    teacher = AppTest.from_file(str(Path(__file__).resolve().parents[3] / "app.py"), default_timeout=90)
    teacher.session_state["learner"] = Actor("t", "someone", True)
    teacher.run()
    teacher.sidebar.button[0].click().run()  # "Teach the lesson"
    drawn.clear()
    next(b for b in teacher.sidebar.button if b.label == "Next").click().run()
    assert not teacher.exception, teacher.exception
    title = next(i for i, text in enumerate(drawn) if text.startswith("**Lesson 2/"))
    computed = drawn.index("<computing the check>", title)
    assert any(text.startswith("Checking step 2") for text in drawn[title:computed]), drawn[title:computed]
    teacher.run()  # a refresh of the same step: no placeholder, the check stays until replaced
    assert not any(text.startswith("Checking step 2") for text in drawn[computed + 1 :])


@pytest.mark.parametrize(("key", "page", "tab"), [("health", "experiments", "Model health"),
                                                   ("lens", "circuits", "Logit lens")])  # fmt: skip
def test_a_steps_click_opens_the_tab_its_check_reads(runs_dir, monkeypatch, key, page, tab):
    """Issue 37: 'each step's setup opens the exact view it talks about': the health step's check reads Model
    health, the lens step's the Logit lens, not the page's first tab. (The runs themselves: stand-ins.)"""
    from streamlit.testing.v1 import AppTest

    from tinygpt.runs.owners import Actor
    from tinygpt.ui.circuits import circuits_keys
    from tinygpt.ui.experiments import experiments_keys
    from tinygpt.ui.teach import lesson_view, teach_keys

    monkeypatch.setattr(lesson_view, "_experiment", lambda actor, runs, key, priority="live": {"correct": "x" * 16})
    pair = dict(zip(lesson_view.induction.INDUCTION_VARIANTS, ("y" * 16, "z" * 16), strict=True))
    monkeypatch.setattr(lesson_view, "_induction", lambda actor, runs, priority="live": pair)
    teacher = AppTest.from_file(str(Path(__file__).resolve().parents[3] / "app.py"), default_timeout=90)
    teacher.session_state["learner"] = Actor("t" * 16, "someone", True)
    teacher.run()
    teacher.sidebar.button[0].click().run()  # "Teach the lesson"
    teacher.session_state[teach_keys.LESSON_STEP] = [s.key for s in lesson.STEPS].index(key)
    teacher.session_state[circuits_keys.W_CIRC_STEP] = 1400  # where this browser left the Circuits slider, mid-training
    teacher.run()
    next(b for b in teacher.sidebar.button if b.label == "Set up this step").click().run()
    assert not teacher.exception, teacher.exception
    assert teacher.session_state[circuits_keys.W_CIRC_TAB if page == "circuits" else experiments_keys.W_EXP_TAB] == tab
    if page == "circuits":  # the newest step, whose checkpoint the check reads (the slider's 1400 is forgotten)
        assert teacher.session_state[circuits_keys.W_CIRC_STEP] is None


def test_the_check_names_the_run_it_reads_where_that_is_not_the_run_in_view():
    """Review: with a learner's run brought to the projector, the banner said "went from 4.20 (ln V = 4.17) to 1.83"
    of the lecture run over a chart of the learner's run (ln V = 4.44), naming neither."""
    from tinygpt.ui.teach import lesson_view
    from tinygpt.ui.teach.lesson_checks import Check

    step = lesson.STEPS[0]
    runs = {lesson.LECTURE: {"run": "L" * 16}}
    check = Check(True, "The first loss was 4.20 (ln 65 = 4.17) ...", headline="went from 4.20 to 1.83")
    assert lesson_view.named_run(check, step, runs, "L" * 16) is check  # the run in view: nothing to add
    named = lesson_view.named_run(check, step, runs, "E" * 16)
    assert named.short == "The lecture run (not the run in view): went from 4.20 to 1.83"
    assert named.text.startswith("The lecture run (not the run in view): The first loss") and named.passed is True
    heads = next(s for s in lesson.STEPS if s.key == "heads")
    assert lesson_view.named_run(check, heads, {**runs, "heads": {"run": "H" * 16}}, "L" * 16).short.startswith(
        "The heads run (not the run in view)")
    pitfalls = next(s for s in lesson.STEPS if s.key == "pitfalls")  # its verdicts name their runs already
    assert lesson_view.named_run(check, pitfalls, {"exp:scaling": {"scaled": "S" * 16}}, "L" * 16) is check
    # A check shown as graded speaks of the runs as they were graded: after a Reset, the old lecture run, which a
    # learner may have in view ("The lecture run (not the run in view): …" of the run she viewed, a review)
    from tinygpt.ui.teach.prediction_view import GradedCheck

    graded = GradedCheck(True, "fell from 1.70 to 0.70 (The answers were graded on this.)", headline="x (as graded)")
    assert lesson_view.named_run(graded, step, runs, "E" * 16) is graded
