"""RunManager with real worker processes: start, steer, queue, lease, faults, and nothing left behind.

Workers come from one forkserver per test process (the first test pays for its torch import). Runs use a tiny
model on a tiny text and a max_steps they never reach, and are stopped by the test.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers import tiny_config, wait_for

from tinygpt.checkpoint import load_checkpoint
from tinygpt.config import ConfigError
from tinygpt.errors import TinyGPTError
from tinygpt.runs.files import checkpoint_stem
from tinygpt.runs.knobs import knob_answer
from tinygpt.runs.lock import pid_alive
from tinygpt.runs.scheduler import RunManager
from tinygpt.runs.status import read_status
from tinygpt.runs.store import RunStore
from tinygpt.runs.worker import default_max_active, default_threads_per_run

REPO = Path(__file__).resolve().parents[2]


def tiny(text: str, **overrides):
    """A run that trains until stopped, publishing rarely: these tests steer it, they don't read its output."""
    long_run = dict(max_steps=1_000_000, eval_interval=200, attention_every=50, sample_every=500, checkpoint_every=500)
    return tiny_config(text, **{**long_run, **overrides})


def status(store, run_id):
    return store.reader(run_id).status()


def stepped(store, run_id, at_least=1):
    return wait_for(lambda: (status(store, run_id).get("step") or 0) >= at_least, what=f"step {at_least}")


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "runs")


@pytest.fixture
def manager(store):
    threads_before = threading.active_count()
    manager = RunManager(store, max_active=2, threads_per_run=1, lease_seconds=600)
    yield manager
    manager.shutdown()
    assert threading.active_count() == threads_before  # the monitor thread is gone
    assert multiprocessing.active_children() == []


def test_defaults_follow_the_core_count(monkeypatch, store):
    assert default_threads_per_run(2) == 1 and default_threads_per_run(4) == 1 and default_threads_per_run(16) == 2
    assert default_max_active(2) == 2 and default_max_active(4) == 3 and default_max_active(16) == 7
    monkeypatch.setenv("TINYGPT_MAX_RUNS", "3")
    monkeypatch.setenv("TINYGPT_THREADS_PER_RUN", "2")
    monkeypatch.setenv("TINYGPT_LEASE_SECONDS", "90")
    manager = RunManager(store)
    try:
        assert (manager.max_active, manager.threads_per_run, manager.lease_seconds) == (3, 2, 90.0)
    finally:
        manager.shutdown()


def test_start_and_stop_50_runs_leaves_no_process_or_thread(manager, store, tiny_text):
    run_ids = []
    for _ in range(5):  # 10 at a time: 2 get a worker, 8 wait in the queue (and some get one as others stop)
        batch = [manager.start(tiny(tiny_text)) for _ in range(10)]
        for run_id in batch:
            manager.stop(run_id)
        run_ids += batch
    assert manager.live_runs() == [] and manager.queued_runs() == []
    pids = [status(store, r).get("pid") for r in run_ids]
    assert sum(p is not None for p in pids) >= 10  # the ones that got a worker before the stop
    assert all(status(store, r)["state"] == "stopped" for r in run_ids)
    wait_for(lambda: not any(pid_alive(p) for p in pids if p), timeout=5, what="workers to exit")
    assert multiprocessing.active_children() == []


def test_pause_step_resume_give_exact_counts_and_controls_are_idempotent(manager, store, tiny_text):
    run_id = manager.start(tiny(tiny_text))
    stepped(store, run_id)
    manager.pause(run_id)
    manager.pause(run_id)
    wait_for(lambda: status(store, run_id)["state"] == "paused", what="paused")
    paused_at = status(store, run_id)["step"]
    manager.step(run_id, 7)
    wait_for(lambda: status(store, run_id)["step"] == paused_at + 7 and status(store, run_id)["state"] == "paused")
    time.sleep(0.3)
    assert status(store, run_id)["step"] == paused_at + 7  # exactly 7, then paused again
    metrics = store.reader(run_id).metrics
    assert metrics[-1]["step"] == paused_at + 7
    manager.resume(run_id)
    manager.resume(run_id)
    stepped(store, run_id, paused_at + 20)
    assert status(store, run_id)["state"] == "running"
    manager.stop(run_id)
    manager.stop(run_id)
    final = status(store, run_id)
    assert final["state"] == "stopped" and not manager.is_live(run_id)
    manager.pause(run_id)  # on an ended run: nothing happens
    assert status(store, run_id)["state"] == "stopped"
    assert store.reader(run_id).checkpoints()[-1] == final["step"]


