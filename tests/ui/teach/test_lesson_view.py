"""The lesson pane's *Prepare the long runs* (tinygpt/ui/teach/lesson_view.py `prepare`) starts exactly
tinygpt.lab.prepare.prepared_runs(), the runs `python -m tinygpt.bench.prepare` times, and skips a role the room has."""

from __future__ import annotations

import dataclasses

from tinygpt.lab.prepare import PREPARE_ORDER, prepared_runs
from tinygpt.runs.owners import Actor
from tinygpt.ui.people import admission
from tinygpt.ui.teach import lesson_view
from tinygpt.ui.train import settings

TEACHER = Actor("c" * 16, "teacher", instructor=True)


def fake_prepare(monkeypatch, room_runs: dict) -> tuple[int, list[tuple[str, str, dict, str]], dict]:
    started, remembered = [], {}

    def start(actor, configs, priority="live", **_):
        ids = {}
        for label, config in configs.items():
            started.append((label, config.to_dict(), priority))
            ids[label] = f"run{len(started)}"
        return ids

    monkeypatch.setattr(admission, "start", start)
    monkeypatch.setattr(settings, "ensure_corpus", lambda data: None)
    monkeypatch.setattr(lesson_view, "room", lambda: {"runs": room_runs})
    monkeypatch.setattr(lesson_view, "_remember", lambda actor, role, runs: remembered.update({role: runs}))
    return lesson_view.prepare(TEACHER), started, remembered


def test_prepare_starts_the_labs_prepared_runs_in_order(monkeypatch):
    count, started, remembered = fake_prepare(monkeypatch, {})
    expected = [(p.label, p.config.to_dict(), p.priority) for p in prepared_runs()]
    assert started == expected and count == len(expected)
    assert list(remembered) == list(PREPARE_ORDER)


def test_prepare_skips_a_role_the_room_already_has(monkeypatch):
    count, started, remembered = fake_prepare(monkeypatch, {"heads": {"run": "x"}})
    assert "heads" not in remembered and count == len(prepared_runs()) - 1


def test_the_panes_run_lines_are_in_the_viewers_words(tmp_path, monkeypatch):
    """The review's learner read "paused: paused by you at step 16314" in the pane about the instructor's pause."""
    from tinygpt.config import RunConfig
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.host import resources
    from tinygpt.ui.teach import lesson

    store = RunStore(tmp_path)
    with store.create(
        RunConfig().to_dict() | {"learner": {"id": TEACHER.id, "name": "t", "instructor": True}}, owner="app"
    ) as w:
        w.append_metric({"step": 5, "loss": 3.0})
        w.write_status(state="paused", step=5, reason="paused by you at step 5")
        rid = w.run_dir.name
    monkeypatch.setattr(lesson_view, "reader_of", lambda run_id: store.reader(run_id))
    monkeypatch.setattr(resources, "touch", lambda run_id: None)
    step = next(s for s in lesson.STEPS if lesson.LECTURE in lesson.roles_needed(s))
    runs = {lesson.LECTURE: {"run": rid}}
    learner = Actor("a" * 16, "anna")
    assert "paused by the instructor at step 5" in " ".join(lesson_view._progress(runs, step, learner)[0])
    assert "paused by you at step 5" in " ".join(lesson_view._progress(runs, step, TEACHER)[0])
    assert "your own run" not in " ".join(lesson_view._progress(runs, step, learner)[0])
    # Review: a learner's own copy of the lecture role (their own Set up) read "lecture · run: ..." as if the room's
    with store.create(RunConfig().to_dict() | {"learner": {"id": learner.id, "name": "anna"}}, owner="app") as w:
        w.write_status(state="running", step=200, reason="")
        own = w.run_dir.name
    lines = lesson_view._progress({lesson.LECTURE: {"run": own}}, step, learner)[0]
    assert lines and lines[0].startswith("lecture (your own run) · run: "), lines


def test_the_prepare_buttons_help_says_step_1_as_the_lesson_does():
    """The review: the tooltip still said "Before class: start …" while the lesson presses Prepare at step 1
    (docs/TEACHING.md, "With Prepare pressed at step 1")."""
    assert "before class" not in lesson_view.PREPARE_HELP.lower()
    assert "at step 1" in lesson_view.PREPARE_HELP and "lecture run" in lesson_view.PREPARE_HELP
    assert lesson_view.prepare.__doc__.startswith("At step 1")


