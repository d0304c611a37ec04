"""RunWriter: how a training process publishes a run into its folder (config once, status often, one JSON line
per step, attention snapshots thinned to a budget), holding the run's writer lock.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import RunStoreError
from .files import (
    CONFIG_FILE,
    EVENT_KINDS,
    SNAPSHOT_FILE_RE,
    check_state,
    dumps,
    read_config_json,
    read_json,
    snapshot_name,
    write_atomic,
    write_json_atomic,
)
from .retention import retained_steps
from .status import read_status, write_status_file


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
        files = sorted(p.name for p in self._attn_dir.iterdir() if SNAPSHOT_FILE_RE.match(p.name))
        snapshots = [{"step": int(SNAPSHOT_FILE_RE.match(f).group(1)), "file": f} for f in files]
        return {"probe_text": "", "tokens": [], "snapshots": snapshots}

    def write_config(self, config: dict) -> None:
        """Merge keys into config.json (e.g. vocab and num_params once the worker knows them); identity stays."""
        # A read-modify-write on purpose (issue 21 looked at dropping it): the identity (run_id, created, owner,
        # parent, learner) lives only in this file, written by RunStore.create in the server's process, while this
        # writer is a fresh one in the worker's, holding a RunConfig that has none of it. Carrying it here instead
        # would thread a dict through worker_main -> run_training -> _Loop for every caller, to save one read of a
        # few kB once per new run (never per step). Only this run's writer writes config.json after create (it
        # holds the writer lock), so the read cannot race another write.
        current = read_config_json(self.run_dir)
        identity = {k: current[k] for k in ("run_id", "created", "owner", "parent") if k in current}
        write_json_atomic(self.run_dir / CONFIG_FILE, {**current, **config, **identity})

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
        self,
        step: int,
        weights: Any,
        probe_text: str,
        tokens: list[str],
        horizon: int | None = None,
        pin: Callable[[list[int]], Iterable[int]] | None = None,
    ) -> None:
        """Save one (L, H, T, T) attention snapshot as float16 and drop old ones so max_snapshots remain, by
        `retained_steps`: the early phase whole (the first min(300 steps, 10% of `horizon`, the run's
        max_steps)), the rest log-spaced to now, and those `pin(steps)` names on top (the loop's
        runs.moments.Moments.pins: around a knob change, a divergence, inside the phase change)."""
        array = np.asarray(weights, dtype=np.float16)  # float16 halves the disk cost; weights are in [0, 1]
        if array.ndim != 4 or array.shape[2] != array.shape[3] or array.shape[3] != len(tokens):
            raise RunStoreError(f"attention must be (L, H, T, T) with T = {len(tokens)} tokens, got {array.shape}.")
        self._attn_dir.mkdir(exist_ok=True)
        name = snapshot_name(step)
        write_atomic(self._attn_dir / name, lambda f: np.save(f, array, allow_pickle=False))
        snapshots = [s for s in self._attn_index.get("snapshots", []) if s["step"] != int(step)]
        snapshots = sorted(snapshots + [{"step": int(step), "file": name}], key=lambda s: s["step"])
        steps = [snap["step"] for snap in snapshots]
        pinned = pin(steps) if pin is not None else ()
        keep = set(retained_steps(steps, self.max_snapshots, horizon=horizon, pinned=pinned))
        dropped = [snap for snap in snapshots if snap["step"] not in keep]
        snapshots = [snap for snap in snapshots if snap["step"] in keep]
        self._attn_index = {"probe_text": probe_text, "tokens": list(tokens), "snapshots": snapshots}
        write_json_atomic(self._attn_dir / "index.json", self._attn_index)
        # Delete only after the index stops naming them, so a reader following the index rarely misses a file.
        for s in dropped:
            (self._attn_dir / s["file"]).unlink(missing_ok=True)

    def append_scores(self, record: dict) -> None:
        """One line of attention/scores.jsonl: a snapshot's head-role scores (tinygpt.inside.heads.snapshot_scores, with
        its "step"). A few hundred bytes each, so every one is kept, thinned snapshots' included."""
        self._attn_dir.mkdir(exist_ok=True)
        self._append("attention/scores", record)

    def _remove_orphan_snapshots(self) -> None:
        """A worker killed between saving a snapshot and rewriting the index leaves a file nobody lists."""
        if not self._attn_dir.is_dir():
            return
        listed = {s.get("file") for s in self._attn_index.get("snapshots", [])}
        for p in self._attn_dir.iterdir():
            if SNAPSHOT_FILE_RE.match(p.name) and p.name not in listed:
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


def write_failure(run_dir: Path, writer: RunWriter | None, step: int | None, reason: str, trace: str) -> None:
    """Say why a run failed, as far as the disk lets us: an error event and status.json. `step` None leaves
    status.json's step as it was (a resume that could not start must not reset a long run to step 0)."""
    own = writer is None
    writer = writer if writer is not None else RunWriter(run_dir)
    try:
        writer.append_event({"step": step or 0, "kind": "error", "message": reason, "traceback": trace})
    except OSError:
        pass  # a full disk: status.json below can still be rewritten in place
    fields = {"step": step} if step is not None else {}
    try:
        writer.write_status(state="failed", reason=reason, **fields)
    except RunStoreError:
        print(f"tinygpt: run {Path(run_dir).name} {reason} (and status.json could not be written)", file=sys.stderr)
    if own:
        writer.close()
