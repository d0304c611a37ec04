"""The lesson's steps and checks (tinygpt/ui/lesson.py): every check computed from run data, never canned."""

import math
from pathlib import Path

from tinygpt.ui import lesson
from tinygpt.ui.lesson import Evidence, RunData


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


def test_loss_from_uniform_waits_then_reports_the_numbers():
    run = RunData("r", vocab_size=65, metrics=metrics([4.2] * 10))
    assert lesson.loss_from_uniform(Evidence(runs={"lecture": run})).passed is None
    run.metrics = metrics([4.2] + [2.4] * 80)
    check = lesson.loss_from_uniform(Evidence(runs={"lecture": run}))
    assert check.passed is True and "4.20" in check.text and "2.40" in check.text
    assert f"{math.log(65):.2f}" in check.text
    run.metrics = metrics([4.2] + [3.9] * 80)
    assert lesson.loss_from_uniform(Evidence(runs={"lecture": run})).passed is False
    assert lesson.loss_from_uniform(Evidence()).passed is None


def test_knob_effect_measures_each_side_of_the_change():
    check = lesson.knob_effect("mask", "none", rise=False)
    run = RunData("r", metrics=metrics([2.2] * 100), events=[])
    assert check(Evidence(runs={"lecture": run})).passed is None  # no switch yet
    run.events = [knob("mask", "causal", "none", 100)]
    run.metrics = metrics([2.2] * 100 + [0.3] * 5)
    assert check(Evidence(runs={"lecture": run})).passed is None  # 5 of 20 steps since
    run.metrics = metrics([2.2] * 100 + [0.3] * 30)
    result = check(Evidence(runs={"lecture": run}))
    assert result.passed is True and "fell from 2.20 to 0.30" in result.text and "step 100" in result.text
    run.metrics = metrics([2.2] * 100 + [2.6] * 30)  # disturbed first: not judged yet
    assert check(Evidence(runs={"lecture": run})).passed is None
    run.metrics = metrics([2.2] * 100 + [2.1] * 400)
    assert check(Evidence(runs={"lecture": run})).passed is False
    up = lesson.knob_effect("learning_rate", 0.1, rise=True)
    run.events = [knob("learning_rate", 0.002, 0.1, 100)]
    run.metrics = metrics([2.0] * 100 + [3.1] * 30)
    assert up(Evidence(runs={"lecture": run})).passed is True
    run.metrics = metrics([2.0] * 100 + [1.9] * 400)
    assert up(Evidence(runs={"lecture": run})).passed is False


def test_heads_differ_reads_the_latest_snapshot_and_waits_for_the_run_to_end():
    flat = {"step": 50, "roles": {"previous": [[0.3, 0.31], [0.3, 0.32]]}}
    run = RunData("r", state="running", scores=[flat])
    assert lesson.heads_differ(Evidence(runs={"heads": run})).passed is None  # roles still forming
    run.state = "finished"
    assert lesson.heads_differ(Evidence(runs={"heads": run})).passed is False
    run.scores = [flat, {"step": 60, "roles": {"previous": [[0.8, 0.1], [0.3, 0.3]], "self": None}}]
    check = lesson.heads_differ(Evidence(runs={"heads": run}))
    assert check.passed is True and "L0H0" in check.text and "0.80" in check.text and "step 60" in check.text
    assert lesson.heads_differ(Evidence()).passed is None


def test_knobs_moved_by_one_click_are_one_change_and_a_later_change_ends_the_window():
    check = lesson.knob_effect("mask", "none", rise=False, min_change=1.0)
    events = [knob("attn_scale", "none", "head_dim", 100), knob("mask", "causal", "none", 101)]
    # 2.0 under the old settings; 2.8 for the step between the two knobs (not counted as "before"); then 0.2
    losses = [2.0] * 100 + [2.8] + [0.2] * 40
    run = RunData("r", metrics=metrics(losses), events=events)
    result = check(Evidence(runs={"lecture": run}))
    assert result.passed is True and "from 2.00 to 0.20" in result.text
    assert "attn_scale none → head_dim, mask causal → none" in result.text
    run.events = [*events, knob("mask", "none", "causal", 125)]  # the next step put it back: its loss is not ours
    run.metrics = metrics(losses[:125] + [2.5] * 40)
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


def test_health_ablation_and_lens_checks():
    ok = [{"check": "rows sum to 1", "result": "pass"}, {"check": "no future leak", "result": "pass"}]
    bad = [{"check": "rows sum to 1", "result": "FAIL"}, {"check": "no future leak", "result": "FAIL"}]
    assert lesson.health_catches(Evidence(health={"correct": ok})).passed is None
    assert lesson.health_catches(Evidence(health={"correct": ok, "silent bug": bad})).passed is True
    assert lesson.health_catches(Evidence(health={"correct": bad, "silent bug": bad})).passed is False
    # Seen in the lesson test: the correct run also failed "gradient norm under the clip" (the demo clips on most
    # steps). A check both runs fail is about training, not the bug: the checklist still caught the bug.
    clip = [{"check": "gradient norm under the clip", "result": "FAIL"}]
    caught = lesson.health_catches(Evidence(health={"correct": ok + clip, "silent bug": bad + clip}))
    assert caught.passed is True and "both fail gradient norm under the clip" in caught.text
    ab = {"head": "L1H2", "best": 0.46, "others": 0.2, "where": "the probe"}
    assert lesson.ablation_hurts(Evidence(ablation=ab)).passed is True
    assert lesson.ablation_hurts(Evidence(ablation={**ab, "best": 0.01})).passed is False
    assert lesson.ablation_hurts(Evidence()).passed is None
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
        at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=90)
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
    from tinygpt.ui import lesson_view

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
    teacher = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=90)
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
