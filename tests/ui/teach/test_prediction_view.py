"""What a viewer's lesson pane shows of a step's check (tinygpt/ui/teach/prediction_view.py): nothing before the
step is set up, and beside a grade, the check it was graded on."""

import pytest

from tinygpt.runs.owners import Actor
from tinygpt.ui.teach import lesson, prediction_view
from tinygpt.ui.teach.lesson import Check
from tinygpt.ui.teach.predictions import PredictionBook

STEP = {s.key: s for s in lesson.STEPS}


@pytest.fixture
def pages(tmp_path, monkeypatch):
    book = PredictionBook(tmp_path)
    monkeypatch.setattr(prediction_view, "book", lambda: book)
    return book


LEARNER = Actor("a1", "Ada", instructor=False)


def test_nothing_of_a_check_shows_before_the_step_is_set_up_decided_or_not(pages):
    """Review, step 8: "Not enough data yet: 7 of 8 pitfalls reproduced so far (1 not started)" showed before
    anyone predicted "how many crash?": only decided checks were held."""
    partial = Check(None, "Not enough data yet: 7 of 8 pitfalls reproduced so far", headline="7 of 8 so far")
    for check in (partial, Check(True, "8 of 8 reproduced")):
        held = prediction_view.shown_check(STEP["pitfalls"], LEARNER, check)
        assert isinstance(held, prediction_view.HeldCheck) and "of 8" not in held.text + held.short
        assert "Set up this step" in held.text and "Predict first" in held.text
    prediction_view.set_up(STEP["pitfalls"], LEARNER)
    assert prediction_view.shown_check(STEP["pitfalls"], LEARNER, partial) is partial


def test_the_check_beside_a_grade_is_the_one_it_was_graded_on(pages):
    """Review: "Your prediction: between 3 and 5 · the check saw it · right" above "Check: not seen": the grade kept
    from when the check first appeared, the check recomputed on the run as later steps had changed it."""
    step = STEP["tensors"]
    pages.answer(step.key, LEARNER.id, LEARNER.name, "between 3 and 5", step.answers)
    seen = Check(True, "The first training loss was 4.20; by step 836 it is 2.04: it fell by 2.16.", headline="down")
    assert prediction_view.graded_check(step, LEARNER, seen) is seen  # closes the answer on this check
    now = Check(False, "by step 13015 it is 3.22; but it fell by 0.98, less than 1.0.", headline="fell by 0.98")
    shown = prediction_view.graded_check(step, LEARNER, now)
    assert shown.passed is True and "by step 836" in shown.text and "graded on this" in shown.text
    assert "not seen: fell by 0.98" in shown.text  # what the runs read now is said, as such
    assert pages.graded(step.key, LEARNER.id)[0] == "seen"
    # A check whose words begin with its status says it once: "reads not enough data yet: Not enough data yet:"
    waiting = Check(None, "Not enough data yet: mask has not been set to none on the lecture run.")
    said = prediction_view.graded_check(step, LEARNER, waiting).text
    assert "the check reads not enough data yet: mask has not been set" in said
    assert said.lower().count("not enough") == 1


class _Screen:
    """prediction_view's st, recording what a learner's pane would show."""

    def __init__(self):
        self.shown: list[str] = []

    def radio(self, label, options, **_):
        self.shown.append(f"radio:{label}")

    def __getattr__(self, kind):  # markdown, caption, success, error, info
        return lambda text, **_: self.shown.append(str(text))


def test_watch_for_comes_with_the_grade_not_above_the_choices(pages, monkeypatch):
    """Review: step 2 asked "Will its loss look wrong?" under "Watch for: The buggy run's loss looks fine, even
    better", the graded answer; the same at steps 4, 6 and 8. A learner reads it once their answer has closed."""
    screen = _Screen()
    monkeypatch.setattr(prediction_view, "st", screen)
    monkeypatch.setattr(prediction_view.state, "get", lambda key, default=None: default)
    step = STEP["shapes"]
    prediction_view.learner_part(step, LEARNER, None)  # open: the choices, and no answer given away
    assert any(s.startswith("radio:") for s in screen.shown)
    assert not any(step.watch in s for s in screen.shown) and any("comes with the check" in s for s in screen.shown)
    screen.shown.clear()
    pages.answer(step.key, LEARNER.id, LEARNER.name, step.answers.options[0], step.answers)
    prediction_view.learner_part(step, LEARNER, Check(True, "reproduced"))  # the check appeared: graded
    assert any(step.watch in s for s in screen.shown) and not any(s.startswith("radio:") for s in screen.shown)


def test_a_grade_only_redraw_never_draws_the_choices(pages, monkeypatch):
    """The pane's first look drew the radio, then the check came decided: its slot is redrawn with the grade only
    (choices=False), never a second radio (one a script run); with nothing to grade it draws nothing."""
    screen = _Screen()
    monkeypatch.setattr(prediction_view, "st", screen)
    monkeypatch.setattr(prediction_view.state, "get", lambda key, default=None: default)
    step = STEP["shapes"]
    assert prediction_view.learner_part(step, LEARNER, None, choices=False) is False and screen.shown == []
    pages.answer(step.key, LEARNER.id, LEARNER.name, step.answers.options[1], step.answers)
    assert prediction_view.learner_part(step, LEARNER, Check(True, "reproduced"), choices=False) is False
    assert any("right" in s for s in screen.shown) and not any(s.startswith("radio:") for s in screen.shown)


