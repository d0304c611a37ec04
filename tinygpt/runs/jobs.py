"""A run in the scheduler's hands, and the phases it passes through (`Job.phase`, read from its fields; the moves
allowed between them are `TRANSITIONS`, and the slots check each move they make with `Job.moving`):

    queued     waiting for a slot, or given one the monitor has not started yet (`process` None, not `launching`)
    launching  holds a slot; the monitor is starting its worker process (`launching`)
    live       its worker trains, pauses or steps, and takes commands (a `process`, alive, not asked to end)
    leaving    asked to end (`stop_requested`, or `released`: checkpoint and exit) or already dead, not yet reaped
    reaped     gone from the scheduler's hands (`reaped`): its process ended, or it never got one; its run's
               status says why. A job is never used again: a restart (a followup) is a new Job

Each job has a priority class (issue 35): LIVE for a run a person starts and waits for (Train, the lecture run),
PREPARED for runs started ahead of need (the lesson's Prepare, a lab batch). The queue serves LIVE jobs first, the
instructor's runs ahead of the learners' within a class, then FIFO (`seq`); a LIVE job that finds every slot held by
PREPARED runs takes one from the newest of them (tinygpt.runs.slots: preemption), which resumes from its checkpoint
ahead of the other prepared runs.

A command that arrives while a job is leaving is kept as its `followup`: what to start once the process has ended
(resume or step: a new worker from the newest checkpoint, or from `from_step`).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..errors import TinyGPTError

LIVE = "live"  # a person started it and waits for it
PREPARED = "prepared"  # started ahead of need: it may wait, or give its slot to a live run
PRIORITIES = (LIVE, PREPARED)  # in the order the queue serves them


class Phase(Enum):
    """Where a job is between the queue and the end of its worker process (the module's docstring says each)."""

    QUEUED = "queued"
    LAUNCHING = "launching"
    LIVE = "live"
    LEAVING = "leaving"
    REAPED = "reaped"


# Which phase may follow which. Staying in a phase is no move (a second release of a leaving job).
TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    # the monitor starts it; or it leaves the queue for good (stopped, paused, its lease ran out, shutdown)
    Phase.QUEUED: frozenset({Phase.LAUNCHING, Phase.REAPED}),
    # its process started (already asked to stop, or already dead: leaving); or it could not start
    Phase.LAUNCHING: frozenset({Phase.LIVE, Phase.LEAVING, Phase.REAPED}),
    # stop, release (lease, eviction, preemption, a time budget, shutdown), or the process died
    Phase.LIVE: frozenset({Phase.LEAVING}),
    # the monitor reaps the ended process
    Phase.LEAVING: frozenset({Phase.REAPED}),
    Phase.REAPED: frozenset(),  # final: a restart is a new Job
}


class PhaseError(AssertionError):
    """A move between phases that TRANSITIONS does not allow: a bug in the scheduler, not a learner's doing (so an
    AssertionError, never a TinyGPTError that a page would show as advice)."""


def check_transition(run_id: str, before: Phase, after: Phase) -> None:
    """Raise PhaseError unless `after` may follow `before` (the same phase is no move)."""
    if after != before and after not in TRANSITIONS[before]:
        allowed = ", ".join(sorted(p.value for p in TRANSITIONS[before])) or "nothing: it is final"
        raise PhaseError(f"job {run_id}: {before.value} -> {after.value} is not allowed; {before.value} -> {allowed}")


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
    launching: bool = False  # holds a slot and the monitor is starting its process
    reaped: bool = False  # gone from the scheduler's hands (its process reaped, or it never got one)
    launched: float | None = None  # time.monotonic() when its worker process started (its slot's clock)
    position: int | None = None  # queue position last written to status.json
    said: str = ""  # and the reason written with it (why it waits: what is ahead of it)
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
    endless: bool = False  # it trains until stopped: once it holds a slot, no time frees that slot

    @property
    def rank(self) -> tuple[int, int, int]:
        """The queue's sort key: class first, then the instructor's runs (the lecture, the lesson's runs) before
        the learners' within it, then FIFO."""
        return PRIORITIES.index(self.priority), 0 if self.learner.get("instructor") else 1, self.seq

    @property
    def phase(self) -> Phase:
        """Its phase, read from its fields (the module's docstring)."""
        if self.reaped:
            return Phase.REAPED
        if self.process is None:
            return Phase.LAUNCHING if self.launching else Phase.QUEUED
        if self.stop_requested or self.on_its_way_out:
            return Phase.LEAVING
        return Phase.LIVE

    @contextmanager
    def moving(self) -> Iterator[None]:
        """Around a change of its fields: the phase it leaves and the one it reaches must be a move TRANSITIONS
        allows (PhaseError otherwise; checked unless Python runs with -O, as an assert is)."""
        before = self.phase if __debug__ else None
        yield
        if __debug__:
            check_transition(self.run_id, before, self.phase)

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