def test_the_cap_queues_and_releases_in_order(store, tiny_text):
    manager = RunManager(store, max_active=1, threads_per_run=1)
    try:
        first, second, third = (manager.start(tiny(tiny_text)) for _ in range(3))
        assert manager.queued_runs() == [second, third]
        assert status(store, second)["state"] == "queued" and status(store, second)["queue_position"] == 1
        assert status(store, third)["queue_position"] == 2
        stepped(store, first)
        manager.stop(first)
        stepped(store, second)
        assert manager.queued_runs() == [third] and status(store, third)["queue_position"] == 1
        assert status(store, third)["step"] == 0
        manager.stop(second)
        stepped(store, third)
        assert status(store, third)["queue_position"] is None
        manager.stop(third)
    finally:
        manager.shutdown()


def test_a_paused_worker_gives_its_slot_to_a_queued_run(store, tiny_text):
    manager = RunManager(store, max_active=1, threads_per_run=1)
    try:
        first = manager.start(tiny(tiny_text))
        stepped(store, first)
        # Paused by an action, not a Pause click: the status names it (the instructor read "paused by you" of
        # lesson step 8's Set up, which pauses the lecture run)
        manager.pause(first, through="lesson step 8's Set up")
        second = manager.start(tiny(tiny_text))
        stepped(store, second)
        assert not manager.is_live(first) and status(store, first)["state"] == "paused"
        reason = status(store, first)["reason"]  # who paused it, then the slot fact (tinygpt.runs.divergence)
        assert reason.startswith("paused by you through lesson step 8's Set up at step")
        assert "freed for a queued run" in reason
        manager.stop(second)
        before = status(store, first)["step"]
        manager.resume(first)  # a new worker, from the checkpoint taken when it was released
        stepped(store, first, before + 5)
        steps = [m["step"] for m in store.reader(first).metrics]
        assert steps == list(range(1, steps[-1] + 1))  # the curve continues with no gap and no repeat
    finally:
        manager.shutdown()


def test_the_lease_pauses_an_unwatched_run_and_it_resumes(store, tiny_text):
    manager = RunManager(store, max_active=2, threads_per_run=1, lease_seconds=0.5)
    try:
        watched, unwatched = manager.start(tiny(tiny_text)), manager.start(tiny(tiny_text))
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and manager.is_live(unwatched):
            manager.touch(watched)
            time.sleep(0.05)
        assert manager.is_live(watched) and not manager.is_live(unwatched)
        st = status(store, unwatched)
        assert st["state"] == "paused" and "nobody watched for 0.5 s" in st["reason"]
        assert store.reader(unwatched).checkpoints()[-1] == st["step"]  # checkpointed on the way out
        manager.resume(unwatched)
        manager.touch(unwatched)
        stepped(store, unwatched, st["step"] + 3)
        manager.stop(unwatched)
        manager.stop(watched)
    finally:
        manager.shutdown()


