"""Clipping as events: one when a stretch starts, one when it has been quiet for CLIP_QUIET steps."""

from __future__ import annotations

from tinygpt.runs.clip_events import CLIP_QUIET, ClipTracker


def test_a_stretch_of_clipping_is_two_events_not_one_a_step():
    events = []
    tracker = ClipTracker(lambda kind, message, **fields: events.append((kind, message, fields)))
    clipped = {3, 4, 6}  # one stretch: step 5 between its clipped steps is not quiet long enough to end it
    for step in range(1, 8 + CLIP_QUIET):
        tracker.track({"step": step, "clipped": step in clipped, "grad_norm": 2.5}, 1.0)
    assert events == [
        ("clip", "clipping: grad norm 2.5 > max_grad_norm 1 at step 3", {}),
        ("clip", "clipping ended at step 6: 3 of 4 steps clipped", {"step": 6}),
    ]
