"""A slow browser: live refreshes wait for it to catch up, and a full websocket queue closes the socket instead of
leaving the page deaf (tinygpt/ui/screen/backlog.py)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tinygpt.ui.screen import backlog


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = 0

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1

    def __call__(self) -> float:
        return self.now


def test_a_browser_that_keeps_up_never_waits():
    clock = FakeClock()
    for depth in (None, 0, backlog.BACKLOG_HIGH):
        assert backlog.catch_up(lambda d=depth: d, sleep=clock.sleep, clock=clock) == 0.0
    assert clock.sleeps == 0


def test_a_browser_behind_is_waited_for_until_it_is_nearly_caught_up():
    clock = FakeClock()
    depths = iter([60, 55, 40, 20, backlog.BACKLOG_LOW, 0])
    waited = backlog.catch_up(lambda: next(depths), sleep=clock.sleep, clock=clock)
    assert clock.sleeps == 4  # 60 -> 55 -> 40 -> 20 -> 12: down to BACKLOG_LOW, then the refresh goes on
    assert waited == pytest.approx(4 * backlog.POLL_S)


def test_a_browser_that_stopped_reading_holds_a_refresh_no_longer_than_the_limit():
    clock = FakeClock()
    waited = backlog.catch_up(lambda: 499, max_wait_s=1.0, sleep=clock.sleep, clock=clock)
    assert 1.0 <= waited < 1.0 + 2 * backlog.POLL_S


def test_no_streamlit_runtime_means_no_backlog_to_read():
    assert backlog.browser_backlog("no-such-session") is None
    assert backlog.browser_backlog() is None  # a bare script run: no session at all


def test_a_full_send_queue_closes_the_websocket_so_the_browser_reconnects():
    """Against Streamlit's own client class: if its internals change, this fails here rather than in a room."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.runtime.session_manager import SessionClientDisconnectedError
    from streamlit.web.server.starlette.starlette_server_config import WEBSOCKET_MAX_SEND_QUEUE_SIZE
    from streamlit.web.server.starlette.starlette_websocket import StarletteSessionClient

    assert backlog.reconnect_on_overflow() and backlog.reconnect_on_overflow()  # idempotent

    class StalledSocket:
        """A browser that stopped reading: the first send never completes."""

        headers: dict = {}
        cookies: dict = {}
        client = None

        def __init__(self):
            self.closed_with: list[int] = []
            self.never = asyncio.Event()

        async def send_bytes(self, payload: bytes) -> None:
            await self.never.wait()

        async def close(self, code: int = 1000) -> None:
            self.closed_with.append(code)

    async def scenario() -> tuple[StalledSocket, int, int | None]:
        socket = StalledSocket()
        client = StarletteSessionClient(socket)
        await asyncio.sleep(0)  # the sender takes the first message and blocks on it
        sent = 0
        try:
            for _ in range(WEBSOCKET_MAX_SEND_QUEUE_SIZE + 5):
                client.write_forward_msg(ForwardMsg())
                sent += 1
                if sent == 1:
                    await asyncio.sleep(0)
        except SessionClientDisconnectedError:
            pass
        depth = backlog.queue_depth(client)
        await asyncio.sleep(0.01)  # the close task runs
        await client.aclose()
        return socket, sent, depth

    # In a thread of its own: in the full suite the browser tests' Playwright already runs an event loop here.
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(asyncio.run(scenario())))
    worker.start()
    worker.join(30)
    [(socket, sent, depth)] = outcome
    assert sent == WEBSOCKET_MAX_SEND_QUEUE_SIZE + 1  # one in the stalled send, the queue full, then refused
    assert depth == WEBSOCKET_MAX_SEND_QUEUE_SIZE
    assert socket.closed_with == [1013]  # once, "try again later": the browser reconnects and redraws