def test_the_rooms_time_budget_stops_a_run_with_a_checkpoint_and_says_why(manager, store, tiny_text):
    # The budget counts from the worker's launch, so on a busy machine (CI stop 29's unit run beside the browser
    # suite) 1.5 s can run out before the first step: this run may stop at step 0, and says so either way.
    at_start = manager.start(tiny(tiny_text), time_limit_s=1.5)
    assert manager.time_limit(at_start) == 1.5
    wait_for(lambda: status(store, at_start).get("state") == "stopped", timeout=60, what="the budget's stop")
    assert status(store, at_start)["reason"].startswith("stopped: the room's time budget of 1.5 s per run ran out")
    # A run that has trained: the instructor's budget, set now, stops it with a checkpoint of where it got to.
    limited, free = manager.start(tiny(tiny_text)), manager.start(tiny(tiny_text))
    stepped(store, limited)
    manager.resume(limited, time_limit_s=1.5)
    assert manager.time_limit(limited) == 1.5 and manager.time_limit(free) is None
    wait_for(lambda: status(store, limited).get("state") == "stopped", timeout=60, what="the budget's stop")
    st = status(store, limited)
    assert st["step"] >= 1
    assert st["reason"].startswith("stopped: the room's time budget of 1.5 s per run ran out at step")
    assert store.reader(limited).checkpoints()[-1] == st["step"]  # checkpointed on the way out
    said = [e for e in store.reader(limited).events if e.get("kind") == "state"]
    assert said and "time budget of 1.5 s" in said[-1]["message"]
    assert manager.is_live(free)  # a run without a budget trains on
    manager.stop(free)


def test_resume_during_a_release_restarts_and_stop_after_it_stops(store, tiny_text):
    manager = RunManager(store, max_active=2, threads_per_run=1, lease_seconds=0.5)
    try:
        run_id = manager.start(tiny(tiny_text))
        # Watched until step 3 (a busy machine takes longer than the 0.5 s lease to get there), then left alone.
        wait_for(lambda: manager.touch(run_id) or (status(store, run_id).get("step") or 0) >= 3, what="step 3")
        pid = manager.worker_pid(run_id)
        os.kill(pid, signal.SIGSTOP)  # frozen, so the lease's release is still pending when resume() comes
        time.sleep(1.0)
        manager.resume(run_id)
        os.kill(pid, signal.SIGCONT)
        wait_for(lambda: manager.worker_pid(run_id) not in (None, pid), what="a new worker")
        manager.touch(run_id)
        before = status(store, run_id)["step"]
        manager.touch(run_id)
        stepped(store, run_id, before + 1)
        wait_for(lambda: not manager.is_live(run_id), what="the lease again")
        assert status(store, run_id)["state"] == "paused"
        manager.stop(run_id)  # an ended, paused run: stopped for good
        assert status(store, run_id)["state"] == "stopped"
    finally:
        manager.shutdown()


def test_a_live_knob_change_applies_at_the_next_step_and_is_recorded(manager, store, tiny_text):
    run_id = manager.start(tiny(tiny_text))
    stepped(store, run_id)
    applied = manager.set_knob(run_id, "mask", "none")
    refused = manager.set_knob(run_id, "attn_scale_mult", -2.0)  # invalid: answered ok False, the run goes on
    assert isinstance(applied, str) and applied != refused

    def answers():
        events = store.reader(run_id).events
        return knob_answer(events, applied), knob_answer(events, refused)

    wait_for(lambda: all(answers()), what="both knob answers")
    knob, error = answers()
    assert (knob["knob"], knob["old"], knob["new"], knob["ok"]) == ("mask", "causal", "none", True)
    assert knob["message"] == f"mask: causal -> none at step {knob['step']}"
    assert error["ok"] is False and error["knob"] == "attn_scale_mult" and "positive number" in error["error"]
    stepped(store, run_id, knob["step"] + 2)
    assert status(store, run_id)["state"] == "running"
    manager.stop(run_id)
    last = store.reader(run_id).checkpoints()[-1]
    assert load_checkpoint(checkpoint_stem(store.path(run_id), last)).config.model.mask == "none"
    with pytest.raises(ConfigError, match="cannot change while training"):
        manager.set_knob(run_id, "num_layers", 3)  # refused here, before anything is sent
    with pytest.raises(TinyGPTError, match="no worker"):
        manager.set_knob(run_id, "mask", "causal")


