"""The one resume rule, for the app's scheduler and the CLI alike: a run continues from its newest checkpoint that
loads (or from a checkpoint asked for), or starts over when it has none (a run that failed while starting); only
while no other process writes it; only with its config.json and corpus.txt intact. Nothing in the run folder is
changed here, so a refused resume leaves the run as it was."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ..config import RunConfig
from ..errors import TinyGPTError
from .corpus import read_corpus
from .files import list_checkpoints, read_config
from .lock import RunLockedError, locked_message, writer_lock_holder
from .status import read_status

LATEST = (
    -1
)  # resume_from=LATEST: the newest complete checkpoint that loads (tinygpt.runs.loop falls back past broken ones)


@dataclass
class ResumePlan:
    config: RunConfig  # the run's config, max_steps as asked
    resume_from: int | str | None  # a checkpoint step, LATEST, or None: start over
    said: str  # why it resumes as it does, for status.json: "resuming from its newest checkpoint (step 500)"
    trained: int  # the furthest step the run reached (its status or its newest checkpoint)
    state: str | None  # its status.json's state when planned ("finished", "stopped", ...)


def plan_resume(run_dir: str | Path, max_steps: int | None = None, from_step: int | None = None) -> ResumePlan:
    """How run_dir would resume. RunLockedError while another process writes it; TinyGPTError for an unusable
    config.json or corpus.txt, or a `from_step` with no checkpoint."""
    run_dir = Path(run_dir)
    holder = writer_lock_holder(run_dir)
    if holder is not None:
        raise RunLockedError(locked_message(run_dir, holder))
    try:
        config = read_config(run_dir)
        if config.data.source == "text":
            read_corpus(run_dir, config.data.text_sha256 or None)  # RunStoreError: corpus.txt missing or edited
    except TinyGPTError as exc:
        raise TinyGPTError(f"{exc}: run {run_dir.name} cannot be resumed; start a new run instead.") from None
    if max_steps is not None:  # through the config's checks (the table of limits), not around them
        config.train = dataclasses.replace(config.train, max_steps=int(max_steps))
    steps = list_checkpoints(run_dir)
    status = read_status(run_dir)
    trained, state = max([int(status.get("step") or 0), *steps[-1:]]), status.get("state")
    if from_step is not None:
        if from_step not in steps:
            raise TinyGPTError(f"run {run_dir.name} has no checkpoint at step {from_step}; it has {steps}.")
        return ResumePlan(config, from_step, f"resuming from checkpoint {from_step}", trained, state)
    if steps:
        return ResumePlan(config, LATEST, f"resuming from its newest checkpoint (step {steps[-1]})", trained, state)
    return ResumePlan(config, None, "starting over: it has no checkpoint", trained, state)
