"""When each queued run will start, and why it waits: the order comes from replaying the scheduler's own choice
(tinygpt.runs.jobs.start_order over next_index), the times from the runs' measured pace. A review saw learners
told "position 1 in the queue, starts in about 14 s" while 15 of the lesson's prepared runs started ahead of them
(with two slots, the last free one is the prepared runs' while they wait): their first step came 248 s later.

`start_times` orders the queue (Slots publishes the positions, its times only a ranking when nothing is
measured); `queue_forecast` adds seconds from each run's steps left at its own pace (status.json's tokens/s),
a run that has no pace yet at the measured runs' mean seconds per GFLOP times its own step's GFLOP
(`seconds_a_step`), and says how many of each class start first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..config import trains_until_stopped
from ..errors import RunStoreError
from ..flops import train_flops_per_step
from .files import read_config, read_config_json
from .jobs import PREPARED, Job, start_order
from .status import read_status


def unit(job: Job) -> float:
    """A run's time in a slot when nothing is measured: one unit, or for good if it trains until stopped."""
    return math.inf if job.endless else 1.0


def start_times(
    jobs: list[Job],
    queue: list[Job],
    slots: int,
    left: Callable[[Job], float] | None = None,
    length: Callable[[Job], float] | None = None,
) -> list[tuple[Job, float]]:
    """The queued jobs in the order they will start, each with when (seconds from now; math.inf: not unless a
    person stops a run). `jobs`: those holding slots; `left(job)`: seconds until a training job's slot frees;
    `length(job)`: seconds a queued job will hold one (both `unit` when not given). A job on its way out frees its
    slot now; one that comes back (a preempted run, its followup) queues again in its old place, and is in the
    order too: it starts before the runs behind it."""
    left, length = left or unit, length or unit
    holding, back = [], []
    for job in jobs:
        leaving = job.on_its_way_out or job.stop_requested
        holding.append((job, 0.0 if leaving else left(job)))
        if leaving and job.followup is not None and not job.stop_requested:
            back.append(job)
    return start_order(sorted([*queue, *back], key=lambda j: j.rank), holding, slots, length)


def changed_places(order: list[tuple[Job, float]], queue: list[Job], slots: int) -> list[tuple[Job, int, str]]:
    """(job, position, reason) of each queued job whose place in `order` (start_times) or reason changed since
    its status.json last said them (Slots writes these); each job remembers what it was told."""
    changed, queued = [], {j.run_id for j in queue}
    for position, (job, starts) in enumerate(order, start=1):
        if job.run_id not in queued:
            continue  # preempted, on its way back to the queue: it counts ahead of the runs after it
        reason = queued_reason(job, [j for j, _ in order[: position - 1]], starts, slots)
        if (job.position, job.said) != (position, reason):
            job.position, job.said = position, reason
            changed.append((job, position, reason))
    return changed


def queued_reason(job: Job, ahead: list[Job], starts: float, slots: int) -> str:
    """Why a queued run waits (status.json's reason), from the runs that start before it."""
    reason = f"waiting for a free training slot ({slots} run(s) train at once)"
    if job.priority == PREPARED:
        reason += "; live runs go first"
        # jobs.next_index keeps one slot for them: "live runs go first" alone read wrong beside a learner's live run
        # that waited for prepared ones (a review)
        if slots >= 2:
            reason += ", but one slot is the prepared runs' while they wait"
    elif prepared := sum(j.priority == PREPARED for j in ahead):
        reason += (
            f"; the {prepared} prepared run(s) ahead of it start first: while prepared runs wait, the last free "
            # What can change that, said: a review's learners were told so, then started before 3 of them when the
            # lecture run paused (a prepared run held the other slot, so the freed one was theirs: next_index)
            "slot is theirs (a live run that ends or pauses while one of them trains frees a slot for this one)"
        )
    if math.isinf(starts):  # a run that trains until stopped may take a slot yet: one ahead, when a run ends
        later = any(j.endless for j in ahead)  # (a review: "every slot holds" beside a 3,000-step prepared run)
        reason += (f"; every slot {'is or will be held by' if later else 'holds'} a run that trains until stopped"
                   f"{' (one ahead of it takes the slot the next run to end frees)' if later else ''}: it starts "
                   "when one of them is stopped")  # fmt: skip
    return reason


_COSTS: dict[str, float | None] = {}  # run id -> GFLOP a training step: its model and batch never change


def step_cost(store: Any, run_id: str) -> float | None:
    """GFLOP of one training step of the run (flops.train_flops_per_step of its model and batch), None for a
    config that cannot be read."""
    if run_id not in _COSTS:
        try:
            config = read_config(store.path(run_id))
            _COSTS[run_id] = train_flops_per_step(config.model, config.train.batch_size) / 1e9
        except (RunStoreError, OSError, ValueError, TypeError):
            return None
    return _COSTS[run_id]


