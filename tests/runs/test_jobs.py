"""tinygpt/runs/jobs.py: a job's phase read from its fields, the moves TRANSITIONS allows between phases, and a
forbidden move refused. No worker process: a stand-in answers is_alive(), which is all a phase reads of one."""

from __future__ import annotations

import math
import time

import pytest

from tinygpt.runs.jobs import LIVE, PREPARED, TRANSITIONS, Job, Phase, PhaseError, check_transition, start_order


class Process:
    """Stands in for a multiprocessing.Process: alive until told otherwise."""

    def __init__(self, alive: bool = True):
        self.alive = alive

    def is_alive(self) -> bool:
        return self.alive


def job(**fields) -> Job:
    return Job("run-0001", None, time.monotonic(), **fields)


@pytest.mark.parametrize(
    ("fields", "phase"),
    [
        ({}, Phase.QUEUED),
        ({"stop_requested": True}, Phase.QUEUED),  # stopped in its slot before the monitor started it
        ({"launching": True}, Phase.LAUNCHING),
        ({"launching": True, "stop_requested": True}, Phase.LAUNCHING),  # leaves once its process exists
        ({"process": Process()}, Phase.LIVE),
        ({"process": Process(), "released": True}, Phase.LEAVING),
        ({"process": Process(), "stop_requested": True}, Phase.LEAVING),
        ({"process": Process(alive=False)}, Phase.LEAVING),  # dead, not reaped yet
        ({"process": Process(alive=False), "reaped": True}, Phase.REAPED),
        ({"launching": True, "reaped": True}, Phase.REAPED),  # could not start
    ],
)
def test_each_phase_is_read_from_the_jobs_fields(fields, phase):
    assert job(**fields).phase is phase


def test_the_table_covers_every_phase_and_reaped_is_final():
    assert set(TRANSITIONS) == set(Phase)
    assert TRANSITIONS[Phase.REAPED] == frozenset()
    every_move = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert every_move == {
        (Phase.QUEUED, Phase.LAUNCHING),
        (Phase.QUEUED, Phase.REAPED),
        (Phase.LAUNCHING, Phase.LIVE),
        (Phase.LAUNCHING, Phase.LEAVING),
        (Phase.LAUNCHING, Phase.REAPED),
        (Phase.LIVE, Phase.LEAVING),
        (Phase.LEAVING, Phase.REAPED),
    }
    # Nothing goes back: every phase reaches REAPED, none reaches itself again through others.
    for start in Phase:
        seen, frontier = set(), {start}
        while frontier:
            frontier = {b for a in frontier for b in TRANSITIONS[a]} - seen
            seen |= frontier
        assert start not in seen and (start is Phase.REAPED or Phase.REAPED in seen)


def test_a_job_walks_its_phases_as_the_slots_move_it():
    j = job()
    with j.moving():
        j.launching = True
    with j.moving():
        j.process, j.launching = Process(), False
    assert j.phase is Phase.LIVE
    with j.moving():
        j.released = True
    with j.moving():
        j.released = True  # a second release: no move
    j.process.alive = False
    with j.moving():
        j.reaped = True
    assert j.phase is Phase.REAPED


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (Phase.QUEUED, Phase.LIVE),  # skips launching
        (Phase.LIVE, Phase.REAPED),  # reaped without being seen to end
        (Phase.LEAVING, Phase.LIVE),  # a leaving worker never takes commands again
        (Phase.REAPED, Phase.QUEUED),  # a restart is a new Job
    ],
)
def test_a_forbidden_move_is_refused_with_what_is_allowed(before, after):
    with pytest.raises(PhaseError, match=f"{before.value} -> {after.value} is not allowed"):
        check_transition("run-0001", before, after)


def test_moving_refuses_a_change_of_fields_that_skips_a_phase():
    j = job()
    with pytest.raises(PhaseError, match="queued -> live"), j.moving():
        j.process = Process()  # the monitor never marked it launching
    reaped = job(process=Process(alive=False), reaped=True)
    with pytest.raises(PhaseError, match="nothing: it is final"), reaped.moving():
        reaped.reaped = False


