"""The training slots of one server: queued runs wait in priority order (live runs first, FIFO within a class), a
monitor thread launches them into worker processes as slots free up, and watches, times out and reaps them.

Lifecycle: start() queues a run (status "queued" with its queue_position) and a monitor thread launches queued runs
in that order as slots free up (how many at once, and the threads of each: tinygpt/runs/worker.py). Commands go to a
live worker over a one-way Pipe; a knob change returns a request id that the worker's answer in events.jsonl carries
(tinygpt.runs.knobs.knob_answer). When the server dies (Ctrl-C, kill -9) the pipe reaches EOF and the worker
checkpoints and exits, and the forkserver exits with its server, so nothing is left behind. The monitor also reaps
dead workers (killed, segfault, out of memory) and marks their runs failed unless they wrote a final state; enforces
stop deadlines (a worker ignoring stop for 5 s is killed); pauses runs whose lease ran out (nobody called touch()
for lease_seconds: checkpoint, end the process, resumable); and, while runs wait in the queue, releases workers that
sit paused so the slot goes to a run that wants to train. A live run that finds every slot held by prepared runs
takes the slot of the newest of them (it checkpoints, exits and queues again, first among the prepared runs), so the
lecture run trains within seconds of its click although 18 prepared runs wait (issue 35: it waited 7 min 14 s); one
slot stays with the prepared runs whenever there are two or more (a learner's live run yields it: jobs.next_index,
jobs.prepared_starved), so a class's live runs never starve them. An ended run resumes from its last checkpoint.

The manager writes status.json only while no worker owns the run (queued, starting, reaped), through
tinygpt.runs.status.update_status; run states and their groups are tinygpt.runs'.
"""

from __future__ import annotations

import atexit
import fcntl
import itertools
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import multiprocessing.spawn
import os
import sys
import threading
import time
from typing import Any

from ..config import trains_until_stopped
from ..errors import TinyGPTError
from .divergence import freed_reason, killed_on_release
from .files import ACTIVE_STATES, PAUSED_STATES, read_config_json
from .forecast import changed_places, start_times
from .jobs import LIVE, PREPARED, Followup, Job, next_index, prepared_starved
from .lock import RunLockedError, pid_alive
from .owners import require_app_owned, run_learner
from .resume import plan_resume
from .status import read_status, update_status
from .store import RunStore
from .worker import (
    LOCKED_EXIT,
    PRELOAD,
    default_max_active,
    default_threads_per_run,
    env_number,
    lease_from_env,
    main_script_hidden,
    record_end,
    unsaid_end,
    worker_main,
)

STOP_GRACE = 5.0  # s a worker may take to obey stop (or release) before it is killed
MONITOR_INTERVAL = 0.2  # s between the monitor's checks when no worker ends and nobody calls


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


