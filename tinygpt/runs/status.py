"""status.json: what a run says about itself (state, reason, step, speed), rewritten atomically by its writer,
edited by a process without a live writer (`update_status`), read back trusting the writer lock over the file
(a run whose writer is gone is interrupted, never running), and rewound to a checkpoint (`rewind`; the best
val loss a run resumed there has reached: `best_val_until`).
"""

from __future__ import annotations

import errno
import json
import math
import os
import time
from pathlib import Path
from typing import Any

from ..errors import RunStoreError
from .check import clean_status
from .files import (
    CONFIG_FILE,
    STATES,
    WRITER_LOCK,
    check_state,
    delete_checkpoint,
    dumps,
    list_checkpoints,
    os_error_message,
    read_config_json,
    read_evals,
    read_json,
    record_step,
    write_json_atomic,
)
from .lock import RunLockedError, lock_info, locked_message, pid_alive, writer_lock_holder


def read_status(run_dir: str | Path) -> dict:
    """status.json as a dict; {} for a folder without config.json (not a run, or not yet one).

    A run folder whose status.json is missing or unreadable (deleted, garbage, a disk that filled up mid-write)
    reports what the folder itself knows (`recovered_status`): the last step in its metrics, state "stopped", and
    a reason naming the checkpoint a resume continues from. Nothing is written; the next status update heals it.
    """
    run_dir = Path(run_dir)
    try:
        status = read_json(run_dir / "status.json", None)
        problem = "status.json missing" if status is None else "status.json is not an object"
    except RunStoreError:
        status, problem = None, "status.json is unreadable"
    if isinstance(status, dict):
        return status
    if not (run_dir / CONFIG_FILE).exists():
        return {}
    return recovered_status(run_dir, problem)


def trusted_status(run_dir: str | Path, status: dict) -> dict:
    """status.json as a page may show it: every field of its type, damage said in the reason (tinygpt.runs.check)."""
    if not status:
        return status
    step = None if isinstance(status.get("step"), int) else last_metric_step(run_dir)
    return clean_status(status, STATES, step)


def interrupted(run_dir: str | Path, status: dict) -> dict:
    """The status as it stands now, not as its writer last left it: a "running" run whose writer lock nobody
    holds (its process was killed -9, or the machine went down) is "stopped" and says it was interrupted, with
    the checkpoint a resume continues from. For what readers show (RunReader.status, list_runs); writes nothing
    (a reader may not write), and read_status stays the file's own word for the processes that edit it. Runs
    written without a lock (none since writer.lock exists) keep what their file says."""
    run_dir = Path(run_dir)
    if status.get("state") in ("queued", "starting"):
        return _server_gone(status)
    if status.get("state") != "running" or not (run_dir / WRITER_LOCK).exists():
        return status
    if writer_lock_holder(run_dir) is not None:
        return status
    checkpoints = list_checkpoints(run_dir)
    pid = lock_info(run_dir / WRITER_LOCK).get("pid") or status.get("pid")
    who = f" (pid {pid})" if pid else ""
    then = f"resume it to continue from checkpoint {checkpoints[-1]}" if checkpoints else "resuming starts it over"
    reason = f"interrupted at step {status.get('step') or 0}: the process writing it{who} is gone; {then}"
    return {**status, "state": "stopped", "reason": reason, "pid": None}


def _server_gone(status: dict) -> dict:
    """A queued (or starting) run waits for the app server that queued it; if that server is gone (killed, the
    machine restarted) nothing will ever start it, so it reads as waiting for the server, as the next server
    marks it (paused), instead of "queued" forever."""
    server = status.get("server_pid")
    if not isinstance(server, int) or pid_alive(server):
        return status
    reason = (
        f"waiting for the server: the app server that queued it (pid {server}) is gone; start the app again "
        "(streamlit run app.py) and resume it"
    )
    return {**status, "state": "paused", "reason": reason, "queue_position": None}


def recovered_status(run_dir: str | Path, problem: str) -> dict:
    """A status for a run folder from its other files: step = the last step in metrics.jsonl, state "stopped"
    (or "running" while a live writer holds its lock), reason = `problem` and the checkpoint to resume from."""
    run_dir = Path(run_dir)
    checkpoints = list_checkpoints(run_dir)
    try:
        config = read_config_json(run_dir)
    except RunStoreError:
        config = {}
    train = config.get("train") if isinstance(config, dict) else None
    holder = writer_lock_holder(run_dir)
    if holder is not None:
        state, then = "running", f"pid {holder.get('pid')} is writing it"
    elif checkpoints:
        state, then = "stopped", f"resumable from checkpoint {checkpoints[-1]}"
    else:
        state, then = "stopped", "no checkpoint, so resuming starts it over"
    return {
        "state": state,
        "reason": f"{problem}; {then}",
        "step": last_metric_step(run_dir) or 0,
        "max_steps": train.get("max_steps") if isinstance(train, dict) else None,
        "tokens_per_s": None,
        "train_flops_per_token": None,
        "matmul_peak_gflops": None,
        "best_val_loss": None,
        "device": None,
        "pid": holder.get("pid") if holder else None,
        "queue_position": None,
        "updated": None,
    }


def last_metric_step(run_dir: str | Path) -> int | None:
    """The step of the last complete record in metrics.jsonl; None without one."""
    record = last_metric(run_dir)
    return None if record is None else int(record_step(record))