def test_a_queued_run_keeps_its_knob_change_and_its_job_knows_its_owner(store, tiny_text, monkeypatch):
    """set_knob on a queued run keeps the command for its worker (the Train form asks the manager once, with no
    is_live check first, so a knob turned while the run waits is no longer dropped); the permission check of a
    run with a job reads its owner from the job, not config.json; a run with no job gets NoWorkerError."""
    from tinygpt.runs import scheduler
    from tinygpt.runs.jobs import NoWorkerError
    from tinygpt.runs.owners import Actor, NotYourRunError

    anna, ben = Actor("a" * 16, "anna"), Actor("b" * 16, "ben")
    manager = RunManager(store, max_active=1, threads_per_run=1)
    try:
        first, second = manager.start(tiny(tiny_text), actor=anna), manager.start(tiny(tiny_text), actor=anna)
        assert manager.queued_runs() == [second]
        with monkeypatch.context() as m:  # while a job exists, no command reads config.json to check who asks
            m.setattr(scheduler, "read_config_json", lambda *a: pytest.fail("config.json read for the owner"))
            with pytest.raises(NotYourRunError, match="belongs to anna"):
                manager.set_knob(second, "mask", "none", actor=ben)
            request = manager.set_knob(second, "mask", "none", actor=anna)
            manager.set_knob(second, "learning_rate", 0.01, actor=anna)
        # what the page's plan draws before the worker starts (a review: the plan kept the run's own 0.003)
        assert manager.queued_knobs(second) == [("mask", "none"), ("learning_rate", 0.01)]
        assert manager.queued_knobs(first) == []  # training: its commands went to its worker
        stepped(store, first)
        manager.stop(first)
        wait_for(lambda: knob_answer(store.reader(second).events, request), what="the queued knob's answer")
        answer = knob_answer(store.reader(second).events, request)
        assert (answer["ok"], answer["new"], answer["step"]) == (True, "none", 0)  # before its first step
        manager.stop(second)
        with pytest.raises(NoWorkerError, match="no worker"):
            manager.set_knob(second, "mask", "causal", actor=anna)
        with pytest.raises(NotYourRunError):  # no job: the owner is read from config.json, as before
            manager.set_knob(second, "mask", "causal", actor=ben)
    finally:
        manager.shutdown()


def test_kill_9_of_a_worker_marks_the_run_failed_and_keeps_its_data(manager, store, tiny_text):
    run_id = manager.start(tiny(tiny_text))
    stepped(store, run_id, 5)
    os.kill(manager.worker_pid(run_id), signal.SIGKILL)
    wait_for(lambda: status(store, run_id)["state"] == "failed", what="failed")
    st = status(store, run_id)
    assert "SIGKILL" in st["reason"] and f"step {st['step']}" in st["reason"]
    reader = store.reader(run_id)
    assert len(reader.metrics) >= 5 and reader.config()["vocab"] and reader.checkpoints() == [0]
    assert reader.events[-1]["kind"] == "error"
    manager.resume(run_id)  # from its last checkpoint (step 0 here)
    wait_for(lambda: status(store, run_id)["state"] == "running", what="running again")
    manager.stop(run_id)


def test_a_worker_that_ignores_stop_is_killed_and_its_run_stays_readable(manager, store, tiny_text):
    manager.stop_grace = 1.0
    run_id = manager.start(tiny(tiny_text))
    stepped(store, run_id, 3)
    pid = manager.worker_pid(run_id)
    os.kill(pid, signal.SIGSTOP)  # frozen: it cannot obey
    started = time.monotonic()
    manager.stop(run_id)
    assert 0.9 < time.monotonic() - started < 5
    st = status(store, run_id)
    assert st["state"] == "stopped" and "killed" in st["reason"]
    assert len(store.reader(run_id).metrics) >= 3
    wait_for(lambda: not pid_alive(pid), timeout=5, what="the frozen worker to be gone")


def test_an_exception_in_the_worker_marks_the_run_failed(manager, store, tiny_text):
    with pytest.raises(TinyGPTError, match="characters"):  # a corpus too short is refused before any run exists
        manager.start(tiny("far too short"))
    assert store.list_runs() == []
    run_id = manager.start(tiny(tiny_text, probe_text="\u2603 not in the vocabulary"))  # known only in the worker
    wait_for(lambda: status(store, run_id)["state"] == "failed", what="failed")
    assert "probe text" in status(store, run_id)["reason"]
    wait_for(lambda: not manager.is_live(run_id), what="reaped")


