"""Predict, then run (tinygpt/ui/teach/predictions.py): every step's answers, grading by the check's own outcome, the
room's answers closed once the check appears (refused by the book itself, under concurrent sessions), the spread
and its CSV. No browser, no Streamlit."""

import csv
import io
import threading

import pytest

from tinygpt.ui.teach import lesson, predictions
from tinygpt.ui.teach.lesson import Check, Evidence, RunData
from tinygpt.ui.teach.predictions import (
    NOT_DECIDED,
    NOT_SEEN,
    NOT_SURE,
    RIGHT,
    SEEN,
    UNDECIDED,
    WRONG,
    AnswerClosed,
    Answers,
    PredictionBook,
)

UPDOWN = Answers(("goes up", "goes down", "unchanged"), "goes up", ("goes down",))
YESNO = Answers(("yes", "no"), "yes")


def test_every_step_has_two_to_four_answers_plus_not_sure_and_a_seen_answer():
    for step in lesson.STEPS:
        assert step.answers is not None, step.key
        assert 2 <= len(step.answers.choices) <= 4
        assert step.answers.options[-1] == NOT_SURE and step.answers.seen in step.answers.choices
        assert step.answers.confirmed(SEEN) == {step.answers.seen}
    with pytest.raises(ValueError):
        Answers(("only one",), "only one")
    with pytest.raises(ValueError):
        Answers(("a", "b"), "c")
    with pytest.raises(ValueError):
        Answers(("a", "b"), "a", ("a",))


def test_the_outcome_is_the_checks_own():
    assert predictions.outcome_of(Check(True, "")) == SEEN
    assert predictions.outcome_of(Check(False, "")) == NOT_SEEN
    assert predictions.outcome_of(Check(None, "Not enough data yet: 3 of 60 steps")) is None  # still open
    assert predictions.outcome_of(Check(None, "Not enough data: ...", settled=True)) == UNDECIDED
    # A real check: the first step's, waiting, then decided.
    run = RunData("r", vocab_size=65, metrics=[{"step": 1 + i, "loss": v} for i, v in enumerate([4.2] * 10)])
    assert predictions.outcome_of(lesson.STEPS[0].check(Evidence(runs={"lecture": run}))) is None
    run.metrics = [{"step": 1 + i, "loss": v} for i, v in enumerate([4.2] + [2.4] * 80)]
    assert predictions.outcome_of(lesson.STEPS[0].check(Evidence(runs={"lecture": run}))) is None  # held-out to come
    run.evals = [{"step": 80, "val_loss": 2.5}]
    assert predictions.outcome_of(lesson.STEPS[0].check(Evidence(runs={"lecture": run}))) == SEEN


def test_an_experiment_that_ended_undecided_settles_as_undecided():
    check = lesson.experiment_verdict("memory", "Memory")
    waiting = check(Evidence(verdicts={"memory": {"reproduced": None, "sentence": "training"}}))
    ended = check(Evidence(verdicts={"memory": {"reproduced": None, "sentence": "x", "undecided": "counts"}}))
    assert predictions.outcome_of(waiting) is None and predictions.outcome_of(ended) == UNDECIDED


def test_grading_follows_the_outcome():
    assert predictions.grade(UPDOWN, "goes up", SEEN) == RIGHT
    assert predictions.grade(UPDOWN, "goes down", SEEN) == WRONG
    assert predictions.grade(UPDOWN, "unchanged", SEEN) == WRONG
    assert predictions.grade(UPDOWN, "goes up", NOT_SEEN) == WRONG
    assert predictions.grade(UPDOWN, "goes down", NOT_SEEN) == RIGHT
    assert predictions.grade(UPDOWN, "unchanged", NOT_SEEN) == NOT_DECIDED  # "did not rise" says no more
    assert predictions.grade(YESNO, "no", NOT_SEEN) == RIGHT  # yes/no: "not seen" confirms the other
    assert predictions.grade(UPDOWN, "goes up", UNDECIDED) == NOT_DECIDED
    assert predictions.grade(UPDOWN, NOT_SURE, SEEN) == NOT_SURE
    assert predictions.grade(UPDOWN, "goes up", None) is None and predictions.grade(UPDOWN, None, SEEN) is None


