"""Step 8's "how many crash?" (tinygpt/ui/teach/pitfall_checks.py): the check says what a crash is and how the
count answers the question, in the words the step's choices use."""

from __future__ import annotations

from tinygpt.ui.teach import lesson, pitfall_checks
from tinygpt.ui.teach.lesson_checks import Evidence

STEP = next(s for s in lesson.STEPS if s.key == "pitfalls")


def verdicts(**halted) -> dict:
    out = {k: {"reproduced": True, "sentence": ""} for k in lesson.PITFALLS}
    for key, ends in halted.items():
        out[key]["halted"] = ends
    return out


def test_the_check_says_how_one_early_end_answers_which_ones_crash():
    """A review's learner D answered "a few" to "1 of 7 crashed" and was graded wrong: the threshold (at most one is
    almost none) was never shown, and a divergence was counted without saying it counts."""
    ends = {"naive softmax": {"state": "diverged", "step": 50}}
    check = lesson.all_pitfalls(Evidence(verdicts=verdicts(softmax=ends)))
    n = len(lesson.PITFALLS)
    assert check.passed is True
    assert (f"1 of {n} crashed (a crash: a run stopped before its last step by itself, diverged or failed; a guard "
            "stopping a bug on purpose is no crash): "
            "'naive softmax' (Unstable softmax) diverged at step 50. Almost none, since at most one counts as almost "
            "none.") in check.text, check.text  # fmt: skip
    assert check.short.endswith(f"; 1 of {n} crashed: almost none (at most one)"), check.short
    two = lesson.all_pitfalls(Evidence(verdicts=verdicts(softmax=ends, warmup={"no warmup": {"state": "failed",
                                                                                            "step": 3}})))  # fmt: skip
    assert two.passed is False and "More than almost none, since at most one counts as almost none." in two.text
    none = lesson.all_pitfalls(Evidence(verdicts=verdicts()))
    assert f"0 of {n} crashed (a crash:" in none.text and "Almost none, since" in none.text, none.text


def test_the_steps_words_and_choices_carry_the_rule_the_check_grades_by():
    """The question defines a crash as the check counts it (a divergence is one: the run stopped itself; a guard
    stopping a bug on purpose is not: a review's learner counted shape contracts' refusal at step 0 by the words
    shown and was graded wrong), and the choices say where "almost none" ends and "a few" begins, from ALMOST_NONE."""
    assert pitfall_checks.CRASH_SHORT in STEP.predict and "diverge" in STEP.predict and "guard" in STEP.predict
    assert f"({pitfall_checks.ALMOST} at most)" in STEP.watch
    most, few, almost = STEP.answers.choices
    assert STEP.answers.seen == almost and almost.startswith("almost none (one at most)")
    assert few == "a few (two or more, up to half)"
    pitfall_checks.ALMOST_NONE = 2
    try:
        assert pitfall_checks.answer_choices()[1].startswith("a few (three or more")
    finally:
        pitfall_checks.ALMOST_NONE = 1
