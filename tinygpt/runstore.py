"""The run folder: how a training worker publishes a run and how the app reads it live.

A training worker (another process) owns a `RunWriter`; every app page owns a `RunReader` that polls the same
folder. The folder is the only channel between them, so its format (v1, defined in docs/CONTRACTS.md) is simple:

    runs/<run_id>/                  run_id matches ^[A-Za-z0-9_-]{8,64}$ and resolves to a folder inside runs/
      config.json                   atomic: the RunConfig, run_id, created, owner, parent, learner, vocab, num_params
      status.json                   atomic, rewritten often: state, reason, step, max_steps, tokens_per_s, ...
      metrics.jsonl                 one JSON object per line per step: step, time, loss, lr, grad_norm, ...
      evals.jsonl                   step, train_loss, val_loss
      events.jsonl                  step, time, kind (knob|clip|nonfinite|state|checkpoint|error), message, ...
      samples.jsonl                 step, prompt, text
      attention/index.json          atomic: probe_text, tokens, snapshots [{step, file}]
      attention/step_%08d.npy       float16 (num_layers, num_heads, T, T), thinned to ~64 snapshots
      attention/scores.jsonl        one line per snapshot step, never thinned: head-role scores (tinygpt.circuits)
      checkpoints/step_%08d.safetensors (+ .json), written by tinygpt.checkpoint
      corpus.txt                    a pasted or uploaded corpus (UTF-8), stored once; configs name it by sha256
      writer.lock                   flock'ed by the one process writing the run, as long as it writes
      hold.json                     atomic, by the app server: the instructor paused a learner's run (a hold)

This module is the one home of that layout: the file names (`checkpoint_stem`, `snapshot_name`, `snapshot_path`,
and the patterns that parse them), which checkpoints count (`list_checkpoints`: both files present), the run
states and their groups (`STATES`, `ACTIVE_STATES`, ...), status.json edits by a process without a live writer
(`update_status`), abandoning what came after a checkpoint (`rewind`), and how knob events read back
(`knob_changes`, `knob_answer`, `knobs_now`), one writer per run (`acquire_writer_lock`, `writer_lock_holder`),
the corpus file (`store_corpus`, `read_corpus`), and what a folder without a readable status.json says about itself
(`read_status`). Everybody else (loop, worker, CLI, app, charts) calls these.

Two rules make a live reader safe without locks: whole files are replaced atomically (write a temp file in the
same folder, then os.replace, which readers see as old-or-new, never half), and .jsonl files only grow, one
complete line per write, so a reader remembers a byte offset and consumes only whole lines. Non-finite floats
(a diverged loss) are written as null, because NaN is not JSON and a strict reader would reject the whole line.

One writer per run: whoever trains a run (a worker, the CLI, torchrun's rank 0) holds an exclusive flock on its
writer.lock for as long as it writes; a second would-be writer gets RunLockedError, and the kernel drops the lock
when its holder dies (kill -9 too), so a stale lock never blocks. Readers take no lock.

Deliberately left out: locks over NFS (flock there depends on the server), detecting a hung worker (a status of
"running" with a stale `updated` is for tinygpt.worker to judge), compression, and any schema beyond the keys
the writer is given. Readers keep memory flat by thinning, never by loading whole files.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import math
import os
import pickle
import re
import secrets
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tinygpt.config import LIVE_MODEL_KNOBS, LIVE_TRAIN_KNOBS
from tinygpt.errors import RunStoreError
from tinygpt.runs.check import clean_index, clean_scores, clean_status, config_problem, valid_event, valid_knob_value

RUN_ID_RE = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
EVENT_KINDS = ("knob", "clip", "nonfinite", "diverged", "state", "checkpoint", "error")
OWNERS = ("app", "cli")
JSONL_FILES = ("metrics", "evals", "events", "samples")

# ---------------------------------------------------------------- run states

# queued -> starting -> running <-> paused -> finished | stopped | diverged | failed (see tinygpt.runs.loop).
STATES = ("queued", "starting", "running", "paused", "finished", "stopped", "diverged", "failed")
ACTIVE_STATES = ("queued", "starting", "running")  # something is (about to be) training: pages keep refreshing
PAUSED_STATES = ("paused", "diverged")  # waiting for a command (a live worker) or resumable as it was (no worker)
FINAL_STATES = ("paused", "finished", "stopped", "diverged", "failed")  # what a worker writes before it exits
ENDED_STATES = ("finished", "stopped", "failed")  # nothing left to do, even if the exit itself was unclean
RESUMABLE_STATES = ("paused", "stopped", "diverged", "failed")  # continue from the newest checkpoint


def check_state(state: Any) -> None:
    """The one validation of a state written to status.json."""
    if state is not None and state not in STATES:
        raise RunStoreError(f"unknown run state {state!r}; expected one of {STATES}.")


# ---------------------------------------------------------------- file names inside a run folder

# The only place the step-numbered names are spelled: 8 digits, so names sort like steps up to 10^8 - 1.
_STEP_NAME = "step_{:08d}"
_SNAPSHOT_FILE_RE = re.compile(r"^step_(\d{8})\.npy$")
_CKPT_FILE_RE = re.compile(r"^step_(\d{8})\.safetensors$")


def checkpoint_stem(run_dir: str | Path, step: int) -> Path:
    """run_dir/checkpoints/step_00000500: add .safetensors or .json (tinygpt.checkpoint writes both)."""
    return Path(run_dir) / "checkpoints" / _STEP_NAME.format(int(step))


def snapshot_name(step: int) -> str:
    """The attention snapshot's file name, as attention/index.json lists it: "step_00000500.npy"."""
    return _STEP_NAME.format(int(step)) + ".npy"


