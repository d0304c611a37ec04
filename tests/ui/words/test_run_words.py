"""A run's words per viewer (tinygpt/ui/words/run_words.py): "paused by you" only for the one who paused it."""

from __future__ import annotations

import json
import time

import pytest

from tinygpt.runs.owners import Actor
from tinygpt.ui.words import run_words

ANNA = Actor("a" * 16, "anna")
BEN = Actor("b" * 16, "ben")
TEACHER = Actor("c" * 16, "teacher", instructor=True)
ANNAS = {"learner": {"id": ANNA.id, "name": "anna"}}
TEACHERS = {"learner": {"id": TEACHER.id, "name": "teacher", "instructor": True}}


def test_paused_by_you_is_the_owners_word_and_names_the_owner_for_everyone_else():
    reason = "paused by you at step 3631"
    assert run_words.reason_for(reason, ANNAS, ANNA) == reason
    assert run_words.reason_for(reason, ANNAS, BEN) == "paused by anna at step 3631"
    assert run_words.reason_for(reason, ANNAS, TEACHER) == "paused by anna at step 3631"
    assert run_words.reason_for(reason, TEACHERS, ANNA) == "paused by the instructor at step 3631"
    assert run_words.reason_for(reason, TEACHERS, TEACHER) == reason
    assert run_words.reason_for(reason, {}, ANNA) == "paused by the instructor at step 3631"  # nobody's: the CLI's
    assert run_words.reason_for(reason, {}, TEACHER) == reason
    assert run_words.reason_for("stopped by you at step 9", ANNAS, BEN) == "stopped by anna at step 9"
    held = "paused by the instructor at step 5"
    assert run_words.reason_for(held, ANNAS, BEN) == held
    assert run_words.reason_for(reason, ANNAS, None) == reason  # no room: the session's own


def test_the_instructor_reads_their_own_hold_as_paused_by_you():
    """A review: the instructor viewing a held run read "You paused this run and hold it" above "paused: paused by
    the instructor before it started", two sentences about the same pause in two voices."""
    assert run_words.reason_for("paused by the instructor before it started", ANNAS, TEACHER) == (
        "paused by you before it started"
    )
    freed = "paused by the instructor at step 41; its worker was freed for a queued run; the instructor can resume it"
    assert run_words.reason_for(freed, ANNAS, TEACHER) == (
        "paused by you at step 41; its worker was freed for a queued run; you can resume it"
    )
    assert run_words.reason_for(freed, ANNAS, ANNA) == freed  # its owner and other learners: the instructor did
    assert run_words.reason_for(freed, ANNAS, BEN) == freed


def test_a_second_instructor_reads_the_first_ones_pause_as_theirs_not_as_their_own():
    """Review: a second browser entered the instructor's key and read the lecture run's own pause (its owner's
    "by you") as "paused by you through Reset the lecture run": named "by the instructor", then taken for a hold."""
    second = Actor("d" * 16, "keen-badger", instructor=True)
    reason = "paused by you through Reset the lecture run at step 7771"
    assert run_words.reason_for(reason, TEACHERS, second) == (
        "paused by another instructor (teacher) through Reset the lecture run at step 7771"
    )
    assert run_words.reason_for(reason, TEACHERS, TEACHER) == reason  # the one who paused it
    assert run_words.reason_for(reason, TEACHERS, ANNA) == (
        "paused by the instructor through Reset the lecture run at step 7771"
    )
    held = "paused by the instructor at step 5; the instructor can resume it"
    assert run_words.reason_for(held, ANNAS, second) == "paused by you at step 5; you can resume it"  # a hold: the role


def test_resume_it_is_said_only_to_who_may_resume_it():
    """A review: learners watching the lecture run read "resume it to continue" over a Resume button they may not
    press (its slot had gone to a queued run)."""
    bumped = "paused: its training slot went to a queued run; resume it to continue"
    assert run_words.reason_for(bumped, TEACHERS, TEACHER) == bumped
    assert run_words.reason_for(bumped, TEACHERS, ANNA) == (
        "paused: its training slot went to a queued run; the instructor can resume it to continue"
    )
    assert (
        run_words.reason_for(bumped, ANNAS, BEN)
        == "paused: its training slot went to a queued run; anna can resume it to continue"
    )
    assert run_words.reason_for(bumped, ANNAS, TEACHER) == bumped  # the instructor may resume any run


def test_a_pause_through_a_lesson_step_names_the_step_and_the_instructor_for_others():
    reason = "paused by you through lesson step 8's Set up at step 4417"
    assert run_words.reason_for(reason, TEACHERS, TEACHER) == reason
    assert run_words.reason_for(reason, TEACHERS, ANNA) == (
        "paused by the instructor through lesson step 8's Set up at step 4417"
    )


