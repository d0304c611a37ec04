"""Training worker processes for the app: one per run, quick to start, steered over a pipe, never orphaned.

`RunManager` owns every training run of one server. Each run trains in its own process running
`tinygpt.runs.loop.run_training`, the same loop the CLI runs. Why a process and not a thread of the server (issue 3):
`torch.set_num_threads` is process-wide, so only a process gives each run its own thread budget; the server's
chart-building does not share a GIL with training; a crash or a runaway run is killed without taking the server
down.

Start-up: processes come from a `forkserver` that imports torch once, eagerly, when the manager is created. A
new worker is a fork of that clean process. Nothing a run does imports torch._dynamo (tinygpt.optim exists for
that: torch.optim.AdamW's constructor imports it, 1.2 s), so the forkserver is ready ~1 s after it starts.
Measured from start() to the first line of metrics.jsonl at the demo preset (Tiny Shakespeare) on a quiet 2-core
machine: 0.16-0.24 s once the forkserver is up; 1.1-1.3 s cold (start() right after the manager was created,
while the forkserver still imports torch; `python -m tinygpt.bench --worker` measures it, see
tinygpt/bench/worker.py). The app creates its manager on the first page view, so a click finds it warm. Plain
`fork` of the server is never used: the server has run OpenMP (the app computes attention maps), and a forked
OpenMP runtime can deadlock. `spawn` would pay the torch import on every click.

Threads: torch's OpenMP threads spin-wait, so a run with 2 threads collapses as soon as any other process wants
one of its cores, while 1 thread is unaffected. Measured on this 2-core machine with other processes busy
(median step time, 1 vs 2 threads): demo preset 10 ms vs 140 ms, nanogpt-cpu 143 ms vs 810 ms (a second time:
21 vs 214 ms and 68 vs 1411 ms). The models are too small to gain much from a second thread even on an idle
machine. So each worker gets 1 thread on machines with up to 4 cores, 2 above, and the cap on concurrently
active workers is max(2, (cores - 1) // threads): one core stays for the server and the browser, and at least
two runs can train side by side for comparisons (on 2 cores: 2 runs of 1 thread). Overrides:
TINYGPT_MAX_RUNS, TINYGPT_THREADS_PER_RUN, TINYGPT_LEASE_SECONDS.

Lifecycle: start() queues a run (status "queued" with its queue_position) and a monitor thread launches queued
runs in FIFO order as slots free up. Commands go to a live worker over a one-way Pipe; a knob change returns a
request id that the worker's answer in events.jsonl carries (tinygpt.runs.knobs.knob_answer). When the server dies
(Ctrl-C, kill -9) the pipe reaches EOF and the worker checkpoints and exits, and the forkserver exits with its
server, so nothing is left behind. The monitor also reaps dead workers (killed, segfault, out of memory) and marks
their runs failed unless they wrote a final state; enforces stop deadlines (a worker ignoring stop for 5 s is
killed); pauses runs whose lease ran out (nobody called touch() for lease_seconds: checkpoint, end the process,
resumable); and, while runs wait in the queue, releases workers that sit paused so the slot goes to a run that
wants to train. A run whose process has ended is resumed in a new worker from its last checkpoint.

The manager writes status.json only while no worker owns the run (queued, starting, reaped), through
tinygpt.runs.status.update_status; run states and their groups are tinygpt.runs'.

Left out: more than one server sharing a runs folder (the second would see the first's runs as interrupted),
GPU memory accounting in the cap, and remote workers.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import multiprocessing.spawn
import os
import secrets
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .config import RunConfig, check_live_knob
from .errors import RunStoreError, TinyGPTError
from .runs.files import ACTIVE_STATES, ENDED_STATES, FINAL_STATES, PAUSED_STATES, list_checkpoints, read_json
from .runs.lock import RunLockedError, writer_lock_holder
from .runs.loop import LATEST, run_training
from .runs.owners import Actor, clear_hold, holds, require_control, require_not_held, write_hold
from .runs.preflight import preflight
from .runs.status import read_status, update_status
from .runs.store import RunStore
from .runs.writer import RunWriter

# Imported once by the forkserver, so every worker starts with them loaded. Not torch._dynamo (1.2 s, as long as
# torch itself): nothing a run does imports it since tinygpt.optim replaced torch.optim.AdamW.
PRELOAD = ["torch", "numpy", "safetensors.torch", "tinygpt.runs.loop", "tinygpt.worker"]
STOP_GRACE = 5.0  # s a worker may take to obey stop (or release) before it is killed
DEFAULT_LEASE_SECONDS = 600.0  # s a run nobody watches keeps training before it checkpoints and pauses
MONITOR_INTERVAL = 0.2  # s between the monitor's checks when no worker ends and nobody calls
# config.json keys not in RunConfig
IDENTITY_KEYS = ("run_id", "created", "owner", "parent", "learner", "vocab", "num_params")
LOCKED_EXIT = 3  # a worker's exit code when another process holds the run's writer lock: it wrote nothing
UNWRITABLE_EXIT = 4  # ... when the run folder cannot be written at all (read-only, full): it could write nothing
_MAIN_LOCK = threading.Lock()


def default_threads_per_run(cpus: int | None = None) -> int:
    """1 thread up to 4 cores (spin-waiting OpenMP threads collapse when cores are shared), else 2."""
    cpus = cpus or os.cpu_count() or 1
    return 1 if cpus <= 4 else 2


def default_max_active(cpus: int | None = None, threads: int | None = None) -> int:
    """Runs training at once: leave a core for the server and the browser, but always allow two side by side."""
    cpus = cpus or os.cpu_count() or 1
    threads = threads or default_threads_per_run(cpus)
    return max(2, (cpus - 1) // threads)


def lease_from_env() -> float:
    """The lease of the app's runs: $TINYGPT_LEASE_SECONDS, else DEFAULT_LEASE_SECONDS."""
    return float(_env_number("TINYGPT_LEASE_SECONDS", float) or DEFAULT_LEASE_SECONDS)