def test_a_config_json_damaged_while_queued_fails_that_run_in_its_worker(store, tiny_text):
    """The worker reads no config (the loop trains the folder's config.json): a file damaged after the run was
    queued is that run's failure, said in its status by the worker it was given, and the slot moves on."""
    manager = RunManager(store, max_active=1, threads_per_run=1)
    try:
        first, second = (manager.start(tiny(tiny_text)) for _ in range(2))
        assert manager.queued_runs() == [second]
        (store.path(second) / "config.json").write_text("{ not json")
        stepped(store, first)
        manager.stop(first)
        wait_for(lambda: read_status(store.path(second)).get("state") == "failed", what="failed")
        assert read_status(store.path(second))["reason"].startswith(f"failed: run {second}'s config.json is unusable")
        wait_for(lambda: not manager.is_live(second), what="reaped")
        assert read_status(store.path(second))["state"] == "failed"  # the reaper kept the worker's words
    finally:
        manager.shutdown()


def test_a_restarted_server_lists_interrupted_runs_as_paused(store, tiny_text):
    writer = store.create(tiny(tiny_text).to_dict(), owner="app")
    writer.write_status(state="running", reason="training", pid=2**22 + 12345, step=40)
    writer.close()
    manager = RunManager(store, max_active=1, threads_per_run=1)
    try:
        st = status(store, writer.run_id)
        assert st["state"] == "paused" and "server stopped" in st["reason"]
    finally:
        manager.shutdown()


SERVER = textwrap.dedent(
    """
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the test runner was started in the background
    from tinygpt.presets import preset
    from tinygpt.runs.store import RunStore
    from tinygpt.runs.scheduler import RunManager
    store = RunStore(sys.argv[1])
    manager = RunManager(store, max_active=2, threads_per_run=1)
    config = preset("demo", source="text", text=open(sys.argv[2]).read(), hidden_dim=32, num_layers=2, num_heads=2,
                    max_seq_len=16, batch_size=4, max_steps=10**6, checkpoint_every=500, device="cpu")
    run_id = manager.start(config)
    while not (store.reader(run_id).status().get("step") or 0) >= 3:
        time.sleep(0.01)
    print(run_id, manager.worker_pid(run_id), flush=True)
    time.sleep(60)
    """
)


def test_killing_the_server_leaves_no_worker(tmp_path, tiny_text):
    """kill -9 (the pipe's EOF ends the worker) and Ctrl-C (atexit releases it), two servers side by side."""
    text = tmp_path / "text.txt"
    text.write_text(tiny_text)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    servers = {
        how: subprocess.Popen(
            [sys.executable, "-c", SERVER, str(tmp_path / how.name), str(text)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for how in (signal.SIGKILL, signal.SIGINT)
    }
    try:
        for how, server in servers.items():
            run_id, pid = server.stdout.readline().split()
            os.kill(server.pid, how)
            server.wait(60)  # SIGINT runs atexit: the manager releases its workers (a checkpoint each)
            wait_for(lambda pid=pid: not pid_alive(int(pid)), timeout=30, what=f"the worker to exit after {how.name}")
            st = RunStore(tmp_path / how.name).reader(run_id).status()
            assert st["state"] == "paused" and "server stopped" in st["reason"]  # checkpointed, resumable
    finally:
        for server in servers.values():
            server.kill()
            server.wait()


def test_a_queued_run_that_had_trained_is_not_said_to_have_never_started(tmp_path):
    """Review: a learner's run preempted back to the queue at step 1,207 and then stopped read "stopped before it
    started" above a loss chart to step 1,200."""
    from tinygpt.runs.files import write_json_atomic
    from tinygpt.runs.scheduler import queued_words

    write_json_atomic(tmp_path / "status.json", {"state": "queued", "step": 1207})
    assert queued_words(tmp_path) == "at step 1,207 while it waited for a training slot"
    write_json_atomic(tmp_path / "status.json", {"state": "queued", "step": 0})
    assert queued_words(tmp_path) == "before it started"
