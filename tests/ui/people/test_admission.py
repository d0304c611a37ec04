"""One admission rule on every route that starts or resumes training (issue 22, findings 2 and 3): the room's
budget and one training slot per learner hold on Train, on Resume in Runs, on the Experiments page and for the
induction experiment, not only on the Train button they were written for."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import tiny_config  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.config import RunConfig  # noqa: E402
from tinygpt.runs.owners import Actor, write_hold  # noqa: E402
from tinygpt.ui.host import resources, runlist  # noqa: E402
from tinygpt.ui.people import admission, people_keys
from tinygpt.ui.runs import runs_keys
from tinygpt.ui.train import train_keys

REPO = Path(__file__).resolve().parents[3]
ANNA = Actor("a" * 16, "anna")
BEN = Actor("b" * 16, "ben")
TEACHER = Actor("c" * 16, "teacher", instructor=True)


def app_as(actor: Actor, page: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.session_state[people_keys.LEARNER] = actor
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def click(at: AppTest, label: str) -> AppTest:
    [button] = [b for b in at.button if b.label == label]
    button.click().run()
    assert not at.exception, at.exception
    return at


def warnings(at: AppTest) -> str:
    return "\n".join(str(w.value).replace("\\", "") for w in at.warning)


def anna_runs() -> list[str]:
    return resources.my_active_runs(ANNA)


def test_resume_on_runs_asks_before_taking_a_second_slot(runs_dir, tiny_text):
    """Finding 2: A trains run 1, stops it, trains run 2, then resumes run 1 on Runs: both trained at once."""
    manager = resources.get_manager()
    first = manager.start(tiny_config(tiny_text, max_steps=10**6), actor=ANNA)
    manager.stop(first, actor=ANNA)
    second = manager.start(tiny_config(tiny_text, max_steps=10**6), actor=ANNA)
    try:
        at = app_as(ANNA, "pages/runs.py")
        at.selectbox(key=runs_keys.W_RUNS_PICK).set_value(first).run()
        click(at, "Resume")
        said = warnings(at)
        assert "already have a run training or queued" in said
        assert f"«{runlist.run_names(resources.get_store())[second]}»" in said and second not in said  # its name
        assert anna_runs() == [second]  # nothing resumed behind the question
        click(at, "Stop it and resume this one")
        assert anna_runs() == [first]
    finally:
        for run in (first, second):
            manager.stop(run)


def test_an_experiment_is_one_slot_within_the_rooms_budget(runs_dir):
    """Finding 3: the Experiments page ignored the time budget (two 0.8M-parameter runs for ~120 s each with
    Max minutes 0.30) and two clicks on the mask experiment gave one learner six runs at once."""
    budget = resources.room_budget()
    budget["max_minutes"] = 0.30
    manager = resources.get_manager()
    try:
        at = app_as(ANNA, "pages/experiments.py", {"experiment": "mask", "source": "synthetic:copy"})
        click(at, "Run side by side")
        started = anna_runs()
        assert len(started) >= 2
        assert all(manager.time_limit(run) == pytest.approx(18.0) for run in started)
        click(at, "Run side by side")  # a second click: the question, not more runs
        assert "already have a run training or queued" in warnings(at)
        assert sorted(anna_runs()) == sorted(started)
        click(at, "Keep it; cancel")
        assert sorted(anna_runs()) == sorted(started)
        budget["max_params"] = 1000  # any experiment's model is above it: refused with the numbers, nothing starts
        for run in started:
            manager.stop(run)
        at = app_as(ANNA, "pages/experiments.py", {"experiment": "mask", "source": "synthetic:copy"})
        click(at, "Run side by side")
        assert "above the room's budget" in "\n".join(str(e.value) for e in at.error).replace("\\", "")
    finally:
        budget.update(max_minutes=0.0, max_params=0)
        for run in anna_runs():
            manager.stop(run)


def test_the_instructor_prepares_several_runs_without_a_question(runs_dir, tiny_text):
    manager = resources.get_manager()
    manager.start(tiny_config(tiny_text, max_steps=10**6), actor=TEACHER)
    try:
        at = app_as(TEACHER, "pages/experiments.py", {"experiment": "mask", "source": "synthetic:copy"})
        click(at, "Run side by side")
        assert "already have a run" not in warnings(at)
        assert len(manager.live_runs()) + len(manager.queued_runs()) >= 3
    finally:
        for run in [*manager.live_runs(), *manager.queued_runs()]:
            manager.stop(run)


def test_a_resume_is_held_to_the_rooms_budget_like_a_new_run(runs_dir, tiny_text):
    """Found by the reliability probe's admission family: a run made before the instructor set the budget was a
    way round it: Resume on Runs trained a 0.2M-parameter run under a 1,000-parameter budget, with no time limit."""
    manager = resources.get_manager()
    old = manager.start(tiny_config(tiny_text, max_steps=10**6), actor=ANNA)
    manager.stop(old, actor=ANNA)
    budget = resources.room_budget()
    try:
        budget["max_params"] = 1000
        at = app_as(ANNA, "pages/runs.py")
        at.selectbox(key=runs_keys.W_RUNS_PICK).set_value(old).run()
        click(at, "Resume")
        assert "above the room's budget" in "\n".join(str(e.value) for e in at.error).replace("\\", "")
        assert anna_runs() == []
        budget.update(max_params=0, max_minutes=0.5)
        click(at, "Resume")
        assert anna_runs() == [old] and manager.time_limit(old) == pytest.approx(30.0)
    finally:
        budget.update(max_minutes=0.0, max_params=0)
        manager.stop(old)


def test_a_learner_whose_run_the_instructor_holds_is_told_so_on_train(runs_dir, tiny_text):
    """Reproduces the rehearsal: the held learner pressed Train and was offered "Stop it and start the new run",
    told their run was "training or queued" (it sat paused, held), so one click undid the hold."""
    from helpers import wait_for

    manager = resources.get_manager()
    held = manager.start(tiny_config(tiny_text, max_steps=10**6), actor=ANNA)
    try:
        wait_for(lambda: resources.get_store().reader(held).status().get("state") == "running", timeout=60)
        manager.pause(held, actor=TEACHER)
        wait_for(lambda: resources.get_store().reader(held).status().get("state") == "paused", timeout=60)
        at = app_as(ANNA, "pages/train.py")
        at.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
        click(at, "Train")
        errors = "\n".join(str(e.value).replace("\\", "") for e in at.error)
        name = runlist.run_names(resources.get_store())[held]
        assert f"The instructor is holding your run «{name}» (paused at step " in errors, errors
        assert held not in errors  # the name the Runs table shows, not the id
        assert not any(b.label.startswith("Stop it and") for b in at.button)
        assert "training or queued" not in warnings(at)
        assert anna_runs() == [held]  # nothing started, the held run untouched
    finally:
        manager.stop(held)


def a_run_of_annas(state: str, reason: str = "", held: bool = False) -> str:
    """A run folder of ANNA's in `state` at step 0, without a worker (written as the run manager writes it), held
    by the instructor if `held` (hold.json, as RunManager.pause writes it for the instructor's pause)."""
    store = resources.get_store()
    config = RunConfig().to_dict() | {"learner": {"id": ANNA.id, "name": "anna"}}
    with store.create(config, owner="app") as writer:
        writer.write_status(state=state, step=0, reason=reason)
        run_id = writer.run_id
    if held:
        write_hold(store.path(run_id), "the instructor", 0)
    return run_id


def test_a_hold_on_a_run_paused_in_the_queue_holds_train_branch_and_resume(runs_dir):
    """Reproduces the review (issue 32: "a hold holds"): the instructor pressed "Pause every learner's run" while
    D's run was queued; D pressed Train with the same settings, got no refusal, and a copy of the held run trained
    to the end while the Room said "You hold 1 run(s)". A run paused before it started is neither training nor
    queued, so the slot rule never saw it."""
    from tinygpt.ui.train import branching

    resources.get_manager()  # the server's manager first, as in the app: it finds the folders below as they are
    held = a_run_of_annas("paused", "paused by the instructor before it started", held=True)
    older = a_run_of_annas("stopped", "stopped by you at step 0")
    store = resources.get_store()
    name = runlist.run_names(store)[held]
    at = app_as(ANNA, "pages/train.py")
    at.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
    click(at, "Train")
    errors = "\n".join(str(e.value).replace("\\", "") for e in at.error)
    assert (
        f"The instructor is holding your run «{name}» (paused at step 0): you can start or resume runs again when "
        "they let go. Meanwhile you can watch, sample, or open runs on Runs."
    ) in errors, errors
    assert not any(b.label.startswith("Stop it and") for b in at.button)
    assert sorted(s.run_id for s in store.list_runs()) == sorted([held, older])  # nothing new started
    with pytest.raises(admission.HeldRun):  # Resume of another run of theirs (Runs, Train)
        admission.resume(ANNA, older)
    with pytest.raises(admission.HeldRun):  # and with the slot question answered "stop it": still held
        admission.resume(ANNA, older, check_slot=False)
    with pytest.raises(admission.HeldRun):  # Branch
        branching.start_branch(ANNA, store, older, 0, {})
    assert anna_runs() == []
    admission.check_hold(BEN)  # another learner is not held, nor the instructor
    admission.check_hold(TEACHER)
    store.path(held).joinpath("hold.json").unlink()  # the instructor lets go: the learner starts runs again
    admission.check_hold(ANNA)


def test_a_paused_or_diverged_run_gives_its_slot_to_the_learners_next_run(runs_dir, tiny_text):
    """A review: after the naive softmax diverged, "Run side by side" on the next experiment said "You already have
    a run training or queued" for minutes: the diverged run's worker waited for a knob to be turned back. A worker
    that sits paused trains nothing: it gives its slot up (the run stays resumable) and the new run starts."""
    import time

    from tinygpt.runs.status import read_status

    manager, store = resources.get_manager(), resources.get_store()
    first = manager.start(tiny_config(tiny_text, max_steps=10**6), actor=ANNA)
    try:
        deadline = time.monotonic() + 60
        while read_status(store.path(first)).get("state") != "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        manager.pause(first, actor=ANNA)
        while read_status(store.path(first)).get("state") != "paused" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert read_status(store.path(first)).get("state") == "paused"
        (second,) = admission.start(ANNA, {"run": tiny_config(tiny_text, max_steps=10**6)}).values()  # no SlotTaken
        while first in manager.live_runs() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first not in manager.live_runs()  # its worker checkpointed and left
        assert read_status(store.path(first)).get("state") == "paused"  # still resumable, as it was
        assert admission.busy_runs(ANNA) == [second]
    finally:
        for run in manager.live_runs() + manager.queued_runs():
            manager.stop(run)


def test_a_held_run_says_so_on_the_runs_page_to_its_owner_and_to_others(runs_dir):
    """Review 3 (stop 52): the held learner's Runs page read only "paused · step 4,536", Resume greyed with no
    reason on the page; Train said it plainly. Runs now says what Train says, in each reader's words."""
    resources.get_manager()
    held = a_run_of_annas("paused", "paused by the instructor at step 0", held=True)
    said = {}
    for who in (ANNA, BEN, TEACHER):
        at = app_as(who, "pages/runs.py")
        at.selectbox(key=runs_keys.W_RUNS_PICK).set_value(held).run()
        assert not at.exception, at.exception
        said[who.name] = " ".join(str(e.value) for e in [*at.warning, *at.info])
    assert "Paused by the instructor, who holds it: **Resume** and **Step** stay off" in said["anna"], said
    assert "Paused and held by the instructor." in said["ben"], said
    assert "You paused this run and hold it: anna cannot resume it" in said["teacher"], said