def _env_number(name: str, kind: type) -> Any:
    value = os.environ.get(name)
    if not value:
        return None
    try:
        number = kind(value)
    except ValueError:
        raise TinyGPTError(f"{name}={value!r} is not a number.") from None
    if number <= 0:
        raise TinyGPTError(f"{name} must be > 0, got {value!r}.")
    return number


def config_from_json(data: dict) -> RunConfig:
    """The RunConfig of a config.json (which adds run_id, created, owner, parent, vocab, num_params)."""
    return RunConfig.from_dict({k: v for k, v in data.items() if k not in IDENTITY_KEYS})


def _require_app_owned(run_id: str, config: dict) -> None:
    """The app writes only into runs it started: a CLI or torchrun run belongs to that process (or its user)."""
    owner = config.get("owner", "app")
    if owner != "app":
        raise TinyGPTError(
            f"run {run_id} was trained from the command line (owner {owner!r}); the app shows it read-only. "
            f"Continue it there: python -m tinygpt train --resume {run_id}"
        )


def _pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited; only its entry remains
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "the worker process vanished"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGKILL:
            return "the worker process was killed (SIGKILL: out of memory, or killed by hand)"
        if -code == signal.SIGSEGV:
            return "the worker process crashed (segmentation fault)"
        return f"the worker process was killed by {name}"
    return f"the worker process exited with code {code} without saying why"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


@contextlib.contextmanager
def _main_script_hidden():
    """multiprocessing re-runs the parent's __main__ in each child it starts (spawn and forkserver alike), found by
    module name (`python -m streamlit`) or by path (a script). Under `streamlit run`, __main__ is the page script of
    whichever session runs at that instant (Streamlit swaps it in at every script run, so hiding attributes on it
    races), and re-running app.py in a worker imports Streamlit and starts a RunManager inside the child, which dies.
    A worker needs nothing from any main script: drop both entries from the preparation data while we start one."""
    with _MAIN_LOCK:
        original = multiprocessing.spawn.get_preparation_data

        def without_main(name):
            data = original(name)
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
            return data

        multiprocessing.spawn.get_preparation_data = without_main
        try:
            yield
        finally:
            multiprocessing.spawn.get_preparation_data = original