def test_the_lines_under_a_check_are_about_the_runs_it_measured(tmp_path, monkeypatch):
    """Review defect 4: at step 5 the check "At step 300, the 8 heads' ..." was about the finished Demo run, and the
    line under it read "lecture · run: step 13,890 · ... running: training", the lecture run the step only steers."""
    from tinygpt.config import RunConfig
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.host import resources
    from tinygpt.ui.teach import lesson

    store = RunStore(tmp_path)
    ids = {}
    for role, run_state in ((lesson.LECTURE, "running"), (lesson.HEADS, "finished")):
        with store.create(RunConfig().to_dict(), owner="app") as w:
            w.append_metric({"step": 300, "loss": 2.0})
            w.write_status(state=run_state, step=300)
            ids[role] = w.run_dir.name
    monkeypatch.setattr(lesson_view, "reader_of", lambda run_id: store.reader(run_id))
    monkeypatch.setattr(resources, "touch", lambda run_id: None)
    step = next(s for s in lesson.STEPS if s.key == "heads")
    assert lesson.roles_needed(step) == [lesson.LECTURE, lesson.HEADS]  # the step steers the lecture run too
    assert lesson.roles_checked(step) == [lesson.HEADS]  # its check reads the heads run alone
    runs = {role: {"run": rid} for role, rid in ids.items()}
    assert lesson_view._progress(runs, step)[0] == []  # the heads run ended: no line, and none of the lecture run
    with store.writer(ids[lesson.HEADS]) as w:
        w.write_status(state="running", step=300)
    lines = lesson_view._progress(runs, step)[0]
    assert len(lines) == 1 and lines[0].startswith("heads · run:")
    for key in ("tensors", "mask", "optim"):  # a step about the lecture run still shows its line
        assert lesson.roles_checked(next(s for s in lesson.STEPS if s.key == key)) == [lesson.LECTURE]


def _recording_pane(monkeypatch, checks: dict) -> list[str]:
    """check_view drawn into recording slots: "slot" (an empty slot made), "note:…" (the step being checked),
    "[key]" (a keyed container), "choices:…" (the prediction part, with the check it was given), "compute",
    "draw:…" (the check)."""
    from contextlib import contextmanager
    from types import SimpleNamespace

    from tinygpt.ui.teach import lesson, prediction_view

    events: list[str] = []

    class Slot:
        def info(self, text, **_k):
            events.append(f"note:{text.rsplit(': ', 1)[1]}")

        @contextmanager
        def container(self, key="", **_k):
            events.append(f"[{key.rsplit('_', 1)[0]}]")
            yield

    session: dict = {}
    monkeypatch.setattr(lesson_view.state, "get", lambda key, default=None: session.get(key, default))
    monkeypatch.setattr(lesson_view.state, "put", lambda key, value: session.__setitem__(key, value))
    monkeypatch.setattr(lesson_view, "room", lambda: {"step": 6, "runs": {}, "measured": {}})
    monkeypatch.setattr(lesson_view, "st", SimpleNamespace(empty=lambda: events.append("slot") or Slot()))

    def computed(step, actor, data):
        events.append("compute")
        return checks[lesson.STEPS.index(step)], []

    monkeypatch.setattr(lesson_view, "_computed_check", computed)
    monkeypatch.setattr(lesson_view, "named_run", lambda check, *_: check)
    monkeypatch.setattr(lesson_view.in_view, "run_id", lambda: None)

    def choices(step, actor, check, choices=True, pending=False):
        events.append(f"choices:{check and check.text}" + ("" if choices else " (grade only)")
                      + (" (pending)" if pending else ""))  # fmt: skip
        return choices and not actor.instructor and check is None

    monkeypatch.setattr(prediction_view, "pane_part", choices)
    return events


def draw_into(events):
    return lambda check, lines: events.append(f"draw:{check.text}")


