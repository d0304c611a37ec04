"""Predict, then run, headless (AppTest): an instructor and three learners on one server. Each learner answers the
step's question in their lesson pane; the instructor's Room shows the count per answer while they answer, names
no one until asked, and the share right once the check appears; after it, a learner's pane shows their answer
graded, and a change sent by a page that still showed the radio is refused by the server. A check decided before
the step is set up (prepared runs) waits for the setup, so the room predicts first."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.ui.people import people_keys
from tinygpt.ui.teach import lesson, lesson_view, prediction_view  # noqa: E402
from tinygpt.ui.teach.lesson import Evidence, RunData  # noqa: E402
from tinygpt.ui.teach.predictions import NOT_SURE, RIGHT, SEEN, AnswerClosed, PredictionBook  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
STEP = lesson.STEPS[0]  # "what loss does uniform guessing give?", checked on the lecture run's losses
RIGHT_ANSWER, OTHER = STEP.answers.seen, next(c for c in STEP.answers.choices if c != STEP.answers.seen)


def session(actor: Actor) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
    at.session_state[people_keys.LEARNER] = actor
    at.run()
    assert not at.exception, at.exception
    return at


def radio(at: AppTest):
    return next((r for r in at.sidebar.radio if r.label == "**Your prediction**"), None)


def texts(at: AppTest) -> str:
    parts = [str(e.value) for kind in ("markdown", "caption", "success", "error", "info") for e in getattr(at, kind)]
    for frame in [*at.dataframe, *at.table]:
        parts.append(frame.value.to_csv())
    return "\n".join(parts)


def counts(room: AppTest) -> dict[str, int]:
    table = next(f.value for f in room.dataframe if "answer" in f.value.columns and "learners" in f.value.columns)
    return dict(zip(table["answer"], table["learners"], strict=True))


def test_learners_predict_the_room_sees_the_spread_and_the_check_closes_the_answers(runs_dir, monkeypatch):
    checked = {"done": False, "evals": []}  # the lecture run's losses: none yet, then a curve from ln 65 down to 2.4

    def fake_evidence(step, runs, measured, *whose):  # whose: the viewer and the room's runs
        if not checked["done"]:
            return Evidence()
        losses = [4.17] + [2.4] * 80
        return Evidence(runs={"lecture": RunData("r", vocab_size=65, metrics=[
            {"step": i + 1, "loss": v} for i, v in enumerate(losses)], evals=checked["evals"])})

    monkeypatch.setattr(lesson_view, "evidence", fake_evidence)
    teacher = session(Actor("t" * 16, "teacher", instructor=True))
    next(b for b in teacher.sidebar.button if b.label == "Teach the lesson").click().run()
    learners = {name: session(Actor(name[0] * 16, name)) for name in ("anna", "ben", "cleo")}
    for at in learners.values():
        assert radio(at) is not None and radio(at).value is None  # nothing chosen for them
    radio(learners["anna"]).set_value(OTHER).run()
    radio(learners["anna"]).set_value(RIGHT_ANSWER).run()  # she changes her mind before the check: allowed
    radio(learners["ben"]).set_value(OTHER).run()
    radio(learners["cleo"]).set_value(NOT_SURE).run()
    for at in learners.values():
        assert not at.exception, at.exception
    records, outcome = prediction_view.book().step(STEP.key)
    assert {r["name"]: r["answer"] for r in records.values()} == {"anna": RIGHT_ANSWER, "ben": OTHER,
                                                                  "cleo": NOT_SURE}  # fmt: skip
    assert outcome is None
    again = session(Actor("a" * 16, "anna"))  # a refresh (a new session) shows the answer the room kept
    assert radio(again).value == RIGHT_ANSWER
    assert not any("Session State" in str(w.value) for w in again.warning)

    # The instructor's pane and Room: the count per answer, live, naming nobody.
    teacher.run()
    assert any("3 answered" in str(c.value) for c in teacher.sidebar.caption)
    room = teacher.switch_page("pages/room.py").run()
    assert not room.exception, room.exception
    assert counts(room) == {RIGHT_ANSWER: 1, OTHER: 1, NOT_SURE: 1} | {c: 0 for c in STEP.answers.choices
                                                                       if c not in (RIGHT_ANSWER, OTHER)}  # fmt: skip
    assert not any(name in texts(room) for name in learners)
    # who in the lesson has answered, counted (a review: "4 answered" hid the fifth learner, who had not)
    assert any("3 of 3 learners in the lesson" in str(c.value) for c in room.caption), texts(room)
    assert any("appears with the check" in str(c.value) for c in room.caption)
    assert not room.get("download_button")  # the CSV is made on request (tinygpt/ui/screen/downloads.py)
    room.button(key="room_spread_csv_make").click().run()
    assert len(room.get("download_button")) == 1  # the CSV (its content: tests/ui/teach/test_predictions.py)
    assert "Make the room's spread, every step (CSV) again" in [b.label for b in room.button]

    # The check has its result, but the step is not set up yet (its runs were prepared before class): it waits,
    # and the answers stay open.
    checked["done"] = True
    room.run()
    assert prediction_view.book().step(STEP.key)[1] is None
    assert any("shown once this step is set up" in str(m.value) for m in room.sidebar.markdown)
    learners["cleo"].run()
    assert radio(learners["cleo"]) is not None
    assert any("appears once the instructor" in str(i.value) for i in learners["cleo"].sidebar.info)
    # The instructor sets the step up (its runs and page are tests/ui/teach/test_lesson.py's): the check appears on the
    # instructor's pane and closes the step for the room.
    monkeypatch.setattr(lesson_view, "set_up", lambda step, actor: None)
    next(b for b in room.sidebar.button if b.label == "Set up this step").click().run()
    assert not room.exception, room.exception
    # The training loss has fallen, the held-out eval is to come: the room has seen the curve, so the answers close
    # now (a change is refused) and are graded when the eval comes.
    assert prediction_view.book().step(STEP.key)[1] is None
    with pytest.raises(AnswerClosed):
        prediction_view.book().answer(STEP.key, "b" * 16, "ben", RIGHT_ANSWER, STEP.answers)
    learners["anna"].run()
    assert any("answers closed when the check appeared" in str(i.value) for i in learners["anna"].sidebar.info)
    assert radio(learners["anna"]) is None
    checked["evals"] = [{"step": 80, "val_loss": 2.5}]
    room.run()
    assert prediction_view.book().step(STEP.key)[1] == SEEN
    right = next(m for m in room.metric if m.label == "Right")
    assert right.value == "50%"  # anna right; ben wrong; cleo not sure: counted, never graded
    share = r"1 right of 2 graded \(50\%\)"  # markdown-escaped, as the caption holds it
    assert any(share in str(c.value) for c in room.sidebar.caption)  # the pane too
    next(t for t in room.toggle if t.label.startswith("Name the learners")).set_value(True).run()
    named = texts(room)
    assert all(name in named for name in learners) and RIGHT in named

    # Anna's pane now shows her answer graded; Ben's page still shows the radio: his change is refused there.
    learners["anna"].run()
    assert radio(learners["anna"]) is None
    assert any(RIGHT_ANSWER in str(s.value) and "**right**" in str(s.value) for s in learners["anna"].sidebar.success)
    refused, answer = [], PredictionBook.answer

    def spy(self, *args, **kwargs):
        try:
            return answer(self, *args, **kwargs)
        except AnswerClosed as exc:
            refused.append(exc)
            raise

    monkeypatch.setattr(PredictionBook, "answer", spy)
    radio(learners["ben"]).set_value(RIGHT_ANSWER).run()  # sent by a page drawn before the check
    assert len(refused) == 1  # the server was asked, and said no
    assert not learners["ben"].exception, learners["ben"].exception
    assert prediction_view.book().step(STEP.key)[0]["b" * 16]["answer"] == OTHER
    assert radio(learners["ben"]) is None
    assert any("**wrong**" in str(e.value) for e in learners["ben"].sidebar.error)
    with pytest.raises(AnswerClosed):
        prediction_view.book().answer(STEP.key, "c" * 16, "cleo", RIGHT_ANSWER, STEP.answers)
    learners["cleo"].run()
    assert any("not sure" in str(i.value) for i in learners["cleo"].sidebar.info)
    # A learner who chose nothing before the check: the pane says so (it raised an AttributeError and went blank).
    dora = session(Actor("d" * 16, "dora"))
    assert not dora.exception, dora.exception
    assert radio(dora) is None and any("No prediction" in str(c.value) for c in dora.sidebar.caption)
    # A new class: the instructor clears the answers; the question is open again.
    lesson.write_room(runs_dir, step=5, runs={"lecture": {"run": "L" * 16}})  # the last class got to step 6
    next(b for b in room.button if b.label == "Clear every step's answers").click().run()
    assert prediction_view.book().step(STEP.key) == ({}, None)
    # and starts again at step 1 with no lecture run (its Set up starts a fresh one): the box is ticked by default
    assert lesson.read_room(runs_dir)["step"] == 0 and not lesson.read_room(runs_dir)["runs"]["lecture"]
    learners["anna"].run()
    assert radio(learners["anna"]) is not None and radio(learners["anna"]).value is None  # not her old answer