def snapshot_path(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / "attention" / snapshot_name(step)


def list_checkpoints(run_dir: str | Path) -> list[int]:
    """Steps of a run's complete checkpoints, ascending. Complete means both files exist: the .safetensors is
    written first and the .json last (and deleted first), so a save or a delete in progress is never listed."""
    folder = Path(run_dir) / "checkpoints"
    if not folder.is_dir():
        return []
    steps = []
    for path in folder.iterdir():
        m = _CKPT_FILE_RE.match(path.name)
        if m and path.with_suffix(".json").exists():
            steps.append(int(m.group(1)))
    return sorted(steps)


def delete_checkpoint(run_dir: str | Path, step: int) -> None:
    """Remove one checkpoint, the JSON first: from that moment on nobody lists it, even if we die mid-way."""
    stem = checkpoint_stem(run_dir, step)
    stem.with_suffix(".json").unlink(missing_ok=True)
    stem.with_suffix(".safetensors").unlink(missing_ok=True)


# ---------------------------------------------------------------- run ids and atomic files


def new_run_id() -> str:
    """16 URL-safe characters (96 random bits): unguessable, and safe as a folder name on every OS. Never
    starting with "-", which a command line would read as a flag (`--resume -x...`; older ids: `--resume=-x...`)."""
    while (run_id := secrets.token_urlsafe(12)).startswith("-"):
        pass
    return run_id


def validate_run_id(run_id: Any) -> str:
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise RunStoreError(f"{run_id!r} is not a run id: use 8-64 letters, digits, '_' or '-'.")
    return run_id


RUNS_DIR_ENV = "TINYGPT_RUNS_DIR"


def default_root() -> Path:
    return Path(os.environ.get(RUNS_DIR_ENV) or "runs")


def os_error_message(exc: OSError, root: str | Path) -> str:
    """What an OSError while writing under the runs folder `root` means for the user, and what to do."""
    detail = f"[Errno {exc.errno}] {exc.strerror}" if exc.strerror else str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk holding the runs folder {root} is full ({detail}): free some space (delete old runs), retry."
    if Path(root).exists() and not Path(root).is_dir():
        return f"the runs folder {root} is a file, not a folder: set {RUNS_DIR_ENV} (or --runs-dir) to a folder."
    return f"the runs folder {root} is not writable: {detail}; set {RUNS_DIR_ENV} to a folder you can write."


def _json_safe(obj: Any) -> Any:
    """Plain JSON types only: numpy scalars become Python numbers, NaN/inf become null, tuples become lists."""
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def dumps(obj: Any, indent: int | None = None) -> str:
    separators = None if indent else (",", ":")
    try:  # fast path, one metrics line per step: plain data encodes as it is
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=indent, separators=separators)
    except (ValueError, TypeError):  # NaN/inf (ValueError with allow_nan=False) or numpy scalars: clean it first
        return json.dumps(_json_safe(obj), ensure_ascii=False, allow_nan=False, indent=indent, separators=separators)


