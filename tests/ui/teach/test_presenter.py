"""The presenter view (tinygpt/ui/teach/presenter.py): the check in one sentence with its numbers, and the lesson as a
banner in the main area for the instructor with Large fonts, the sidebar pane for a learner."""

from pathlib import Path

from tinygpt.ui.teach import lesson, presenter

APP = str(Path(__file__).resolve().parents[3] / "app.py")


def test_the_banners_line_is_the_checks_own_headline_never_a_cut_sentence():
    """The banner used to cut the check's text to its first sentence ("... at step 3000 …" on the ablation step);
    it now shows the headline the check builds from its numbers (every step: test_lesson_checks_headlines.py), or the
    text itself where that is one short line."""
    long = "Zero-ablating L1H1, the induction verdict's head, adds +0.671 nats on the second copy at step 3000; " * 3
    check = lesson.Check(True, long, headline="L1H1 carries the copying: zero-ablating it adds +0.671 nats")
    assert check.short == "L1H1 carries the copying: zero-ablating it adds +0.671 nats"
    assert lesson.Check(None, "Not enough data yet: 12 of 60 steps trained.").short == (
        "Not enough data yet: 12 of 60 steps trained.")  # fmt: skip
    assert not hasattr(presenter, "headline")  # no second way to shorten a check


def test_the_banner_is_in_the_main_area_for_the_instructor_with_large_fonts_not_for_a_learner(runs_dir):
    from streamlit.testing.v1 import AppTest

    from tinygpt.runs.owners import Actor
    from tinygpt.ui.screen import fonts

    def session(instructor: bool) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=90)
        at.session_state["learner"] = Actor("t" if instructor else "l", "someone", instructor)
        at.run()
        at.sidebar.toggle(key=fonts.W_LARGE).set_value(True).run()  # Large fonts: the projector
        assert not at.exception, at.exception
        return at

    def title(elements) -> str:
        return next((str(m.value) for m in elements if str(m.value).startswith("**Lesson 1/")), "")

    teacher = session(True)
    next(b for b in teacher.sidebar.button if b.label == "Teach the lesson").click().run()
    assert not teacher.exception, teacher.exception
    step = lesson.STEPS[0]
    assert title(teacher.main.markdown).startswith(f"**Lesson 1/{len(lesson.STEPS)} · {step.section}**")
    assert any(f"**Predict:** {step.predict}" in str(m.value) for m in teacher.main.markdown)
    assert {"Set up this step", "Back", "Next", "Prepare the long runs"} <= {b.label for b in teacher.main.button}
    assert title(teacher.sidebar.markdown) == ""  # not twice: the sidebar has one line for the lesson
    assert any("on the banner above the page" in str(c.value) for c in teacher.sidebar.caption)
    assert not any(b.label == "Set up this step" for b in teacher.sidebar.button)
    assert any(p.proto.popover.label == "Numbers" for p in teacher.main.get("popover"))

    learner = session(False)
    assert title(learner.sidebar.markdown).startswith("**Lesson 1/")  # a learner's pane stays in the sidebar
    assert title(learner.main.markdown) == ""
    assert not any(p.proto.popover.label == "Numbers" for p in learner.main.get("popover"))
    teacher.sidebar.toggle(key=fonts.W_LARGE).set_value(
        False
    ).run()  # Large fonts off: the instructor's pane goes back to the sidebar
    assert not teacher.exception, teacher.exception
    assert title(teacher.sidebar.markdown).startswith("**Lesson 1/") and title(teacher.main.markdown) == ""
