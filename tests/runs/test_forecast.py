"""tinygpt/runs/forecast.py: a queued run's place in the order of starting and when it starts, from the slot rule
itself (jobs.next_index) and the runs' measured pace. Run folders on disk, stand-in jobs: no worker process."""

from __future__ import annotations

import math
import time

import pytest

from tinygpt.config import UNTIL_STOPPED
from tinygpt.runs.forecast import (
    changed_places,
    queue_forecast,
    queued_reason,
    seconds_a_step,
    start_times,
    step_line,
)
from tinygpt.runs.jobs import LIVE, PREPARED, Job
from tinygpt.runs.status import update_status
from tinygpt.runs.store import RunStore

TEACHER = {"id": "t" * 16, "name": "teacher", "instructor": True}
CONFIG = {"model": {"max_seq_len": 32}, "train": {"batch_size": 16, "max_steps": 300}}  # 512 tokens a step


class Process:
    def is_alive(self) -> bool:
        return True


def run(store, run_id_of: list, state: str, step: int, max_steps: int, tokens_per_s: float | None = None) -> str:
    with store.create(CONFIG, owner="app") as writer:
        run_id = writer.run_id
    update_status(store.path(run_id), state=state, step=step, max_steps=max_steps, tokens_per_s=tokens_per_s)
    run_id_of.append(run_id)
    return run_id


def job(run_id, priority=LIVE, learner=None, seq=0, **fields) -> Job:
    return Job(run_id, None, time.monotonic(), learner=learner or {}, priority=priority, seq=seq, **fields)


def room(tmp_path, pace: float | None = 5120.0):
    """The review's room, 2 slots: the lecture run (until stopped) and a prepared run with 100 steps left train
    (10 steps/s: 5,120 tokens/s of 512-token steps); 15 prepared runs of 300 steps and learners A, B wait."""
    store, ids = RunStore(tmp_path), []
    lecture = job(run(store, ids, "running", 400, UNTIL_STOPPED, pace), LIVE, TEACHER, endless=True, process=Process())
    training = job(run(store, ids, "running", 200, 300, pace), PREPARED, TEACHER, process=Process())
    a = job(run(store, ids, "queued", 0, 300), LIVE, {"id": "a" * 16, "name": "A"}, seq=30)
    b = job(run(store, ids, "queued", 0, 300), LIVE, {"id": "b" * 16, "name": "B"}, seq=31)
    prepared = [job(run(store, ids, "queued", 0, 300), PREPARED, TEACHER, seq=i) for i in range(1, 16)]
    queue = sorted([a, b, *prepared], key=lambda j: j.rank)
    return store, [lecture, training], queue, a, b


def test_a_learner_behind_the_prepared_runs_gets_their_count_and_a_true_time(tmp_path):
    """The review: A read "position 1 in the queue", "starts in about 14 s"; its first step came 248 s later,
    after 15 prepared runs. The prepared slot frees in 10 s, then 15 runs of 300 steps at 10 steps/s."""
    store, holding, queue, a, b = room(tmp_path)
    forecast = queue_forecast(store, holding, queue, 2)
    assert forecast[a.run_id] == {"position": 16, "prepared": False, "prepared_ahead": 15, "live_ahead": 0,
                                  "seconds": pytest.approx(10 + 15 * 30)}  # fmt: skip
    assert forecast[b.run_id]["position"] == 17 and forecast[b.run_id]["live_ahead"] == 1
    assert forecast[b.run_id]["seconds"] == pytest.approx(10 + 15 * 30 + 30)  # A's 300 steps in the free slot
    first = forecast[queue[2].run_id]  # the first prepared run takes the slot that frees
    assert first["position"] == 1 and first["seconds"] == pytest.approx(10.0)


def test_no_pace_yet_gives_the_order_but_no_seconds(tmp_path):
    store, holding, queue, a, _ = room(tmp_path, pace=None)
    forecast = queue_forecast(store, holding, queue, 2)
    assert forecast[a.run_id]["position"] == 16 and forecast[a.run_id]["prepared_ahead"] == 15
    assert all(f["seconds"] is None for f in forecast.values())


def test_every_slot_until_stopped_is_never_a_number(tmp_path):
    store, ids = RunStore(tmp_path), []
    holding = [job(run(store, ids, "running", 9, UNTIL_STOPPED, 5120.0), endless=True, process=Process())]
    waiting = job(run(store, ids, "queued", 0, 300))
    assert queue_forecast(store, holding, [waiting], 1)[waiting.run_id]["seconds"] == math.inf
    assert queued_reason(waiting, [], math.inf, 1).endswith("every slot holds a run that trains until stopped: it "
                                                             "starts when one of them is stopped")  # fmt: skip
    # A review: "every slot holds" while one slot held a 3,000-step run, whose slot an until-stopped run ahead takes
    endless = job(run(store, ids, "queued", 0, UNTIL_STOPPED), endless=True)
    said = queued_reason(waiting, [endless], math.inf, 2)
    assert "every slot is or will be held by a run that trains until stopped (one ahead of it takes" in said, said