def test_an_answer_changes_until_the_check_appears_then_is_refused(tmp_path):
    book = PredictionBook(tmp_path)
    book.answer("mask", "ann", "anna", "goes down", UPDOWN)
    book.answer("mask", "ann", "anna", "goes up", UPDOWN)  # changed her mind: allowed
    with pytest.raises(predictions.TinyGPTError):
        book.answer("mask", "ann", "anna", "sideways", UPDOWN)  # not one of the answers
    assert book.settle("mask", SEEN, "ann") is True  # her pane showed the check
    assert book.settle("mask", SEEN, "ann") is False  # every refresh calls it: written once
    with pytest.raises(AnswerClosed):
        book.answer("mask", "ann", "anna", "goes down", UPDOWN)
    records, outcome = book.step("mask")
    assert records["ann"]["answer"] == "goes up" and records["ann"]["outcome"] == SEEN and outcome is None
    # Ben has not seen the check yet; the room's check closes the step for him too (and for anyone new).
    book.answer("mask", "ben", "ben", "goes down", UPDOWN)
    book.settle("mask", NOT_SEEN)
    for who in ("ben", "cid"):
        with pytest.raises(AnswerClosed):
            book.answer("mask", who, who, "goes up", UPDOWN)
    assert book.step("mask")[1] == NOT_SEEN
    book.settle("mask", SEEN)  # the first outcome stays: answers were graded by it when they closed
    assert book.step("mask")[1] == NOT_SEEN
    # A learner who saw the check before answering may not answer after it.
    book.settle("heads", SEEN, "dan")
    with pytest.raises(AnswerClosed):
        book.answer("heads", "dan", "dan", "yes", YESNO)
    assert book.step("heads")[0]["dan"]["answer"] is None
    book.clear()
    assert book.step("mask") == ({}, None)


def test_a_torn_file_is_an_empty_book(tmp_path):
    (tmp_path / predictions.FILE).write_text("{not json")
    assert PredictionBook(tmp_path).step("mask") == ({}, None)
    PredictionBook(tmp_path).answer("mask", "ann", "anna", "goes up", UPDOWN)
    assert PredictionBook(tmp_path / "new").step("mask") == ({}, None)


def test_concurrent_sessions_lose_no_answer(tmp_path):
    """Twenty learners answer at once (each session is a thread of the server): one lock, no lost update."""
    errors = []

    def learner(i: int) -> None:
        try:
            for choice in ("goes up", "goes down", UPDOWN.options[i % 4]):
                PredictionBook(tmp_path).answer("optim", f"l{i}", f"learner {i}", choice, UPDOWN)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=learner, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    records, _ = PredictionBook(tmp_path).step("optim")
    assert len(records) == 20 and all(records[f"l{i}"]["answer"] == UPDOWN.options[i % 4] for i in range(20))


def test_the_spread_counts_grades_and_names_no_one_on_its_line(tmp_path):
    book = PredictionBook(tmp_path)
    for who, choice in (("a", "goes up"), ("b", "goes up"), ("c", "goes down"), ("d", NOT_SURE), ("e", "unchanged")):
        book.answer("optim", who, f"name-{who}", choice, UPDOWN)
    spread = predictions.tally(UPDOWN, *book.step("optim"))
    assert spread["answered"] == 5 and spread["counts"] == {"goes up": 2, "goes down": 1, "unchanged": 1,
                                                            NOT_SURE: 1}  # fmt: skip
    assert spread["share_right"] is None and not spread["decided"]  # before the check
    line = predictions.spread_line(spread)
    assert line.startswith("5 answered") and "name-" not in line
    assert "goes up: 2 · goes down: 1 · unchanged: 1" in line  # each count after its answer's colon
    book.settle("optim", SEEN)
    spread = predictions.tally(UPDOWN, *book.step("optim"))
    # Right: a and b; wrong: c and e; not sure: d, counted, never graded: not in the share (a review read "1 right
    # of 2 (50%)" where the one graded answer was right, the other "not sure")
    assert spread["right"] == 2 and spread["share_right"] == pytest.approx(2 / 4)
    assert "not sure: 1 · 2 right of 4 graded (50%)" in predictions.spread_line(spread)
    assert [r["learner"] for r in spread["rows"]][:2] == ["name-a", "name-b"]
    assert {r["grade"] for r in spread["rows"]} == {RIGHT, WRONG, NOT_SURE}
    undecided = predictions.tally(UPDOWN, book.step("optim")[0], UNDECIDED)
    assert undecided["share_right"] is None and undecided["not_decided"] == 4
    assert predictions.spread_line(predictions.tally(UPDOWN, {}, None)) == "No answers yet."