# ---------------------------------------------------------------- one slot stays with the prepared runs


def learners_live(job: Job) -> bool:
    """A learner's live run (not the instructor's, and not one no learner owns: the CLI's, the server's)."""
    return job.priority == LIVE and bool(job.learner.get("id")) and not job.learner.get("instructor")


def prepared_starved(queue: list[Job], holding: list[Job], slots: int) -> Job | None:
    """Prepared runs wait and none holds a slot, on a machine of two or more, while every slot is held: the
    learner's live run that yields its slot to them (the newest, the least work lost), or None. A review saw a
    learner's until-stopped Lecture run take the second slot beside the instructor's, and the lesson's 21 prepared
    runs did not start for 8 minutes: one slot stays with them."""
    if slots < 2 or len(holding) < slots or not _prepared_wait(queue, holding):
        return None
    yielding = [j for j in holding if learners_live(j) and j.launched is not None and j.phase == Phase.LIVE]
    return max(yielding, key=lambda j: j.rank) if yielding else None


def next_index(queue: list[Job], holding: list[Job], slots: int) -> int:
    """The queue's first job for a free slot, except that a learner's live run leaves the last free slot to waiting
    prepared runs when none holds one (the instructor's live runs go first as always)."""
    if slots >= 2 and slots - len(holding) == 1 and learners_live(queue[0]) and _prepared_wait(queue, holding):
        return next(i for i, j in enumerate(queue) if j.priority == PREPARED)
    return 0


def _prepared_wait(queue: list[Job], holding: list[Job]) -> bool:
    return any(j.priority == PREPARED for j in queue) and not any(j.priority == PREPARED for j in holding)


def start_order(
    queue: list[Job], holding: list[tuple[Job, float]], slots: int, length: Callable[[Job], float]
) -> list[tuple[Job, float]]:
    """The queued jobs (in rank order) in the order they will start, each with when (seconds from now; math.inf:
    never, behind slots that only a person frees), by replaying `next_index` as the slots free up: the scheduler's
    own choice decides the order, not a second copy of it. `holding`: (job, seconds until its slot frees) of every
    job holding a slot; `length(job)`: the seconds a queued job holds its slot once started (math.inf for one that
    trains until stopped). A review saw a learner told "position 1, starts in about 14 s" while 15 prepared runs
    started ahead of it (the last free slot is theirs): the queue's order alone is not the order of starting."""
    queue, tie = list(queue), itertools.count()
    running: list[tuple[float, int, Job]] = []  # (when its slot frees, tie-break, job): a heap
    for job, ends in holding:
        heapq.heappush(running, (ends, next(tie), job))
    now, order = 0.0, []
    while queue:
        while queue and len(running) < slots:  # fill the free slots one at a time, as Slots._schedule does
            job = queue.pop(next_index(queue, [j for _, _, j in running], slots))
            order.append((job, now))
            heapq.heappush(running, (now + length(job), next(tie), job))
        if not queue:
            break
        now = running[0][0]
        if math.isinf(now):  # every slot trains until stopped: the rest start when a person frees one
            return order + [(job, math.inf) for job in queue]
        while running and running[0][0] <= now:  # slots freeing at once are filled together
            heapq.heappop(running)
    return order