def _write_atomic(path: Path, write: Callable[[Any], None], fsync: bool = False) -> None:
    """Write through a temp file in the same folder (os.replace is atomic only within one filesystem)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            if fsync:  # only needed to survive power loss, not a crashed process; costs milliseconds per call
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, obj: Any, fsync: bool = False) -> None:
    data = (dumps(obj, indent=2) + "\n").encode("utf-8")
    _write_atomic(Path(path), lambda f: f.write(data), fsync)


def read_json(path: str | Path, default: Any = None) -> Any:
    """The parsed file, or `default` if it does not exist. A corrupt file raises RunStoreError."""
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (FileNotFoundError, NotADirectoryError):  # not there (a "folder" on the way that is a file: not there)
        return default
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise RunStoreError(f"{path} is not valid JSON ({e}); delete the run or fix the file.") from e


def read_events(run_dir: str | Path) -> list[dict]:
    """Every event of a run at once, skipping torn or unparseable lines, for one-off readers (the CLI's listing,
    the Runs table); pages follow events live with a RunReader. events.jsonl stays small: a few lines per knob,
    clip or state."""
    return [e for e in read_jsonl(Path(run_dir) / "events.jsonl") if valid_event(e, EVENT_KINDS)]


def read_evals(run_dir: str | Path) -> list[dict]:
    """Every eval record of a run (one per eval_interval steps: small), for one-off readers like read_events."""
    return read_jsonl(Path(run_dir) / "evals.jsonl")


def read_scores(run_dir: str | Path) -> list[dict]:
    """The head-role score records of a run (attention/scores.jsonl), in step order. A step that is not after the
    one before means the run was rewound (resumed from an earlier checkpoint): the records from that step on are
    abandoned, as RunReader does for metrics."""
    kept: list[dict] = []
    for record in read_jsonl(Path(run_dir) / "attention" / "scores.jsonl"):
        record = clean_scores(record)  # a damaged line is skipped like a torn one (tinygpt.runs.check)
        if record is None:
            continue
        step = record["step"]
        while kept and kept[-1]["step"] >= step:
            kept.pop()
        kept.append(record)
    return kept


def read_jsonl(path: str | Path) -> list[dict]:
    """The records of a small .jsonl file, torn or unparseable lines skipped; [] if it does not exist."""
    try:
        data = Path(path).read_bytes()
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return []
    events = []
    for line in data.decode("utf-8", errors="replace").split("\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            events.append(record)
    return events


# ---------------------------------------------------------------- edits by a process without a live writer


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
    if not (run_dir / "config.json").exists():
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
    if status.get("state") != "running" or not (run_dir / WRITER_LOCK).exists():
        return status
    if writer_lock_holder(run_dir) is not None:
        return status
    checkpoints = list_checkpoints(run_dir)
    pid = _lock_info(run_dir / WRITER_LOCK).get("pid") or status.get("pid")
    who = f" (pid {pid})" if pid else ""
    then = f"resume it to continue from checkpoint {checkpoints[-1]}" if checkpoints else "resuming starts it over"
    reason = f"interrupted at step {status.get('step') or 0}: the process writing it{who} is gone; {then}"
    return {**status, "state": "stopped", "reason": reason, "pid": None}


def recovered_status(run_dir: str | Path, problem: str) -> dict:
    """A status for a run folder from its other files: step = the last step in metrics.jsonl, state "stopped"
    (or "running" while a live writer holds its lock), reason = `problem` and the checkpoint to resume from."""
    run_dir = Path(run_dir)
    checkpoints = list_checkpoints(run_dir)
    try:
        config = read_json(run_dir / "config.json", {}) or {}
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
        "best_val_loss": None,
        "device": None,
        "pid": holder.get("pid") if holder else None,
        "queue_position": None,
        "updated": None,
    }


def last_metric_step(run_dir: str | Path) -> int | None:
    """The step of the last complete record in metrics.jsonl, read from the file's end (a long run's file stays
    unread); None without one."""
    try:
        with open(Path(run_dir) / "metrics.jsonl", "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 65536))  # 64 KiB holds hundreds of step records
            tail = f.read()
    except OSError:
        return None
    for line in reversed(tail.split(b"\n")):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        step = _step(record) if isinstance(record, dict) else None
        if step is not None:
            return int(step)
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
        raise RunLockedError(_locked_message(Path(run_dir), holder))
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


# ---------------------------------------------------------------- one writer per run

WRITER_LOCK = "writer.lock"  # in the run folder: flock'ed (exclusive) by the process writing the run
_HELD_LOCKS: dict[str, WriterLock] = {}  # resolved run folder -> the lock this process holds on it


class RunLockedError(RunStoreError):
    """Another process is writing this run: only one may (the message names it)."""


class WriterLock:
    """The exclusive flock on a run's writer.lock, held from `acquire_writer_lock` until `release` (or the
    holder's death: the kernel drops it with the last file descriptor, so a killed writer leaves no stale lock).
    The file holds the holder's pid, a description and the time, for the refusal message; the lock is the flock,
    not the file, which stays behind."""

    def __init__(self, run_dir: Path, fd: int):
        self.run_dir, self._fd = run_dir, fd

    def release(self) -> None:
        if self._fd is not None:
            _HELD_LOCKS.pop(str(self.run_dir.resolve()), None)
            os.close(self._fd)  # closing the only descriptor of this open file drops the flock
            self._fd = None

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def acquire_writer_lock(run_dir: str | Path, holder: str) -> WriterLock:
    """Become the one writer of a run; RunLockedError (naming who writes it) if another process is, RunStoreError
    if the folder is not writable. `holder` says who we are ("the app's training worker", ...)."""
    run_dir = Path(run_dir)
    path = run_dir / WRITER_LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunStoreError(os_error_message(exc, run_dir.parent)) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EACCES):
            raise RunLockedError(_locked_message(run_dir, _lock_info(path))) from None
        raise RunStoreError(os_error_message(exc, run_dir.parent)) from exc
    info = {"pid": os.getpid(), "holder": holder, "since": time.time()}
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode("utf-8"))
    except OSError:
        pass  # a full disk: the lock holds without its description
    lock = _HELD_LOCKS[str(run_dir.resolve())] = WriterLock(run_dir, fd)
    return lock


def writer_lock_holder(run_dir: str | Path) -> dict | None:
    """Who holds a run's writer lock ({"pid", "holder", "since"}, plus "this_process": True when it is us), or
    None when nobody writes the run. Takes no lock and writes nothing (works on a read-only folder)."""
    run_dir = Path(run_dir)
    path = run_dir / WRITER_LOCK
    held = _HELD_LOCKS.get(str(run_dir.resolve()))
    if held is not None:
        return {**_lock_info(path), "pid": os.getpid(), "this_process": True}
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # no lock file: nobody ever wrote this run under a lock
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a shared lock is refused only while a writer holds it
    except OSError:
        return _lock_info(path) or {"pid": None}
    finally:
        os.close(fd)  # also drops our shared lock at once
    return None


def _lock_info(path: Path) -> dict:
    try:
        info = json.loads(path.read_bytes() or b"{}")
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _locked_message(run_dir: Path, info: dict) -> str:
    who = info.get("holder") or "another process"
    pid = f" (pid {info['pid']})" if info.get("pid") else ""
    return (
        f"run {run_dir.name} is being written by {who}{pid}: only one process may train a run at a time. "
        "Stop it there first (or wait for it to end), or start a new run."
    )


# ---------------------------------------------------------------- the corpus of a run

CORPUS_FILE = "corpus.txt"  # a pasted or uploaded corpus, stored once per run instead of in every config


def corpus_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def store_corpus(run_dir: str | Path, config: dict) -> dict:
    """Move a config's inline text corpus (source "text") into run_dir/corpus.txt and return the config that
    names it instead (data.text "", data.text_sha256 its hash). Other configs come back unchanged. A 20 MB upload
    used to be copied into config.json and every checkpoint's JSON (~100 MB a run) and into every reader's
    memory; now it is on disk once and configs stay a few kB."""
    data = config.get("data") if isinstance(config, dict) else None
    if not isinstance(data, dict) or data.get("source") != "text" or not data.get("text"):
        return config
    text = data["text"]
    digest = corpus_sha256(text)
    path = Path(run_dir) / CORPUS_FILE
    if not path.exists() or corpus_sha256(path.read_bytes().decode("utf-8", errors="replace")) != digest:
        encoded = text.encode("utf-8")
        _write_atomic(path, lambda f: f.write(encoded))
    return {**config, "data": {**data, "text": "", "text_sha256": digest}}


def read_corpus(run_dir: str | Path, sha256: str | None = None) -> str:
    """The text a "text"-source run trains on: its corpus.txt (new runs) or the text inline in its config.json
    (older run folders); "" for other sources. With `sha256` (or the one config.json names), the text must match
    it, else RunStoreError: a corpus.txt edited after the run started is not the text its checkpoints learned."""
    run_dir = Path(run_dir)
    data = (read_json(run_dir / "config.json", {}) or {}).get("data") or {}
    if data.get("source") != "text":
        return ""
    if data.get("text"):
        return data["text"]
    expected = sha256 or data.get("text_sha256") or None
    try:
        text = (run_dir / CORPUS_FILE).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise RunStoreError(
            f"run {run_dir.name} trains on your text, but its {CORPUS_FILE} is missing: put the file back, or "
            "start a new run with the text."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunStoreError(f"{run_dir / CORPUS_FILE} is unreadable ({exc}): start a new run with the text.") from exc
    if expected and corpus_sha256(text) != expected:
        raise RunStoreError(
            f"{run_dir / CORPUS_FILE} is not the text run {run_dir.name} was trained on (sha256 "
            f"{corpus_sha256(text)[:12]}..., expected {expected[:12]}...): put the original back, or start a new run."
        )
    return text


# ---------------------------------------------------------------- knob events read back

# A knob command {"cmd": "knob", "name", "value", "request"} is answered by the loop with one event of kind "knob"
# per knob it changed, all carrying the command's request id (docs/CONTRACTS.md):
#   applied: ok True, knob, old, new, step, message ("lr: 0.001 -> 0.002 at step 5"); old == new when the value
#            was already set, so every command gets an answer; a knob moved along with another (min_lr keeps
#            its ratio to learning_rate) has its own event with coupled_to = the knob that was asked for;
#   refused: ok False, knob, error (the ConfigError text), step, message.
# Run folders from before request ids have applied events only, without "ok" and "request".


def _is_knob(event: Any) -> bool:
    return isinstance(event, dict) and event.get("kind") == "knob" and valid_event(event, EVENT_KINDS)


def knob_changes(events: Iterable[dict]) -> list[dict]:
    """The knob events that changed a value (applied, old != new), in order: chart markers and knob history."""
    return [e for e in events if _is_knob(e) and e.get("ok", True) and e.get("old") != e.get("new")]


def knob_answer(events: Iterable[dict], request: str) -> dict | None:
    """The first knob event answering `request` (a RunManager.set_knob id), or None while none has come.
    Its "ok" says whether it applied ("step"), else "error" says why not."""
    if not request:  # events from commands without an id (older run folders, tests) answer nobody
        return None
    return next((e for e in events if _is_knob(e) and e.get("request") == request), None)


def knobs_now(config: dict, events: Iterable[dict]) -> dict[str, Any]:
    """A run's live knob values now: those in its config.json, then every change in order."""
    model, train = config.get("model") or {}, config.get("train") or {}
    knobs = {k: model.get(k) for k in LIVE_MODEL_KNOBS}
    knobs.update({k: train.get(k) for k in LIVE_TRAIN_KNOBS})
    for event in knob_changes(events):
        if event.get("knob") in knobs and valid_knob_value(event["knob"], event.get("new")):
            knobs[event["knob"]] = event.get("new")
    return knobs


