"""The training worker process's side: what a worker imports ahead (PRELOAD, for the forkserver), its entry
point (`worker_main`: the same loop the CLI runs, steered by commands over a pipe, `PipeControl`), its exit codes,
and what a process's end means (`exit_reason`; whether a pid lives: `lock.pid_alive`). The server's side, which
starts, watches and schedules these processes, is tinygpt/runs/scheduler.py.

When the server dies (Ctrl-C, kill -9) the pipe reaches EOF and the worker checkpoints and exits. Ctrl-C in a
terminal signals the whole process group; the worker ignores SIGINT, since the server decides what happens to its
runs.

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
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import multiprocessing.spawn
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from ..errors import RunStoreError, TinyGPTError
from .files import ENDED_STATES, FINAL_STATES
from .lock import RunLockedError
from .loop import run_training
from .status import update_status
from .writer import RunWriter

# Imported once by the forkserver, so every worker starts with them loaded. Not torch._dynamo (1.2 s, as long as
# torch itself): nothing a run does imports it since tinygpt.optim replaced torch.optim.AdamW.
PRELOAD = ["torch", "numpy", "safetensors.torch", "tinygpt.runs.loop", "tinygpt.runs.worker"]
LOCKED_EXIT = 3  # a worker's exit code when another process holds the run's writer lock: it wrote nothing
UNWRITABLE_EXIT = 4  # ... when the run folder cannot be written at all (read-only, full): it could write nothing
_MAIN_LOCK = threading.Lock()


def exit_reason(code: int | None) -> str:
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


@contextlib.contextmanager
def main_script_hidden():
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


def worker_main(conn, run_dir: str, resume_from: int | None, max_steps: int | None, threads: int) -> None:
    """Entry point of a worker process (runs in a fork of the forkserver): train the run folder (to `max_steps`
    when a resume extends it), from checkpoint `resume_from` or from scratch. The scheduler sends no config and
    the worker reads none: the loop trains the folder's own config.json, the one copy (a damaged one is the run's
    recorded failure), and a text corpus stays in its corpus.txt."""
    # Ctrl-C in a terminal signals the whole process group; the server decides what happens to its runs.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        run_training(
            run_dir, control=PipeControl(conn), max_steps=max_steps, resume_from=resume_from, threads=threads,
            holder="the app's training worker",
        )  # fmt: skip
    except RunLockedError as exc:  # someone else writes the run: leave everything as they wrote it
        print(f"tinygpt.runs.worker: {exc}", file=sys.stderr)
        sys.exit(LOCKED_EXIT)
    except RunStoreError as exc:
        print(f"tinygpt.runs.worker: {exc}", file=sys.stderr)
        sys.exit(UNWRITABLE_EXIT)
    finally:
        conn.close()


# ---------------------------------------------------------------- how a worker's end is told


def unsaid_end(code: int | None, state: Any, step: int, killed_as: tuple[str, str] | None) -> tuple[str, str] | None:
    """(state, reason) to record for a run whose worker exited with `code` leaving status `state` at `step`, or
    None when the run already says how it ended (or another process writes it: LOCKED_EXIT, whose words stand).
    `killed_as`: what the scheduler asked for before it had to kill the worker (a stop, a release)."""
    if code == LOCKED_EXIT or (code == 0 and state in FINAL_STATES) or state in ENDED_STATES:
        return None
    if code == UNWRITABLE_EXIT:
        return "failed", "failed: the worker could not write the run folder (read-only or full); see the server log"
    if killed_as is not None and code != 0:
        return killed_as
    why = exit_reason(code) if code != 0 else "the worker process ended without a final state"
    return "failed", f"failed: {why} at step {step}"


def record_end(run_dir: Path, state: str, reason: str, step: int | None) -> None:
    """Say how a run without a live worker ended: an event and its status, as far as the disk allows (a full disk
    still gets the status: tinygpt.runs.status.write_status_file rewrites it in place). TinyGPTError when even the
    status cannot be written."""
    try:
        with RunWriter(run_dir) as writer:
            kind = "error" if state == "failed" else "state"
            writer.append_event({"step": step or 0, "kind": kind, "message": reason})
    except (OSError, TinyGPTError):
        pass
    update_status(run_dir, state=state, reason=reason, queue_position=None)


# ---------------------------------------------------------------- how many workers, how many threads


DEFAULT_LEASE_SECONDS = 600.0  # s a run nobody watches keeps training before it checkpoints and pauses


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
    return float(env_number("TINYGPT_LEASE_SECONDS", float) or DEFAULT_LEASE_SECONDS)


def env_number(name: str, kind: type) -> Any:
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