def test_the_published_reason_says_why_a_learner_waits(tmp_path):
    _, holding, queue, a, _ = room(tmp_path)
    order = start_times(holding, queue, 2)  # no pace: what Slots publishes
    assert [j.run_id for j, _ in order].index(a.run_id) == 15
    ahead = [j for j, _ in order[:15]]
    said = queued_reason(a, ahead, 16.0, 2)
    assert said == ("waiting for a free training slot (2 run(s) train at once); the 15 prepared run(s) ahead of it "
                    "start first: while prepared runs wait, the last free slot is theirs (a live run that ends or "
                    "pauses while one of them trains frees a slot for this one)")  # fmt: skip
    assert queued_reason(queue[2], [], 1.0, 2).endswith("; live runs go first, but one slot is the prepared runs' "
                                                        "while they wait")  # fmt: skip
    assert queued_reason(queue[2], [], 1.0, 1).endswith("; live runs go first")  # one slot: none kept for them


def test_a_preempted_run_on_its_way_back_counts_ahead_of_later_runs(tmp_path):
    """A released prepared run with a followup queues again in its old place: a later prepared run waits for it."""
    store, ids = RunStore(tmp_path), []
    leaving = job(run(store, ids, "running", 50, 300, 5120.0), PREPARED, TEACHER, seq=1, process=Process())
    leaving.released, leaving.followup = True, object()
    later = job(run(store, ids, "queued", 0, 300), PREPARED, TEACHER, seq=2)
    forecast = queue_forecast(store, [leaving], [later], 1)
    assert forecast[later.run_id]["position"] == 2 and forecast[later.run_id]["seconds"] == pytest.approx(25.0)
    assert list(forecast) == [later.run_id]  # the run on its way back has no entry: it is not queued yet


def test_the_published_positions_of_the_queued_runs_are_never_equal(tmp_path):
    """A review's learner read queue positions "4, 5, 5, 6" in step 8's pane (a run listed twice: lesson.roles_needed).
    What Slots publishes (changed_places, each job remembering what its status.json says) stays one position a run
    as runs start, a released run comes back to its old place and a live run is promoted ahead of the rest."""
    _, holding, queue, a, b = room(tmp_path)
    published: dict[str, int] = {}

    def publish(jobs, queue):
        for job, position, _ in changed_places(start_times(jobs, queue, 2), queue, 2):
            published[job.run_id] = position
        shown = [published[j.run_id] for j in queue]
        assert sorted(shown) == sorted(set(shown)), shown
        return shown

    publish(holding, queue)
    started = queue.pop(0)  # a prepared run takes the freed slot
    holding = [holding[0], started]
    publish(holding, queue)
    started.released, started.followup = True, object()  # released for a live run: on its way back
    publish(holding, queue)
    queue = sorted([started, *queue], key=lambda j: j.rank)  # back in its old place
    publish([holding[0]], queue)
    b.priority, b.seq = PREPARED, 99  # and a learner's run moved behind the prepared ones
    queue.remove(b)
    queue = sorted([*queue, b], key=lambda j: j.rank)
    assert sorted(publish([holding[0]], queue)) == list(range(1, len(queue) + 1))


def test_a_pace_measured_over_seconds_wins_over_one_steps_tokens_per_s(tmp_path):
    """A second review: status.json's tokens/s is one step's (9-215 steps/s between steps), and the estimate jumped
    49 s -> 14 s -> 33 s, 3.5x short. A pace the manager timed over seconds of training decides, and it stays
    known between runs (no "no pace measured yet" while the next run is starting)."""
    store, holding, queue, a, _ = room(tmp_path, pace=51_200.0)  # one step's burst: 100 steps/s
    timed = {holding[1].run_id: 10.0}  # what the run really did: 10 steps/s
    assert queue_forecast(store, holding, queue, 2, timed)[a.run_id]["seconds"] == pytest.approx(10 + 15 * 30)
    store, holding, queue, a, _ = room(tmp_path / "between", pace=None)  # nothing running has a status pace
    assert queue_forecast(store, holding, queue, 2)[a.run_id]["seconds"] is None
    assert queue_forecast(store, holding, queue, 2, {"an-ended-run": 10.0})[a.run_id]["seconds"] == pytest.approx(
        10 + 15 * 30
    )


