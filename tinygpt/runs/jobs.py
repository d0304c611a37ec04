"""A run in the scheduler's hands, and the phases it passes through (read from its process and two flags):

    queued     in the queue, no process (`process` None, not `launching`)
    launching  holds a slot; the monitor is starting its worker process
    live       its worker trains, pauses or steps, and takes commands
    leaving    asked to end (`stop` or `release`: checkpoint and exit) or already dead, not yet reaped
    (reaped)   the process ended: the job is gone, and its run's status says why

Each job has a priority class (issue 35): LIVE for a run a person starts and waits for (Train, the lecture run),
PREPARED for runs started ahead of need (the lesson's Prepare, a lab batch). The queue serves LIVE jobs first, the
instructor's runs ahead of the learners' within a class, then FIFO (`seq`); a LIVE job that finds every slot held by
PREPARED runs takes one from the newest of them (tinygpt.runs.slots: preemption), which resumes from its checkpoint
ahead of the other prepared runs.

A command that arrives while a job is leaving is kept as its `followup`: what to start once the process has ended
(resume or step: a new worker from the newest checkpoint, or from `from_step`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import TinyGPTError

LIVE = "live"  # a person started it and waits for it
PREPARED = "prepared"  # started ahead of need: it may wait, or give its slot to a live run
PRIORITIES = (LIVE, PREPARED)  # in the order the queue serves them


class NoWorkerError(TinyGPTError):
    """A command for a live worker (a knob change) reached a run that has none and is not queued for one: it has
    ended. Its own class, so that a page asking the manager once can tell "nothing to change" from a refusal."""


@dataclass
class Followup:
    """What a resume or step asked of a worker on its way out: start the run again once it has exited."""

    commands: list  # sent to the new worker (e.g. pause, then step n)
    from_step: int | None = None  # continue from this checkpoint (resume(from_step=...)), else the newest
    even_if_failed: bool = False  # the worker had already died when asked: restart whatever state it left


@dataclass
class Job:
    """One run the scheduler is responsible for, from the queue to the end of its worker process."""

    run_id: str
    resume_from: int | None  # a checkpoint step, LATEST, or None: start over
    touched: float  # time.monotonic() of the last touch(): the lease counts from it
    max_steps: int | None = None  # train to this step (a resume that extends the run); None: as config.json says
    commands: list = field(default_factory=list)  # sent once the process exists
    process: Any = None
    conn: Any = None
    launching: bool = False
    launched: float | None = None  # time.monotonic() when its worker process started (its slot's clock)
    position: int | None = None  # queue position last written to status.json
    stop_requested: bool = False  # stop() was called: the run must end "stopped"
    released: bool = False  # asked to checkpoint and exit (lease, eviction, shutdown, a resume from a step)
    deadline: float | None = None  # kill the process if it is still alive then
    killed_as: tuple[str, str] | None = None  # (state, reason) to record if it has to be killed
    followup: Followup | None = None  # what to start once it has exited
    # config.json's "learner" ({"id", "name"}; {} for a run nobody owns), taken when the job was made (start: the
    # actor; a resume: the config.json it reads anyway), so the manager's permission check of every command, a
    # knob dragged included, reads it here rather than config.json from disk. Only create writes "learner".
    learner: dict = field(default_factory=dict)
    priority: str = LIVE  # LIVE or PREPARED: the queue serves LIVE jobs first
    seq: int = 0  # its place in the FIFO of its class (the manager numbers jobs as they are queued)

    @property
    def rank(self) -> tuple[int, int, int]:
        """The queue's sort key: class first, then the instructor's runs (the lecture, the lesson's runs) before
        the learners' within it, then FIFO."""
        return PRIORITIES.index(self.priority), 0 if self.learner.get("instructor") else 1, self.seq

    @property
    def dead(self) -> bool:
        """Its process has ended but the monitor has not reaped it yet (a command sent now would be lost)."""
        return self.process is not None and not self.process.is_alive()

    @property
    def on_its_way_out(self) -> bool:
        """Released (it checkpoints and exits) or already dead: a resume or step now becomes its followup."""
        return self.released or self.dead

    def follow_with(self, commands: list, from_step: int | None = None) -> None:
        """Once this worker has exited, start the run again with `commands` (from `from_step`, else the newest
        checkpoint); a worker that had already died restarts whatever state it left."""
        before = self.followup or Followup([])
        from_step = from_step if from_step is not None else before.from_step  # a resume from a step stays asked
        self.followup = Followup(list(commands), from_step, self.dead or before.even_if_failed)
