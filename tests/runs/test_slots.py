"""tinygpt/runs/slots.py: a paused run whose worker gives its slot to a queued run keeps who paused it."""

from __future__ import annotations

from types import SimpleNamespace

from tinygpt.runs.divergence import freed_reason
from tinygpt.runs.owners import Actor
from tinygpt.runs.slots import Slots
from tinygpt.runs.store import RunStore
from tinygpt.ui.words import run_words

ANNA = Actor("a" * 16, "anna")
TEACHER = Actor("c" * 16, "teacher", instructor=True)
TEACHERS = {"learner": {"id": TEACHER.id, "name": "teacher", "instructor": True}}


def _evicted(tmp_path, reason: str, state: str = "paused") -> str:
    """The reason _evict_paused gives the worker of a run whose status says `reason`, a run waiting for its slot."""
    store = RunStore(tmp_path)
    with store.create({}, owner="app") as writer:
        writer.write_status(state=state, step=41, reason=reason)
        run_id = writer.run_id
    job = SimpleNamespace(run_id=run_id, process=object(), released=False, touched=0.0)
    released: list[str] = []
    fake = SimpleNamespace(_queue=[object()], _jobs={run_id: job}, max_active=1, store=store,
                           release=lambda j, why: released.append(why))  # fmt: skip
    Slots._evict_paused(fake)
    [said] = released
    return said


def test_the_instructors_pause_survives_the_slot_going_to_a_queued_run(tmp_path):
    """The review: step 8 paused the lecture run; then it read "paused: its training slot went to a queued run;
    resume it to continue" and learners "the instructor can resume it": the instructor's pause was lost."""
    said = _evicted(tmp_path, "paused by you at step 41")
    assert said == "paused by you at step 41; its worker was freed for a queued run; resume it to continue"
    assert run_words.reason_for(said, TEACHERS, ANNA) == (
        "paused by the instructor at step 41; its worker was freed for a queued run; the instructor can resume it "
        "to continue"
    )
    assert run_words.reason_for(said, TEACHERS, TEACHER) == said


def test_a_hold_says_the_instructor_resumes_it_and_other_pauses_say_the_slot(tmp_path):
    held = freed_reason({"state": "paused", "reason": "paused by the instructor at step 5"})
    assert held == "paused by the instructor at step 5; its worker was freed for a queued run; the instructor can " \
        "resume it to continue"  # fmt: skip
    assert freed_reason({"state": "paused", "reason": held}) == held  # said once, not twice
    plain = "paused: its training slot went to a queued run; resume it to continue"
    assert _evicted(tmp_path, "paused at step 41") == plain
    assert freed_reason({"state": "diverged", "reason": "diverged: loss NaN at step 9"}) == plain  # released_as


def test_the_published_queue_position_counts_the_prepared_runs_that_start_first(tmp_path):
    """The review, 2 slots: learner A pressed Train after the lesson's Prepare and read "position 1 in the queue"
    while 15 prepared runs started ahead of it (the last free slot is theirs while they wait: jobs.next_index)."""
    import time

    from tinygpt.runs.jobs import LIVE, PREPARED, Job

    teacher = TEACHERS["learner"]
    alive = SimpleNamespace(is_alive=lambda: True)
    lecture = Job("lecture", None, time.monotonic(), learner=teacher, endless=True, process=alive)
    training = Job("p00", None, time.monotonic(), learner=teacher, priority=PREPARED, process=alive)
    a = Job("A", None, time.monotonic(), learner={"id": ANNA.id, "name": "anna"}, priority=LIVE, seq=30)
    prepared = [
        Job(f"p{i:02d}", None, time.monotonic(), learner=teacher, priority=PREPARED, seq=i) for i in range(1, 16)
    ]
    said: dict[str, dict] = {}
    queue = sorted([a, *prepared], key=lambda j: j.rank)
    fake = SimpleNamespace(_queue=queue, _jobs={"lecture": lecture, "p00": training}, max_active=2,
                           _preempt=lambda: None, _wake=lambda: None,
                           set_status=lambda run_id, **fields: said.__setitem__(run_id, fields))  # fmt: skip
    Slots._schedule(fake)
    assert said["A"]["queue_position"] == 16 and said["p01"]["queue_position"] == 1
    assert "the 15 prepared run(s) ahead of it start first" in said["A"]["reason"]
    said.clear()
    Slots._schedule(fake)
    assert said == {}  # nothing changed: nothing rewritten