def test_a_run_not_timed_twice_yet_goes_at_its_own_records_pace(tmp_path):
    """A review's instructor read "ready once their pace is measured" for 4 minutes while 19 of 21 prepared runs
    finished, and "about 5 min" for a run 9 s from its end: the server timed a run only between two of its own
    looks, and a 20 s run was seldom looked at twice. Until then its records' pace (steps over seconds trained)."""
    import json

    from tinygpt.runs.scheduler import RunManager
    from tinygpt.runs.status import clock_pace

    store = RunStore(tmp_path)
    with store.create(CONFIG, owner="app") as writer:
        run_id = writer.run_id
    path = store.path(run_id) / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 2.0, "clock": s / 25}) + "\n" for s in range(1, 6)))
    assert clock_pace(store.path(run_id)) is None  # 5 steps, 0.2 s: too little to go by
    # 3 s of setup before step 1, then 25 steps a second: the pace from the first record on, not step / clock (14.4)
    steady = (json.dumps({"step": s, "loss": 2.0, "clock": 3 + (s - 1) / 25}) + "\n" for s in range(1, 101))
    path.write_text("".join(steady))
    assert clock_pace(store.path(run_id)) == pytest.approx(25.0)
    manager = RunManager(store, max_active=2, threads_per_run=1)
    try:
        running = {run_id: {"state": "running", "step": 100}}
        assert manager._timed(running, 0.0, {run_id: 25.0}.get) == {run_id: pytest.approx(25.0)}  # first look: records'
        assert manager._timed({run_id: {"state": "running", "step": 140}}, 4.0, {run_id: 26.0}.get)[run_id] == 10.0
        # timed here now: its looks decide, not its records' 26 (41 steps over 4.5 s)
        assert manager._timed({run_id: {"state": "running", "step": 141}}, 4.5, {run_id: 26.0}.get)[run_id] == 41 / 4.5
    finally:
        manager.shutdown()


def test_the_manager_times_a_run_over_seconds_and_keeps_its_pace(tmp_path):
    from tinygpt.runs.scheduler import RunManager

    manager = RunManager(RunStore(tmp_path), max_active=2, threads_per_run=1)
    try:
        running = {"state": "running", "step": 100}
        assert manager._timed({"r": running}, 0.0) == {}  # first seen: no pace yet
        assert manager._timed({"r": {"state": "running", "step": 105}}, 1.0) == {}  # 5 steps, 1 s: too little
        assert manager._timed({"r": {"state": "running", "step": 140}}, 4.0) == {"r": pytest.approx(10.0)}
        assert manager._timed({"r": {"state": "finished", "step": 300}}, 30.0) == {"r": pytest.approx(10.0)}
    finally:
        manager.shutdown()


def test_a_run_not_timed_yet_counts_at_its_own_steps_work():
    """A review's instructor read "ready in about 66 min" for prepared runs done 12 minutes later: the first run
    timed was the scaling pair's (8x a pitfall run's work a step), and every other run counted at its pace. A run
    not timed counts at the timed runs' seconds per GFLOP times its own GFLOP a step."""
    paces = {"wide": 4.0}  # steps a second: 0.25 s a step of 2.5 GFLOP, 0.1 s a GFLOP
    costs = {"wide": 2.5, "narrow": 0.34, "unknown": None}
    a_step = seconds_a_step(paces, costs)
    assert a_step("wide") == pytest.approx(0.25)
    assert a_step("narrow") == pytest.approx(0.034)  # one size timed: all of it counted as work, not 0.25
    assert a_step("unknown") == pytest.approx(0.25)  # no config to weigh: the timed runs' mean step
    assert seconds_a_step({}, costs)("narrow") is None


def test_a_step_is_a_fixed_part_and_its_work_measured_on_the_timed_runs():
    """A review's instructor read "about 15 min" for prepared runs done in 3: the induction runs (0.34 and 0.67
    GFLOP a step) counted at the timed runs' seconds per GFLOP, 2-4x their 33-41 ms; at these sizes most of a
    step is its fixed part (the loop's calls and records). A line through the timed (GFLOP, seconds) a step."""
    costs = {"pitfall": 0.16, "scaling": 2.5, "induction": 0.67}
    paces = {"pitfall": 1 / (0.03 + 0.1 * 0.16), "scaling": 1 / (0.03 + 0.1 * 2.5)}  # 30 ms + 0.1 s a GFLOP
    assert step_line([(c, 1 / paces[r]) for r, c in costs.items() if r in paces]) == pytest.approx((0.03, 0.1))
    assert seconds_a_step(paces, costs)("induction") == pytest.approx(0.03 + 0.067)  # not 0.15 s a GFLOP x 0.67
    assert step_line([]) is None
    assert step_line([(0.5, 0.04), (0.5, 0.06)]) == pytest.approx((0.0, 0.1))  # one size: all of it work
    assert step_line([(0.2, 0.06), (1.0, 0.04)]) == pytest.approx((0.05, 0.0))  # wider ran faster: the mean step
    assert step_line([(0.2, 0.01), (1.0, 0.2)]) == pytest.approx((0.0, (0.002 + 0.2) / 1.04))  # no negative part
