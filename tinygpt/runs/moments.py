"""The moments of a run that a chart marks, kept as the run goes: each applied knob change, each non-finite step
and divergence (events.jsonl), and the induction-head phase change (the jumps in attention/scores.jsonl that the
Circuits page marks). Retention keeps the snapshots and checkpoints around each of them, so every marked moment
can still be opened on Attention, Circuits (ablation, the logit lens) and Sample however long the run goes on.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..inside.heads import MIN_GAP_RISE, MIN_SCORE_JUMP, jump_window, phase_point
from .retention import PINNED_EVENTS, evenly, event_checkpoints

MAX_WINDOW_PINS = 16  # a slow rise over a whole run would otherwise pin every snapshot of it


class Moments:
    """Follows one run's marked moments; `pins(steps)` says which of `steps` (snapshot or checkpoint steps) to keep
    for them. The training loop builds one from the run folder when it starts (after a resume's rewind) and feeds
    it every event and score record it writes, so no file is read back per snapshot."""

    def __init__(self, events: Iterable[dict] = (), scores: Iterable[dict] = ()):
        self.events: list[dict] = []  # the events retention keeps steps around (retention.event_checkpoints)
        self.score_points: list[tuple[int, float]] = []  # (step, best induction score)
        self.gap_points: list[tuple[int, float]] = []  # (step, first-copy loss - second-copy loss)
        self._windows: tuple[tuple[int, int], list[tuple[int, int]]] | None = None  # (point counts, windows)
        for event in events:
            self.add_event(event)
        for record in scores:
            self.add_scores(record)

    def add_event(self, event: dict) -> None:
        if event.get("kind") in PINNED_EVENTS:  # the rest (a refused knob, a bad step) is event_checkpoints' to judge
            self.events.append(event)

    def add_scores(self, record: dict) -> None:
        score, gap = phase_point(record)
        if score is not None:
            self.score_points.append((int(record["step"]), float(score)))
        if gap is not None:
            self.gap_points.append((int(record["step"]), float(gap)))

    def windows(self) -> list[tuple[int, int]]:
        """(first, last) step of each jump found so far: the best induction score's, the in-context gain's. Kept
        until the next score record: the loop asks on every snapshot write and checkpoint (pins), and finding a
        jump reads every record so far."""
        seen = (len(self.score_points), len(self.gap_points))
        if self._windows is None or self._windows[0] != seen:
            found = [jump_window(self.score_points, MIN_SCORE_JUMP), jump_window(self.gap_points, MIN_GAP_RISE)]
            self._windows = (seen, [w for w in found if w is not None])
        return list(self._windows[1])

    def pins(self, steps: Iterable[int]) -> list[int]:
        """Of `steps`: the newest at or before each event and the first after it (the model as it was, and what the
        change did), and every one inside a phase change's window (at most MAX_WINDOW_PINS, evenly) with the one
        before and the one after it."""
        steps = sorted(set(steps))
        out = set(event_checkpoints(steps, self.events))
        for first, last in self.windows():
            out.update(evenly([s for s in steps if first <= s <= last], MAX_WINDOW_PINS))
            out.update([s for s in steps if s < first][-1:] + [s for s in steps if s > last][:1])
        return sorted(out)