def test_a_learner_watching_the_instructors_paused_run_is_not_told_they_paused_it(runs_dir):
    pytest.importorskip("streamlit")
    from helpers import app_as

    from tinygpt.ui import state
    from tinygpt.ui.host import resources
    from tinygpt.ui.train import train_keys

    teacher = app_as(TEACHER)
    teacher.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
    teacher.number_input(key=train_keys.W_MAX_STEPS).set_value(100_000).run()
    next(b for b in teacher.button if b.label == "Train").click().run()
    run_id = teacher.session_state[state.RUN_ID]
    status = runs_dir / run_id / "status.json"
    deadline = time.monotonic() + 60
    while not (status.exists() and json.loads(status.read_text()).get("state") == "running"):
        assert time.monotonic() < deadline, "the run never started"
        resources.touch(run_id)
        time.sleep(0.2)
    resources.get_manager().pause(run_id, actor=TEACHER)
    while "paused by you" not in json.loads(status.read_text()).get("reason", ""):
        assert time.monotonic() < deadline + 30, "the run never paused"
        time.sleep(0.2)

    def status_lines(at) -> str:
        return "\n".join(str(m.value) for m in at.markdown if "step" in str(m.value)).replace("\\", "")

    anna = app_as(ANNA, {"run": run_id, "view": "1"})
    assert "paused by the instructor at step" in status_lines(anna)
    assert "by you" not in status_lines(anna)
    teacher.run()
    assert "paused by you at step" in status_lines(teacher)
    resources.get_manager().stop(run_id)


def test_the_val_note_says_what_a_run_with_a_weights_average_scores():
    """The Fast preset's evals score a running average of the weights: its loss chart says so, from the run's own
    config; a run without one says nothing."""
    from tinygpt.presets import preset
    from tinygpt.ui.words.run_words import val_note

    note = val_note(preset("fast").to_dict())
    assert note and "running average of the weights" in note and "5% of the way" in note
    assert "10%" in val_note({"train": {"weight_average": 0.9}})
    assert val_note(preset("demo").to_dict()) is None and val_note({}) is None


def test_a_watcher_is_told_whose_run_it_is_and_a_cli_run_is_nobodys_learner():
    """A CLI run (no learner) opened by ?run= read "Watching another learner's run": no learner started it."""
    from tinygpt.ui.words.run_words import watching

    assert watching({"learner": {"id": "a" * 16, "name": "anna"}}) == "anna's run"
    assert watching({"learner": {"id": "c" * 16, "name": "tidy-wombat", "instructor": True}}) == "the instructor's run"
    assert watching({}) == "a run no learner started (the command line's, or an older one)"


def test_compare_says_when_the_runs_trained_on_different_texts():
    # Review 3 (stop 46): Compare's "the gap between the lines is the effect of the settings" for runs on two texts.
    def text(sha: str) -> dict:
        return {"data": {"source": "text", "text_sha256": sha * 64}}

    same = {"a": text("1"), "b": text("1")}
    assert run_words.texts_apart(same) is None
    assert run_words.texts_apart({"a": {"data": {"source": "shakespeare"}}, "b": {}}) is None  # the default corpus
    apart = run_words.texts_apart({"a": text("1"), "b": text("2"), "c": {"data": {"source": "shakespeare"}}})
    assert apart.startswith("These runs trained on different texts (a on a text with sha256 11111111…; b on a text "
                            "with sha256 22222222…; c on Tiny Shakespeare)")  # fmt: skip
    assert "not on one scale" in apart
    copy = {"source": "synthetic:copy", "synthetic_examples": 4000, "synthetic_digits": 6}
    wider = run_words.texts_apart({"a": {"data": copy}, "b": {"data": {**copy, "synthetic_digits": 8}}})
    assert "the synthetic copy task (4000 problems of 6 digits)" in wider and "of 8 digits" in wider


def test_the_status_line_and_the_runs_table_say_who_stopped_a_run_to_everyone_else(tmp_path):
    """A review: Gradients and the Runs table read "stopped by you at step 10500" to a learner watching another's
    run, and to the projector, while Train named its owner."""
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.host import runlist
    from tinygpt.ui.words import runinfo

    status = {"state": "stopped", "reason": "stopped by you at step 10500", "step": 10500, "max_steps": 30000}
    assert runinfo.status_line(status, [], ANNAS, ANNA).endswith("stopped: stopped by you at step 10500")
    assert runinfo.status_line(status, [], ANNAS, BEN).endswith("stopped: stopped by anna at step 10500")
    assert runinfo.status_line(status, []).endswith("stopped by you at step 10500")  # no config: as written
    store = RunStore(tmp_path)
    with store.create({"model": {}, "train": {}, "data": {}, **ANNAS}, owner="app") as w:
        w.write_status(state="stopped", reason="stopped by you at step 10500", step=10500)
    assert runlist.run_rows(store, BEN)[0]["reason"] == "stopped by anna at step 10500"
    assert runlist.run_rows(store, ANNA)[0]["reason"] == "stopped by you at step 10500"


def test_runs_of_different_seeds_on_one_axis_say_part_of_the_gap_is_chance():
    """Review 4 of stop 56: Compare called the gap between two runs "the effect of what differs", their seeds among
    it; a seed alone moves a curve."""
    one = {"a": {"train": {"seed": 2718}}, "b": {"train": {"seed": 2718}, "model": {"attn_scale": "none"}}}
    assert run_words.seeds_apart(one) is None
    assert run_words.seeds_apart({"a": {}, "b": {"train": {"seed": 1337}}}) is None  # the default seed
    apart = run_words.seeds_apart({"a": {"train": {"seed": 2718}}, "b": {"train": {"seed": 90210}}})
    assert apart.startswith("These runs have different seeds (seed 2718: a; seed 90210: b): a seed alone moves")
    assert "part of any gap between them is chance" in apart
