"""A learner's record (tinygpt/ui/teach/record.py): one self-contained HTML file of their lesson, their answers, what
the checks saw and their runs' final losses, with nothing a browser would fetch and every typed text escaped. No
browser, no Streamlit."""

from __future__ import annotations

import re

from tinygpt.config import RunConfig
from tinygpt.runs.store import RunStore
from tinygpt.ui.teach import lesson, predictions, record
from tinygpt.ui.teach.predictions import NOT_SEEN, SEEN, PredictionBook

ANNA, BEN = "a" * 16, "b" * 16


def _run(store: RunStore, learner: str, name: str, losses: list[float], val: float | None) -> str:
    config = RunConfig().to_dict() | {"learner": {"id": learner, "name": name}}
    with store.create(config, owner="app") as writer:
        for step, loss in enumerate(losses):
            writer.append_metric({"step": step, "loss": loss})
        if val is not None:
            writer.append_eval({"step": len(losses) - 1, "train_loss": losses[-1], "val_loss": val})
        return writer.run_dir.name


def test_the_record_holds_the_answers_the_outcomes_and_the_runs_with_their_final_losses(tmp_path):
    store = RunStore(tmp_path)
    first, second = lesson.STEPS[0], lesson.STEPS[1]
    book = PredictionBook(tmp_path)
    book.answer(first.key, ANNA, "<script>alert(1)</script>", first.answers.seen, first.answers)
    book.answer(second.key, ANNA, "anna", "it crashes", second.answers)
    book.answer(second.key, BEN, "ben", second.answers.seen, second.answers)
    book.settle(first.key, SEEN)
    book.settle(second.key, SEEN)
    mine = _run(store, ANNA, "<script>alert(1)</script>", [4.2, 3.1, 2.5], 2.61)
    _run(store, BEN, "ben", [4.0, 3.0], None)  # someone else's: not in anna's record

    page = record.learner_record(store, lesson.STEPS, ANNA, "<script>alert(1)</script>")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # escaped, not run
    assert not re.search(r"https?://|//[a-z]", page, re.I)  # nothing to fetch: no URL, no protocol-relative link
    assert "<link" not in page and "src=" not in page and "@import" not in page
    for step in lesson.STEPS:  # every step's title and question
        assert record._e(step.section) in page and record._e(step.predict) in page
    assert f"<b>{record._e(first.answers.seen)}</b>" in page
    assert "The check found &quot;between 3 and 5&quot;: right." in page
    assert "<b>it crashes</b>" in page and "The check found &quot;it looks fine, or even better&quot;: wrong." in page
    assert "2 prediction(s) made; of the 2 whose check decided, 1 right." in page
    names = record.run_names(store)
    assert record._e(names[mine]) in page and "2.5000" in page and "2.6100" in page
    assert page.count("<tr>") == 2  # the header and anna's one run
    assert page.count("<svg") == 1 and "<polyline" in page


def test_steps_without_an_answer_or_a_check_say_so_and_undecided_is_not_graded(tmp_path):
    first, second = lesson.STEPS[0], lesson.STEPS[1]
    book = PredictionBook(tmp_path)
    book.answer(first.key, ANNA, "anna", "not sure", first.answers)
    book.settle(first.key, NOT_SEEN)
    book.settle(second.key, "undecided")
    entries = record.step_entries(lesson.STEPS, book, ANNA)
    page = record.record_html("anna", entries, [])
    assert "You were not sure." not in page  # the outcome is said, then the grade
    # Named by the answer it confirms: "the check saw it · wrong" read as if it saw the learner's answer (a review)
    assert "The check did not find &quot;between 3 and 5&quot;: you were not sure." in page
    assert record.no_prediction("undecided") in page
    assert "so this step is not graded. The check ended without enough data to tell." in page
    assert "No answer yet; the check had not appeared." in page
    assert "No runs of your own." in page
    # Review: "1 of 12 right, among those the checks graded" where one of the 12 was "not sure": said apart
    assert "1 prediction(s) made; of the 1 whose check decided, 0 right, 1 answered “not sure”." in page


def test_the_sparkline_is_drawn_from_the_curve_alone():
    assert record.sparkline([]) == "" and record.sparkline([(0, 1.0)]) == ""
    svg = record.sparkline([(i, 4.0 - i / 100) for i in range(1000)])
    points = re.search(r'points="([^"]+)"', svg).group(1).split()
    assert len(points) <= record.SPARK_POINTS + 1
    first, last = (tuple(map(float, p.split(","))) for p in (points[0], points[-1]))
    assert first[0] < last[0] and first[1] < last[1]  # left to right; a falling loss goes down the picture
    assert "http" not in svg


def test_a_step_without_a_prediction_says_plainly_what_happened():
    """The review's learner read "You did not predict before the check appeared (the check saw it)": which "it",
    and what did the check see? Now: no answer was chosen, so no grade, then what the check found."""
    for outcome, found in [(predictions.SEEN, "The check found the effect."),
                           (predictions.NOT_SEEN, "The check did not find the effect."),
                           (predictions.UNDECIDED, "The check ended without enough data to tell.")]:  # fmt: skip
        said = record.no_prediction(outcome)
        assert said.startswith("No prediction: you chose no answer before the check appeared")
        assert "not graded" in said and said.endswith(found) and "saw it" not in said
