"""The queue's priority classes (issue 35): a live run goes ahead of prepared ones, takes a prepared run's slot when
it must, and the prepared runs still train.

Real worker processes on a tiny model, as in tests/runs/test_worker.py; runs train until the test is done."""

from __future__ import annotations

import multiprocessing

import pytest
from helpers import tiny_config, wait_for

from tinygpt.errors import TinyGPTError
from tinygpt.runs.jobs import LIVE, PREPARED
from tinygpt.runs.owners import Actor
from tinygpt.runs.scheduler import RunManager
from tinygpt.runs.store import RunStore


def tiny(text: str):
    long_run = dict(max_steps=1_000_000, eval_interval=200, attention_every=50, sample_every=500, checkpoint_every=500)
    return tiny_config(text, **long_run)


def step_of(store, run_id) -> int:
    return store.reader(run_id).status().get("step") or 0


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "runs")


def manager_of(store, slots: int) -> RunManager:
    return RunManager(store, max_active=slots, threads_per_run=1, lease_seconds=600)


@pytest.fixture
def two(store):
    manager = manager_of(store, 2)
    yield manager
    manager.shutdown()
    assert multiprocessing.active_children() == []


def test_live_runs_queue_ahead_of_prepared_ones_fifo_within_each(two, tiny_text):
    first, second = (two.start(tiny(tiny_text)) for _ in range(2))  # live: they hold both slots
    prepared = [two.start(tiny(tiny_text), priority=PREPARED) for _ in range(2)]
    late = two.start(tiny(tiny_text))
    assert two.queued_runs() == [late, *prepared]  # the live run arrived last and waits first
    assert two.priority(late) == LIVE and two.priority(prepared[0]) == PREPARED
    statuses = [two.store.reader(r).status() for r in (late, *prepared)]
    assert [s["queue_position"] for s in statuses] == [1, 2, 3]
    assert "live runs go first" in statuses[1]["reason"] and "live runs go first" not in statuses[0]["reason"]
    two.stop(first)
    wait_for(lambda: late in two.live_runs(), what="the live run takes the freed slot")
    assert two.queued_runs() == prepared and second in two.live_runs()


def test_a_live_run_takes_the_newest_prepared_runs_slot_and_one_slot_stays_prepared(two, store, tiny_text):
    older = two.start(tiny(tiny_text), priority=PREPARED)
    wait_for(lambda: step_of(store, older) >= 1, what="the first prepared run trains")
    newer = two.start(tiny(tiny_text), priority=PREPARED)
    wait_for(lambda: step_of(store, newer) >= 1, what="the second prepared run trains")
    waiting = two.start(tiny(tiny_text), priority=PREPARED)
    lecture = two.start(tiny(tiny_text))
    wait_for(lambda: step_of(store, lecture) >= 1, what="the live run trains")
    assert sorted(two.live_runs()) == sorted([older, lecture])  # the newest prepared run gave its slot up
    # It queues again ahead of the prepared run that was queued after it, from its checkpoint.
    wait_for(lambda: two.queued_runs() == [newer, waiting], what="the preempted run queues first among prepared")
    assert store.reader(newer).status()["state"] == "queued"
    assert any("went to a live run" in str(event) for event in store.reader(newer).events)
    # A second live run does not take the last prepared slot: it waits for a free one, first in the queue.
    second = two.start(tiny(tiny_text))
    assert two.queued_runs()[0] == second and older in two.live_runs()
    two.stop(lecture)
    wait_for(lambda: second in two.live_runs(), what="the second live run takes the freed slot")
    two.stop(second)
    wait_for(lambda: newer in two.live_runs(), what="the preempted run resumes")
    assert two.priority(newer) == PREPARED


def test_with_one_slot_the_live_run_takes_it_and_the_prepared_run_continues_after(store, tiny_text):
    manager = manager_of(store, 1)
    try:
        prepared = manager.start(tiny(tiny_text), priority=PREPARED)
        wait_for(lambda: step_of(store, prepared) >= 1, what="the prepared run trains")
        live = manager.start(tiny(tiny_text))
        wait_for(lambda: manager.live_runs() == [live], what="the live run takes the only slot")
        wait_for(lambda: manager.queued_runs() == [prepared], what="the prepared run waits again")
        manager.stop(live)
        trained = step_of(store, prepared)
        wait_for(lambda: step_of(store, prepared) > trained, what="the prepared run continues")
    finally:
        manager.shutdown()


def test_prioritize_moves_a_queued_run_and_an_unknown_class_is_refused(two, tiny_text):
    holders = [two.start(tiny(tiny_text)) for _ in range(2)]
    prepared = [two.start(tiny(tiny_text), priority=PREPARED) for _ in range(2)]
    live = two.start(tiny(tiny_text))
    two.prioritize(prepared[1], LIVE)  # the class reached its step: it waits for it now
    assert two.queued_runs() == [live, prepared[1], prepared[0]]
    with pytest.raises(TinyGPTError, match="unknown run priority"):
        two.start(tiny(tiny_text), priority="urgent")
    with pytest.raises(TinyGPTError, match="unknown run priority"):
        two.prioritize(holders[0], "urgent")


