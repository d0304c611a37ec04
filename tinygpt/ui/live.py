"""How often a live page refreshes, so that a room of learners watching live charts stays cheap for the server.

Each refresh of the Train page's live view costs the server ~10 ms of CPU (measured with
tests/browser/profile_refresh.py; BENCHMARKS.md "A workshop room under load"). Alone or in a small room a page
refreshes every 0.45 s (~2.2 Hz); as more sessions watch live views on the same server, every page slows down
together in steps of 0.45 s (one step per 8 watching sessions), so the whole room's refreshes stay at ~18 per second
however many learners watch: 20 learners watching live charts refresh every 1.35 s. A queued page (nothing to draw
but the queue) refreshes at most every 0.9 s.

A page's refresh period is fixed when the page is drawn (a fragment's `run_every`); the live view redraws the page
when the room's period moved to another step (`needs_redraw`), which happens a few times as a room fills or empties.
Deliberately left out: the drawing itself (pages/train.py) and per-session state (tinygpt/ui/state.py).
"""

from __future__ import annotations

import math
import threading
import time

import streamlit as st

BASE_S = 0.45  # one page watching: ~2.2 Hz, so timer jitter never drops it below 2
SESSIONS_PER_STEP = 8  # every 8 more watching sessions add one BASE_S to everybody's period
MAX_S = 3.6  # never slower than this: a live page must follow a state change within a few seconds
QUEUED_MIN_S = 0.9  # a queued page shows only the queue; it still starts its run's view within ~1 s
WINDOW_S = 10.0  # a session counts as watching for this long after its last refresh


def period_for(watchers: int, queued: bool = False) -> float:
    """The refresh period (seconds) of a live view when `watchers` sessions (this one included) watch live views on
    this server: BASE_S up to SESSIONS_PER_STEP watchers, one more BASE_S per SESSIONS_PER_STEP after that, at most
    MAX_S; a queued view at least QUEUED_MIN_S."""
    steps = max(1, math.ceil(max(int(watchers), 1) / SESSIONS_PER_STEP))
    period = min(MAX_S, round(BASE_S * steps, 2))
    return max(period, QUEUED_MIN_S) if queued else period


class Watchers:
    """The sessions that refreshed a live view lately, shared by every session of one server."""

    def __init__(self, window_s: float = WINDOW_S):
        self.window_s = window_s
        self._lock = threading.Lock()
        self._seen: dict[str, float] = {}

    def refreshed(self, session: str, now: float | None = None) -> None:
        with self._lock:
            self._seen[session] = time.monotonic() if now is None else now

    def left(self, session: str) -> None:
        with self._lock:
            self._seen.pop(session, None)

    def count(self, now: float | None = None) -> int:
        """How many sessions refreshed a live view in the last `window_s` seconds (old entries are dropped)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            for session in [s for s, t in self._seen.items() if now - t > self.window_s]:
                del self._seen[session]
            return len(self._seen)


@st.cache_resource(show_spinner=False)
def watchers() -> Watchers:
    """This server's Watchers."""
    return Watchers()


def period(session: str, queued: bool = False) -> float:
    """The period for this session's live view now, counting this session as watching."""
    room = watchers()
    room.refreshed(session)
    return period_for(room.count(), queued)


def needs_redraw(drawn_s: float | None, now_s: float) -> bool:
    """True when the period a page was drawn with is no longer the room's (the page must redraw to change it)."""
    return drawn_s is not None and abs(drawn_s - now_s) > 1e-6
