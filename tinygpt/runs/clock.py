"""A run's training clock and its speed: what "seconds" and "tokens per second" mean for a run, kept by the loop.

The clock counts the seconds a run has trained: from the end of its setup, through every step with its evals,
snapshots and samples, but not while it is paused, waits in the queue or has no worker (a resume goes on from the
clock of the step it resumes at). Each metrics record carries it as "clock", so a seconds axis (Compare, the Train
page) shows time to a loss, not how long the run sat paused. The wall-clock "time" stays beside it.

The speed is the tokens per second since the last estimate, on the same clock: a pause is not slow training.
`load_average` is the machine's 1-minute load, stamped on every eval: a run's seconds depend on what else ran.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .status import last_metric


class TrainClock:
    """Seconds trained (`trained`), and steps per second between `speed` calls."""

    def __init__(self, trained: float = 0.0, step: int = 0):
        self.trained = trained
        self.restart(step)

    def restart(self, step: int) -> None:
        """Training (re)starts now at `step`, after setup, a pause or a "step n" while paused: the wait before it
        is neither training time nor slow training."""
        self.running = True
        self.last = time.perf_counter()
        self.mark = (self.last, step, self.trained)  # (time, step, clock) of the last speed estimate

    def stop(self) -> None:
        """The run waits (paused, nothing to step): the clock stands still until `restart`."""
        self.tick()
        self.running = False

    def tick(self) -> float:
        """The clock now: while running, every second since the last tick or restart is training."""
        now = time.perf_counter()
        if self.running:
            self.trained += now - self.last
        self.last = now
        return self.trained

    def speed(self, step: int) -> float | None:
        """Steps per second since the last estimate (evals and publishing included), or None with no new step."""
        _, mark_step, mark_clock = self.mark
        seconds = self.tick() - mark_clock
        if step <= mark_step or seconds <= 0:
            return None
        self.mark = (self.last, step, self.trained)
        return (step - mark_step) / seconds


def trained_until(run_dir: str | Path, step: int) -> float:
    """The clock of the run's last metrics record at or before `step`, the step a resume continues from
    (status.last_metric); 0.0 for a run whose records carry no clock (written before it existed) or none at all."""
    clock = (last_metric(run_dir, step) or {}).get("clock")
    return float(clock) if isinstance(clock, (int, float)) and not isinstance(clock, bool) and clock >= 0 else 0.0


def load_average() -> float | None:
    """The machine's 1-minute load average, or None where the system has none (Windows)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def sample_estimate(cost: float, pace_then: float | None, pace_now: float | None) -> float:
    """The next sample's seconds: the last one's `cost`, scaled by how a training step's time moved since (`pace_then`
    around that sample, `pace_now`): both are the same model's forward passes, slowed alike by whatever else runs.
    A review's run sampled at step 0 in its worker's loaded first second (a step took 162 ms there, 34 ms after), and
    the 3% budget then held its next sample back for 1,495 steps: "Sample at step 0" beside a loss of 1.69."""
    if not pace_then or not pace_now:
        return cost
    return cost * pace_now / pace_then