# ---------------------------------------------------------------- the worker process's side


class PipeControl:
    """Commands from the server over a Pipe. EOF means the server is gone: the loop checkpoints and exits."""

    GONE = {"cmd": "release", "reason": "paused: the app server stopped; resume the run to continue"}

    def __init__(self, conn: multiprocessing.connection.Connection):
        self.conn = conn

    def poll(self, timeout: float) -> list[dict]:
        commands: list[dict] = []
        try:
            if self.conn.poll(timeout):
                while True:
                    commands.append(self.conn.recv())
                    if not self.conn.poll(0):
                        break
        except (EOFError, OSError):
            commands.append(dict(self.GONE))
        return commands


def _worker_main(conn, run_dir: str, config: dict, resume_from: int | None, threads: int) -> None:
    """Entry point of a worker process (runs in a fork of the forkserver)."""
    # Ctrl-C in a terminal signals the whole process group; the server decides what happens to its runs.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        run_training(
            run_dir, RunConfig.from_dict(config), PipeControl(conn), resume_from=resume_from, threads=threads,
            holder="the app's training worker",
        )  # fmt: skip
    except RunLockedError as exc:  # someone else writes the run: leave everything as they wrote it
        print(f"tinygpt.worker: {exc}", file=sys.stderr)
        sys.exit(LOCKED_EXIT)
    except RunStoreError as exc:
        print(f"tinygpt.worker: {exc}", file=sys.stderr)
        sys.exit(UNWRITABLE_EXIT)
    finally:
        conn.close()


# ---------------------------------------------------------------- the server's side


@dataclass
class _Job:
    """One run the manager is responsible for: queued (no process), launching, or live."""

    run_id: str
    config: dict
    resume_from: int | None
    touched: float  # time.monotonic() of the last touch()
    commands: list = field(default_factory=list)  # sent once the process exists
    process: Any = None
    conn: Any = None
    launching: bool = False
    deadline: float | None = None  # kill the process if it is still alive then
    stop_requested: bool = False  # stop() was called: the run must end "stopped"
    then: list | None = None  # resume/step arrived after a release: restart with these commands once it exits
    then_from: int | None = None  # ... from this checkpoint (resume(from_step=...)), else the newest
    restart_anyway: bool = False  # ... even if it ended failed (resume() came just after it died)
    killed_as: tuple[str, str] | None = None  # (state, reason) to record if it has to be killed
    released: bool = False  # asked to checkpoint and exit (lease, eviction, shutdown)
    position: int | None = None  # queue position last written to status.json
    launched: float | None = None  # time.monotonic() when its worker process started (its slot's clock)


