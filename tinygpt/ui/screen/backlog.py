"""A browser that reads slower than the server sends: let it catch up, and never leave it deaf.

Streamlit's Starlette server (1.67) keeps at most WEBSOCKET_MAX_SEND_QUEUE_SIZE (500) messages per browser websocket.
Once 500 wait, it drops the session but leaves the socket open: the page keeps sending its refresh timer's requests, the
server discards them (logged at debug level only), and the page never hears anything again
(tests/ui/screen/test_backlog.py reproduces it against Streamlit's own client class). A live page asks for a refresh on
a timer in the browser, and asking is cheap while drawing the answer (three Vega charts) is not, so a slow browser (a
busy laptop, a weak Wi-Fi) can ask faster than it reads. The load test's rooms never came near it (the probe's deepest
queue: 1 message; BENCHMARKS.md, "A workshop room under load"): this is a guard, not the cause of the slow pages seen
there, which was the test's own browser.

Two answers, both here:
- `catch_up()`, at the top of every live fragment: when this page's browser is more than BACKLOG_HIGH messages
  behind (about four Train-page refreshes), the refresh waits until it has read its way down to BACKLOG_LOW, up to
  CATCH_UP_S. A slow page then gets fewer refreshes instead of a growing queue; a page that keeps up never waits.
  The wait is in this session's own script thread: other sessions and the server's event loop go on.
- `reconnect_on_overflow()`, once per server: if a queue still fills up (a browser that stopped reading for a
  long time), the server closes that websocket too, so the browser reconnects (its "Connecting" banner) and
  redraws the page, instead of staying silently deaf.

Both read Streamlit internals (the session's client and its `_send_queue`); they check that what they need is there
and otherwise do nothing, so a Streamlit that changed them keeps working as before, just without this help.
Deliberately left out: the drawing (pages/) and the refresh period (tinygpt/ui/host/live.py).
"""

from __future__ import annotations

import asyncio
import functools
import sys
import time
from collections.abc import Callable

import streamlit as st

BACKLOG_HIGH = 48  # messages waiting for this browser: ~4 refreshes of the Train page (~12 messages each)
BACKLOG_LOW = 12  # ...wait until it is down to ~1 refresh behind
CATCH_UP_S = 4.0  # but never hold a refresh longer than this (a browser that stopped reading: see above)
POLL_S = 0.05

_installed = False


def _client(session_id: str | None):
    """The Streamlit session's websocket client, or None (no runtime, no such session, a bare script run)."""
    if session_id is None:
        return None
    try:
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return None
        info = Runtime.instance()._session_mgr.get_active_session_info(session_id)
    except Exception:  # noqa: BLE001 - internals of another version: no help, no harm
        return None
    return None if info is None else info.client


def browser_backlog(session_id: str | None = None) -> int | None:
    """Messages the server has queued for this session's browser that its websocket has not sent yet (the browser
    has not read the ones before them), or None when this Streamlit does not say."""
    if session_id is None:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx(suppress_warning=True)
        session_id = ctx.session_id if ctx is not None else None
    return queue_depth(_client(session_id))


def queue_depth(client) -> int | None:  # noqa: ANN001 - a Streamlit SessionClient
    """How many messages wait in a websocket client's send queue (None: no client, or one without that queue)."""
    queue = getattr(client, "_send_queue", None)
    try:
        return int(queue.qsize()) if queue is not None else None
    except Exception:  # noqa: BLE001
        return None


def catch_up(
    backlog=browser_backlog, high: int = BACKLOG_HIGH, low: int = BACKLOG_LOW, max_wait_s: float = CATCH_UP_S,
    sleep=time.sleep, clock=time.monotonic,
) -> float:  # fmt: skip
    """Before a live refresh draws anything: if this page's browser is more than `high` messages behind, wait
    until it is down to `low` (or `max_wait_s` passed). Returns the seconds waited (0.0 when it kept up)."""
    waiting = backlog()
    if waiting is None or waiting <= high:
        return 0.0
    start = clock()
    while waiting is not None and waiting > low and clock() - start < max_wait_s:
        sleep(POLL_S)
        waiting = backlog()
    return clock() - start


def fragment_rerun() -> bool:
    """This script run is a fragment's own rerun (its timer), not the page's full run: a full run must never wait
    here, it is what the learner clicked for."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return bool(ctx is not None and getattr(ctx, "fragment_ids_this_run", None))


def live_fragment(run_every: float | None) -> Callable[[Callable], Callable]:
    """`st.fragment(run_every=...)` whose timed refreshes first let a slow browser catch up (`catch_up`)."""

    def wrap(body: Callable) -> Callable:
        @functools.wraps(body)  # the same __qualname__: Streamlit's fragment id stays the function's
        def refresh(*args, **kwargs):
            if run_every is not None and fragment_rerun():
                catch_up()
            return body(*args, **kwargs)

        return st.fragment(run_every=run_every)(refresh)

    return wrap


def reconnect_on_overflow() -> bool:
    """Once per server process: when a browser's send queue is full, close its websocket as well (code 1013, "try
    again later"), so the browser reconnects and redraws instead of staying deaf. Returns whether it is in place."""
    global _installed
    if _installed:
        return True
    try:
        from streamlit.runtime.session_manager import SessionClientDisconnectedError
        from streamlit.web.server.starlette.starlette_websocket import StarletteSessionClient
    except ImportError:
        return False
    original = getattr(StarletteSessionClient, "write_forward_msg", None)
    if original is None:
        return False

    def write_forward_msg(self, msg) -> None:  # noqa: ANN001 - Streamlit's signature
        try:
            original(self, msg)
        except SessionClientDisconnectedError:
            queue, websocket = getattr(self, "_send_queue", None), getattr(self, "_websocket", None)
            if queue is not None and websocket is not None and queue.full() and not getattr(self, "_closing", False):
                self._closing = True  # once: every later message raises here too
                print("tinygpt: a browser fell 500 messages behind; closing its websocket so it reconnects",
                      file=sys.stderr)  # fmt: skip
                try:
                    asyncio.get_running_loop().create_task(_close(websocket))
                except RuntimeError:  # not on the server's event loop (where the runtime sends from): leave it
                    pass
            raise

    StarletteSessionClient.write_forward_msg = write_forward_msg
    _installed = True
    return True


async def _close(websocket) -> None:  # noqa: ANN001
    try:
        await websocket.close(code=1013)
    except Exception:  # noqa: BLE001 - already closed, or the connection broke meanwhile
        pass
