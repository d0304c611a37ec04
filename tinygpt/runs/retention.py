"""Which snapshots and checkpoints a run keeps: the early phase whole at any length (every one of the first 300
steps or 10%, whichever is smaller), log-spaced after it, the newest few, and those around each moment a chart
marks (a knob change, a divergence, the phase change: tinygpt.runs.moments), so every marked moment can be opened
on Attention, Circuits and Sample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

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
    spare = budget - len(recent)  # checkpoints the budget keeps besides the recent ones
    if len(early) > int(DENSE_SHARE * spare):  # a very dense schedule: keep the early phase even, the first step always
        early = evenly(early, int(DENSE_SHARE * spare))
    later = [s for s in steps if s > dense_until and s not in kept]
    gaps = [b - a for a, b in zip(steps, steps[1:], strict=False) if b > a]
    cadence = max(1, min(set(gaps), key=lambda g: (-gaps.count(g), g))) if gaps else 1  # the usual interval
    spread = _log_spaced(later, max(dense_until, cadence), spare - len(early), cadence)
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


def evenly(steps: list[int], count: int) -> list[int]:
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


KEEP_RECENT_CHECKPOINTS = 3  # always kept: the newest ones are what resume and the Sample page want most
MAX_CHECKPOINTS = 12  # the early phase dense, the rest spread evenly to now (runs.retention.retained_steps)


def checkpoints_to_drop(
    steps: list[int],
    keep_recent: int = KEEP_RECENT_CHECKPOINTS,
    limit: int = MAX_CHECKPOINTS,
    horizon: int | None = None,
    events: Iterable[dict] = (),
    pinned: Iterable[int] = (),
) -> list[int]:
    """Which checkpoint steps to delete so at most `limit` remain (plus those around events), by the same rule as
    attention snapshots (runs.retention.retained_steps): every checkpoint of the early phase, the newest `keep_recent`,
    the rest log-spaced, so Sample and the detail view can go back to any phase of training; and the ones just
    before and after each knob change or divergence in `events` (runs.retention.event_checkpoints), so each can be
    opened later ("resume from checkpoint N, from before it blew up" stays true); and `pinned` (the training loop's
    runs.moments.Moments.pins, which covers the events and the phase change)."""
    pins = set(event_checkpoints(steps, events)) | set(pinned)
    keep = set(retained_steps(steps, limit, keep_recent, horizon, pinned=pins))
    return [s for s in sorted(steps) if s not in keep]
