"""The presenter view (tinygpt/ui/teach/presenter.py): the check in one sentence with its numbers, and the lesson as a
banner in the main area for the instructor with Large fonts, the sidebar pane for a learner."""

from pathlib import Path

from tinygpt.ui.teach import lesson, presenter

APP = str(Path(__file__).resolve().parents[3] / "app.py")


def test_the_headline_of_a_long_check_is_its_first_sentence_with_its_numbers():
    text = ("The loss fell from 2.20 to 0.30 after mask causal → none at step 100 (mean of 20 steps each side, "
            "30 steps since). 'correct': attention rows sum to 1 pass (1.000, needs 1 ± 1e-3). A third sentence "
            "with more numbers: 4.17 and 0.02.")  # fmt: skip
    assert presenter.headline(text) == ("The loss fell from 2.20 to 0.30 after mask causal → none at step 100 "
                                        "(mean of 20 steps each side, 30 steps since).")  # fmt: skip
    assert presenter.headline("Not enough data yet: 12 of 60 steps trained.") == (
        "Not enough data yet: 12 of 60 steps trained.")  # fmt: skip
    first = "The first loss was 4.20 (ln 65 = 4.17: uniform guessing);\n by step 300 it is 2.40: it fell by 1.80."
    assert presenter.headline(first) == " ".join(first.split())  # one sentence, on one line
    # One sentence past the limit: cut at its last clause that fits, never in a number.
    long = "; ".join(f"pitfall {i} reproduced at {i}.5 nats" for i in range(20)) + "."
    short = presenter.headline(long, limit=120)
    assert short.endswith(" …") and len(short) <= 122 and short.startswith("pitfall 0 reproduced at 0.5 nats; ")
    assert short[:-2] in long and short[-3] == "s"


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
