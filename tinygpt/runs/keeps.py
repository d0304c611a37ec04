"""Checkpoints a viewer is about to branch from, kept from the run's retention for a while (`keeps.json`).

A training run keeps only some of its checkpoints (tinygpt.runs.retention): the newest few, log-spaced older ones.
The branch panel opens on the newest, and three saves later retention could delete it: the panel moved to another
step under a learner's typed learning rate, and "Start the branch" made a branch of a step they had not chosen (a
review, twice). The panel now writes the step it shows here, with a time it is kept until; the worker pins every
step whose time has not passed when it prunes. A lost write (two viewers at once) is made again at the panel's next
draw, so the file needs no lock; a stale entry only keeps a checkpoint a little longer.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import RunStoreError
from .files import read_json, write_json_atomic

KEEPS_FILE = "keeps.json"  # in the run folder: {"<step>": unix time the checkpoint is kept until}
KEEP_FOR_S = 1800.0  # half an hour after the panel last showed it: long enough to read, type and press Start


def _read(path: Path) -> dict:
    """The keeps, or {} for a missing, unreadable or corrupt file (a torn write from a crashed server)."""
    try:
        keeps = read_json(path, {})
    except (RunStoreError, OSError):
        return {}
    return keeps if isinstance(keeps, dict) else {}


def kept_checkpoints(run_dir: str | Path, now: float | None = None) -> list[int]:
    """The steps whose keep has not expired at `now` (unreadable or malformed entries are skipped: a keep is a
    courtesy, never a reason for a training run to fail)."""
    now = time.time() if now is None else now
    out = []
    for step, until in _read(Path(run_dir) / KEEPS_FILE).items():
        if isinstance(until, (int, float)) and until > now and str(step).isdigit():
            out.append(int(step))
    return sorted(out)


def keep_checkpoint(run_dir: str | Path, step: int, now: float | None = None, keep_for_s: float = KEEP_FOR_S) -> None:
    """Keep `step`'s checkpoint until `keep_for_s` from `now`, dropping expired keeps. A read-only runs folder (a
    shared run on a read-only disk) keeps nothing and says nothing: the panel still works while the step exists."""
    now = time.time() if now is None else now
    path = Path(run_dir) / KEEPS_FILE
    keeps = {step: until for step, until in _read(path).items() if isinstance(until, (int, float)) and until > now}
    until = now + keep_for_s
    if keeps.get(str(step), 0) >= until - 60:  # written in the last minute: a rerun need not write the file again
        return
    keeps[str(step)] = until
    try:
        write_json_atomic(path, keeps)
    except OSError:
        pass