class RunManager:
    """Starts, steers and watches the training worker processes of one server. Thread-safe."""

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
            threads_per_run or _env_number("TINYGPT_THREADS_PER_RUN", int) or default_threads_per_run(cpus)
        )
        self.max_active = int(
            max_active or _env_number("TINYGPT_MAX_RUNS", int) or default_max_active(cpus, self.threads_per_run)
        )
        self.lease_seconds = float(lease_seconds or lease_from_env())
        self.stop_grace = STOP_GRACE  # s before an unresponsive worker is killed (tests shorten it)
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload(PRELOAD)
        with _main_script_hidden():  # the forkserver itself must not re-run the parent's __main__ either
            multiprocessing.forkserver.ensure_running()  # eager: torch is imported while nobody waits for it
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)  # notified whenever a job ends
        self._jobs: dict[str, _Job] = {}  # launching or live, at most max_active
        self._queue: list[_Job] = []  # FIFO
        self._time_limits: dict[str, float] = {}  # run id -> seconds each of its workers may hold a slot
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()  # start() wakes the monitor out of its wait()
        for fd in (self._wake_r, self._wake_w):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self._recover()
        self._monitor = threading.Thread(target=self._watch, name="tinygpt-run-monitor", daemon=True)
        self._monitor.start()
        atexit.register(self.shutdown)

    # ---------------------------------------------------------------- public API

    def start(
        self,
        config: RunConfig,
        parent: str | None = None,
        actor: Actor | None = None,
        time_limit_s: float | None = None,
    ) -> str:
        """Create a run folder and queue the run; it starts as soon as a slot is free. Returns its id. `actor`
        (a learner of the app) becomes the run's owner: only they and the instructor may change it.
        `time_limit_s` (the room's time budget): once its worker has held a training slot that long, the run is
        stopped with a checkpoint, the reason in its status and events; a resume starts a new budget."""
        # Fail here, in the page, for what cannot work: no such device, an unknown source, a run too big for
        # the memory, a runs folder without room (RunStore.create then says if it cannot be written at all).
        preflight(config, runs_root=self.store.root)
        learner = {"learner": {"id": actor.id, "name": actor.name}} if actor is not None else {}
        writer = self.store.create({**config.to_dict(), **learner}, owner="app", parent=parent)
        writer.close()
        # The stored config: a text corpus is in the run's corpus.txt, not in every message to the worker.
        stored = config_from_json(read_json(writer.run_dir / "config.json", {}) or {}).to_dict()
        if time_limit_s:
            with self._lock:
                self._time_limits[writer.run_id] = float(time_limit_s)
        self._enqueue(_Job(writer.run_id, stored, None, time.monotonic()))
        return writer.run_id

    def pause(self, run_id: str, actor: Actor | None = None) -> None:
        """Pause a live run (it checkpoints and waits); a queued run leaves the queue, paused. Idempotent.
        The instructor's pause of a learner's run is a hold (tinygpt.runs.files.HOLD_FILE): the learner cannot
        resume or step it until the instructor resumes it."""
        self._require_control(run_id, actor)
        config = read_json(self.store.path(run_id) / "config.json", {}) or {}
        by = "the instructor" if holds(config, actor) else "you"
        with self._lock:
            if by == "the instructor":
                write_hold(self.store.path(run_id), by, read_status(self.store.path(run_id)).get("step"))
            if run_id in self._jobs:
                self._send(self._jobs[run_id], {"cmd": "pause", "reason": f"paused by {by}"})
            elif (job := self._queued(run_id)) is not None:
                self._queue.remove(job)
                reason = f"paused by {by} before it started"
                self._set_status(run_id, state="paused", reason=reason, queue_position=None)
                self._schedule()
            elif by == "the instructor" and read_status(self.store.path(run_id)).get("state") == "paused":
                self._set_status(run_id, state="paused", reason="paused by the instructor")  # no worker: say why

    def resume(
        self,
        run_id: str,
        max_steps: int | None = None,
        actor: Actor | None = None,
        from_step: int | None = None,
        time_limit_s: float | None = None,
    ) -> None:
        """Resume: a live worker continues; a run whose process ended restarts from its newest checkpoint that
        loads, in a new worker (queued if all slots are busy). `max_steps` extends a run, e.g. a finished one.
        `from_step` continues from that checkpoint instead (later ones are dropped: the run is rewound); a live
        worker is released first. `time_limit_s` (the room's time budget, as for `start`) applies from now on, to
        a run started before the instructor set it too. Idempotent. Raises TinyGPTError when another process
        writes the run, when the folder cannot be written, or for a `from_step` the run has no checkpoint at."""
        self._require_control(run_id, actor)
        require_not_held(self.store.path(run_id), actor, run_id)
        if actor is not None and actor.instructor:
            clear_hold(self.store.path(run_id))  # the instructor's resume lifts the hold
        if time_limit_s:
            with self._lock:
                self._time_limits[run_id] = float(time_limit_s)
        with self._lock:
            if from_step is not None:
                self._check_from_step(run_id, from_step)
            if (job := self._jobs.get(run_id)) is not None:
                job.touched = time.monotonic()
                if from_step is not None:  # a new worker, from that checkpoint, once this one has ended
                    job.then, job.then_from = [], from_step
                    self._release(job, f"paused: resuming from checkpoint {from_step}")
                elif job.released or self._dead(job):  # on its way out (or just died): again once it is reaped
                    job.then, job.restart_anyway = [], job.restart_anyway or self._dead(job)
                else:
                    self._send(job, {"cmd": "resume"})
            elif (job := self._queued(run_id)) is not None:
                job.touched = time.monotonic()
                if from_step is not None:
                    job.resume_from = from_step
            else:
                self._restart(run_id, [], max_steps, from_step)

    def let_go(self, run_id: str, actor: Actor | None = None) -> None:
        """The instructor lets go of a hold (Room: "Let go"): a run that sits paused resumes; one its learner
        stopped meanwhile stays stopped. Either way its learner has it back."""
        self._require_control(run_id, actor)
        if read_status(self.store.path(run_id)).get("state") in PAUSED_STATES:
            self.resume(run_id, actor=actor)  # the instructor's resume lifts the hold
        clear_hold(self.store.path(run_id))

    @staticmethod
    def _dead(job: _Job) -> bool:
        """Its process has ended but the monitor has not reaped it yet (a command sent now would be lost)."""
        return job.process is not None and not job.process.is_alive()

    def _check_from_step(self, run_id: str, step: Any) -> None:
        steps = list_checkpoints(self.store.path(run_id))
        if not isinstance(step, int) or isinstance(step, bool) or step not in steps:
            raise TinyGPTError(f"run {run_id} has no checkpoint at step {step!r}; it has {steps}.")

    def step(self, run_id: str, n: int = 1, actor: Actor | None = None) -> None:
        """Take exactly n steps, then pause. A live running run is paused first; an ended one is restarted paused."""
        self._require_control(run_id, actor)
        require_not_held(self.store.path(run_id), actor, run_id)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise TinyGPTError(f"step needs a whole number of steps >= 1, got {n!r}.")
        commands = [{"cmd": "pause"}, {"cmd": "step", "n": n}]
        with self._lock:
            if (job := self._jobs.get(run_id)) is not None:
                if job.released or self._dead(job):  # on its way out: start it again, paused, once it has ended
                    job.then, job.restart_anyway = commands, job.restart_anyway or self._dead(job)
                else:
                    for command in commands:
                        self._send(job, command)
            elif (job := self._queued(run_id)) is not None:
                job.commands += commands
            else:
                self._restart(run_id, commands, None)

    def stop(self, run_id: str, wait: bool = True, actor: Actor | None = None) -> None:
        """Stop a run for good (checkpoint, state "stopped"). With `wait`, returns once the worker has ended: after
        the step in progress, or after STOP_GRACE s when it is killed (its data stays readable). Idempotent."""
        self._require_control(run_id, actor)
        with self._lock:
            if (job := self._queued(run_id)) is not None:
                self._queue.remove(job)
                self._set_status(run_id, state="stopped", reason="stopped before it started", queue_position=None)
                self._schedule()
                return
            job = self._jobs.get(run_id)
            if job is None:
                _require_app_owned(run_id, read_json(self.store.path(run_id) / "config.json", {}) or {})
                if read_status(self.store.path(run_id)).get("state") in PAUSED_STATES + ACTIVE_STATES:
                    self._set_status(run_id, state="stopped", reason="stopped by you")
                return
            if not job.stop_requested:
                job.stop_requested, job.then = True, None
                self._send(job, {"cmd": "stop"})
                job.killed_as = ("stopped", f"stopped: the worker did not stop within {self.stop_grace:g} s; killed")
                if job.process is not None:
                    job.deadline = time.monotonic() + self.stop_grace
            if wait:
                limit = time.monotonic() + self.stop_grace + 10  # the monitor kills at the deadline; a backstop
                while run_id in self._jobs and time.monotonic() < limit:
                    self._changed.wait(0.1)

    def set_knob(self, run_id: str, name: str, value: Any, actor: Actor | None = None) -> str:
        """Ask for a live knob change; it applies before the run's next step. Returns the request id that the
        worker's answer carries: find it with tinygpt.runs.knobs.knob_answer(events, request), which says the step
        it applied at (and any knob that moved with it), or why the value was refused (the run goes on).
        A name that is not a live knob raises ConfigError here, before anything is sent."""
        self._require_control(run_id, actor)
        check_live_knob(name)
        request = secrets.token_hex(6)
        command = {"cmd": "knob", "name": name, "value": value, "request": request}
        with self._lock:
            if (job := self._jobs.get(run_id)) is not None and not self._dead(job):
                self._send(job, command)
            elif (job := self._queued(run_id)) is not None:
                job.commands.append(command)
            else:
                raise TinyGPTError(f"run {run_id} has no worker: resume it, then change {name}.")
        return request

    def _require_control(self, run_id: str, actor: Actor | None) -> None:
        """A learner may change only their own runs (the instructor any): refused here even if a page sent it."""
        if actor is not None:
            require_control(read_json(self.store.path(run_id) / "config.json", {}) or {}, actor, run_id)

    def touch(self, run_id: str) -> None:
        """A page is watching this run: renew its lease."""
        with self._lock:
            job = self._jobs.get(run_id) or self._queued(run_id)
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
                    self._jobs.pop(job.run_id)
                    self._try_status(job.run_id, state="paused", reason="paused: the server stopped")
                else:
                    self._release(job, "paused: the server stopped; resume the run to continue")
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

    def _queued(self, run_id: str) -> _Job | None:
        return next((job for job in self._queue if job.run_id == run_id), None)

    def _enqueue(self, job: _Job) -> None:
        with self._lock:
            if self._closed:
                raise TinyGPTError("the run manager has shut down; restart the server.")
            self._queue.append(job)
            self._schedule()

    def _restart(self, run_id: str, commands: list, max_steps: int | None, from_step: int | None = None) -> None:
        """Queue a run whose process has ended, to continue from its newest checkpoint that loads, or from
        `from_step` (called with the lock). Raises TinyGPTError for what would make the worker fail at once."""
        run_dir = self.store.path(run_id)
        holder = writer_lock_holder(run_dir)
        if holder is not None:
            raise RunLockedError(
                f"run {run_id} is being written by {holder.get('holder') or 'another process'} (pid "
                f"{holder.get('pid')}): only one process may train a run at a time. Stop it there first."
            )
        status = read_status(run_dir)
        if status.get("state") in ("starting", "running") and _pid_alive(status.get("pid")):
            raise TinyGPTError(f"run {run_id} is being trained by another process (pid {status.get('pid')}).")
        try:
            raw = read_json(run_dir / "config.json", None)
            if not isinstance(raw, dict):
                raise TinyGPTError("config.json is missing or not an object")
        except TinyGPTError as exc:
            raise TinyGPTError(f"run {run_id} cannot be resumed: its config.json is unusable ({exc}).") from None
        _require_app_owned(run_id, raw)
        try:
            config = config_from_json(raw).to_dict()
        except TinyGPTError as exc:
            raise TinyGPTError(f"run {run_id} cannot be resumed: its config.json is unusable ({exc}).") from None
        if max_steps is not None:
            config["train"]["max_steps"] = int(max_steps)
        step = int(status.get("step") or 0)
        if status.get("state") == "finished" and config["train"]["max_steps"] <= step and from_step is None:
            return  # nothing left to train; extend it with resume(run_id, max_steps=...)
        checkpoints = list_checkpoints(run_dir)
        max_steps = config["train"]["max_steps"]
        if from_step is not None:
            resume_from, said = from_step, f"resuming from checkpoint {from_step}"
        elif checkpoints:
            resume_from, said = LATEST, f"resuming from its newest checkpoint (step {checkpoints[-1]})"
        else:
            resume_from, said = None, "starting over: it has no checkpoint"
        self._set_status(run_id, state="queued", reason=said, max_steps=max_steps)  # RunStoreError if unwritable
        self._enqueue(_Job(run_id, config, resume_from, time.monotonic(), list(commands)))

    def _schedule(self) -> None:
        """Move queued runs into free slots (the monitor launches them) and publish the others' queue positions."""
        launch = False
        while self._queue and len(self._jobs) < self.max_active:
            job = self._queue.pop(0)
            self._jobs[job.run_id] = job
            launch = True
        for position, job in enumerate(self._queue, start=1):
            if job.position != position:
                job.position = position
                reason = f"waiting for a free training slot ({self.max_active} run(s) train at once)"
                self._set_status(job.run_id, state="queued", reason=reason, queue_position=position)
        if launch:
            self._wake()

    def _launch(self, job: _Job) -> None:
        """Start the worker process of a job that holds a slot (called by the monitor, without the lock)."""
        run_dir = self.store.path(job.run_id)
        try:
            self._set_status(
                job.run_id, state="starting", reason="starting a worker process", queue_position=None, pid=None
            )
            receiver, sender = self._ctx.Pipe(duplex=False)
            args = (receiver, str(run_dir), job.config, job.resume_from, self.threads_per_run)
            process = self._ctx.Process(target=_worker_main, args=args, name=f"tinygpt-{job.run_id}", daemon=True)
            with _main_script_hidden():
                process.start()
            receiver.close()  # the worker holds the only reading end: its EOF is our death
        except Exception as exc:
            with self._lock:
                self._jobs.pop(job.run_id, None)
                if isinstance(exc, RunLockedError):  # another process writes it: not ours to mark
                    print(f"tinygpt.worker: not starting {job.run_id}: {exc}", file=sys.stderr)
                else:
                    why = str(exc) if isinstance(exc, TinyGPTError) else f"{type(exc).__name__}: {exc}"
                    self._record_end(job.run_id, "failed", f"failed: could not start a worker: {why}", None)
                self._changed.notify_all()
            return
        with self._lock:
            job.process, job.conn, job.launching = process, sender, False
            job.launched = time.monotonic()
            for command in job.commands:
                self._send(job, command)
            job.commands.clear()
            if job.stop_requested:
                job.deadline = time.monotonic() + self.stop_grace

    def _send(self, job: _Job, command: dict) -> None:
        if job.conn is None:
            job.commands.append(command)
            return
        try:
            job.conn.send(command)
        except (BrokenPipeError, OSError):
            pass  # the worker just died; the monitor reaps it

    def _release(self, job: _Job, reason: str) -> None:
        """Ask a worker to checkpoint and exit, leaving its run paused and resumable."""
        if job.released:
            return
        job.released = True
        self._send(job, {"cmd": "release", "reason": reason})
        job.deadline = time.monotonic() + self.stop_grace
        if job.killed_as is None:
            job.killed_as = ("paused", f"{reason} (the worker did not respond and was killed)")

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
                print(f"tinygpt.worker: monitor error: {exc!r}", file=sys.stderr)

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
                    self._release(job, f"paused: nobody watched for {_minutes(self.lease_seconds)}")
                else:
                    self._enforce_time_limit(job, now)
            for job in list(self._queue):
                if now - job.touched > self.lease_seconds:
                    self._queue.remove(job)
                    reason = f"paused: nobody watched for {_minutes(self.lease_seconds)} before it started"
                    self._set_status(job.run_id, state="paused", reason=reason, queue_position=None)
            self._evict_paused()
            self._schedule()
            pending = [j for j in self._jobs.values() if j.process is None and not j.launching]
            for job in pending:
                job.launching = True
        for job in pending:
            self._launch(job)

    def _enforce_time_limit(self, job: _Job, now: float) -> None:
        """Stop a run whose worker has held its slot for the room's time budget (called with the lock)."""
        limit = self._time_limits.get(job.run_id)
        if not limit or job.launched is None or job.released or job.stop_requested or now - job.launched < limit:
            return
        reason = f"stopped: the room's time budget of {_minutes(limit)} per run ran out"
        job.stop_requested, job.then = True, None
        self._send(job, {"cmd": "stop", "reason": reason})
        job.killed_as = ("stopped", f"{reason}; the worker did not stop within {self.stop_grace:g} s and was killed")
        job.deadline = now + self.stop_grace

    def _evict_paused(self) -> None:
        """While runs wait for a slot, a worker that sits paused gives its slot up (it stays resumable)."""
        if not self._queue or len(self._jobs) < self.max_active:
            return
        idle = []
        for job in self._jobs.values():
            if job.process is not None and not job.released:
                if read_status(self.store.path(job.run_id)).get("state") in PAUSED_STATES:
                    idle.append(job)
        for job in sorted(idle, key=lambda j: j.touched)[: len(self._queue)]:
            self._release(job, "paused: its training slot went to a queued run; resume it to continue")

    def _reap(self, job: _Job) -> None:
        """A worker process ended: free its slot and make sure its run says why (called with the lock)."""
        self._jobs.pop(job.run_id, None)
        job.process.join(1)
        code = job.process.exitcode
        job.process.close()  # frees its sentinel now rather than at garbage collection
        job.conn.close()
        status = read_status(self.store.path(job.run_id))
        state, step = status.get("state"), int(status.get("step") or 0)
        if code == LOCKED_EXIT:
            pass  # another process writes the run: what it says stands, and nothing here may change it
        elif code == 0 and state in FINAL_STATES or state in ENDED_STATES:
            pass  # the worker said how it ended
        elif code == UNWRITABLE_EXIT:
            why = "the worker could not write the run folder (read-only or full); see the server log"
            self._record_end(job.run_id, "failed", f"failed: {why}", step)
            state = "failed"
        elif job.killed_as is not None and code != 0:
            self._record_end(job.run_id, *job.killed_as, step)
            state = job.killed_as[0]
        else:
            why = _exit_reason(code) if code != 0 else "the worker process ended without a final state"
            self._record_end(job.run_id, "failed", f"failed: {why} at step {step}", step)
            state = "failed"
        wanted = job.then is not None and not self._closed  # resume or step came while it was ending
        restart = wanted and (state in PAUSED_STATES or job.then_from is not None or job.restart_anyway)
        if code == LOCKED_EXIT:
            pass
        elif state in PAUSED_STATES and job.stop_requested:  # e.g. released by the lease just before
            self._set_status(job.run_id, state="stopped", reason=f"stopped by you at step {step}")
        elif restart:
            try:
                self._restart(job.run_id, job.then, None, job.then_from)
            except TinyGPTError as exc:
                print(f"tinygpt.worker: could not resume {job.run_id}: {exc}", file=sys.stderr)
        self._changed.notify_all()

    def _record_end(self, run_id: str, state: str, reason: str, step: int | None) -> None:
        """Say how a run without a live worker ended: an event and its status, as far as the disk allows (a full
        disk still gets the status: runs.status.write_status_file rewrites it in place). Never raises."""
        run_dir = self.store.path(run_id)
        try:
            with RunWriter(run_dir) as writer:
                kind = "error" if state == "failed" else "state"
                writer.append_event({"step": step or 0, "kind": kind, "message": reason})
        except (OSError, TinyGPTError):
            pass
        self._try_status(run_id, state=state, reason=reason, queue_position=None)

    def _try_status(self, run_id: str, **fields: Any) -> None:
        """_set_status for the monitor and shutdown, which must go on past one run folder they cannot write."""
        try:
            self._set_status(run_id, **fields)
        except TinyGPTError as exc:
            print(f"tinygpt.worker: run {run_id}: {fields.get('reason')}; could not record it: {exc}", file=sys.stderr)

    def _set_status(self, run_id: str, **fields: Any) -> None:
        """Rewrite status.json for a run without a live worker (a worker owns its own status while it runs)."""
        update_status(self.store.path(run_id), **fields)

    def _recover(self) -> None:
        """After a server restart: runs that were queued or training under the old server are paused."""
        for summary in self.store.list_runs():
            if summary.owner != "app" or summary.state not in ACTIVE_STATES:
                continue
            status = read_status(self.store.path(summary.run_id))
            if not _pid_alive(status.get("pid")) or summary.state == "queued":
                reason = f"paused: the server stopped while the run was {summary.state}; resume it to continue"
                self._try_status(summary.run_id, state="paused", reason=reason, queue_position=None)