def test_the_queue_ranks_live_before_prepared_the_instructor_first_then_fifo():
    learner = job(priority=LIVE, seq=1)
    teacher = job(priority=LIVE, seq=2, learner={"instructor": True})
    prepared = job(priority=PREPARED, seq=0, learner={"instructor": True})
    assert sorted([prepared, learner, teacher], key=lambda j: j.rank) == [teacher, learner, prepared]


# ---------------------------------------------------------------- the order of starting (start_order)

LECTURE = {"id": "t" * 16, "name": "teacher", "instructor": True}


def queued(run_id: str, priority: str = LIVE, learner: dict | None = None, seq: int = 0, **fields) -> Job:
    return Job(run_id, None, time.monotonic(), learner=learner or {}, priority=priority, seq=seq, **fields)


def learner(name: str) -> dict:
    return {"id": name * 16, "name": name}


def lesson(prepared: int = 15):
    """The review's room, 2 slots: the instructor's lecture run (until stopped) in one, a prepared run in the
    other; learners A and B pressed Train after the lesson's Prepare queued the rest."""
    lecture = queued("lecture", learner=LECTURE, endless=True, process=Process())
    running = queued("p00", PREPARED, LECTURE, process=Process())
    waiting = [queued("A", learner=learner("a"), seq=30), queued("B", learner=learner("b"), seq=31)]
    waiting += [queued(f"p{i:02d}", PREPARED, LECTURE, seq=i) for i in range(1, prepared + 1)]
    return lecture, running, sorted(waiting, key=lambda j: j.rank)


def test_the_learners_runs_start_after_every_prepared_run_under_the_slot_rule():
    lecture, running, queue = lesson()
    assert [j.run_id for j in queue[:2]] == ["A", "B"]  # the queue's own order puts the learners first...
    unit = lambda j: math.inf if j.endless else 1.0  # noqa: E731
    order = start_order(queue, [(lecture, math.inf), (running, 1.0)], 2, unit)
    # ...but the last free slot is the prepared runs' while they wait (next_index): they all start first
    assert [j.run_id for j, _ in order] == [f"p{i:02d}" for i in range(1, 16)] + ["A", "B"]
    starts = dict((j.run_id, t) for j, t in order)
    assert starts["p01"] == 1.0 and starts["A"] == 16.0 and starts["B"] == 17.0


def test_the_order_follows_which_slot_frees_first():
    """A learner's run holding the other slot: if it ends first, the prepared run still training keeps the
    prepared runs' slot and the learner queued first takes the freed one."""
    mine = queued("X", learner=learner("x"), process=Process())
    held = queued("p00", PREPARED, LECTURE, process=Process())
    queue = [queued("A", learner=learner("a"), seq=5), queued("p01", PREPARED, LECTURE, seq=1)]
    first = start_order(queue, [(mine, 5.0), (held, 50.0)], 2, lambda j: 10.0)
    assert [(j.run_id, t) for j, t in first] == [("A", 5.0), ("p01", 15.0)]
    second = start_order(queue, [(mine, 50.0), (held, 5.0)], 2, lambda j: 10.0)
    assert [(j.run_id, t) for j, t in second] == [("p01", 5.0), ("A", 15.0)]


def test_slots_held_until_stopped_start_nobody():
    lecture, _, queue = lesson(prepared=1)
    other = queued("other", learner=learner("o"), endless=True, process=Process())
    order = start_order(queue, [(lecture, math.inf), (other, math.inf)], 2, lambda j: 1.0)
    assert [t for _, t in order] == [math.inf] * 3
    assert start_order([], [(lecture, math.inf)], 2, lambda j: 1.0) == []


def test_a_lecture_run_that_pauses_while_a_prepared_run_trains_frees_its_slot_for_the_first_learner():
    """What the learners' queue words now add (forecast.queued_reason): a review's lecture run paused at step 8 while
    a prepared run held the other slot, and learner A started ahead of the 15 prepared runs, as the rule says."""
    lecture, running, queue = lesson()
    order = start_order(queue, [(lecture, 0.0), (running, 1.0)], 2, lambda j: 1.0)
    assert order[0] == (queue[0], 0.0) and queue[0].run_id == "A"
