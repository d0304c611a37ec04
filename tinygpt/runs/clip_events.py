"""Clipping as events: one when a stretch of clipped steps starts and one when it has been quiet for CLIP_QUIET
steps, not one per step (early in training nearly every step clips; the per-step flag is in metrics.jsonl)."""

from __future__ import annotations

from collections.abc import Callable

CLIP_QUIET = 10  # unclipped steps in a row that end a stretch of clipping (one event each way, not per step)


class ClipTracker:
    """Fed every step's record (`track`); `event(kind, message, **fields)` writes an event (the loop's)."""

    def __init__(self, event: Callable[..., None]) -> None:
        self.event = event
        self.start: int | None = None  # first step of the current stretch of clipping
        self.last = self.count = 0  # its last clipped step, and how many steps clipped in it

    def track(self, record: dict, max_grad_norm: float) -> None:
        step = record["step"]
        if record["clipped"]:
            if self.start is None:
                self.start, self.count = step, 0
                self.event("clip", f"clipping: grad norm {record['grad_norm']:.3g} > max_grad_norm {max_grad_norm:g} "
                           f"at step {step}")  # fmt: skip
            self.count += 1
            self.last = step
        elif self.start is not None and step - self.last >= CLIP_QUIET:
            span = self.last - self.start + 1
            self.event("clip", f"clipping ended at step {self.last}: {self.count} of {span} steps clipped",
                       step=self.last)  # fmt: skip
            self.start = None
