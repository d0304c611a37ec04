"""Who owns a run and what an actor may do with it: control it (the learner who started it, the instructor, nobody
for a run another process writes), open a link to it, and the instructor's hold (hold.json), which the learner
cannot undo. Plain rules of the run's config.json (its owner part: read_owner) and an Actor, tested without an app.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import RunStoreError, TinyGPTError
from .files import HOLD_FILE, read_config_json, read_json, write_json_atomic

INSTRUCTOR = "the instructor"  # who owns a run no learner started


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


def read_owner(run_dir: str | Path) -> dict:
    """Who owns a run, from its config.json alone: {"owner", "learner"} as written ({} when the file is missing or
    damaged: whoever reads it whole says what is wrong). The light read for deciding who may change a run
    (may_control) without building a RunReader: a refused link, the Runs page's pick, a lesson's setup."""
    try:
        config = read_config_json(run_dir)
    except RunStoreError:
        return {}
    return {key: config[key] for key in ("owner", "learner") if key in config}


def may_control(config: dict, actor: Actor | None) -> bool:
    """Whether `actor` may pause, resume, step, stop, turn knobs of or delete a run: its owner and the instructor
    may; other learners may watch, compare and sample it. A run no learner owns (trained from the command line,
    prepared before class, or one whose config.json is damaged) is the instructor's: read-only to every learner,
    whatever its state. None is the server itself, the CLI or a test."""
    if actor is None or actor.instructor:
        return True
    owner = run_learner(config)
    return bool(owner) and owner["id"] == actor.id


def may_open_link(owner: dict, actor: Actor | None, view: bool = False) -> bool:
    """Whether a ?run= link opens that run in `actor`'s session, decided on the run's owner part (read_owner):
    a run they may change (may_control), the instructor's (no learner owns it: CLI-trained, prepared; or the
    instructor started it, the lecture run), which opens read-only, or any run with ?view=1 (`view`: a share,
    read-only). A link to another learner's run, copied from their address bar, opens the actor's own session
    instead: a learner's run on their own pasted text is theirs to share."""
    learner = run_learner(owner)
    return view or may_control(owner, actor) or not learner or bool(learner.get("instructor"))


class NotYourRunError(RunStoreError):
    """A learner asked to change another learner's run; `owner` is that learner's name, for the page's words."""

    def __init__(self, run_id: str, owner: str):
        self.owner = owner
        who = f"only {owner} or the instructor can" if owner != INSTRUCTOR else "only the instructor can"
        why = " (no learner started it: it was trained from the command line or prepared for the class)"
        super().__init__(
            f"run {run_id} belongs to {owner}{why if owner == INSTRUCTOR else ''}: you can watch, compare and sample "
            f"it, but {who} change or delete it. Start your own run on Train."
        )


def require_control(config: dict, actor: Actor | None, run_id: str) -> None:
    """NotYourRunError unless `actor` may change the run (the manager and the store check before acting)."""
    if not may_control(config, actor):
        raise NotYourRunError(run_id, run_learner(config).get("name") or INSTRUCTOR)


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


def require_app_owned(run_id: str, config: dict) -> None:
    """The app writes only into runs it started: a CLI or torchrun run belongs to that process (or its user)."""
    owner = config.get("owner", "app")
    if owner != "app":
        raise TinyGPTError(
            f"run {run_id} was trained from the command line (owner {owner!r}); the app shows it read-only. "
            f"Continue it there: python -m tinygpt train --resume {run_id}"
        )