def test_the_projector_shows_no_grade_before_the_rooms_check_is_shown(tmp_path):
    """Review: a learner set step 6 up in their own pane and was graded there; the projector then read "1 right
    (100% of those graded)" under "This step's check has its result: it appears once you press Set up"."""
    from tinygpt.ui.teach import prediction_view

    book, step = PredictionBook(tmp_path), lesson.STEPS[5]
    book.answer(step.key, "e", "erin", step.answers.options[1], step.answers)
    book.answer(step.key, "f", "finn", step.answers.seen, step.answers)
    book.reveal(step.key, "f")  # finn's own Set up: their pane shows the check and grades them
    book.settle(step.key, SEEN, "f")
    line = prediction_view.room_line(book, step)
    assert line.startswith("2 answered") and "right" not in line, line
    book.reveal(step.key, None)  # the instructor's Set up: the room's check is shown ...
    line = prediction_view.room_line(book, step)  # ... but not settled yet: it read "1 right of 1 (100%)", then 50%
    assert line.startswith("2 answered") and "right" not in line, line
    book.settle(step.key, SEEN)
    assert "1 right of 2 graded (50%)" in prediction_view.room_line(book, step)


def test_the_room_says_why_it_shows_no_share_right():
    """A review's Room read "The check decided nothing: no share right." beside a decided check's grades, where the
    one answer was "not sure"."""
    only_unsure = {"a": {"answer": UPDOWN.options[-1], "name": "ann"}}
    assert UPDOWN.options[-1] == "not sure"
    spread = predictions.tally(UPDOWN, only_unsure, SEEN)
    assert spread["share_right"] is None
    words = predictions.no_share_words(spread, SEEN)
    assert words == 'No share right: all 1 answer(s) were "not sure", which is never graded.'
    assert predictions.no_share_words(spread, UNDECIDED) == "The check decided nothing: no share right."
    assert predictions.no_share_words(spread, None) == "The share right appears with the check."
    none = predictions.tally(UPDOWN, {}, SEEN)
    assert predictions.no_share_words(none, SEEN) == "No answers to grade: no share right."


def test_the_csv_has_every_step_and_answer_and_no_names(tmp_path):
    book = PredictionBook(tmp_path)
    first = lesson.STEPS[0]
    book.answer(first.key, "a", "anna", first.answers.seen, first.answers)
    book.answer(first.key, "b", "ben", NOT_SURE, first.answers)
    book.settle(first.key, SEEN)
    text = predictions.spread_csv(lesson.STEPS, book)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == sum(len(s.answers.options) for s in lesson.STEPS)
    mine = [r for r in rows if r["key"] == first.key]
    seen = next(r for r in mine if r["answer"] == first.answers.seen)
    assert seen["learners"] == "1" and seen["grade"] == RIGHT and seen["outcome"] == SEEN
    assert seen["answered"] == "2" and seen["graded"] == "1" and seen["share_right"] == "1.000"  # "not sure": ungraded
    assert seen["question"] == first.predict
    assert "anna" not in text and "ben" not in text


def test_a_step_is_revealed_to_the_room_by_the_instructor_or_to_a_learner_by_their_own_setup(tmp_path):
    book = PredictionBook(tmp_path)
    assert not book.revealed("scaling") and not book.revealed("scaling", "ann")
    book.reveal("scaling", "ann")
    assert book.revealed("scaling", "ann") and not book.revealed("scaling", "ben") and not book.revealed("scaling")
    book.answer("scaling", "ben", "ben", "yes", YESNO)  # a reveal is no outcome: answers stay open
    book.reveal("scaling")
    assert book.revealed("scaling", "ben") and book.revealed("scaling")
    assert book.step("scaling")[0]["ben"]["answer"] == "yes"