def test_prepared_eta_counts_the_prepared_runs_left_at_their_measured_pace(two, store, tiny_text):
    assert two.prepared_eta() == {"runs": 0, "seconds": 0.0, "slots": 2, "of": 2}
    two.start(tiny(tiny_text))  # a live run: not counted, and it holds one of the two slots
    planned = tiny(tiny_text)
    planned.train.max_steps = 999_999  # the lesson's prepared runs end: one that trains until stopped never would
    prepared = [two.start(planned, priority=PREPARED) for _ in range(2)]  # one trains, one waits
    # nothing timed yet; the live run holds one slot, and the pane says the forecast counts the other alone
    assert two.prepared_eta() == {"runs": 2, "seconds": None, "slots": 1, "of": 2}
    wait_for(lambda: step_of(store, prepared[0]) >= 1, what="the first prepared run trains")
    first = two.prepared_eta()
    eta = wait_for(lambda: two.prepared_eta()["seconds"], timeout=60, poll=0.5, what="a measured pace")
    assert first["runs"] == 2 and eta > 0  # a million steps each: far off, but a number
    # A learner's experiment pair queues as prepared too: not the lesson's long runs (a review's instructor read
    # "Long runs: 1 … ready in about 1 min" of another learner's experiment, the lesson's all done)
    two.start(tiny(tiny_text), priority=PREPARED, actor=Actor("l" * 16, "a learner"))
    assert two.prepared_eta()["runs"] == 2
    # The pace is the queue forecast's: the same runs timed, kept once a run ends (the pane had no number each
    # time a prepared run ended and the next was not timed yet, while a queued learner's page had one)
    two.stop(prepared[0])
    wait_for(lambda: prepared[0] not in two.live_runs(), what="the timed run ends")
    assert two.prepared_eta()["seconds"] is not None


def test_a_prepared_run_someone_paused_gives_its_slot_up_and_stays_paused(store, tiny_text):
    manager = manager_of(store, 1)
    try:
        prepared = manager.start(tiny(tiny_text), priority=PREPARED)
        wait_for(lambda: step_of(store, prepared) >= 1, what="the prepared run trains")
        manager.pause(prepared)
        wait_for(lambda: store.reader(prepared).status().get("state") == "paused", what="it pauses")
        live = manager.start(tiny(tiny_text))
        wait_for(lambda: step_of(store, live) >= 1, what="the live run trains")
        assert manager.queued_runs() == [] and store.reader(prepared).status()["state"] == "paused"
    finally:
        manager.shutdown()


def test_the_instructors_runs_queue_ahead_of_the_learners_within_a_class(two, tiny_text):
    for _ in range(2):
        two.start(tiny(tiny_text))  # both slots held
    learner = two.start(tiny(tiny_text), actor=Actor("l1", "Ada"))
    lab = two.start(tiny(tiny_text), actor=Actor("l1", "Ada"), priority=PREPARED)
    lesson = two.start(tiny(tiny_text), actor=Actor("boss", "Teacher", instructor=True), priority=PREPARED)
    lecture = two.start(tiny(tiny_text), actor=Actor("boss", "Teacher", instructor=True))
    assert two.queued_runs() == [lecture, learner, lesson, lab]


def test_a_learners_live_run_yields_the_one_slot_that_stays_with_the_prepared_runs(two, store, tiny_text):
    """A review: a learner's until-stopped Lecture run took the second slot beside the instructor's, and the lesson's
    21 prepared runs waited 8 minutes. A learner's live run yields that slot (the instructor's never does), and
    continues when one is free; a learner's live run that arrives while they wait leaves them the last free slot."""
    teacher, ada = Actor("boss", "Teacher", instructor=True), Actor("l1", "Ada")
    lecture = two.start(tiny(tiny_text), actor=teacher)
    own = two.start(tiny(tiny_text), actor=ada)
    wait_for(lambda: step_of(store, own) >= 1 and step_of(store, lecture) >= 1, what="both live runs train")
    prepared = [two.start(tiny(tiny_text), priority=PREPARED, actor=teacher) for _ in range(2)]
    wait_for(lambda: prepared[0] in two.live_runs(), what="a prepared run takes the learner's slot")
    assert lecture in two.live_runs() and two.queued_runs()[0] == own  # first in the queue, from its checkpoint
    said = "prepared runs (the lesson's long runs, experiments)"
    assert any(said in str(event) for event in store.reader(own).events)
    late = two.start(tiny(tiny_text), actor=Actor("l2", "Ben"))  # waits: no slot is free
    two.stop(prepared[0])
    wait_for(lambda: prepared[1] in two.live_runs(), what="the freed slot stays with the prepared runs")
    assert two.queued_runs() == [own, late]
    two.stop(prepared[1])
    wait_for(lambda: own in two.live_runs(), what="the learner's run continues once no prepared run waits")


def test_prepared_eta_counts_no_run_that_has_ended(store, tiny_text, monkeypatch):
    """A review read "Long runs: 14 training or waiting" beside 9 not ended: runs that had finished (or diverged)
    still held their jobs until the manager reaped them."""
    import time

    from tinygpt.runs.jobs import Job
    from tinygpt.runs.status import update_status

    manager = manager_of(store, 2)
    try:
        ids = []
        for state in ("finished", "diverged", "running", "queued"):
            with store.create(tiny(tiny_text).to_dict(), owner="app") as writer:
                ids.append(writer.run_id)
            update_status(store.path(ids[-1]), state=state, step=10, max_steps=50)
        jobs = [(Job(rid, None, time.monotonic(), priority=PREPARED), True) for rid in ids]
        monkeypatch.setattr(manager.slots, "jobs_of_class", lambda priority: (0, jobs))
        assert manager.prepared_eta()["runs"] == 2
    finally:
        manager.shutdown()