def test_the_prediction_comes_first_and_a_refresh_keeps_the_check_on_screen_until_its_new_copy(monkeypatch):
    """Drawn only after the computation (step 8 reads 21 runs; 15 s and more on a loaded server), a loaded room's
    panes lost their choices for a minute and more at step 8 and a learner could not answer (two reviews): the
    prediction part comes first on every run. The check's slot is made after the computation on a refresh: made
    first, it blanked the check for the computation's seconds (an older review), and redrawn first, the banner's
    Numbers popover closed every 3 s (a review). A step's first look says at once which step it checks."""
    from tinygpt.ui.teach import lesson

    events = _recording_pane(monkeypatch, {6: lesson.Check(True, "seen"), 7: lesson.Check(None, "Not enough data")})
    lesson_view.check_view(6, TEACHER, 6, draw=draw_into(events))
    first_look = ["slot", "slot", "note:reading its runs ...", "[lesson_prediction]", "choices:None (pending)"]
    assert events == [*first_look, "compute", "[lesson_graded]", "choices:seen (grade only)", "[lesson_check]",
                      "draw:seen"]  # fmt: skip
    events.clear()
    lesson_view.check_view(6, TEACHER, 6, draw=draw_into(events))  # a refresh: no slot for the check before it
    assert events == ["slot", "[lesson_prediction]", "choices:None", "compute", "[lesson_graded]",
                      "choices:seen (grade only)", "slot", "[lesson_check]", "draw:seen"]  # fmt: skip
    events.clear()
    lesson_view.check_view(7, TEACHER, 6, draw=draw_into(events))  # another step: says at once which step it checks
    assert events[:3] == ["slot", "slot", "note:reading its runs ..."]


def test_a_learners_open_choice_and_a_decided_check_come_together_with_the_grade(monkeypatch):
    """A review's learner saw the step's decided check under choices that still said "You may change it until the
    check appears" for one refresh; a later one, the choices under "grading your prediction" for 8 s and more, a
    click on them refused unsaid. A decided check replaces the open choices by the grade in the same script run
    (choices=False: one radio a run), then draws itself; an undecided one leaves the choices open."""
    from tinygpt.runs.owners import Actor
    from tinygpt.ui.teach import lesson

    events = _recording_pane(monkeypatch, {6: lesson.Check(True, "seen"), 7: lesson.Check(None, "Not enough data")})
    learner = Actor("a" * 16, "Ada")
    lesson_view.check_view(6, learner, 6, draw=draw_into(events))
    first_look = ["slot", "slot", "note:reading its runs ...", "[lesson_prediction]", "choices:None (pending)"]
    assert events == [*first_look, "compute", "[lesson_graded]", "choices:seen (grade only)", "[lesson_check]",
                      "draw:seen"]  # fmt: skip
    events.clear()
    lesson_view.check_view(7, learner, 6, draw=draw_into(events))  # its own step, the room at step 7 (index 6)
    assert events == ["slot", "slot", "note:reading its runs ...", "[lesson_prediction]", "choices:None (pending)",
                      "compute", "[lesson_check]", "draw:Not enough data"]  # fmt: skip
    # nothing to grade: the choices stay


def test_prepare_is_offered_only_while_a_long_steps_runs_are_not_started(monkeypatch):
    """A reviewer saw "Prepare the long runs" still offered at step 12, every long run finished."""
    from tinygpt.ui.teach import lesson

    pressed, said = [], []
    monkeypatch.setattr(lesson_view.st, "button", lambda label, **_: pressed.append(label) or False)
    monkeypatch.setattr(lesson_view.st, "caption", said.append)
    every = {role: {"run": f"r{i}"} for i, role in enumerate(lesson.PREPARE_ORDER)}
    monkeypatch.setattr(lesson_view, "room", lambda: {"runs": every})
    drawn = []
    monkeypatch.setattr(lesson_view.long_runs, "draw_started", lambda ids, template="{}": drawn.append((
        list(ids), template)))  # fmt: skip
    lesson_view.prepare_button(TEACHER)
    # where the button was, a line says why it is not (a review's instructor looked for it after a new class), with
    # the runs' states now (a review's banner read "started (21)" all class, every run long ended)
    ids = [f"r{i}" for i in range(len(every))]
    assert pressed == [] and drawn == [(ids, "{} (a new class keeps them): each long step's check appears at its "
                                             "Set up.")]  # fmt: skip
    lesson_view.prepare_button(TEACHER, short=True)
    assert drawn[-1] == (ids, "{}")
    missing_one = dict(list(every.items())[1:])
    monkeypatch.setattr(lesson_view, "room", lambda: {"runs": missing_one})
    lesson_view.prepare_button(TEACHER)
    assert pressed == ["Prepare the long runs"]


