"""The Attention page's step slider as a small state machine: follow the newest snapshot, or play through
training time one snapshot per tick, or stay where the learner scrubbed. Pure, so it is tested without a page.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Playback:
    step: int  # the step the slider shows now
    started: bool  # play has begun (pressing play at the newest snapshot restarts from the first)
    follow: bool  # the slider follows the newest snapshot as new ones arrive
    done: bool  # play reached the newest snapshot: the page switches the play button off


def advance(steps: list[int], chosen: int | None, playing: bool, started: bool, follow: bool) -> Playback:
    """The slider's next position given the snapshot steps (ascending, non-empty) and the current position.

    Playing: the first tick starts from the first snapshot if the slider sat at the newest (else where it is);
    each later tick moves to the next snapshot; at the newest one, play is done. Not playing: a slider that
    follows (or has no position yet) jumps to the newest snapshot; otherwise it stays put.
    """
    if playing:
        if not started:
            if chosen is None or chosen >= steps[-1]:
                chosen = steps[0]
            return Playback(chosen, True, False, False)
        later = [s for s in steps if s > (chosen if chosen is not None else steps[0])]
        if later:
            return Playback(later[0], True, False, False)
        return Playback(chosen if chosen is not None else steps[-1], True, False, True)
    if chosen is None or follow:
        return Playback(steps[-1], False, follow, False)
    return Playback(chosen, False, False, False)