# ---------------------------------------------------------------- who may change a run

# config.json's "learner" is {"id", "name"} of the browser that started the run (tinygpt/ui/room.py): its id is a
# hash of the learner's secret cookie, never the cookie itself. Runs without one (the CLI, older folders) belong
# to nobody in particular: anyone may steer them, as before ownership existed.


@dataclass(frozen=True)
class Actor:
    """Who asks for a change: a learner's public id and name, and whether they hold the instructor key."""

    id: str
    name: str = ""
    instructor: bool = False


def run_learner(config: dict) -> dict:
    """{"id", "name"} of the learner who started a run, or {} for a run nobody owns."""
    learner = (config or {}).get("learner")
    return learner if isinstance(learner, dict) and learner.get("id") else {}


def may_control(config: dict, actor: Actor | None) -> bool:
    """Whether `actor` may pause, resume, step, stop, turn knobs of or delete a run: its owner and the instructor
    may; other learners may watch, compare and sample it. None is the server itself, the CLI or a test."""
    if actor is None or actor.instructor:
        return True
    owner = run_learner(config)
    return not owner or owner["id"] == actor.id


def require_control(config: dict, actor: Actor | None, run_id: str) -> None:
    """RunStoreError unless `actor` may change the run (the manager and the store check before acting)."""
    if not may_control(config, actor):
        name = run_learner(config).get("name") or "another learner"
        raise RunStoreError(
            f"run {run_id} belongs to {name}: you can watch, compare and sample it, but only {name} "
            "or the instructor can change it. Start your own run on Train."
        )


# An instructor's pause of a learner's run is a hold: hold.json in the run folder, written by the server that took
# the pause (not by the worker, so it outlives the worker: a lease release or a server restart keeps it). While it
# is there the learner may watch, stop, or turn knobs, but not resume or step: the room is told to look at the
# projector, and one click must not undo that. The instructor's Resume lifts it.
HOLD_FILE = "hold.json"


def read_hold(run_dir: str | Path) -> dict:
    """{"by", "step", "at"} of the instructor's hold on a run, or {} if none."""
    hold = read_json(Path(run_dir) / HOLD_FILE, None)
    return hold if isinstance(hold, dict) else {}


def write_hold(run_dir: str | Path, by: str, step: int | None = None) -> None:
    write_json_atomic(Path(run_dir) / HOLD_FILE, {"by": by, "step": step, "at": time.time()})


def clear_hold(run_dir: str | Path) -> None:
    try:
        (Path(run_dir) / HOLD_FILE).unlink()
    except FileNotFoundError:
        pass


def holds(config: dict, actor: Actor | None) -> bool:
    """Whether a pause by `actor` is a hold: the instructor pausing a run some learner owns (not their own)."""
    owner = run_learner(config)
    return actor is not None and actor.instructor and bool(owner) and owner["id"] != actor.id


def require_not_held(run_dir: str | Path, actor: Actor | None, run_id: str) -> None:
    """RunStoreError if the instructor holds the run and `actor` is a learner (None, the server itself, and the
    instructor pass)."""
    if actor is None or actor.instructor:
        return
    if read_hold(run_dir):
        raise RunStoreError(
            f"the instructor paused run {run_id} and holds it: only the instructor can resume it (or step it)."
        )


# ---------------------------------------------------------------- the store: a folder of runs


@dataclass(frozen=True)
class RunSummary:
    """One row of the runs table. A broken folder has state "unreadable" and says why in `reason`."""

    run_id: str
    state: str
    reason: str = ""
    step: int = 0
    max_steps: int | None = None
    best_val_loss: float | None = None
    created: float = 0.0
    owner: str = ""
    parent: str | None = None
    config: dict = field(default_factory=dict)