def _pane(monkeypatch) -> tuple:
    """(screen, session): the pane drawn into a recording screen, its session state a plain dict."""
    screen, session = _Screen(), {}
    monkeypatch.setattr(prediction_view, "st", screen)
    monkeypatch.setattr(prediction_view.state, "get", lambda key, default=None: session.get(key, default))
    monkeypatch.setattr(prediction_view.state, "put", lambda key, value: session.__setitem__(key, value))
    monkeypatch.setattr(prediction_view.state, "pop", lambda key, default=None: session.pop(key, default))
    return screen, session


def test_an_answer_that_came_after_the_check_is_said_not_dropped_unsaid(pages, monkeypatch):
    """A review's learner clicked an answer 1.5 s after the instructor's Set up: the book refused it, and the pane
    said only "No prediction: you chose no answer before the check appeared"."""
    screen, session = _pane(monkeypatch)
    step = STEP["scaling"]
    pages.settle(step.key, "seen", LEARNER.id, Check(True, "reproduced"))  # the check appeared to this learner
    session[prediction_view._key(step)] = step.answers.choices[1]  # the radio's value as the browser sent it
    prediction_view._chosen(step, LEARNER)  # refused: too late
    prediction_view.learner_part(step, LEARNER, Check(True, "reproduced"))
    said = " ".join(screen.shown)
    assert f"Your answer **{step.answers.choices[1]}** reached the server after the answers had closed" in said.replace(
        "\\", "")
    assert "No prediction" in said


def test_a_change_that_came_after_the_check_is_said_beside_the_answer_counted(pages, monkeypatch):
    """A review's learner had answered, then clicked another answer as the check appeared: the pane swapped the radio
    for the grade of the first answer and said nothing of the refused change."""
    screen, session = _pane(monkeypatch)
    step = STEP["scaling"]
    first, second = step.answers.choices[0], step.answers.choices[1]
    pages.answer(step.key, LEARNER.id, LEARNER.name, first, step.answers)
    pages.settle(step.key, "seen", LEARNER.id, Check(True, "reproduced"))
    session[prediction_view._key(step)] = second
    prediction_view._chosen(step, LEARNER)  # refused: too late
    prediction_view.learner_part(step, LEARNER, Check(True, "reproduced"))
    said = " ".join(screen.shown).replace("\\", "")
    assert f"Your change to **{second}** reached the server after the answers had closed" in said, said
    assert f"your earlier answer **{first}** is the one counted" in said


def test_an_answer_waits_for_its_grade_until_a_decided_check_is_on_screen(pages, monkeypatch):
    """A review: a pane read "… · wrong" above "Check: shown once this step is set up … Predict first." for a second
    or two after the instructor's Set up: the grade, from the book, came before the check that gives it. With no
    decided check on screen yet (`pending`), the answer is said without its grade, and the pane redraws it."""
    screen = _Screen()
    monkeypatch.setattr(prediction_view, "st", screen)
    monkeypatch.setattr(prediction_view.state, "get", lambda key, default=None: default)
    step = STEP["shapes"]
    pages.answer(step.key, LEARNER.id, LEARNER.name, step.answers.options[0], step.answers)
    pages.settle(step.key, "seen", None, None)  # the room's check, settled by the instructor's pane
    assert prediction_view.learner_part(step, LEARNER, None, pending=True) is True
    assert screen.shown and "its grade comes with the check" in screen.shown[0] and "**wrong**" not in screen.shown[0]
    screen.shown.clear()
    assert prediction_view.learner_part(step, LEARNER, None) is False  # a decided check on screen: the grade
    assert any("**wrong**" in s for s in screen.shown)


def test_a_grade_never_stands_beside_a_check_that_says_otherwise(pages, monkeypatch):
    """A review's learner read "· wrong" above "Check: not enough data yet — 7 of the 8 pitfalls reproduced so far"
    for ~10 s at step 8: the room's outcome came in while her pane computed its own, undecided, check. The answer
    waits for its grade; beside the check it was graded on (graded_check's), the grade shows."""
    screen = _Screen()
    monkeypatch.setattr(prediction_view, "st", screen)
    monkeypatch.setattr(prediction_view.state, "get", lambda key, default=None: default)
    step = STEP["shapes"]
    pages.answer(step.key, LEARNER.id, LEARNER.name, step.answers.options[0], step.answers)
    pages.settle(step.key, "seen", None, Check(True, "reproduced"))  # the room's, settled by the instructor's pane
    prediction_view.learner_part(step, LEARNER, Check(None, "Not enough data yet: 7 of 8"), choices=False)
    assert "its grade comes with the check" in " ".join(screen.shown) and "**wrong**" not in " ".join(screen.shown)
    screen.shown.clear()
    graded = prediction_view.graded_check(step, LEARNER, Check(None, "Not enough data yet: 7 of 8"))
    assert isinstance(graded, prediction_view.GradedCheck)
    prediction_view.learner_part(step, LEARNER, graded, choices=False)
    assert any("**wrong**" in s for s in screen.shown)