TAIL_BYTES = 65536  # the end of metrics.jsonl read first: 64 KiB hold hundreds of step records


def _metric_lines(run_dir: str | Path, whole: bool = False) -> tuple[list[bytes], bool] | None:
    """(metrics.jsonl's lines, whether the file goes on before them): its last TAIL_BYTES only, the first line maybe
    cut, unless `whole`. None without the file."""
    try:
        with open(Path(run_dir) / "metrics.jsonl", "rb") as f:
            f.seek(0, os.SEEK_END)
            start = 0 if whole else max(0, f.tell() - TAIL_BYTES)
            f.seek(start)
            return f.read().split(b"\n"), start > 0
    except OSError:
        return None


def last_metric(run_dir: str | Path, upto: float | None = None) -> dict | None:
    """The last complete record in metrics.jsonl (with `upto`: the last whose step is at most that, e.g. the step a
    resume continues from; records after it in the file were abandoned by a rewind), read from the file's end: a
    long run's file stays unread unless the record lies further back. None without one."""
    tail = _metric_lines(run_dir)
    if tail is None:
        return None
    found = _last_record(tail[0], upto)
    if found is None and upto is not None and tail[1] and (everything := _metric_lines(run_dir, whole=True)):
        found = _last_record(everything[0], upto)
    return found


def clock_pace(run_dir: str | Path, min_steps: int = 10, min_seconds: float = 1.0) -> float | None:
    """Steps a second the run trains at now, from its newest records (metrics.jsonl's last TAIL_BYTES, hundreds of
    steps): their steps over their "clock" (the seconds it trained, pauses and the queue left out: runs.loop),
    from the first to the last of them, never from step 0 (its start's setup would count as training: a run's first
    10 steps read 3x slow). None with fewer than `min_steps` steps or `min_seconds` between them."""
    tail = _metric_lines(run_dir)
    timed = []
    for line in tail[0] if tail else []:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        step, clock = (record.get("step"), record.get("clock")) if isinstance(record, dict) else (None, None)
        if isinstance(step, int) and type(clock) in (int, float):
            timed.append((step, clock))
    if len(timed) < 2:
        return None
    (first, start), (last, end) = timed[0], timed[-1]
    return (last - first) / (end - start) if last - first >= min_steps and end - start >= min_seconds else None


def _last_record(lines: list[bytes], upto: float | None) -> dict | None:
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        step = record_step(record) if isinstance(record, dict) else None
        if step is not None and (upto is None or step <= upto):
            return record
    return None


def write_status_file(run_dir: str | Path, status: dict) -> None:
    """Atomically replace status.json; on a full disk, rewrite it in place instead.

    The in-place rewrite needs no new block (status.json is far smaller than one), so even on a disk with no
    free block a run can still say that it failed and why. A reader may see that rewrite half done: it then
    keeps the status it had (RunReader) until the next complete one.
    """
    path = Path(run_dir) / "status.json"
    try:
        write_json_atomic(path, status)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not path.exists():
            raise RunStoreError(os_error_message(exc, Path(run_dir).parent)) from exc
        data = (dumps(status, indent=2) + "\n").encode("utf-8")
        try:
            with open(path, "r+b") as f:
                f.write(data)
                f.truncate()
        except OSError:
            raise RunStoreError(os_error_message(exc, Path(run_dir).parent)) from exc


def update_status(run_dir: str | Path, **fields: Any) -> dict:
    """Read, merge `fields` and atomically rewrite status.json (with `updated` = now); returns the new status.

    For processes that do not own the run's RunWriter: the worker manager marking a run queued, starting,
    paused or failed before a worker exists or after it died. While a worker trains, its writer owns the file:
    a run whose writer lock another process holds raises RunLockedError, and an unwritable folder RunStoreError.
    """
    check_state(fields.get("state"))
    holder = writer_lock_holder(run_dir)
    if holder is not None and not holder.get("this_process"):
        raise RunLockedError(locked_message(Path(run_dir), holder))
    status = {**read_status(run_dir), **fields, "updated": time.time()}
    write_status_file(run_dir, status)
    return status


def rewind(run_dir: str | Path, step: int) -> None:
    """Abandon what came after checkpoint `step` (resuming from an earlier checkpoint): delete later checkpoints
    (else "latest" would name them) and drop later attention snapshots from the index (a RunWriter opened
    afterwards deletes their now unlisted files). The .jsonl files are left alone: readers treat a step that
    goes backwards as a rewind. Call it before opening the run's RunWriter, which reads the index."""
    for later in [s for s in list_checkpoints(run_dir) if s > step]:
        delete_checkpoint(run_dir, later)
    index_path = Path(run_dir) / "attention" / "index.json"
    index = read_json(index_path, None)
    if isinstance(index, dict) and any(s.get("step", 0) > step for s in index.get("snapshots", [])):
        index["snapshots"] = [s for s in index["snapshots"] if s.get("step", 0) <= step]
        write_json_atomic(index_path, index)


def best_val_until(run_dir: str | Path, step: int) -> float | None:
    """The best val loss up to checkpoint `step`: what a run resumed from it has reached (a rewind abandons the
    evals that came after it, though evals.jsonl keeps them)."""
    losses = [e.get("val_loss") for e in read_evals(run_dir) if (e.get("step") or 0) <= step]
    finite = [v for v in losses if isinstance(v, (int, float)) and math.isfinite(v)]
    return min(finite) if finite else None
