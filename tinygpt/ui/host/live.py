"""How often a live page refreshes, so that a room of learners watching live charts stays cheap for the server.

Each refresh of the Train page's live view costs the server 10-20 ms of CPU (measured with
tests/browser/profile_refresh.py and tests/browser/load_room.py; BENCHMARKS.md "A workshop room under load"). In a
small room a page refreshes every 0.45 s (~2.2 Hz); as more browser sessions have the app open on the same server,
every live page slows down together in steps of 0.45 s (one step per 8 sessions), so the whole room's refreshes stay
at ~18 per second however many learners watch: a room of 20 learners and the instructor refreshes every 1.35 s.

The room is counted by the sessions seen lately that are still connected (`Watchers`): every script run of a session
says it is there (the frame on every page view, the sidebar's lease keeper every 30 s, a live view at every
refresh), so a room is counted once its learners have opened the app, before anyone presses Train, and a closed tab
stops counting at once. A page's refresh period is fixed when the page is drawn (a fragment's `run_every`) and
changes at the page's next full run (a click, the run's end), never by a redraw from inside the live fragment:
redrawing pages from their live fragments under load left some blank (Streamlit "Cannot set a node at a delta
path") or deaf to the server (BENCHMARKS.md).
Deliberately left out: the drawing itself (pages/train.py) and per-session state (tinygpt/ui/state.py).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

import streamlit as st

BASE_S = 0.45  # one page watching: ~2.2 Hz, so timer jitter never drops it below 2
SESSIONS_PER_STEP = 8  # every 8 more watching sessions add one BASE_S to everybody's period
MAX_S = 3.6  # never slower than this: a live page must follow a state change within a few seconds
WINDOW_S = 75.0  # a session counts for this long after it was last seen (the lease keeper runs every 30 s)


def period_for(sessions: int) -> float:
    """The refresh period (seconds) of a live view when `sessions` browser sessions (this one included) have the
    app open on this server: BASE_S up to SESSIONS_PER_STEP sessions, one more BASE_S per SESSIONS_PER_STEP after
    that, at most MAX_S."""
    steps = max(1, math.ceil(max(int(sessions), 1) / SESSIONS_PER_STEP))
    return min(MAX_S, round(BASE_S * steps, 2))


class Watchers:
    """The browser sessions seen lately, shared by every session of one server."""

    def __init__(self, window_s: float = WINDOW_S, connected: Callable[[str], bool] | None = None):
        self.window_s = window_s
        self.connected = connected  # Streamlit session id -> still connected (None: everyone seen is)
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, str | None]] = {}

    def refreshed(self, session: str, now: float | None = None, streamlit_id: str | None = None) -> None:
        with self._lock:
            self._seen[session] = (time.monotonic() if now is None else now, streamlit_id)

    def left(self, session: str) -> None:
        with self._lock:
            self._seen.pop(session, None)

    def count(self, now: float | None = None) -> int:
        """How many sessions were seen in the last `window_s` seconds (old entries are dropped)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            for session in [s for s, (t, _) in self._seen.items() if now - t > self.window_s]:
                del self._seen[session]
            seen = list(self._seen.values())
        return sum(1 for _, sid in seen if sid is None or self.connected is None or self.connected(sid))


def _connected(streamlit_id: str) -> bool:
    from streamlit.runtime import Runtime

    return not Runtime.exists() or Runtime.instance().is_active_session(streamlit_id)


@st.cache_resource(show_spinner=False)
def watchers() -> Watchers:
    """This server's Watchers."""
    return Watchers(connected=_connected)


def _streamlit_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


def seen(session: str) -> None:
    """This session is here (any script run of it)."""
    watchers().refreshed(session, streamlit_id=_streamlit_id())


def period(session: str) -> float:
    """The period for this session's live view now, counting this session."""
    seen(session)
    return period_for(watchers().count())


SESSION_TOKEN = "session_token"  # a random token: this session in the server's count of live watchers


def session_token() -> str:
    """A random token of this browser session (not of the learner: two tabs are two sessions)."""
    if SESSION_TOKEN not in st.session_state:
        import secrets

        st.session_state[SESSION_TOKEN] = secrets.token_hex(8)
    return st.session_state[SESSION_TOKEN]
