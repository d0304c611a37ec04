"""The run folder: how a training worker publishes a run and how the app reads it live.

A training worker (another process) owns a `RunWriter`; every app page owns a `RunReader` that polls the same
folder. The folder is the only channel between them, so its format (v1, defined in docs/CONTRACTS.md) is simple:

    runs/<run_id>/                  run_id matches ^[A-Za-z0-9_-]{8,64}$ and resolves to a folder inside runs/
      config.json                   atomic: the RunConfig, run_id, created, owner, parent, learner, vocab, num_params
                                    (and a branch's "branch": its step and changes, tinygpt.runs.branch)
      status.json                   atomic, rewritten often: state, reason, step, max_steps, tokens_per_s, ...
      metrics.jsonl                 one JSON object per line per step: step, time, loss, lr, grad_norm, ...
      evals.jsonl                   step, val_loss (train_loss, its batches at the last step), val_batch_losses, ...
      events.jsonl                  step, time, kind (knob|clip|nonfinite|state|checkpoint|error), message, ...
      samples.jsonl                 step, prompt, text
      attention/index.json          atomic: probe_text, tokens, snapshots [{step, file}]
      attention/step_%08d.npy       float16 (num_layers, num_heads, T, T), thinned to ~64 snapshots
      attention/scores.jsonl        one line per snapshot step, never thinned: head-role scores (tinygpt.inside.heads)
      checkpoints/step_%08d.safetensors (+ .json), written by tinygpt.checkpoint
      corpus.txt                    a pasted or uploaded corpus (UTF-8), stored once; configs name it by sha256
      writer.lock                   flock'ed by the one process writing the run, as long as it writes
      hold.json                     atomic, by the app server: the instructor paused a learner's run (a hold)

This module is the folder of runs as a whole (`RunStore`: create, list, open, delete). Each part of one run's
folder has a module of its own in tinygpt/runs/: `files` (the names, run states, atomic JSON and JSON lines),
`lock` (one writer per run), `corpus` (corpus.txt), `status` (status.json, trusted only with its writer alive),
`owners` (who may control a run, the instructor's hold), `knobs` (knob events read back), `retention` (which
snapshots and checkpoints stay), `writer` (RunWriter) and `reader` (RunReader). Everybody else (loop, worker, CLI,
app, charts) calls these.

Deliberately left out: locks over NFS (flock there depends on the server), detecting a hung worker (a status of
"running" with a stale `updated` is for tinygpt.runs.scheduler to judge), compression, and any schema beyond the keys
the writer is given. Readers keep memory flat by thinning, never by loading whole files."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import upgrade_config_dict
from ..errors import RunStoreError
from .check import config_problem
from .corpus import store_corpus
from .files import (
    CONFIG_FILE,
    OWNERS,
    RUN_ID_RE,
    default_root,
    json_copy,
    memo_by_file,
    new_run_id,
    os_error_message,
    parsed_json,
    read_config_json,
    write_json_atomic,
)
from .lock import RunLockedError, writer_lock_holder
from .owners import Actor, require_control
from .reader import RunReader
from .status import interrupted, read_status, trusted_status
from .writer import RunWriter


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


def validate_run_id(run_id: Any) -> str:
    """`run_id` if it can name a run (RUN_ID_RE); RunStoreError saying what a run id is otherwise. Here, where the
    run's folder is looked up (RunStore.path): the app checks an id from the URL with the same rule."""
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise RunStoreError(f"{run_id!r} is not a run id: use 8-64 letters, digits, '_' or '-'.")
    return run_id


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

    def create(
        self, config: dict, owner: str, parent: str | None = None, fill: Callable[[Path], None] | None = None
    ) -> RunWriter:
        """A new run folder with config.json and a "queued" status, then a writer for it. An inline text corpus
        goes to corpus.txt (`store_corpus`). A runs folder that cannot be written raises RunStoreError saying so.
        `fill` writes more into the folder before anyone can list it (a branch's copied history); what it raises
        leaves no folder behind."""
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
                staging / CONFIG_FILE,
                {**config, "run_id": run_id, "created": created, "owner": owner, "parent": parent},
            )
            max_steps = (config.get("train") or {}).get("max_steps")
            status = {"state": "queued", "reason": "waiting for a worker", "step": 0, "max_steps": max_steps}
            status.update(tokens_per_s=None, best_val_loss=None, device=None, pid=None, queue_position=None)
            write_json_atomic(staging / "status.json", {**status, "updated": created})
            if fill is not None:
                fill(staging)
            os.rename(staging, self.path(run_id))
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, OSError):
                raise RunStoreError(os_error_message(exc, self.root)) from exc
            raise
        return RunWriter(self.path(run_id))

    def writer(self, run_id: str, **kwargs: Any) -> RunWriter:
        return RunWriter(self.existing(run_id), **kwargs)

    def reader(self, run_id: str, **kwargs: Any) -> RunReader:
        return RunReader(self.existing(run_id), **kwargs)

    def delete(self, run_id: str, actor: Actor | None = None, wait_s: float = 0.0) -> None:
        """Delete a run folder. Refused (RunLockedError, naming the process) while another process writes the
        run: deleting under a live CLI run killed it with a misleading "not writable". `wait_s` gives a worker
        that was just told to stop that long to checkpoint and let go of the lock."""
        path = self.existing(run_id)
        require_control(read_config_json(path), actor, run_id)
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

    def existing(self, run_id: str) -> Path:
        """The folder of a run that exists; RunStoreError for a bad id or no such run. Public so that a caller who
        goes on to read the folder (the app's ?run= link: its owner, then a reader) looks it up once."""
        path = self.path(run_id)
        if not path.is_dir():
            raise RunStoreError(f"there is no run {run_id!r} in {self.root}.")
        return path


def _checked_config(path: Path) -> tuple[dict, str]:
    """(config.json in today's layout, what is wrong with it or ""): RunStoreError when it is missing or not an
    object. Kept per file by list_runs (memo_by_file): the check builds a RunConfig, 40% of a listing's time."""
    config = parsed_json(path)  # the one read config.json's other memo (read_config_json) shares
    if not isinstance(config, dict):
        raise RunStoreError("config.json is missing or not an object")
    config = upgrade_config_dict(config)  # an older file's lab switches, under "model", where they live now
    return config, config_problem(config, sections=False)


def _summarize(run_dir: Path) -> RunSummary:
    try:
        config, problem = memo_by_file(run_dir / CONFIG_FILE, "checked", _checked_config)
        if problem:  # every listing names it (Runs, Sample, Room)
            raise RunStoreError(f"config.json is damaged: {problem}")
        config = json_copy(config)  # the memo's own stays as read
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