class RunStore:
    def __init__(self, root: str | Path | None = None):
        self.root = Path(root if root is not None else default_root()).expanduser().resolve()

    def path(self, run_id: str) -> Path:
        """The folder of a run; rejects ids that could name anything but a direct child of root."""
        candidate = self.root / validate_run_id(run_id)
        # The regex already forbids '/', '..' and absolute paths; resolving also catches a symlink leading out.
        if candidate.resolve().parent != self.root:
            raise RunStoreError(f"run {run_id!r} points outside the runs folder {self.root}.")
        return candidate

    def exists(self, run_id: str) -> bool:
        return self.path(run_id).is_dir()

    def create(self, config: dict, owner: str, parent: str | None = None) -> RunWriter:
        """A new run folder with config.json and a "queued" status, then a writer for it. An inline text corpus
        goes to corpus.txt (`store_corpus`). A runs folder that cannot be written raises RunStoreError saying so."""
        if owner not in OWNERS:
            raise RunStoreError(f"owner must be one of {OWNERS}, got {owner!r}.")
        if parent is not None:
            validate_run_id(parent)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # Build the folder under a hidden name and rename it into place, so list_runs never sees a run
            # that has no config.json yet (hidden names never match RUN_ID_RE).
            staging = Path(tempfile.mkdtemp(dir=self.root, prefix=".new-"))
        except OSError as exc:
            raise RunStoreError(os_error_message(exc, self.root)) from exc
        run_id = new_run_id()
        try:
            config = store_corpus(staging, config)
            created = time.time()
            write_json_atomic(
                staging / "config.json",
                {**config, "run_id": run_id, "created": created, "owner": owner, "parent": parent},
            )
            max_steps = (config.get("train") or {}).get("max_steps")
            status = {"state": "queued", "reason": "waiting for a worker", "step": 0, "max_steps": max_steps}
            status.update(tokens_per_s=None, best_val_loss=None, device=None, pid=None, queue_position=None)
            write_json_atomic(staging / "status.json", {**status, "updated": created})
            os.rename(staging, self.path(run_id))
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, OSError):
                raise RunStoreError(os_error_message(exc, self.root)) from exc
            raise
        return RunWriter(self.path(run_id))

    def writer(self, run_id: str, **kwargs: Any) -> RunWriter:
        return RunWriter(self._existing(run_id), **kwargs)

    def reader(self, run_id: str, **kwargs: Any) -> RunReader:
        return RunReader(self._existing(run_id), **kwargs)

    def delete(self, run_id: str, actor: Actor | None = None, wait_s: float = 0.0) -> None:
        """Delete a run folder. Refused (RunLockedError, naming the process) while another process writes the
        run: deleting under a live CLI run killed it with a misleading "not writable". `wait_s` gives a worker
        that was just told to stop that long to checkpoint and let go of the lock."""
        path = self._existing(run_id)
        require_control(read_json(path / "config.json", {}) or {}, actor, run_id)
        deadline = time.monotonic() + wait_s
        while (holder := writer_lock_holder(path)) is not None and not holder.get("this_process"):
            if time.monotonic() >= deadline:
                who = holder.get("holder") or "another process"
                pid = f" (pid {holder['pid']})" if holder.get("pid") else ""
                raise RunLockedError(
                    f"run {run_id} is being written by {who}{pid}: stop it there first, then delete it."
                )
            time.sleep(0.05)
        if path.is_symlink():  # remove the link, never what it points to
            path.unlink()
        else:
            shutil.rmtree(path)

    def list_runs(self) -> list[RunSummary]:
        """Every run folder, newest first. Never raises for a broken run: it is listed as "unreadable"."""
        if not self.root.is_dir():
            return []
        runs = []
        for entry in self.root.iterdir():
            if RUN_ID_RE.match(entry.name) and entry.is_dir():
                runs.append(_summarize(entry))
        return sorted(runs, key=lambda r: r.created, reverse=True)

    def _existing(self, run_id: str) -> Path:
        path = self.path(run_id)
        if not path.is_dir():
            raise RunStoreError(f"there is no run {run_id!r} in {self.root}.")
        return path


def _summarize(run_dir: Path) -> RunSummary:
    try:
        config = read_json(run_dir / "config.json")
        if not isinstance(config, dict):
            raise RunStoreError("config.json is missing or not an object")
        if problem := config_problem(config, sections=False):  # every listing names it (Runs, Sample, Room)
            raise RunStoreError(f"config.json is damaged: {problem}")
        status = interrupted(run_dir, trusted_status(run_dir, read_status(run_dir)))  # broken: what the folder knows
        return RunSummary(
            run_id=run_dir.name,
            state=str(status.get("state", "unknown")),
            reason=str(status.get("reason") or ""),
            step=int(status.get("step") or 0),
            max_steps=status.get("max_steps"),
            best_val_loss=status.get("best_val_loss"),
            created=float(config.get("created") or 0.0),
            owner=str(config.get("owner") or ""),
            parent=config.get("parent"),
            config=config,
        )
    except (OSError, ValueError, TypeError) as e:  # RunStoreError is a ValueError
        try:
            created = run_dir.stat().st_mtime
        except OSError:
            created = 0.0
        return RunSummary(run_id=run_dir.name, state="unreadable", reason=str(e), created=created)


# ---------------------------------------------------------------- writer (the training worker's side)


