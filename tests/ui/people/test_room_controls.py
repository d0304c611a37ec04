"""Instructor controls that hold (issue 20): Bring to the projector, the instructor's pause as a hold the learner
cannot undo, the read-only share link, and Large fonts kept per browser. Through AppTest (the pages as a learner
and as the instructor) and the run manager itself; the browser side is tests/browser/test_room_controls_browser.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.errors import TinyGPTError  # noqa: E402
from tinygpt.runs.files import read_json  # noqa: E402
from tinygpt.runs.owners import Actor
from tinygpt.runs.store import RunStore
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.host import resources, runlist  # noqa: E402
from tinygpt.ui.people import people_keys, room  # noqa: E402
from tinygpt.ui.runs import runs_keys
from tinygpt.ui.screen import fonts
from tinygpt.ui.train import train_keys
from tinygpt.ui.words import runinfo  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
ANNA = Actor("a" * 16, "anna")
BEN = Actor("b" * 16, "ben")
TEACHER = Actor("c" * 16, "teacher", instructor=True)


def app_as(actor: Actor, query: dict | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.session_state[people_keys.LEARNER] = actor
    for key, value in (query or {}).items():
        at.query_params[key] = value
    if page:
        at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def read_hold(run_dir: Path) -> dict:
    return read_json(run_dir / "hold.json", None) or {}  # the hold's file (docs/CONTRACTS.md)


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def texts(at: AppTest) -> str:
    parts = [str(e.value) for kind in (at.markdown, at.info, at.warning, at.success, at.caption) for e in kind]
    return "\n".join(parts).replace("\\", "")


def start_run(at: AppTest, max_steps: int = 100_000) -> str:
    at.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
    at.number_input(key=train_keys.W_MAX_STEPS).set_value(max_steps).run()
    button(at, "Train").click().run()
    assert not at.exception, at.exception
    return at.session_state[state.RUN_ID]


def wait_state(runs_dir: Path, run_id: str, wanted: str, reason: str = "", timeout_s: float = 60) -> dict:
    reader = RunStore(runs_dir).reader(run_id)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        reader.poll()
        status = reader.status()
        if status.get("state") == wanted and reason in str(status.get("reason")):
            return status
        resources.touch(run_id)
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} never reached {wanted} ({reason!r}): {reader.status()}")


@pytest.mark.parametrize("large_before", [False, True])
def test_bring_to_the_projector_shows_the_run_in_large_fonts(runs_dir, large_before):
    """Reproduces finding 1: the button raised StreamlitWidgetAlreadyInstantiatedError (st.session_state['w_large']
    set after the sidebar's toggle was drawn), with Large fonts on and off."""
    anna = app_as(ANNA)
    # Long enough to be training when it reaches the projector: a run that ends meanwhile redraws its page at its
    # end, and that rerun takes the one-time "on your screen" message with it (a 50-step run did, now and then).
    run_id = start_run(anna, max_steps=5000)
    teacher = app_as(TEACHER)
    if large_before:
        teacher.sidebar.toggle(key=fonts.W_LARGE).set_value(True).run()
    teacher.switch_page("pages/room.py").run()
    teacher.selectbox(key=people_keys.W_ROOM_PICK).set_value(run_id).run()
    button(teacher, "Bring to the projector").click().run()
    assert not teacher.exception, teacher.exception
    assert teacher.session_state[state.RUN_ID] == run_id
    assert teacher.sidebar.toggle(key=fonts.W_LARGE).value is True
    assert any(t.value == "tinygpt · Train" for t in teacher.title)
    name = runlist.run_names(resources.get_store())[run_id]  # the name the Runs table shows, not the id
    assert f"On your screen, in large fonts: anna's run, «{name}»." in texts(teacher)  # whose, said (a review)
    assert run_id not in texts(teacher)
    # the run's own settings on the projector, not the instructor's last form
    assert teacher.selectbox(key=train_keys.W_SOURCE).value == "Synthetic: copy"
    assert teacher.number_input(key=train_keys.W_MAX_STEPS).value == 5000
    assert "Changed since this run started" not in texts(teacher)
    resources.get_manager().stop(run_id)


def test_an_instructors_pause_is_a_hold_the_learner_cannot_undo(runs_dir):
    """Reproduces finding 3: the learner's page said "paused by you at step 381" and Resume worked at once."""
    anna = app_as(ANNA)
    run_id = start_run(anna)
    wait_state(runs_dir, run_id, "running")
    manager = resources.get_manager()
    manager.pause(run_id, actor=TEACHER)
    wait_state(runs_dir, run_id, "paused", "paused by the instructor")
    assert read_hold(RunStore(runs_dir).path(run_id))["by"] == "the instructor"
    # enforced where control is checked, whatever a page shows
    for command in (manager.resume, manager.step):
        with pytest.raises(TinyGPTError, match="the instructor paused run .* holds it"):
            command(run_id, actor=ANNA)
    with pytest.raises(TinyGPTError, match="holds it"):
        manager.resume(run_id, actor=ANNA, from_step=None, max_steps=10**6)
    assert RunStore(runs_dir).reader(run_id).status()["state"] == "paused"
    time.sleep(1.0)  # a resume that slipped through would show by now
    assert RunStore(runs_dir).reader(run_id).status()["state"] == "paused"

    anna.run()  # the learner's page: why Resume is off
    assert not anna.exception, anna.exception
    said = texts(anna)
    assert "paused by the instructor" in said and "paused by you" not in said, said
    assert (
        "Resume** and **Step** stay off, and you cannot start, branch or resume a run, until the instructor lets "
        "go of it" in said
    ), said
    assert "start a run of your own" not in said  # a hold holds: Train refuses (tests/ui/people/test_admission.py)
    assert button(anna, "Resume").disabled and button(anna, "Step").disabled
    assert button(anna, "Train").disabled  # the note says she cannot start a run: Train looks it (a review's was red)
    anna.switch_page("pages/runs.py").run()
    assert button(anna, "Resume").disabled  # not from the Runs page either

    teacher = app_as(TEACHER, {"run": run_id})
    said = texts(teacher)
    assert "You paused this run and hold it" in said  # and the status line agrees: paused by them, in their words
    assert "paused by you" in said and "paused by the instructor" not in said, said
    ben = app_as(BEN, {"run": run_id, "view": "1"})  # a watcher: the note is about the hold, not their buttons
    said = texts(ben)
    assert "Paused and held by the instructor." in said and "stay off" not in said, said
    assert not button(teacher, "Resume").disabled
    button(teacher, "Resume").click().run()  # the instructor lets go: training goes on, the learner has it back
    wait_state(runs_dir, run_id, "running")
    assert read_hold(RunStore(runs_dir).path(run_id)) == {}
    manager.pause(run_id, actor=ANNA)  # a learner's own pause is no hold
    wait_state(runs_dir, run_id, "paused", "paused by you")
    assert read_hold(RunStore(runs_dir).path(run_id)) == {}
    manager.resume(run_id, actor=ANNA)
    wait_state(runs_dir, run_id, "running")
    manager.stop(run_id, actor=ANNA)


def test_the_share_link_opens_the_runs_live_view_read_only(runs_dir):
    """Reproduces finding 4: /runs?run=ID&view=1 opened Runs with "the link sets 'view', which is not a setting;
    ignored", and the address-bar message named a button "Share this run (read-only)" (it is "Share (read-only)")."""
    anna = app_as(ANNA)
    run_id = start_run(anna, max_steps=50)
    ben = app_as(BEN, {"run": run_id, "view": "1"}, page="pages/runs.py")  # a link made before this fix
    said = texts(ben)
    assert "not a setting" not in said and not ben.warning, said
    assert any(t.value == "tinygpt · Train" for t in ben.title)  # the live view, not the Runs table
    assert ben.session_state[state.RUN_ID] == run_id
    assert "Watching anna's run (read-only)" in said
    # What Train would start, from the form (the watched run's settings): a review's learner got the instructor's
    # Lecture preset at LR 0.1, until stopped, with nothing said
    # its live knobs the preset's: the greyed ones are the watched run's, which she cannot change (a later review),
    # and said so: a review read LR 0.1 on the left beside "with the settings on the left … LR 0.003"
    assert ("Train** starts your own run with the data and model on the left, and the preset's live knobs (those on "
            "the left are the watched run's): ") in said.replace("\\", "")
    assert ": 50 steps · LR 0.002 · seed " in said.replace("\\", "") and "· Synthetic: copy." in said, said
    assert all(button(ben, label).disabled for label in ("Pause", "Resume", "Step", "Stop"))
    ben.run()  # the address keeps view=1 while the shared run shows: a refresh reattaches it read-only
    assert ben.query_params.get("view") in (["1"], "1")

    copied = app_as(BEN, {"run": run_id})  # Anna's address bar, copied
    warning = " ".join(str(w.value) for w in copied.warning).replace("\\", "")
    # what opens it is said truly: a read-only link, which anyone may make (a review: "only from its owner's")
    assert "'Share (read-only)' on the Runs page, or the address with &view=1 at its end" in warning, warning
    assert "Share this run" not in warning and "owner" not in warning

    anna.switch_page("pages/runs.py").run()
    anna.selectbox(key=runs_keys.W_RUNS_PICK).set_value(run_id).run()
    button(anna, "Share (read-only)").click().run()
    link = next(c.value for c in anna.code if "view=1" in str(c.value))
    assert link.endswith(f"/?run={run_id}&view=1") and "/runs?" not in link
    resources.get_manager().stop(run_id)


def test_share_link_is_the_train_pages_address():
    assert runinfo.share_link("http://host:8501/runs", "abcdefgh") == "http://host:8501/?run=abcdefgh&view=1"
    assert runinfo.share_link("http://h/base/runs?x=1", "abcdefgh") == "http://h/base/?run=abcdefgh&view=1"
    assert runinfo.share_link("http://h/", "abcdefgh") == "http://h/?run=abcdefgh&view=1"


def test_large_fonts_stays_on_per_browser_across_refreshes(runs_dir, monkeypatch):
    """Reproduces finding 7 (part): Large fonts was lost on a refresh unless &large=1 was in the address."""
    written: dict[str, str] = {}
    monkeypatch.setattr(room, "_set_cookie", lambda name, value: written.__setitem__(name, value))
    at = app_as(ANNA)
    assert at.sidebar.toggle(key=fonts.W_LARGE).value is False
    at.sidebar.toggle(key=fonts.W_LARGE).set_value(True).run()
    assert written.get(room.LARGE_COOKIE) == "1"  # remembered in this browser

    cookies = {room.LARGE_COOKIE: "1"}
    monkeypatch.setattr(room, "_cookie", lambda name: cookies.get(name, ""))
    refreshed = app_as(ANNA)  # a new session of the same browser: no &large=1 in the address
    assert refreshed.sidebar.toggle(key=fonts.W_LARGE).value is True
    refreshed.sidebar.toggle(key=fonts.W_LARGE).set_value(False).run()
    assert written[room.LARGE_COOKIE] == "0"
    cookies[room.LARGE_COOKIE] = "0"
    assert app_as(ANNA).sidebar.toggle(key=fonts.W_LARGE).value is False
    assert app_as(ANNA, {"large": "1"}).sidebar.toggle(key=fonts.W_LARGE).value is True  # the link still wins


def test_the_room_pauses_every_learners_run_as_a_hold_and_lets_go_at_once(runs_dir):
    """The "eyes on the projector" buttons: one click holds every learner's training run (not the instructor's
    own); one click lets go (a run its learner stopped meanwhile stays stopped)."""
    runs = {name: start_run(app_as(actor)) for name, actor in (("anna", ANNA), ("ben", BEN))}
    own = start_run(app_as(TEACHER))
    for run in runs.values():
        wait_state(runs_dir, run, "running")
    teacher = app_as(TEACHER)
    teacher.switch_page("pages/room.py").run()
    button(teacher, "Pause every learner's run").click().run()
    assert not teacher.exception, teacher.exception
    for run in runs.values():  # held (a held run may then give its slot to a queued one: still held)
        wait_state(runs_dir, run, "paused")
        assert read_hold(RunStore(runs_dir).path(run))["by"] == "the instructor"
    assert read_hold(RunStore(runs_dir).path(own)) == {}  # the instructor's own run: no hold
    manager = resources.get_manager()
    manager.stop(runs["ben"], actor=BEN)  # a learner may still stop a held run
    teacher.run()
    assert "You hold 2 run(s)" in texts(teacher)
    button(teacher, "Let go: resume 2 held").click().run()
    assert not teacher.exception, teacher.exception
    wait_state(runs_dir, runs["anna"], "running", timeout_s=120)  # maybe after a wait in the queue
    assert RunStore(runs_dir).reader(runs["ben"]).status()["state"] == "stopped"
    assert all(read_hold(RunStore(runs_dir).path(run)) == {} for run in runs.values())
    for run in (runs["anna"], own):
        manager.stop(run)


def test_a_hold_outlives_the_worker(runs_dir):
    """The hold is the server's, in the run folder: a run whose worker was released is held too, and stays held
    after its learner stops it."""
    manager = resources.get_manager()
    anna = app_as(ANNA)
    run_id = start_run(anna)
    wait_state(runs_dir, run_id, "running")
    manager.pause(run_id, actor=ANNA)
    wait_state(runs_dir, run_id, "paused", "paused by you")
    manager.slots.release(manager.slots.live_job(run_id), "paused: nobody watched")  # as the lease does
    deadline = time.time() + 30
    while resources.is_live(run_id) and time.time() < deadline:
        time.sleep(0.2)
    manager.pause(run_id, actor=TEACHER)  # no worker now: the status and the hold say so
    status = wait_state(runs_dir, run_id, "paused", "paused by the instructor")
    assert read_hold(RunStore(runs_dir).path(run_id)) and not resources.is_live(run_id), status
    with pytest.raises(TinyGPTError, match="holds it"):
        manager.resume(run_id, actor=ANNA)
    manager.stop(run_id, actor=ANNA)  # a learner may stop a held run; it stays held (no resume from Runs)
    with pytest.raises(TinyGPTError, match="holds it"):
        manager.resume(run_id, actor=ANNA)


def test_the_room_holds_one_learners_run_and_lets_it_go(runs_dir):
    """Review 3 (stop 52): to hold one learner's run the instructor had to bring it to the projector and press
    Pause on Train; the Room had only "Pause every learner's run". Now the Room's picker holds the run it names."""
    runs = {name: start_run(app_as(actor)) for name, actor in (("anna", ANNA), ("ben", BEN))}
    for run in runs.values():
        wait_state(runs_dir, run, "running")
    teacher = app_as(TEACHER)
    teacher.switch_page("pages/room.py").run()
    teacher.selectbox(key=people_keys.W_ROOM_PICK).set_value(runs["anna"]).run()
    button(teacher, "Pause and hold this run").click().run()
    assert not teacher.exception, teacher.exception
    wait_state(runs_dir, runs["anna"], "paused")
    assert read_hold(RunStore(runs_dir).path(runs["anna"]))["by"] == "the instructor"
    assert read_hold(RunStore(runs_dir).path(runs["ben"])) == {}  # only the one picked
    teacher.run()
    button(teacher, "Let go of this run").click().run()
    assert not teacher.exception, teacher.exception
    assert read_hold(RunStore(runs_dir).path(runs["anna"])) == {}
    wait_state(runs_dir, runs["anna"], "running", timeout_s=120)
    manager = resources.get_manager()
    for run in runs.values():
        manager.stop(run)
