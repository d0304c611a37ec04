"""The run in view's control rules (tinygpt/ui/run/run_handle.py), from plain facts: no browser, no run; and the
handle's reader for a live fragment."""

from __future__ import annotations

import pytest

from tinygpt.ui.run.run_handle import Rules


def test_the_owner_controls_a_training_run_and_a_watcher_nothing():
    owner = Rules(mine=True, state="running", live=True)
    assert (owner.can_pause, owner.can_stop, owner.can_set_knob) == (True, True, True)
    assert (owner.can_resume, owner.can_step) == (False, False)  # nothing to resume; Step is for a paused run
    watcher = Rules(mine=False, state="running", live=True)
    assert not any((watcher.can_pause, watcher.can_resume, watcher.can_step, watcher.can_stop, watcher.can_set_knob))


def test_a_paused_run_steps_and_resumes_unless_the_instructor_holds_it():
    paused = Rules(mine=True, state="paused", live=True)
    assert (paused.can_pause, paused.can_resume, paused.can_step, paused.can_stop) == (False, True, True, True)
    held = Rules(mine=True, state="paused", live=True, held=True)
    assert (held.can_resume, held.can_step) == (False, False)  # the hold: only the instructor lifts it
    assert held.can_stop and held.can_set_knob


def test_a_queued_run_takes_a_pause_a_stop_and_knobs_but_no_step():
    queued = Rules(mine=True, state="queued", queued=True)
    assert (queued.can_pause, queued.can_stop, queued.can_set_knob, queued.can_step) == (True, True, True, False)


@pytest.mark.parametrize("state", ["stopped", "diverged", "failed"])
def test_an_ended_run_resumes_from_its_checkpoint_unless_another_process_wrote_it(state):
    assert Rules(mine=True, state=state).can_resume
    assert not Rules(mine=True, state=state, elsewhere=True).can_resume  # the CLI's run: the app only watches
    ended = Rules(mine=True, state=state)
    assert not any((ended.can_pause, ended.can_step, ended.can_stop, ended.can_set_knob))


def test_a_finished_run_and_no_run_have_nothing_to_do():
    for rules in (Rules(mine=True, state="finished"), Rules(mine=True, state=None)):
        assert not any((rules.can_pause, rules.can_resume, rules.can_step, rules.can_stop, rules.can_set_knob))


def test_commands_go_through_the_handle_as_its_viewer(monkeypatch):
    """set_knob (the handle's, and a widget callback's: one function) and resume (through admission) name the run
    and act as the viewer the handle was opened for."""
    from tinygpt.runs.owners import Actor
    from tinygpt.ui.run import run_handle

    sent = []

    class Manager:
        def set_knob(self, run_id, name, value, actor):
            sent.append(("set_knob", run_id, name, value, actor))
            return "req-1"

    monkeypatch.setattr(run_handle, "_manager", Manager)
    monkeypatch.setattr(run_handle.admission, "resume", lambda who, rid, check: sent.append((rid, who, check)))
    anna = Actor(id="anna", name="Anna")
    run = run_handle.RunHandle("r1", None, {}, anna, Rules(mine=True, state="paused"), {})
    assert run.set_knob("lr", 0.01) == "req-1"
    assert run_handle.set_knob("r1", "warmup_steps", 5, anna) == "req-1"
    run.resume(check_slot=False)
    assert sent == [
        ("set_knob", "r1", "lr", 0.01, anna),
        ("set_knob", "r1", "warmup_steps", 5, anna),
        ("r1", anna, False),
    ]


def test_a_live_fragment_reads_through_the_handle_and_looks_again_only_on_its_own_rerun(monkeypatch):
    from tinygpt.errors import RunStoreError
    from tinygpt.runs.owners import Actor
    from tinygpt.ui.run import run_handle

    page_reader, asked = object(), []
    handle = run_handle.RunHandle("r1", page_reader, {}, Actor("me"), run_handle.Rules(mine=True, state=None), {})

    def run_reader(store, run_id):
        asked.append(run_id)
        if store == "deleted":
            raise RunStoreError("there is no run")
        return "fresh"

    monkeypatch.setattr(run_handle.resources, "run_reader", run_reader)
    monkeypatch.setattr(run_handle, "fragment_rerun", lambda: False)
    assert handle.reader_now("store") is page_reader and asked == []  # the page's full run: open_run's reader
    monkeypatch.setattr(run_handle, "fragment_rerun", lambda: True)
    assert handle.reader_now("store") == "fresh" and asked == ["r1"]  # the fragment's timer: looked up again
    assert handle.reader_now("deleted") is None  # deleted meanwhile