class RunWriter:
    """Publishes one run. Reopening an existing folder (a resumed worker) continues where it left off."""

    def __init__(self, run_dir: str | Path, max_snapshots: int = 64):
        if max_snapshots < 4:  # retention keeps the early phase, the newest and a spread in between
            raise RunStoreError(f"max_snapshots must be >= 4, got {max_snapshots}.")
        self.run_dir = Path(run_dir)
        self.run_id = self.run_dir.name
        self.max_snapshots = max_snapshots
        self._status: dict = read_status(self.run_dir)  # a broken status.json is replaced by the next write
        self._files: dict[str, Any] = {}
        self._attn_dir = self.run_dir / "attention"
        self._attn_index: dict = self._read_index()
        self._remove_orphan_snapshots()

    def _read_index(self) -> dict:
        """attention/index.json; a corrupt one is rebuilt from the snapshot files there (none is deleted)."""
        try:
            index = read_json(self._attn_dir / "index.json", {}) or {}
        except RunStoreError:
            index = None
        if isinstance(index, dict) and isinstance(index.get("snapshots", []), list):
            return index
        files = sorted(p.name for p in self._attn_dir.iterdir() if _SNAPSHOT_FILE_RE.match(p.name))
        snapshots = [{"step": int(_SNAPSHOT_FILE_RE.match(f).group(1)), "file": f} for f in files]
        return {"probe_text": "", "tokens": [], "snapshots": snapshots}

    def write_config(self, config: dict) -> None:
        """Merge keys into config.json (e.g. vocab and num_params once the worker knows them); identity stays."""
        current = read_json(self.run_dir / "config.json", {}) or {}
        identity = {k: current[k] for k in ("run_id", "created", "owner", "parent") if k in current}
        write_json_atomic(self.run_dir / "config.json", {**current, **config, **identity})

    def write_status(self, **fields: Any) -> None:
        check_state(fields.get("state"))
        self._status.update(fields, updated=time.time())
        write_status_file(self.run_dir, self._status)

    def append_metric(self, record: dict) -> None:
        self._append("metrics", {"time": time.time(), **record})

    def append_eval(self, record: dict) -> None:
        self._append("evals", {"time": time.time(), **record})  # when the eval ended: time to quality reads it

    def append_event(self, record: dict) -> None:
        if record.get("kind") not in EVENT_KINDS:
            raise RunStoreError(f"unknown event kind {record.get('kind')!r}; expected one of {EVENT_KINDS}.")
        self._append("events", {"time": time.time(), **record})

    def append_sample(self, record: dict) -> None:
        self._append("samples", record)

    def _append(self, name: str, record: dict) -> None:
        f = self._files.get(name)
        if f is None:
            path = self.run_dir / f"{name}.jsonl"
            f = self._files[name] = open(path, "ab")
            # A killed writer may have left a torn last line; end it so our first record starts on a fresh
            # line (the torn one stays unparseable and readers skip it, instead of it swallowing our record).
            if path.stat().st_size > 0:
                with open(path, "rb") as r:
                    r.seek(-1, os.SEEK_END)
                    if r.read(1) != b"\n":
                        f.write(b"\n")
        # One write of one whole line, then flush: a reader sees a complete line or a not-yet-complete tail.
        f.write((dumps(record) + "\n").encode("utf-8"))
        f.flush()

    def write_attention(
        self, step: int, weights: Any, probe_text: str, tokens: list[str], horizon: int | None = None
    ) -> None:
        """Save one (L, H, T, T) attention snapshot as float16 and drop old ones so max_snapshots remain, by
        `retained_steps`: the early phase whole (the first min(300 steps, 10% of `horizon`, the run's
        max_steps)), the rest log-spaced to now."""
        array = np.asarray(weights, dtype=np.float16)  # float16 halves the disk cost; weights are in [0, 1]
        if array.ndim != 4 or array.shape[2] != array.shape[3] or array.shape[3] != len(tokens):
            raise RunStoreError(f"attention must be (L, H, T, T) with T = {len(tokens)} tokens, got {array.shape}.")
        self._attn_dir.mkdir(exist_ok=True)
        name = snapshot_name(step)
        _write_atomic(self._attn_dir / name, lambda f: np.save(f, array, allow_pickle=False))
        snapshots = [s for s in self._attn_index.get("snapshots", []) if s["step"] != int(step)]
        snapshots = sorted(snapshots + [{"step": int(step), "file": name}], key=lambda s: s["step"])
        keep = set(retained_steps([snap["step"] for snap in snapshots], self.max_snapshots, horizon=horizon))
        dropped = [snap for snap in snapshots if snap["step"] not in keep]
        snapshots = [snap for snap in snapshots if snap["step"] in keep]
        self._attn_index = {"probe_text": probe_text, "tokens": list(tokens), "snapshots": snapshots}
        write_json_atomic(self._attn_dir / "index.json", self._attn_index)
        # Delete only after the index stops naming them, so a reader following the index rarely misses a file.
        for s in dropped:
            (self._attn_dir / s["file"]).unlink(missing_ok=True)

    def append_scores(self, record: dict) -> None:
        """One line of attention/scores.jsonl: a snapshot's head-role scores (tinygpt.circuits.snapshot_scores, with
        its "step"). A few hundred bytes each, so every one is kept, thinned snapshots' included."""
        self._attn_dir.mkdir(exist_ok=True)
        self._append("attention/scores", record)

    def _remove_orphan_snapshots(self) -> None:
        """A worker killed between saving a snapshot and rewriting the index leaves a file nobody lists."""
        if not self._attn_dir.is_dir():
            return
        listed = {s.get("file") for s in self._attn_index.get("snapshots", [])}
        for p in self._attn_dir.iterdir():
            if _SNAPSHOT_FILE_RE.match(p.name) and p.name not in listed:
                p.unlink(missing_ok=True)

    def close(self) -> None:
        for f in self._files.values():
            try:
                f.close()
            except OSError:  # a full disk: the line that did not fit is lost, the file stays whole-line
                pass
        self._files.clear()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


DENSE_STEPS = 300  # the first steps are where heads form: every snapshot and checkpoint of them is kept ...
DENSE_FRACTION = 0.1  # ... up to this fraction of the run, whichever ends first
DENSE_SHARE = 0.75  # the dense phase may fill this much of the budget (only a cadence of a few steps needs that)


def retained_steps(
    steps: list[int], budget: int, keep_recent: int = 1, horizon: int | None = None, pinned: Iterable[int] = ()
) -> list[int]:
    """Which of `steps` (snapshot or checkpoint steps) to keep so that at most `budget` remain, plus `pinned`.

    The early phase is kept whole: every step up to min(DENSE_STEPS, DENSE_FRACTION x `horizon`), at any run length
    (thinned evenly only if it alone would take more than DENSE_SHARE of the budget: a cadence of a few steps). The
    newest `keep_recent` are always kept (resume and "now" want them), and so are `pinned` steps (checkpoints
    around a knob change or a divergence, so each can be opened later; the newest `budget` of them, on top of the
    budget). The rest of the budget is log-spaced after the dense phase (`_log_spaced`): as many in each doubling
    of the step as the budget allows, so a 100,000-step run still shows how steps 300-3,000 went. `horizon` is the
    run's max_steps, known from the start, so the dense phase is decided before its steps could have been dropped;
    without it, DENSE_STEPS.
    """
    steps = sorted(set(steps))
    pins = sorted(set(pinned) & set(steps))[-budget:]
    if len(steps) <= budget + len(pins):
        return steps
    recent = steps[-keep_recent:] if keep_recent else []
    kept = set(recent) | set(pins)
    dense_until = DENSE_STEPS if horizon is None else min(DENSE_STEPS, DENSE_FRACTION * horizon)
    early = [s for s in steps if s <= dense_until and s not in kept]
    room = budget - len(recent)
    if len(early) > int(DENSE_SHARE * room):  # a very dense schedule: keep the early phase even, the first step always
        early = _evenly(early, int(DENSE_SHARE * room))
    later = [s for s in steps if s > dense_until and s not in kept]
    gaps = [b - a for a, b in zip(steps, steps[1:], strict=False) if b > a]
    cadence = max(1, min(set(gaps), key=lambda g: (-gaps.count(g), g))) if gaps else 1  # the usual interval
    spread = _log_spaced(later, max(dense_until, cadence), room - len(early), cadence)
    return sorted(kept | set(early) | set(spread))