def seconds_a_step(paces: dict[str, float], costs: dict[str, float | None]) -> Callable[[str], float | None]:
    """Seconds a step of each run: its own measured pace (`paces`, steps a second), else a line through the
    measured runs' (GFLOP a step, seconds a step): a fixed part (the loop's calls, its records) plus seconds per
    GFLOP (`step_line`), at its own GFLOP a step (`costs`). The lesson's prepared runs differ 15x in a step's work
    (the scaling pair's 256-wide layer against the pitfalls' 2x64 at context 16): at the mean of the measured steps,
    a review's instructor read "ready in about 66 min" for runs done 12 minutes later, the first one timed being the
    widest; at the seconds per GFLOP alone, another read "about 15 min" for runs done in 3, the two 3,000-step
    induction runs (0.34 and 0.67 GFLOP a step) counted at 67 and 133 ms a step, measured 33 and 41: at these sizes
    a step's fixed part is most of it. None where nothing is measured."""
    timed = [(costs[rid], 1 / pace) for rid, pace in paces.items() if pace and costs.get(rid)]
    mean_step = [1 / pace for pace in paces.values() if pace]
    line = step_line(timed)
    fallback = sum(mean_step) / len(mean_step) if mean_step else None

    def seconds(run_id: str) -> float | None:
        if paces.get(run_id):
            return 1 / paces[run_id]
        cost = costs.get(run_id)
        return line[0] + line[1] * cost if line is not None and cost else fallback

    return seconds


def step_line(timed: list[tuple[float, float]]) -> tuple[float, float] | None:
    """(fixed seconds, seconds per GFLOP) of a step, fitted by least squares to the timed runs' (GFLOP, seconds)
    a step, neither negative (pure). Runs of one size alone cannot tell the two parts apart: then all of it is
    taken as work (seconds per GFLOP, the fixed part 0), which understates a smaller run's step and overstates a
    wider one's. None with nothing timed."""
    if not timed:
        return None
    n = len(timed)
    mean_c, mean_s = sum(c for c, _ in timed) / n, sum(s for _, s in timed) / n
    spread = sum((c - mean_c) ** 2 for c, _ in timed)
    per_gflop_alone = sum(c * s for c, s in timed) / sum(c * c for c, _ in timed)  # the line through zero
    if spread <= 1e-12 * max(1.0, mean_c**2):  # one size: nothing to split the step by
        return 0.0, per_gflop_alone
    slope = sum((c - mean_c) * (s - mean_s) for c, s in timed) / spread
    if slope <= 0:  # bigger steps measured no slower (the load moved): a fixed step, the timed runs' mean
        return mean_s, 0.0
    fixed = mean_s - slope * mean_c
    if fixed < 0:  # a line through zero fits best among those with no negative part
        return 0.0, per_gflop_alone
    return fixed, slope


def queue_forecast(
    store: Any, jobs: list[Job], queue: list[Job], slots: int, measured: dict[str, float] | None = None
) -> dict[str, dict]:
    """{run id: {"position", "prepared", "prepared_ahead", "live_ahead", "seconds"}} for every queued job (`jobs`
    hold the `slots`): its place in the order of starting, whether it is prepared itself, how many prepared and
    live runs start before it, and in how many seconds it starts (math.inf: not until a person stops a run; None:
    no run has a pace yet, so no number would be true). `measured`: steps a second of runs timed over seconds of
    training (RunManager's marks, kept after a run ends), taken before status.json's tokens/s, which is one step's
    and swung 9-215 steps/s between steps (a review's estimate jumped 49 s -> 14 s -> 33 s, and was 3.5x short)."""
    measured = measured or {}
    steps = {job.run_id: _steps_left(store, job) for job in [*jobs, *queue]}
    steps = {rid: (left, measured.get(rid) or pace) for rid, (left, pace) in steps.items()}
    paces = {**{rid: pace for rid, (_, pace) in steps.items() if pace}, **measured}
    costs = {rid: step_cost(store, rid) for rid in {*paces, *steps}}
    a_step = seconds_a_step(paces, costs)

    def seconds(job: Job) -> float:
        left = steps[job.run_id][0]
        if job.endless or left is None:
            return math.inf
        return left * (a_step(job.run_id) or 0.0)

    order = start_times(jobs, queue, slots, *(2 * [seconds] if paces else [None, None]))
    forecast = {}
    queued = {j.run_id for j in queue}
    for position, (job, starts) in enumerate(order, start=1):
        if job.run_id not in queued:
            continue  # a preempted run on its way back: ahead of those after it, its own page says "paused"
        ahead = [j for j, _ in order[: position - 1]]
        prepared = sum(j.priority == PREPARED for j in ahead)
        known = bool(paces) or math.isinf(starts)
        forecast[job.run_id] = {"position": position, "prepared": job.priority == PREPARED, "prepared_ahead": prepared,
                                "live_ahead": len(ahead) - prepared, "seconds": starts if known else None}  # fmt: skip
    return forecast


def _steps_left(store: Any, job: Job) -> tuple[int | None, float | None]:
    """(steps left, steps per second) of a job's run from its status.json: None steps for one that trains until
    stopped, None pace until it has trained (tokens/s over the tokens of a step, as the Train page measures)."""
    status = read_status(store.path(job.run_id))
    max_steps = job.max_steps or status.get("max_steps")
    if trains_until_stopped(max_steps):
        return None, None
    left = max(0, int(max_steps or 0) - int(status.get("step") or 0))
    try:
        config = read_config_json(store.path(job.run_id))
    except RunStoreError:  # a folder deleted meanwhile: no pace, its steps still count at the mean
        return left, None
    tokens = (config.get("train") or {}).get("batch_size", 0) * (config.get("model") or {}).get("max_seq_len", 0)
    tps = status.get("tokens_per_s")
    return left, (tps / tokens if tps and tokens and status.get("state") == "running" else None)
