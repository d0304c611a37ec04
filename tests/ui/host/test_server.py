"""What the server process sets before any browser connects (tinygpt/ui/host/server.py), and that `streamlit run app.py`
reaches it (issue 22, finding 11: over 8 KB of cookies, a blank page without a word)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from streamlit.web.server.app_discovery import discover_asgi_app  # noqa: E402

from tinygpt.ui.host import server  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def test_streamlit_run_app_py_serves_the_st_app_that_sets_the_limits():
    """`streamlit run app.py` imports app.py as the server's module only when it finds an st.App there; else the
    websocket limit would still be websockets' 8 KB default when the first browser connects."""
    found = discover_asgi_app(REPO / "app.py")
    assert found.is_asgi_app and found.import_string == "app:app"
    source = (REPO / "app.py").read_text()
    assert "server.raise_header_limits()" in source and "server.CookieLimit" in source


def test_the_websocket_handshake_takes_every_header_line_a_page_request_may_carry():
    from websockets import http11

    server.raise_header_limits()
    assert http11.MAX_LINE_LENGTH >= server.HEADER_LINE_LIMIT > server.COOKIE_LIMIT


def call(cookie: bytes) -> tuple[list[dict], bool]:
    """What CookieLimit sends for a page request with this Cookie header, and whether it passed it on."""
    sent, passed = [], []

    async def inner(scope, receive, send):
        passed.append(scope)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "path": "/", "headers": [(b"host", b"room.local:8501"), (b"cookie", cookie)]}
    # A loop of its own in a thread of its own: in the full suite the browser tests' session-scoped Playwright (sync
    # API) keeps an event loop running in the main thread, where asyncio.run() refuses to start another.
    failures: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(server.CookieLimit(inner)(scope, None, send))
        except BaseException as exc:  # re-raised in the test's thread so pytest shows it
            failures.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "CookieLimit did not answer within 30 s"
    if failures:
        raise failures[0]
    return sent, bool(passed)


def test_an_oversized_cookie_header_gets_a_page_that_says_why_and_which_cookies():
    big = b"; ".join(b"jupyter_%d=%s" % (i, b"x" * 3000) for i in range(12)) + b"; tinygpt_name=ann"
    sent, passed = call(big)
    assert not passed and sent[0]["status"] == 431
    page = sent[1]["body"].decode()
    assert f"{len(big):,} bytes of cookies to room.local" in page and "The largest: jupyter_11 (3,011 bytes)" in page
    assert "Delete the cookies of room.local" in page and "<script" not in page


def test_a_cookie_name_is_shown_as_text_on_that_page():
    sent, _ = call(b"<img src=x>=" + b"x" * (server.COOKIE_LIMIT + 1))
    assert "<img" not in sent[1]["body"].decode() and "&lt;img src" in sent[1]["body"].decode()


def test_ordinary_cookies_and_websockets_pass_through():
    sent, passed = call(b"tinygpt_name=ann; tinygpt_learner=" + b"a" * 24)
    assert passed and not sent


def redirect(path: str, query: bytes = b"", method: str = "GET") -> tuple[list[dict], bool]:
    """What DefaultPageAlias sends for a request of `path`, and whether it passed the request on."""
    sent, passed = [], []

    async def inner(scope, receive, send):
        passed.append(scope)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "query_string": query, "headers": []}
    result: list = []
    worker = threading.Thread(
        target=lambda: result.append(asyncio.run(server.DefaultPageAlias(inner)(scope, None, send)))
    )
    worker.start()
    worker.join(timeout=30)
    assert result, "the middleware did not finish"
    return sent, bool(passed)


def test_the_train_pages_own_name_leads_to_the_app_root_with_its_query_kept():
    """Streamlit serves the default page (Train) at "/" only and answered /train with "Page not found"."""
    sent, passed = redirect("/train", b"run=abc&view=1")
    assert not passed and sent[0]["status"] == 307
    assert dict(sent[0]["headers"])[b"location"] == b"/?run=abc&view=1"
    sent, passed = redirect("/train/")
    assert dict(sent[0]["headers"])[b"location"] == b"/"


def test_other_pages_and_the_root_pass_through():
    for path in ("/", "/attention", "/_stcore/health", "/static/js/train", "/trainer"):
        sent, passed = redirect(path)
        assert passed and not sent, path
    sent, passed = redirect("/train", method="POST")
    assert passed and not sent