PINNED_EVENTS = ("knob", "nonfinite", "diverged")  # events whose checkpoints stay: a knob change, a divergence


def event_checkpoints(steps: Iterable[int], events: Iterable[dict]) -> list[int]:
    """The checkpoint steps around each event that matters (an applied knob change, a non-finite step, a loss that
    diverged): the newest at or before it (the model as it was) and the first after it (what the change did).
    Both stay the same as the run goes on, once pinned (retained_steps' `pinned`)."""
    steps = sorted(set(steps))
    out: set[int] = set()
    for event in events:
        if event.get("kind") not in PINNED_EVENTS or event.get("ok") is False:  # a refused knob changed nothing
            continue
        try:
            at = int(event["step"])
        except (KeyError, TypeError, ValueError):
            continue
        out.update([s for s in steps if s <= at][-1:] + [s for s in steps if s > at][:1])
    return sorted(out)


def _log_spaced(steps: list[int], start: float, count: int, cadence: int) -> list[int]:
    """At most `count` of the sorted `steps` (all after `start`), log-spaced: in the k-th doubling after `start`
    ([start 2^k, start 2^(k+1))) the multiples of stride x 2^k, the stride being the run's cadence doubled as often
    as needed. Whether a step is kept depends only on the step and the stride, and the stride only grows as the
    run does, so a kept step stays kept until the stride doubles past it (targets chosen afresh at every write
    would point at steps already deleted, drifting into uneven gaps)."""
    if count <= 0 or not steps:
        return []
    octave = {s: 2 ** max(0, math.floor(math.log2(s / start))) for s in steps}
    stride = cadence
    while True:
        kept = [s for s in steps if s % (stride * octave[s]) == 0]
        if len(kept) <= count:
            return kept
        stride *= 2


def _evenly(steps: list[int], count: int) -> list[int]:
    """At most `count` of the sorted `steps`, evenly spread: the multiples of the smallest stride that fits, the
    stride being the run's usual interval doubled as often as needed. A kept step stays kept while the run grows
    until the stride doubles past it, so the retained set is stable from one write to the next (choosing the
    nearest to fresh targets at every write drifted into uneven gaps)."""
    if count <= 0 or not steps:
        return []
    if len(steps) <= count:
        return list(steps)
    gaps = [b - a for a, b in zip(steps, steps[1:], strict=False) if b > a]
    stride = max(1, min(set(gaps), key=lambda g: (-gaps.count(g), g)))  # the most common interval
    while True:
        kept = [s for s in steps if s % stride == 0]
        if len(kept) <= count:
            return kept or steps[:1]
        stride *= 2


# ---------------------------------------------------------------- reader (the app's side)


def _step(record: dict) -> float | None:
    step = record.get("step")
    return step if isinstance(step, (int, float)) and not isinstance(step, bool) else None


class ThinnedSeries:
    """Records in step order in bounded memory: the last `recent` at full resolution, older ones every k-th
    record (k doubles whenever the old part fills up), the very first record always kept.

    A record whose step is not after the last one means the run was rewound (a worker resumed from an earlier
    checkpoint), so the records from that step on are dropped and the series continues from there.
    """

    def __init__(self, max_points: int = 4000, recent: int = 1000):
        if recent < 1 or max_points < recent + 2:
            raise ValueError(f"need 1 <= recent <= max_points - 2, got recent={recent}, max_points={max_points}.")
        self.max_points, self.recent = max_points, recent
        self._old: list[tuple[int, dict]] = []  # (arrival index, record), index a multiple of the stride
        self._recent: deque[tuple[int, dict]] = deque()
        self._stride = 1
        self._count = 0
        self._last_step: float | None = None

    def append(self, record: dict) -> None:
        step = _step(record)
        if step is not None:
            if self._last_step is not None and step <= self._last_step:
                self._rewind_to(step)
            self._last_step = step
        self._recent.append((self._count, record))
        self._count += 1
        if len(self._recent) > self.recent:
            index, moved = self._recent.popleft()
            if index % self._stride == 0:
                self._old.append((index, moved))
                if len(self._old) > self.max_points - self.recent:
                    self._stride *= 2
                    self._old = [(i, r) for i, r in self._old if i % self._stride == 0]

    def _rewind_to(self, step: float) -> None:
        for part in (self._recent, self._old):
            while part and (_step(part[-1][1]) is not None and _step(part[-1][1]) >= step):
                part.pop()
            if part:  # the newest kept record is before `step`, so the older part is too
                return

    @property
    def records(self) -> list[dict]:
        return [r for _, r in self._old] + [r for _, r in self._recent]

    def __len__(self) -> int:
        return len(self._old) + len(self._recent)


class _JsonlTail:
    """Follows one append-only .jsonl file by byte offset, handing out complete lines only."""

    CHUNK = 1 << 22  # read at most 4 MiB at a time, so catching up on a long run keeps memory flat

    def __init__(self, path: Path):
        self.path, self.offset, self.inode, self.skipped = path, 0, None, 0

    def poll(self, on_reset: Callable[[], None], on_record: Callable[[dict], None]) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self.inode is None:
                return False
            self.offset, self.inode = 0, None
            on_reset()
            return True
        changed = False
        if st.st_ino != self.inode or st.st_size < self.offset:  # replaced or truncated: start over
            if self.inode is not None:
                on_reset()
                changed = True
            self.offset, self.inode = 0, st.st_ino
        if st.st_size == self.offset:
            return changed
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            pending = b""  # bytes from self.offset on that do not yet end in a newline
            while chunk := f.read(self.CHUNK):
                data = pending + chunk
                end = data.rfind(b"\n")
                if end < 0:
                    pending = data
                    continue
                # Decode whole lines at once (faster than per line; no UTF-8 character is cut at a newline);
                # errors='replace' confines a bad byte to its own line, which then fails to parse and is skipped.
                for line in data[:end].decode("utf-8", errors="replace").split("\n"):
                    changed |= self._parse(line, on_record)
                self.offset += end + 1
                pending = data[end + 1 :]
        return changed

    def _parse(self, line: str, on_record: Callable[[dict], None]) -> bool:
        if not line.strip():
            return False
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            self.skipped += 1
            return False
        on_record(record)
        return True