class Slots:
    """The training slots of one server: the queue, the worker processes, and the monitor thread that launches,
    watches, times out and reaps them. Thread-safe. RunManager (tinygpt/runs/scheduler.py) holds one and gives the
    commands, through the public methods alone."""

    def __init__(
        self,
        store: RunStore,
        max_active: int | None = None,
        threads_per_run: int | None = None,
        lease_seconds: float | None = None,
    ):
        self.store = store
        cpus = os.cpu_count() or 1
        self.threads_per_run = int(
            threads_per_run or env_number("TINYGPT_THREADS_PER_RUN", int) or default_threads_per_run(cpus)
        )
        self.max_active = int(
            max_active or env_number("TINYGPT_MAX_RUNS", int) or default_max_active(cpus, self.threads_per_run)
        )
        self.lease_seconds = float(lease_seconds or lease_from_env())
        self.stop_grace = STOP_GRACE  # s before an unresponsive worker is killed (tests shorten it)
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload(PRELOAD)
        with main_script_hidden():  # the forkserver itself must not re-run the parent's __main__ either
            multiprocessing.forkserver.ensure_running()  # eager: torch is imported while nobody waits for it
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)  # notified whenever a job ends
        self._jobs: dict[str, Job] = {}  # launching or live, at most max_active
        self._queue: list[Job] = []  # sorted by Job.rank: live before prepared, FIFO within each
        self._priority: dict[str, str] = {}  # run id -> LIVE or PREPARED, kept for its later workers (a resume)
        self._seqs = itertools.count(1)  # numbers jobs as they are queued: FIFO within a class
        self._kept_seq: dict[str, int] = {}  # a preempted run -> its old number: it queues again where it was
        self._time_limits: dict[str, float] = {}  # run id -> seconds each of its workers may hold a slot
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()  # start() wakes the monitor out of its wait()
        for fd in (self._wake_r, self._wake_w):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self._recover()
        self._monitor = threading.Thread(target=self._watch, name="tinygpt-run-monitor", daemon=True)
        self._monitor.start()
        atexit.register(self.shutdown)

    @property
    def lock(self) -> threading.RLock:
        """Held across a compound command (look a job up, then send to it, requeue or release it), as RunManager's
        are: re-entrant, so every method of the slots may be called with it held."""
        return self._lock

    def live_job(self, run_id: str) -> Job | None:
        """The job holding a slot for the run (launching or live), or None."""
        with self._lock:
            return self._jobs.get(run_id)

    def jobs_of_class(self, priority: str) -> tuple[int, list[tuple[Job, bool]]]:
        """(how many LIVE jobs hold slots, [(job, holds a slot)] of the jobs of class `priority`, slots first)."""
        with self._lock:
            live = sum(job.priority == LIVE for job in self._jobs.values())
            wanted = [(j, True) for j in self._jobs.values() if j.priority == priority]
            return live, wanted + [(j, False) for j in self._queue if j.priority == priority]

    def set_time_limit(self, run_id: str, seconds: float) -> None:
        """Each worker of the run may hold a training slot this long (the room's time budget)."""
        with self._lock:
            self._time_limits[run_id] = float(seconds)

    def priority(self, run_id: str) -> str:
        """LIVE or PREPARED: the class the run's jobs queue in (LIVE for a run this server did not start)."""
        with self._lock:
            return self._priority.get(run_id, LIVE)

    def set_priority(self, run_id: str, priority: str) -> None:
        """Move a run to class `priority`: a queued job moves at once (to the back of its new class); a training
        one keeps its slot, and the class applies to its later resumes and to preemption."""
        with self._lock:
            if self._priority.get(run_id, LIVE) == priority and run_id in self._priority:
                return  # a step clicked twice keeps its place
            self._priority[run_id] = priority
            if (job := self._jobs.get(run_id)) is not None:
                job.priority = priority
            elif (job := self.queued_job(run_id)) is not None:
                self._queue.remove(job)
                self.enqueue(job)

    def dequeue(self, job: Job, **status: Any) -> None:
        """Take a queued job out of the queue, its run's status.json saying why (`status`), and move the others up."""
        with self._lock:
            self._queue.remove(job)
            self.set_status(job.run_id, **status, queue_position=None)
            self._schedule()

    def wait_until_gone(self, run_id: str, seconds: float) -> None:
        """Return once the run holds no slot (its worker was reaped), or after `seconds`."""
        limit = time.monotonic() + seconds
        with self._lock:
            while run_id in self._jobs and time.monotonic() < limit:
                self._changed.wait(0.1)

    def touch(self, run_id: str) -> None:
        """A page is watching this run: renew its lease."""
        with self._lock:
            job = self._jobs.get(run_id) or self.queued_job(run_id)
            if job is not None:
                job.touched = time.monotonic()

    def time_limit(self, run_id: str) -> float | None:
        """The seconds a worker of this run may hold a training slot (the room's time budget), or None."""
        with self._lock:
            return self._time_limits.get(run_id)

    def is_live(self, run_id: str) -> bool:
        """True while a worker process exists (or is being started) for the run."""
        with self._lock:
            job = self._jobs.get(run_id)
            return job is not None and (job.process is None or job.process.is_alive())

    def live_runs(self) -> list[str]:
        with self._lock:
            return list(self._jobs)

    def queued_runs(self) -> list[str]:
        with self._lock:
            return [job.run_id for job in self._queue]

    def holding_and_queued(self) -> tuple[list[Job], list[Job]]:
        """(the jobs holding slots, the queue): a copy, for tinygpt.runs.forecast."""
        with self._lock:
            return list(self._jobs.values()), list(self._queue)

    def worker_pid(self, run_id: str) -> int | None:
        with self._lock:
            job = self._jobs.get(run_id)
            return job.process.pid if job is not None and job.process is not None else None

    def shutdown(self, timeout: float | None = None) -> None:
        """Checkpoint and end every worker (runs stay resumable). Called at interpreter exit too. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._wake()
        self._monitor.join(timeout=30)  # it may be in the middle of launching a worker
        with self._lock:
            for job in self._queue:
                reason = "paused: the server stopped before it started; resume it to start"
                self._try_status(job.run_id, state="paused", reason=reason, queue_position=None)
            self._queue.clear()
            for job in list(self._jobs.values()):
                if job.process is None:
                    with job.moving():  # queued in its slot, never started: gone
                        self._jobs.pop(job.run_id)
                        job.reaped = True
                    self._try_status(job.run_id, state="paused", reason="paused: the server stopped")
                else:
                    self.release(job, "paused: the server stopped; resume the run to continue")
            deadline = time.monotonic() + (self.stop_grace if timeout is None else timeout)
            while self._jobs and time.monotonic() < deadline:
                for job in list(self._jobs.values()):
                    if not job.process.is_alive():
                        self._reap(job)
                self._changed.wait(0.05)
            for job in list(self._jobs.values()):
                job.process.kill()
                job.process.join(5)
                self._reap(job)
            for fd in (self._wake_r, self._wake_w):
                os.close(fd)
            self._wake_r = self._wake_w = None  # a closed fd number may be reused by another file
        atexit.unregister(self.shutdown)

    # ---------------------------------------------------------------- queue and launching

    def queued_job(self, run_id: str) -> Job | None:
        """The run's job waiting in the queue, or None (call with the lock held)."""
        return next((job for job in self._queue if job.run_id == run_id), None)

    def enqueue(self, job: Job) -> None:
        with self._lock:
            if self._closed:
                raise TinyGPTError("the run manager has shut down; restart the server.")
            job.priority = self._priority.get(job.run_id, job.priority)
            job.seq = self._kept_seq.pop(job.run_id, None) or next(self._seqs)
            steps = job.max_steps or read_status(self.store.path(job.run_id)).get("max_steps")
            job.endless = trains_until_stopped(steps)  # the lecture run: a slot it takes frees by no time
            self._queue.append(job)
            self._queue.sort(key=lambda j: j.rank)  # stable; a few dozen jobs at most
            self._schedule()

    def restart(self, run_id: str, commands: list, max_steps: int | None, from_step: int | None = None) -> None:
        """Queue a run whose process has ended, to continue from its newest checkpoint that loads, or from
        `from_step` (called with the lock). Raises TinyGPTError for what would make the worker fail at once."""
        run_dir = self.store.path(run_id)
        config = read_config_json(run_dir)
        require_app_owned(run_id, config)
        # Another process training it holds its writer lock: plan_resume refuses it (RunLockedError).
        plan = plan_resume(run_dir, max_steps, from_step)  # RunLockedError, TinyGPTError: nothing changed
        max_steps = plan.config.train.max_steps
        if plan.state == "finished" and max_steps <= plan.trained and from_step is None:
            return  # nothing left to train; extend it with resume(run_id, max_steps=...)
        self.set_status(run_id, state="queued", reason=plan.said, max_steps=max_steps)  # RunStoreError: unwritable
        # The job carries the run's owner from this read: the permission check of its commands asks the job.
        job = Job(run_id, plan.resume_from, time.monotonic(), max_steps, list(commands), learner=run_learner(config))
        self.enqueue(job)

    def _schedule(self) -> None:
        """Fill free slots (the monitor launches them); publish the others' positions in the order of starting."""
        launch = False
        while self._queue and len(self._jobs) < self.max_active:
            job = self._queue.pop(next_index(self._queue, list(self._jobs.values()), self.max_active))
            self._jobs[job.run_id] = job
            launch = True
        self._preempt()
        order = start_times(list(self._jobs.values()), self._queue, self.max_active)  # the order, no pace
        for job, position, reason in changed_places(order, self._queue, self.max_active):
            self.set_status(job.run_id, state="queued", reason=reason, queue_position=position)
        if launch:
            self._wake()

    def _preempt(self) -> None:
        """Release the newest prepared runs, one a waiting live run, keeping one slot for the prepared runs (two
        or more slots; a learner's live run yields it to them). A released run checkpoints, exits and queues again
        in its old place; the newest loses the least work (called with the lock)."""
        if len(self._jobs) < self.max_active:
            return
        waiting, jobs = sum(job.priority == LIVE for job in self._queue), list(self._jobs.values())
        freeing = sum(job.on_its_way_out or job.stop_requested for job in jobs)
        holding = [j for j in jobs if j.priority == PREPARED and not (j.on_its_way_out or j.stop_requested)]
        keep = 1 if self.max_active >= 2 else 0  # without starving them; only a started worker can checkpoint
        started = sorted((j for j in holding if j.launched is not None), key=lambda j: j.launched, reverse=True)
        releasing = started[: max(0, min(waiting - freeing, len(holding) - keep))]
        if not freeing and (yields := prepared_starved(self._queue, jobs, self.max_active)):
            releasing.append(yields)  # every slot live: a learner's live run yields one to the prepared runs
        for job in releasing:
            if (status := read_status(self.store.path(job.run_id))).get("state") in PAUSED_STATES:  # paused: stays
                self.release(job, freed_reason(status))  # who paused it, then the slot fact
                continue
            self._kept_seq[job.run_id] = job.seq
            job.followup = Followup([])
            # the lesson's, or any experiment's pair: "the lesson's prepared runs" was said of a learner's experiment
            to = "a live run" if job.priority == PREPARED else "prepared runs (the lesson's long runs, experiments)"
            self.release(job, f"paused: its training slot went to {to}; it continues when a slot is free")

    def _launch(self, job: Job) -> None:
        """Start the worker process of a job that holds a slot (called by the monitor, without the lock)."""
        run_dir = self.store.path(job.run_id)
        try:
            self.set_status(
                job.run_id, state="starting", reason="starting a worker process", queue_position=None, pid=None
            )
            receiver, sender = self._ctx.Pipe(duplex=False)
            args = (receiver, str(run_dir), job.resume_from, job.max_steps, self.threads_per_run)
            process = self._ctx.Process(target=worker_main, args=args, name=f"tinygpt-{job.run_id}", daemon=True)
            with main_script_hidden():
                process.start()
            receiver.close()  # the worker holds the only reading end: its EOF is our death
        except Exception as exc:
            with self._lock, job.moving():  # launching -> reaped: it never had a process
                self._jobs.pop(job.run_id, None)
                job.reaped = True
                if isinstance(exc, RunLockedError):  # another process writes it: not ours to mark
                    print(f"tinygpt.runs.worker: not starting {job.run_id}: {exc}", file=sys.stderr)
                else:
                    why = str(exc) if isinstance(exc, TinyGPTError) else f"{type(exc).__name__}: {exc}"
                    self._record_end(job.run_id, "failed", f"failed: could not start a worker: {why}", None)
                self._changed.notify_all()
            return
        with self._lock, job.moving():  # launching -> live (or leaving: stopped meanwhile, or dead already)
            job.process, job.conn, job.launching = process, sender, False
            job.launched = time.monotonic()
            for command in job.commands:
                self.send(job, command)
            job.commands.clear()
            if job.stop_requested:
                job.deadline = time.monotonic() + self.stop_grace

    def send(self, job: Job, command: dict) -> None:
        if job.conn is None:
            job.commands.append(command)
            return
        try:
            job.conn.send(command)
        except (BrokenPipeError, OSError):
            pass  # the worker just died; the monitor reaps it

    def release(self, job: Job, reason: str) -> None:
        """Ask a worker to checkpoint and exit, leaving its run paused (a diverged one diverged, its reason kept:
        tinygpt.runs.divergence.diverged_release_reason) and resumable."""
        if job.released:
            return
        with job.moving():  # live -> leaving (a job not started yet stays where it is, and leaves once started)
            job.released = True
        self.send(job, {"cmd": "release", "reason": reason})
        job.deadline = time.monotonic() + self.stop_grace
        if job.killed_as is None:  # a diverged run stays diverged, its reason first
            job.killed_as = killed_on_release(read_status(self.store.path(job.run_id)), reason)

    # ---------------------------------------------------------------- the monitor

    def _wake(self) -> None:
        if self._wake_w is None:
            return
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass  # already woken, or shut down

    def _watch(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                sentinels = [j.process.sentinel for j in self._jobs.values() if j.process is not None]
            multiprocessing.connection.wait([*sentinels, self._wake_r], timeout=MONITOR_INTERVAL)
            try:
                os.read(self._wake_r, 4096)
            except (BlockingIOError, OSError):
                pass
            try:
                self._tick()
            except Exception as exc:  # the monitor must outlive any one bad run folder
                print(f"tinygpt.runs.worker: monitor error: {exc!r}", file=sys.stderr)

    def _tick(self) -> None:
        with self._lock:
            if self._closed:
                return
            now = time.monotonic()
            for job in list(self._jobs.values()):
                if job.process is None:
                    continue
                if not job.process.is_alive():
                    self._reap(job)
                elif job.deadline is not None and now > job.deadline:
                    job.process.kill()  # reaped on the next tick, as killed_as says
                elif not job.released and now - job.touched > self.lease_seconds:
                    self.release(job, f"paused: nobody watched for {_minutes(self.lease_seconds)}")
                else:
                    self._enforce_time_limit(job, now)
            for job in list(self._queue):
                if now - job.touched > self.lease_seconds:
                    self._queue.remove(job)
                    reason = f"paused: nobody watched for {_minutes(self.lease_seconds)} before it started"
                    self.set_status(job.run_id, state="paused", reason=reason, queue_position=None)
            self._evict_paused()
            self._schedule()
            pending = [j for j in self._jobs.values() if j.process is None and not j.launching]
            for job in pending:
                with job.moving():  # queued -> launching
                    job.launching = True
        for job in pending:
            self._launch(job)

    def _enforce_time_limit(self, job: Job, now: float) -> None:
        """Stop a run whose worker has held its slot for the room's time budget (called with the lock)."""
        limit = self._time_limits.get(job.run_id)
        if not limit or job.launched is None or job.released or job.stop_requested or now - job.launched < limit:
            return
        reason = f"stopped: the room's time budget of {_minutes(limit)} per run ran out"
        job.stop_requested, job.followup = True, None
        self.send(job, {"cmd": "stop", "reason": reason})
        job.killed_as = ("stopped", f"{reason}; the worker did not stop within {self.stop_grace:g} s and was killed")
        job.deadline = now + self.stop_grace

    def _evict_paused(self) -> None:
        """While runs wait for a slot, a worker that sits paused gives its slot up (it stays resumable)."""
        if not self._queue or len(self._jobs) < self.max_active:
            return
        live = [j for j in self._jobs.values() if j.process is not None and not j.released]
        idle = [(j, s) for j in live if (s := read_status(self.store.path(j.run_id))).get("state") in PAUSED_STATES]
        for job, status in sorted(idle, key=lambda js: js[0].touched)[: len(self._queue)]:
            self.release(job, freed_reason(status))  # who paused it stays (the instructor's pause at step 8)

    def _reap(self, job: Job) -> None:
        """A worker process ended: free its slot and make sure its run says why (called with the lock)."""
        with job.moving():  # leaving -> reaped
            self._jobs.pop(job.run_id, None)
            job.reaped = True
        job.process.join(1)
        code = job.process.exitcode
        job.process.close()  # frees its sentinel now rather than at garbage collection
        job.conn.close()
        status = read_status(self.store.path(job.run_id))
        state, step = status.get("state"), int(status.get("step") or 0)
        if (end := unsaid_end(code, state, step, job.killed_as)) is not None:
            self._record_end(job.run_id, *end, step)
            state = end[0]
        after = job.followup if not self._closed else None  # a resume or step came while it was ending
        restart = after is not None and (state in PAUSED_STATES or after.from_step is not None or after.even_if_failed)
        if code == LOCKED_EXIT:
            pass
        elif state in PAUSED_STATES and job.stop_requested:  # e.g. released by the lease just before
            self.set_status(job.run_id, state="stopped", reason=f"stopped by you at step {step}")
        elif restart:
            try:
                self.restart(job.run_id, after.commands, None, after.from_step)
            except TinyGPTError as exc:
                print(f"tinygpt.runs.worker: could not resume {job.run_id}: {exc}", file=sys.stderr)
        self._changed.notify_all()

    def _record_end(self, run_id: str, state: str, reason: str, step: int | None) -> None:
        """Say how a run without a live worker ended (tinygpt.runs.worker.record_end). Never raises."""
        try:
            record_end(self.store.path(run_id), state, reason, step)
        except TinyGPTError as exc:
            print(f"tinygpt.runs.worker: run {run_id}: {reason}; could not record it: {exc}", file=sys.stderr)

    def _try_status(self, run_id: str, **fields: Any) -> None:
        """set_status for the monitor and shutdown, which must go on past one run folder they cannot write."""
        try:
            self.set_status(run_id, **fields)
        except TinyGPTError as exc:
            print(
                f"tinygpt.runs.worker: run {run_id}: {fields.get('reason')}; could not record it: {exc}",
                file=sys.stderr,
            )

    def set_status(self, run_id: str, **fields: Any) -> None:
        """Rewrite status.json for a run without a live worker (a worker owns its own status while it runs). It
        names this server's pid: a reader can then tell a run queued by a server that is gone (status.interrupted)."""
        update_status(self.store.path(run_id), **fields, server_pid=os.getpid())

    def _recover(self) -> None:
        """After a server restart: runs that were queued or training under the old server are paused."""
        for summary in self.store.list_runs():
            if summary.owner != "app" or summary.state not in ACTIVE_STATES:
                continue
            status = read_status(self.store.path(summary.run_id))
            if not pid_alive(status.get("pid")) or summary.state == "queued":
                reason = f"paused: the server stopped while the run was {summary.state}; resume it to continue"
                self._try_status(summary.run_id, state="paused", reason=reason, queue_position=None)