def test_the_pitfalls_steps_lines_list_each_run_once_with_its_own_status(tmp_path, monkeypatch):
    """A review's learner read "softmax · stable softmax: step 155 / 200 … running" twice: step 8 opens the softmax
    experiment and checks every pitfall, so its role came twice. Each run once; an ended run (the naive softmax,
    diverged at step 50) has no line."""
    from tinygpt.config import RunConfig
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.host import resources
    from tinygpt.ui.teach import lesson

    store = RunStore(tmp_path)
    step = next(s for s in lesson.STEPS if s.key == "pitfalls")
    for one in lesson.STEPS:
        assert len(lesson.roles_needed(one)) == len(set(lesson.roles_needed(one))), one.key
    runs, steps = {}, {"stable softmax": (155, "running"), "naive softmax": (50, "diverged")}
    for role in lesson.roles_checked(step):
        runs[role] = {}
        for label in ("stable softmax", "naive softmax") if role == "exp:softmax" else ("correct", "broken"):
            at, run_state = steps.get(label, (200, "finished"))
            with store.create(RunConfig().to_dict(), owner="app") as w:
                w.append_metric({"step": at, "loss": 2.0})
                w.write_status(state=run_state, step=at, max_steps=200)
                runs[role][label] = w.run_dir.name
    monkeypatch.setattr(lesson_view, "reader_of", lambda run_id: store.reader(run_id))
    monkeypatch.setattr(resources, "touch", lambda run_id: None)
    lines = lesson_view._progress(runs, step)[0]
    assert len(lines) == 1 and lines[0].startswith("softmax · stable softmax: step 155 / 200"), lines
    with store.writer(runs["exp:softmax"]["stable softmax"]) as w:
        w.write_status(state="finished", step=200, max_steps=200)
    assert lesson_view._progress(runs, step)[0] == []  # its status says 200: its line goes at once
    shared = {"exp:softmax": {"stable softmax": runs["exp:softmax"]["naive softmax"]},
              "exp:mask": {"correct": runs["exp:softmax"]["naive softmax"]}}  # fmt: skip
    with store.writer(shared["exp:mask"]["correct"]) as w:
        w.write_status(state="queued", step=0, max_steps=200, queue_position=4)
    monkeypatch.setattr(resources, "queue_forecast", lambda run_id: None)
    assert len(lesson_view._progress(shared, step)[0]) == 1  # one run under two roles: one line


def test_the_run_lines_are_read_after_the_check_outside_its_lock(monkeypatch):
    """Step 8's check takes 13 s and more, one session at a time (lesson_view._LOCK): lines read under the lock
    were as old as the wait; a review's pane held "step 155 / 200 · running" ~20 s after that run had finished."""
    from tinygpt.ui.teach import lesson, prediction_view

    step = next(s for s in lesson.STEPS if s.key == "pitfalls")
    order = []
    monkeypatch.setattr(lesson_view, "evidence", lambda *a, **k: order.append("evidence") or lesson.Evidence())
    monkeypatch.setattr(prediction_view, "shown_check", lambda step, actor, check: check)
    monkeypatch.setattr(prediction_view, "graded_check", lambda step, actor, check: check)

    def lines(runs, step, viewer):
        order.append(f"lines, locked={lesson_view._LOCK.locked()}")
        return [], {}

    monkeypatch.setattr(lesson_view, "_progress", lines)
    check, _ = lesson_view._computed_check(step, TEACHER, {"runs": {}, "measured": {}})
    assert order == ["evidence", "lines, locked=False"] and "could not read" not in check.text, check.text


def test_the_banner_line_of_an_undecided_experiment_says_how_far_its_runs_are(monkeypatch):
    """A review's projector read only "Still training: the verdict comes when both runs end" at step 10, the
    runs' progress one click away (the Numbers popover)."""
    from tinygpt.ui.teach import lesson, prediction_view

    waiting = lesson.Check(None, "Still training: the verdict comes when both runs end.")
    step = dataclasses.replace(next(s for s in lesson.STEPS if s.key == "pitfalls"), check=lambda ev: waiting)
    monkeypatch.setattr(lesson_view, "evidence", lambda *a, **k: lesson.Evidence())
    monkeypatch.setattr(prediction_view, "shown_check", lambda step, actor, check: check)
    monkeypatch.setattr(prediction_view, "graded_check", lambda step, actor, check: check)
    pace = [{"step": s, "time": s / 10} for s in range(1, 101)]  # 10 steps a second
    states = {"2 layers": ({"state": "running", "step": 100, "max_steps": 300}, pace),
              "1 layer": ({"state": "finished", "step": 300, "max_steps": 300}, pace)}  # fmt: skip
    monkeypatch.setattr(lesson_view, "_progress", lambda runs, step, viewer: (["a line"], states))
    check, lines = lesson_view._computed_check(step, TEACHER, {"runs": {}, "measured": {}})
    assert check.short == ("Still training: the verdict comes when both runs end. (runs 67% trained; the last done "
                           "in about 20 s)"), check.short  # fmt: skip
    assert check.text == waiting.text and lines == ["a line"]  # the pane's full text and lines stay


