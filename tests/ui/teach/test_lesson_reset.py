"""The lesson's "Reset the lecture run" (tinygpt/ui/teach/lesson_reset.py): what it offers, read from a lecture run
whose knob really changed while it trained, and the instructor's click in the app (AppTest)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import tiny_config  # noqa: E402

from tinygpt.runs.branch import read_branch  # noqa: E402
from tinygpt.runs.control import KnobChange, QueueControl  # noqa: E402
from tinygpt.runs.files import checkpoint_stem, read_config  # noqa: E402
from tinygpt.runs.loop import run_training  # noqa: E402
from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.teach import lesson  # noqa: E402
from tinygpt.ui.teach.lesson_reset import offer  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
MASK = lesson.STEP_KEYS.index("mask")


def lecture_run(store: RunStore, text: str, knob: str | None, value, at: int, pause: bool = False) -> str:
    """A 24-step run (checkpoints at 10 and 20) whose `knob` moves to `value` at step `at` while it trains; a pause
    right after the change checkpoints that step with the new value."""
    config = tiny_config(text, max_steps=24)
    writer = store.create(config.to_dict(), owner="cli")
    writer.close()
    control = QueueControl()

    def at_step(record):
        if knob and record["step"] == at:
            control.send(KnobChange(knob, value))
            if pause:
                control.send({"cmd": "pause"})
                control.send({"cmd": "resume"})

    assert run_training(writer.run_dir, config, control, on_record=at_step) == "finished"
    return writer.run_id


def room_with(run_id: str | None) -> dict:
    return {"runs": {"lecture": {"run": run_id}} if run_id else {}}


def test_the_steps_that_break_the_lecture_run_offer_a_reset():
    assert [s.key for s in lesson.STEPS if s.reset] == ["mask", "optim"]
    assert all(s.setup.knobs for s in lesson.STEPS if s.reset)  # the knobs a reset goes back before


def test_a_reset_is_offered_before_the_first_change_and_its_words_say_where(tmp_path, tiny_text):
    store = RunStore(tmp_path / "runs")
    assert offer(room_with(None), store, ("mask",)).point is None  # no lecture run yet
    rid = lecture_run(store, tiny_text, "learning_rate", 0.1, 14)
    found = offer(room_with(rid), store, ("learning_rate",))
    assert found.run_id == rid and found.point == (10, {})  # the newest checkpoint before the change
    assert "checkpoint at step 10" in found.text and "LR 0.002→0.1 at step 14" in found.text
    assert "LR 0.002," in found.text  # the branch's learning rate: the one before the change
    unchanged = offer(room_with(rid), store, ("mask",))
    assert unchanged.point is None and "mask has not changed" in unchanged.text


def test_no_checkpoint_before_the_change_is_said_plainly(tmp_path, tiny_text):
    store = RunStore(tmp_path / "runs")
    rid = lecture_run(store, tiny_text, "mask", "none", 5)
    for suffix in (".json", ".safetensors"):  # step 0's checkpoint gone (as retention thins them): next is 10
        checkpoint_stem(store.path(rid), 0).with_suffix(suffix).unlink()
    found = offer(room_with(rid), store, ("mask",))
    assert found.point is None
    assert "no checkpoint before its change (mask causal→none at step 5)" in found.text


def test_the_instructor_resets_the_lecture_run_and_the_room_follows_the_branch(runs_dir, tiny_text, monkeypatch):
    """The mask went to none at step 12 and a pause checkpointed step 12 with it: the reset branches from there
    with the causal mask put back, the branch becomes the room's lecture run and the run in view. A learner's pane
    at the same step shows no button."""
    from streamlit.testing.v1 import AppTest

    store = RunStore(runs_dir)
    parent = lecture_run(store, tiny_text, "mask", "none", 12, pause=True)
    lesson.write_room(runs_dir, step=MASK, runs={"lecture": {"run": parent}})

    def session(instructor: bool) -> AppTest:
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
        at.session_state["learner"] = Actor("t" if instructor else "l", "someone", instructor)
        at.run()
        assert not at.exception, at.exception
        return at

    learner = session(False)
    assert not [b for b in learner.sidebar.button if b.label == "Reset the lecture run"]
    learner.query_params["run"], learner.query_params["view"] = parent, "1"  # she watches the lecture run
    learner.run()
    assert learner.session_state[state.RUN_ID] == parent
    teacher = session(True)
    assert any("checkpoint at step 12" in c.value.replace("\\", "") for c in teacher.sidebar.caption)
    [reset] = [b for b in teacher.sidebar.button if b.label == "Reset the lecture run"]
    reset.click().run()
    assert not teacher.exception, teacher.exception
    assert not teacher.error, [e.value for e in teacher.error]
    branch = lesson.read_room(runs_dir)["runs"]["lecture"]["run"]
    assert branch != parent and teacher.session_state[state.RUN_ID] == branch
    assert read_branch(store.path(branch)) == {"parent": parent, "step": 12, "changes": {"mask": "causal"}}
    assert read_config(store.path(branch)).model.mask == "causal"
    assert read_config(store.path(parent)).model.mask == "causal"  # config.json: as the parent started
    # Reset once: the branch's mask has not changed since, so nothing more is offered.
    assert not [b for b in teacher.sidebar.button if b.label == "Reset the lecture run"]
    said = [c.value.replace("\\", "") for c in teacher.sidebar.caption]
    assert "The lecture run's mask has not changed since it was branched at step 12: nothing to reset." in said
    # The learner who watched the broken run follows the room to the branch, once (a review's stayed on the broken
    # run, her pane calling the branch's check another run's); she may open the broken run again and stay there.
    from tinygpt.ui.screen import flashes

    said_to_her = []  # the note is flashed once, on the next page run: recorded, as a loaded machine may run twice
    original_flash = flashes.flash
    monkeypatch.setattr(flashes, "flash", lambda *a, **k: said_to_her.append(a[1]) or original_flash(*a, **k))
    learner.run()
    assert not learner.exception, learner.exception
    assert learner.session_state[state.RUN_ID] == branch
    assert any("you now watch its branch from step 12" in text for text in said_to_her), said_to_her
    learner.query_params["run"] = parent
    learner.run()
    learner.run()
    assert learner.session_state[state.RUN_ID] == parent
    # A session that never watched it as the lecture run opens the broken run by its address: it stays there, told
    # where the lecture went (a review's learner asked for it by name and was moved to the branch)
    said_to_her.clear()
    late = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
    late.session_state["learner"] = Actor("z", "zoe", False)
    late.query_params["run"], late.query_params["view"] = parent, "1"
    late.run()
    late.run()
    assert not late.exception, late.exception
    assert late.session_state[state.RUN_ID] == parent
    assert any("You stay on the run you opened" in text for text in said_to_her), said_to_her


def test_the_banners_reset_closes_its_popover(runs_dir, tiny_text):
    """On the projector (Large fonts) the reset sits in the banner's "Reset" popover. A review's popover stayed open
    over the reset run's page; the button's callback closes it before the page is drawn again."""
    from streamlit.testing.v1 import AppTest

    from tinygpt.ui.screen.fonts import W_LARGE
    from tinygpt.ui.teach import teach_keys

    store = RunStore(runs_dir)
    parent = lecture_run(store, tiny_text, "mask", "none", 12, pause=True)
    lesson.write_room(runs_dir, step=MASK, runs={"lecture": {"run": parent}})
    teacher = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
    teacher.session_state["learner"] = Actor("t", "someone", True)
    teacher.session_state[W_LARGE] = True
    teacher.run()
    assert not teacher.exception, teacher.exception
    assert not [b for b in teacher.sidebar.button if b.label == "Reset the lecture run"]  # the banner's, not the pane's
    opened = f"{teach_keys.W_BANNER_MORE}:{parent}"  # the popover is keyed by the lecture run
    teacher.session_state[opened] = True  # the instructor opened it
    [reset] = [b for b in teacher.main.button if b.label == "Reset the lecture run"]
    reset.click().run()
    assert not teacher.exception, teacher.exception
    branch = lesson.read_room(runs_dir)["runs"]["lecture"]["run"]
    assert branch != parent and teacher.session_state[opened] is False
    # the reset's run has a popover of its own, closed: the browser cannot open the old one again over the page
    assert f"{teach_keys.W_BANNER_MORE}:{branch}" not in teacher.session_state or not teacher.session_state[
        f"{teach_keys.W_BANNER_MORE}:{branch}"]  # fmt: skip


def test_a_new_class_starts_at_step_one_without_the_old_lecture_run_which_is_paused(runs_dir, monkeypatch):
    """Clear the answers, for a new class: the old lecture run's step-1 check was decided before the class came (and
    a knob step read the last class's change until the new one applied). The room goes back to step 1 with no lecture
    run, so Set up starts a fresh one; the old one is paused, never deleted, and the prepared runs stay."""
    from tinygpt.ui.teach import lesson_reset

    paused = []
    monkeypatch.setattr(lesson_reset.resources, "is_active", lambda rid: rid == "L" * 16)
    monkeypatch.setattr(lesson_reset.resources, "get_manager", lambda: type("M", (), {
        "pause": lambda self, rid, actor=None, through="": paused.append((rid, through))})())  # fmt: skip
    monkeypatch.setattr(lesson_reset.resources, "get_store", lambda: RunStore(runs_dir))
    lesson.write_room(runs_dir, step=9, runs={"lecture": {"run": "L" * 16}, "induction": {"a": "I" * 16}})
    assert lesson_reset.afresh(Actor("t", "teacher", True)) == "L" * 16
    room = lesson.read_room(runs_dir)
    assert room["step"] == 0 and not room["runs"]["lecture"] and room["runs"]["induction"] == {"a": "I" * 16}
    assert paused == [("L" * 16, "a new class")]
    assert lesson_reset.afresh(Actor("t", "teacher", True)) is None  # again: nothing to pause


def test_a_learner_watching_the_old_lecture_run_follows_a_new_classs_fresh_one(runs_dir, monkeypatch):
    """A review: after Clear the answers (a new class) a learner stayed on the old, paused lecture run while the pane
    checked the new one. She moves to it once; one watching another run stays."""
    from types import SimpleNamespace

    from tinygpt.ui.teach import lesson_reset, teach_keys

    session, said = {teach_keys.LESSON_FOLLOWED: "O" * 16}, []
    monkeypatch.setattr(lesson_reset, "state", SimpleNamespace(get=session.get, put=session.__setitem__))
    monkeypatch.setattr(lesson_reset.in_view, "run_id", lambda: session.get("viewing"))
    monkeypatch.setattr(lesson_reset.in_view, "set_run_id", lambda rid: session.__setitem__("viewing", rid))
    monkeypatch.setattr(lesson_reset.flashes, "flash", lambda kind, text, rid=None: said.append(text))
    store, learner = RunStore(runs_dir), Actor("l", "learner", False)
    session["viewing"] = "O" * 16  # she watched the last class's lecture run
    assert not lesson_reset.follow_reset({"runs": {"lecture": {}}}, learner, store)  # cleared: nothing to follow yet
    assert lesson_reset.follow_reset({"runs": {"lecture": {"run": "N" * 16}}}, learner, store)
    assert session["viewing"] == "N" * 16 and said == [
        "The instructor started a fresh lecture run for a new class: you now watch it. The run you watched stays on "
        "the Runs page."]  # fmt: skip
    session.update({teach_keys.LESSON_FOLLOWED: "N" * 16, "viewing": "M" * 16})  # another run of her own
    assert not lesson_reset.follow_reset({"runs": {"lecture": {"run": "P" * 16}}}, learner, store)
    assert session["viewing"] == "M" * 16