def test_a_check_not_shown_yet_is_not_computed_again_at_every_refresh(pages, monkeypatch):
    """A review: on a loaded server the projector's count of answers lagged the learners' clicks by 7-10 s, one
    check computation (step 8 reads 21 runs) per 3 s refresh while nobody saw the check. A check not shown yet is
    kept for HELD_RECHECK_S for the same runs; once the step is set up, it is computed afresh."""
    screen, session = _pane(monkeypatch)
    step, runs = STEP["pitfalls"], {"exp:scaling": {"scaled": "r1", "unscaled": "r2"}}
    held = prediction_view.shown_check(step, LEARNER, Check(True, "reproduced"))
    assert isinstance(held, prediction_view.HeldCheck)
    prediction_view.keep_held(step, runs, held)
    assert prediction_view.held_check(step, LEARNER, runs) is held
    assert prediction_view.held_check(step, LEARNER, {**runs, "exp:mask": {"causal": "r3"}}) is None  # other runs
    prediction_view.keep_held(step, runs, Check(True, "reproduced"))  # a shown check is never kept
    assert prediction_view.held_check(step, LEARNER, runs) is held
    pages.reveal(step.key, None)  # the instructor's Set up: computed afresh
    assert prediction_view.held_check(step, LEARNER, runs) is None
    prediction_view.keep_held(step, runs, held)
    session[prediction_view.teach_keys.LESSON_HELD_CHECK] = (step.key, runs, 0.0, held)  # long ago
    pages.clear()
    assert prediction_view.held_check(step, LEARNER, runs) is None


def test_the_instructors_set_up_asks_first_while_a_decided_check_would_close_unanswered_predictions(pages,
                                                                                                   monkeypatch):
    """A review's instructor pressed Set up at step 10 (its runs prepared, its check decided) before anyone had
    predicted: the check showed at once and both learners read "No prediction ... this step is not graded". The
    press asks first while learners in the lesson have not answered; not for an undecided check, nor once all have."""
    from tinygpt.ui import state
    from tinygpt.ui.host.positions import Positions
    from tinygpt.ui.teach import teach_keys

    store: dict = {}
    monkeypatch.setattr(state, "get", lambda key, default=None: store.get(key, default))
    here = Positions()
    monkeypatch.setattr(prediction_view.resources, "positions", lambda: here)
    teacher = Actor("t0", "Tess", instructor=True)
    step = STEP["induction"]
    decided = prediction_view.shown_check(step, teacher, Check(True, "The induction phase change reproduced"))
    undecided = prediction_view.shown_check(step, teacher, Check(None, "Not enough data yet: 2 of 3 runs"))
    assert decided.ready and not undecided.ready
    store[teach_keys.LESSON_HELD_CHECK] = (step.key, {}, 0.0, undecided)
    here.saw("a1", 9, None), here.saw("b2", 9, None), here.saw("c3", None, None)  # c3 is not in the lesson
    here.saw(teacher.id, 9, None)  # the instructor's pane, before they gave the key: not a learner
    assert prediction_view.closes_answers(step, teacher) is None  # showing it closes nothing yet
    store[teach_keys.LESSON_HELD_CHECK] = (step.key, {}, 0.0, decided)
    assert prediction_view.closes_answers(step, LEARNER) is None  # a learner's Set up is their own
    assert prediction_view.closes_answers(step, teacher) == (
        "0 of 2 learners in the lesson have predicted. This step's check is ready: Set up shows it to "
        "everyone now and closes every answer."
    )
    # A check whose last part Set up itself measures (step 8's memory demo) asks too: a review's step 8 never did
    last_part = Check(None, "Not enough data yet: 7 of 8 so far; not measured yet: Memory", set_up_decides=True)
    assert prediction_view.shown_check(step, teacher, last_part).ready
    store[teach_keys.LESSON_HELD_CHECK] = (step.key, {}, 0.0, prediction_view.shown_check(step, teacher, last_part))
    assert prediction_view.closes_answers(step, teacher).startswith("0 of 2 learners in the lesson have predicted")
    store[teach_keys.LESSON_HELD_CHECK] = (step.key, {}, 0.0, decided)
    pages.answer(step.key, "a1", "Ada", step.answers.options[0], step.answers)
    assert prediction_view.closes_answers(step, teacher).startswith("1 of 2 learners in the lesson has predicted")
    pages.answer(step.key, "b2", "Bo", step.answers.options[1], step.answers)
    assert prediction_view.closes_answers(step, teacher) is None  # everyone here answered
    pages.clear()
    prediction_view.set_up(step, teacher)
    assert prediction_view.closes_answers(step, teacher) is None  # already shown to the room