class RunReader:
    """A live, incremental view of one run folder. Call `poll()` often; it reads only what is new."""

    EVENTS_RECENT = 2000
    EVENTS_KEPT_KINDS = ("knob", "nonfinite", "diverged", "state")  # rare and meaningful: kept even when old
    EVENTS_KEPT_MAX = 10_000  # a cap so even a pathological run cannot grow memory without bound
    SAMPLES_RECENT = 200

    def __init__(self, run_dir: str | Path, max_points: int = 4000):
        self.run_dir = Path(run_dir)
        self.run_id = self.run_dir.name
        self.max_points = max_points
        self.version = 0
        self.attention_version = 0
        self._tails = {name: _JsonlTail(self.run_dir / f"{name}.jsonl") for name in JSONL_FILES}
        self._signatures: dict[str, tuple | None] = {}
        self._config: dict = {}
        self._status: dict = {}
        self._attn_index: dict = {}
        for name in JSONL_FILES:
            self._reset(name)
        self.poll()

    def _reset(self, name: str) -> None:
        if name == "metrics":
            self._metrics = ThinnedSeries(self.max_points, min(1000, self.max_points // 4))
        elif name == "evals":
            self._evals = ThinnedSeries(self.max_points, min(1000, self.max_points // 4))
        elif name == "events":
            self._event_seq = 0
            self._events_recent: deque = deque(maxlen=self.EVENTS_RECENT)
            self._events_kept: deque = deque(maxlen=self.EVENTS_KEPT_MAX)
        else:
            self._samples: deque = deque(maxlen=self.SAMPLES_RECENT)

    def _add_event(self, record: dict) -> None:
        if not valid_event(record, EVENT_KINDS):  # damaged: skipped like a torn line (tinygpt.runs.check)
            return
        item = (self._event_seq, record)
        self._event_seq += 1
        self._events_recent.append(item)
        if record.get("kind") in self.EVENTS_KEPT_KINDS:
            self._events_kept.append(item)

    def poll(self) -> bool:
        """Read what was appended or replaced since the last poll; True (and `version` + 1) if anything was."""
        changed = False
        sinks = {
            "metrics": lambda r: self._metrics.append(r),
            "evals": lambda r: self._evals.append(r),
            "events": self._add_event,
            "samples": lambda r: self._samples.append(r),
        }
        for name, tail in self._tails.items():
            changed |= tail.poll(lambda name=name: self._reset(name), sinks[name])
        for name, attr in (("config.json", "_config"), ("status.json", "_status")):
            if self._refresh(self.run_dir / name, attr):
                changed = True
        if self._refresh(self.run_dir / "attention" / "index.json", "_attn_index"):
            self.attention_version += 1
        if changed:
            self.version += 1
        return changed

    def _refresh(self, path: Path, attr: str) -> bool:
        """Re-read an atomically replaced JSON file when its (inode, mtime, size) changed."""
        try:
            st = os.stat(path)
            signature = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            signature = None
        known = str(path) in self._signatures
        if known and signature == self._signatures[str(path)]:
            return False
        if not known and signature is None and attr != "_status":  # not there yet: nothing changed
            self._signatures[str(path)] = None
            return False
        try:
            value = read_json(path, {})
        except RunStoreError:
            if attr != "_status" or self._status:
                return False  # keep what we had; the next rewrite will fix it
            value = None
        self._signatures[str(path)] = signature
        if attr == "_status" and (signature is None or not isinstance(value, dict) or not value):
            value = read_status(self.run_dir)  # no status.json: what the folder itself says (read_status)
        if attr == "_status" and isinstance(value, dict):
            value = trusted_status(self.run_dir, value)
        elif attr == "_config" and self._config and not config_problem(self._config) and config_problem(value):
            return False  # damaged after a good read: keep the config every page was drawn with
        elif attr == "_attn_index":
            value = clean_index(value)
        setattr(self, attr, value if isinstance(value, dict) else {})
        return True

    @property
    def skipped_lines(self) -> int:
        return sum(t.skipped for t in self._tails.values())

    def config(self) -> dict:
        return self._config

    def status(self) -> dict:
        return interrupted(self.run_dir, self._status)  # a killed writer leaves "running" in its file

    @property
    def metrics(self) -> list[dict]:
        return self._metrics.records

    @property
    def evals(self) -> list[dict]:
        return self._evals.records

    @property
    def events(self) -> list[dict]:
        merged = dict(self._events_kept)
        merged.update(self._events_recent)
        return [merged[seq] for seq in sorted(merged)]

    @property
    def samples(self) -> list[dict]:
        return list(self._samples)

    def attention_index(self) -> dict:
        return self._attn_index

    def load_attention(self, step: int) -> np.ndarray:
        # The file name is built from the step, never taken from the index, so a bad index cannot point elsewhere.
        path = snapshot_path(self.run_dir, step)
        try:
            array = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise RunStoreError(f"no attention snapshot for step {step} (it may have been thinned out).") from None
        except (ValueError, OSError, EOFError, pickle.UnpicklingError) as exc:  # pickled, truncated, not .npy
            raise RunStoreError(
                f"the attention snapshot of step {step} is damaged ({type(exc).__name__}: {exc}); pick another step."
            ) from None
        if not isinstance(array, np.ndarray) or array.ndim != 4:
            raise RunStoreError(f"the attention snapshot of step {step} is not (L, H, T, T); pick another step.")
        return array.astype(np.float32)

    def checkpoints(self) -> list[int]:
        """Steps with a complete checkpoint (see `list_checkpoints`)."""
        return list_checkpoints(self.run_dir)


def columns(records: Iterable[dict], keys: Iterable[str | tuple[str, ...]]) -> dict[Any, list]:
    """Records to columns for charts: {key: [value per record]}, None where missing. A tuple key reaches into
    nested dicts, e.g. ("layer_grad_norms", "L0.attn") (group names contain dots, so no dotted paths)."""
    keys, records = list(keys), list(records)
    out: dict[Any, list] = {}
    for key in keys:
        path = key if isinstance(key, tuple) else (key,)
        values = []
        for record in records:
            value: Any = record
            for part in path:
                value = value.get(part) if isinstance(value, dict) else None
            values.append(value)
        out[key] = values
    return out
