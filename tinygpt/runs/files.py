"""The run folder's layout: its file names, run ids, run states, and the atomic JSON and JSON-lines files it is made of.

See tinygpt/runs/store.py for the whole folder as a picture. Two rules make a live reader safe without locks: whole
files are replaced atomically (a temp file in the same folder, then os.replace, which readers see as old-or-new,
never half), and .jsonl files only grow, one complete line per write, so a reader consumes only whole lines.
Non-finite floats (a diverged loss) are written as null: NaN is not JSON and a strict reader would reject the line.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..config import RunConfig, upgrade_config_dict
from ..errors import RunStoreError, TinyGPTError
from .check import clean_scores, valid_event

RUN_ID_RE = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
EVENT_KINDS = ("knob", "clip", "nonfinite", "diverged", "state", "checkpoint", "error")
OWNERS = ("app", "cli")
JSONL_FILES = ("metrics", "evals", "events", "samples")
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


# The only place the step-numbered names are spelled: 8 digits, so names sort like steps up to 10^8 - 1.
_STEP_NAME = "step_{:08d}"
SNAPSHOT_FILE_RE = re.compile(r"^step_(\d{8})\.npy$")
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


def new_run_id() -> str:
    """16 URL-safe characters (96 random bits): unguessable, and safe as a folder name on every OS. Never
    starting with "-", which a command line would read as a flag (`--resume -x...`; older ids: `--resume=-x...`)."""
    while (run_id := secrets.token_urlsafe(12)).startswith("-"):
        pass
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


def write_atomic(path: Path, write: Callable[[Any], None], fsync: bool = False) -> None:
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
    write_atomic(Path(path), lambda f: f.write(data), fsync)


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


WRITER_LOCK = "writer.lock"  # in the run folder: flock'ed (exclusive) by the process writing the run
CORPUS_FILE = "corpus.txt"  # a pasted or uploaded corpus, stored once per run instead of in every config
# An instructor's pause of a learner's run is a hold: hold.json in the run folder, written by the server that took
# the pause (not by the worker, so it outlives the worker: a lease release or a server restart keeps it). While it
# is there the learner may watch, stop, or turn knobs, but not resume or step: the room is told to look at the
# projector, and one click must not undo that. The instructor's Resume lifts it.
HOLD_FILE = "hold.json"


def record_step(record: dict) -> float | None:
    step = record.get("step")
    return step if isinstance(step, (int, float)) and not isinstance(step, bool) else None


CONFIG_FILE = "config.json"  # the run's RunConfig plus who and what it is (IDENTITY_KEYS)
# Not RunConfig fields. "branch": a branch's step and changes (tinygpt.runs.branch), beside its "parent".
IDENTITY_KEYS = ("run_id", "created", "owner", "parent", "learner", "vocab", "num_params", "branch")


# Pages that refresh every second or three (Room with 20 learners' runs, Runs, the sidebar's names) read every
# run's config.json three times a refresh (RunStore.list_runs, store_names, read_owner), though it is written once
# when the run is created and once more when its worker knows the vocabulary (RunWriter.write_config). So what is
# read from it is kept per file and per `what`, and reused while the file's (inode, size, mtime_ns) stays the same:
# a refresh then stats each file and reads only the ones that changed. Whole-file writes are atomic replaces
# (write_json_atomic: a new inode), so a rewrite is never missed; an in-place edit is seen by its size or mtime.
_FILE_MEMO: dict[tuple[str, str], tuple[tuple[int, int, int], Any]] = {}
_FILE_MEMO_LOCK = threading.Lock()  # each learner's session is a thread of the one server: the eviction iterates
FILE_MEMO_SIZE = 4096  # entries (three per run): a server's runs folder, deleted runs' entries pushed out oldest first


def file_signature(path: str | Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime_ns) of a file, or None when it is not there: what tells a rewrite from the same file."""
    try:
        st_ = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st_.st_ino, st_.st_size, st_.st_mtime_ns


def memo_by_file(path: str | Path, what: str, compute: Callable[[Path], Any]) -> Any:
    """compute(path), computed again only once the file changed (`file_signature`); a missing file and whatever
    compute raises are never kept. The value is shared by every caller: hand out copies (`json_copy`). The stat
    comes before the read, so a file replaced in between is kept under its old signature: read again next time,
    never stale."""
    path = Path(path)
    signature, key = file_signature(path), (str(path), what)
    kept = _FILE_MEMO.get(key)
    if signature is not None and kept is not None and kept[0] == signature:
        return kept[1]
    value = compute(path)
    if signature is not None:
        with _FILE_MEMO_LOCK:
            _FILE_MEMO.pop(key, None)  # re-inserted last: the dict's order is the order entries were refreshed in
            _FILE_MEMO[key] = (signature, value)
            while len(_FILE_MEMO) > FILE_MEMO_SIZE:
                _FILE_MEMO.pop(next(iter(_FILE_MEMO)))
    return value


def json_copy(value: Any) -> Any:
    """A copy of a parsed JSON tree (dicts, lists, scalars), so a caller may change what a memo shares: ~6 us for a
    config.json, half of reading and parsing it again and a third of copy.deepcopy."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


def parsed_json(path: str | Path) -> Any:
    """read_json(path) through `memo_by_file`: the one read of a file that several memos of it derive from (shared:
    do not change it)."""
    return memo_by_file(path, "json", read_json)


def _config_json(path: Path) -> dict:
    data = parsed_json(path)
    return upgrade_config_dict(data) if isinstance(data, dict) else {}


def read_config_json(run_dir: str | Path) -> dict:
    """config.json as written, identity keys included, in today's layout (an older file's lab switches moved from
    "model" to "interventions": config.upgrade_config_dict); {} when it is missing or not a JSON object. Read again
    only when the file changed (`memo_by_file`); a fresh copy each call."""
    return json_copy(memo_by_file(Path(run_dir) / CONFIG_FILE, "config", _config_json))


def read_config(run_dir: str | Path) -> RunConfig:
    """The run's RunConfig from its config.json: the one way back from a run folder to a config (the resume plan
    of the scheduler and the CLI, the admission check, the loop of a worker, which is passed no config).
    TinyGPTError saying what is wrong for a missing, damaged or invalid file."""
    try:
        data = read_json(Path(run_dir) / CONFIG_FILE, None)
        if not isinstance(data, dict):
            raise TinyGPTError("config.json is missing or not an object")
        return RunConfig.from_dict({k: v for k, v in data.items() if k not in IDENTITY_KEYS})
    except TinyGPTError as exc:
        raise TinyGPTError(f"run {Path(run_dir).name}'s config.json is unusable ({exc})") from None