def test_set_up_again_sends_no_knob_the_run_has_already(monkeypatch):
    """A review pressed Set up at step 7 a second time and read a new notice "LR → 0.1: applied at step 11056", the
    learning rate being 0.1 already: a change that changed nothing. Set up sends only the knobs the run lacks."""
    from types import SimpleNamespace

    from tinygpt.ui.teach import lesson

    sent, notes = [], []
    manager = SimpleNamespace(set_knob=lambda rid, name, value, actor: sent.append((name, value)) or "req")
    store = SimpleNamespace(path=lambda rid: rid)
    monkeypatch.setattr(lesson_view.resources, "get_manager", lambda: manager)
    monkeypatch.setattr(lesson_view.resources, "get_store", lambda: store)
    monkeypatch.setattr(lesson_view, "room", lambda: {"runs": {}})
    monkeypatch.setattr(lesson_view, "_lecture", lambda *a: "lecture-run")
    monkeypatch.setattr(lesson_view, "read_owner", lambda path: {})
    monkeypatch.setattr(lesson_view, "may_control", lambda owner, actor: True)
    monkeypatch.setattr(lesson_view.in_view, "set_run_id", lambda rid: None)
    monkeypatch.setattr(lesson_view.knob_widgets, "add_knob_note", lambda *a: notes.append(a[:2]))
    monkeypatch.setattr(lesson_view.st, "switch_page", lambda *a, **k: None)
    session: dict = {}
    monkeypatch.setattr(lesson_view.state, "get", lambda key, default=None: session.get(key, default))
    monkeypatch.setattr(lesson_view.state, "put", lambda key, value: session.__setitem__(key, value))
    optim = next(s for s in lesson.STEPS if s.setup.knobs == {"learning_rate": 0.1})
    config = {"train": {"learning_rate": 0.003}, "model": {}}
    reader = SimpleNamespace(config=lambda: config, events=[])
    monkeypatch.setattr(lesson_view.in_view, "reader", lambda store, rid: reader)
    lesson_view.set_up(optim, TEACHER)
    assert sent == [("learning_rate", 0.1)] and notes == [("learning_rate", 0.1)]
    reader.events = [{"kind": "knob", "step": 9529, "knob": "learning_rate", "old": 0.003, "new": 0.1, "ok": True}]
    lesson_view.set_up(optim, TEACHER)  # pressed again: the run has LR 0.1 already
    assert sent == [("learning_rate", 0.1)] and notes == [("learning_rate", 0.1)]


def test_the_induction_steps_runs_count_towards_the_banners_progress(tmp_path, monkeypatch):
    """A review's projector at step 10 read only "Still training" for 135 s: only "exp:" roles fed its progress, and
    the induction pair's role is "induction"."""
    from tinygpt.config import RunConfig
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.host import resources
    from tinygpt.ui.teach import lesson
    from tinygpt.ui.words import runinfo

    store = RunStore(tmp_path)
    step = next(s for s in lesson.STEPS if s.key == "induction")
    runs = {}
    for label, at in (("2 layers", 900), ("1 layer (control)", 3000)):
        with store.create(RunConfig().to_dict(), owner="app") as w:
            w.append_metric({"step": at, "loss": 2.0})
            w.write_status(state="running" if at < 3000 else "finished", step=at, max_steps=3000)
            runs.setdefault("induction", {})[label] = w.run_dir.name
    monkeypatch.setattr(lesson_view, "reader_of", lambda run_id: store.reader(run_id))
    monkeypatch.setattr(resources, "touch", lambda run_id: None)
    lines, states = lesson_view._progress(runs, step)
    assert set(states) == {"2 layers", "1 layer (control)"} and len(lines) == 1, (states, lines)
    assert runinfo.progress_words(states).startswith("(runs 65% trained")  # 3,900 of 6,000 steps
