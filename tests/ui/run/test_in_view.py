"""The run in view (tinygpt/ui/run/in_view.py), issue 32: a run id goes from the URL to the page's reader with one
look-up of the run's folder a script run (sync_run_id finds it, open_run's reader takes it), and a run deleted
elsewhere still loses its shared reader; the handle's control rules, from plain facts (no browser, no run), and its
reader for a live fragment."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import write_run  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.run import in_view  # noqa: E402
from tinygpt.ui.run.in_view import Rules  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def counting_lookups(monkeypatch) -> list[str]:
    """Every RunStore.existing and RunStore.exists from now on, by run id."""
    seen: list[str] = []
    existing, exists = RunStore.existing, RunStore.exists

    def counted_existing(self, run_id):
        seen.append(run_id)
        return existing(self, run_id)

    def counted_exists(self, run_id):
        seen.append(run_id)
        return exists(self, run_id)

    monkeypatch.setattr(RunStore, "existing", counted_existing)
    monkeypatch.setattr(RunStore, "exists", counted_exists)
    return seen


@pytest.mark.parametrize("page", ["pages/train.py", "pages/attention.py", "pages/gradients.py"])
def test_a_script_run_looks_the_run_in_view_up_once(runs_dir, monkeypatch, page):
    run = write_run(runs_dir)
    seen = counting_lookups(monkeypatch)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["run"] = run  # a link's first script run
    at.run()
    assert not at.exception, at.exception
    assert at.session_state[state.RUN_ID] == run
    assert seen.count(run) == 1
    at.switch_page(page).run()  # the session's run, on the next script run
    assert not at.exception, at.exception
    assert seen.count(run) == 2
    assert in_view.CHECKED not in at.session_state  # the look-up is that script run's: a fragment's rerun looks again


def test_a_run_deleted_elsewhere_leaves_the_page_and_drops_its_shared_reader(runs_dir):
    run = write_run(runs_dir)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["run"] = run
    at.run()
    run_dir = RunStore(runs_dir).path(run)
    assert str(run_dir) in in_view.reader_pool()._entries
    shutil.rmtree(run_dir)
    at.run()
    assert not at.exception, at.exception
    assert state.RUN_ID not in at.session_state
    assert str(run_dir) not in in_view.reader_pool()._entries


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


def test_a_live_fragment_reads_through_the_handle_and_looks_again_only_on_its_own_rerun(runs_dir, monkeypatch):
    run = write_run(runs_dir)
    store, page_reader = RunStore(runs_dir), object()
    handle = in_view.RunHandle(run, page_reader, {}, Actor("me"), Rules(mine=True, state=None), {})
    seen = counting_lookups(monkeypatch)
    monkeypatch.setattr(in_view, "fragment_rerun", lambda: False)
    assert handle.reader_now(store) is page_reader and seen == []  # the page's full run: open_run's reader
    monkeypatch.setattr(in_view, "fragment_rerun", lambda: True)
    fresh = handle.reader_now(store)  # the fragment's timer: looked up again, the server's shared reader
    assert fresh is in_view.reader_pool().get(store.path(run)) and seen == [run]
    shutil.rmtree(store.path(run))
    assert handle.reader_now(store) is None  # deleted meanwhile: no reader, and its shared one dropped
    assert str(store.path(run)) not in in_view.reader_pool()._entries


def test_commands_go_through_the_handle_as_its_viewer(monkeypatch):
    """set_knob (the handle's, and a widget callback's: one function), pause, step, stop and resume (through
    admission) name the run and act as the viewer the handle was opened for."""
    sent = []

    class Manager:
        def set_knob(self, run_id, name, value, actor):
            sent.append(("set_knob", run_id, name, value, actor))
            return "req-1"

        def pause(self, run_id, actor):
            sent.append(("pause", run_id, actor))

        def step(self, run_id, n, actor):
            sent.append(("step", run_id, n, actor))

        def stop(self, run_id, actor):
            sent.append(("stop", run_id, actor))

    monkeypatch.setattr(in_view, "_manager", Manager)
    monkeypatch.setattr(in_view.admission, "resume", lambda who, rid, check: sent.append((rid, who, check)))
    anna = Actor(id="anna", name="Anna")
    run = in_view.RunHandle("r1", None, {}, anna, in_view.Rules(mine=True, state="paused"), {})
    assert run.set_knob("lr", 0.01) == "req-1"
    assert in_view.set_knob("r1", "warmup_steps", 5, anna) == "req-1"
    run.pause(), run.step(3), run.stop()
    run.resume(check_slot=False)
    assert sent == [
        ("set_knob", "r1", "lr", 0.01, anna),
        ("set_knob", "r1", "warmup_steps", 5, anna),
        ("pause", "r1", anna),
        ("step", "r1", 3, anna),
        ("stop", "r1", anna),
        ("r1", anna, False),
    ]


def test_a_timed_refresh_redraws_the_whole_page_once_the_run_in_view_moved(monkeypatch):
    """A fragment keeps the handle of the run its page's full script run drew: once the run in view changed (Set up
    in the lesson pane, a branch), its timed refresh reruns the page instead of drawing that run under the new
    run's title ("Watching … (read-only)" above "No run yet", a review's screen). A full script run never reruns."""
    reruns = []
    monkeypatch.setattr(in_view.st, "rerun", lambda: reruns.append(in_view.run_id()))
    monkeypatch.setattr(in_view, "fragment_rerun", lambda: True)
    state.put(state.RUN_ID, "run-a")
    in_view.redraw_if_moved("run-a")  # the same run: the fragment draws it
    assert reruns == []
    in_view.redraw_if_moved(None)  # the page drew no run; one is in view now
    state.put(state.RUN_ID, "run-b")
    in_view.redraw_if_moved("run-a")  # the page drew run-a; run-b is in view now
    assert reruns == ["run-a", "run-b"]
    monkeypatch.setattr(in_view, "fragment_rerun", lambda: False)
    in_view.redraw_if_moved("run-a")  # the page's own full run draws what is in view: nothing to redraw
    assert reruns == ["run-a", "run-b"]


def test_a_knob_change_applied_since_the_sidebar_was_drawn_redraws_the_page():
    """A review's sidebar read "Run: … · LR 0.003" beside the slider at 0.1 and the notice "LR → 0.1: applied at
    step 9529": the sidebar is drawn by full script runs, and the live view now asks for one after a change."""
    change = {"kind": "knob", "step": 9529, "knob": "learning_rate", "old": 0.003, "new": 0.1, "ok": True}
    in_view.sidebar_drawn("run-a", [])
    assert not in_view.sidebar_behind("run-a", [])
    assert in_view.sidebar_behind("run-a", [change])  # applied since: redraw
    assert not in_view.sidebar_behind("run-b", [change])  # another run's events say nothing of this sidebar
    in_view.sidebar_drawn("run-a", [change])
    assert not in_view.sidebar_behind("run-a", [change, {**change, "ok": False, "error": "refused"}])  # no change