def test_the_projectors_spread_line_says_each_answer_without_its_parenthesis_where_they_stay_apart():
    """A review: step 8's "most of them (more than half): 1 · a few (two or more, up to half): 0 · ..." ran the
    banner to a fourth line at 1280x720."""
    counts = {"most of them (more than half)": 1, "a few (two or more, up to half)": 0, "almost none (one at most)": 1}
    line = predictions.spread_line({"answered": 2, "counts": counts, "share_right": None})
    assert line == "2 answered: most of them: 1 · a few: 0 · almost none: 1", line
    alike = {"over 10 (a lot)": 1, "over 10 (by far)": 2}  # the short forms would read alike: kept whole
    assert "over 10 (a lot): 1 · over 10 (by far): 2" in predictions.spread_line(
        {"answered": 3, "counts": alike, "share_right": None})


def test_the_banners_spread_line_leaves_out_the_answers_nobody_chose():
    counts = {"sharper, and a worse loss": 1, "flatter, and a worse loss": 1, "about the same": 0, "not sure": 0}
    spread = {"answered": 2, "counts": counts, "share_right": None}
    assert predictions.spread_line(spread, zeros=False) == (
        "2 answered: sharper, and a worse loss: 1 · flatter, and a worse loss: 1")  # fmt: skip
    assert "about the same: 0" in predictions.spread_line(spread)  # the Room's and the panes' line: every answer


def test_a_check_the_room_has_seen_closes_the_answers_before_its_confirmation_grades_them(tmp_path):
    """The lecture checks wait for the held-out eval (seconds) once the training loss has moved: the room has seen
    the curve plunge, so the answers close then (a learner could otherwise change theirs after watching it), and the
    outcome grades them when it comes."""
    book = PredictionBook(tmp_path)
    book.answer("optim", "a", "anna", "goes up", UPDOWN)
    book.answer("optim", "b", "ben", "goes down", UPDOWN)
    waiting = Check(None, "Not enough data yet: the training loss rose ...; the held-out loss must rise too")
    assert not book.settle("optim", predictions.outcome_of(waiting), None, waiting)  # not closing: still open
    book.answer("optim", "b", "ben", "unchanged", UPDOWN)
    seen_by_room = Check(None, "Not enough data yet: ...", closes=True)
    book.settle("optim", predictions.outcome_of(seen_by_room), None, seen_by_room)
    with pytest.raises(AnswerClosed):
        book.answer("optim", "b", "ben", "goes up", UPDOWN)  # after the plunge: refused
    assert book.step("optim")[1] is None
    assert book.step("optim")[0]["b"]["answer"] == "unchanged"  # ungraded until the outcome
    assert book.settle("optim", SEEN, None, Check(True, "seen"))
    assert book.graded("optim")[0] == SEEN
    book.clear()
    book.answer("optim", "b", "ben", "goes up", UPDOWN)  # a new class: open again


def test_set_up_closes_the_answers_before_the_check_decides(tmp_path):
    """A review's learner changed step 1's answer 3 s after the instructor's Set up, the first loss on screen, and
    was graded right: answers stayed open until the training loss moved. The check has appeared: they are final."""
    book = PredictionBook(tmp_path)
    book.answer("mask", "ann", "anna", "goes down", UPDOWN)
    book.reveal("mask", None)  # the instructor's Set up: the room's
    for who in ("ann", "ben"):
        with pytest.raises(AnswerClosed):
            book.answer("mask", who, who, "goes up", UPDOWN)
    assert book.step("mask")[0]["ann"]["answer"] == "goes down"
    book.reveal("heads", "dan")  # a learner's own Set up closes only theirs
    with pytest.raises(AnswerClosed):
        book.answer("heads", "dan", "dan", "yes", YESNO)
    book.answer("heads", "eve", "eve", "yes", YESNO)
