"""What the server process does once, when `streamlit run app.py` starts it: before any browser connects.

Browsers send every cookie of a host (127.0.0.1, or the workshop server's name), whichever port set it, so a laptop
that also runs Jupyter or another app on localhost can carry 8 KB and more of cookies to this one. uvicorn's HTTP
parser took the page request (measured: up to 60 KB of cookies), so the page loaded; the websockets library then
parses the upgrade request again with 8 KB per header line, refused the Cookie line, and the page stayed blank with
no message (issue 22, finding 11). Its limit is a module constant read from the environment when it is imported,
which happens before any page script runs, so it is raised here, from app.py's server half, which Streamlit imports
before it serves.
"""

from __future__ import annotations

import html
import sys
from typing import Any

# Twice COOKIE_LIMIT: any page request CookieLimit lets through also gets its websocket.
HEADER_LINE_LIMIT = 64 * 1024


def raise_header_limits() -> None:
    """Let the websocket handshake accept every header line the HTTP parser accepted."""
    try:
        from websockets import http11
    except ImportError:  # another websocket implementation: nothing of ours to raise
        return
    http11.MAX_LINE_LENGTH = max(http11.MAX_LINE_LENGTH, HEADER_LINE_LIMIT)


# A page request whose Cookie header is longer than this is answered with a page that says why, instead of a page
# whose websocket would fail without a word. Far above what tinygpt's own cookies take (under 200 bytes).
COOKIE_LIMIT = 32 * 1024


def cookie_report(cookie_header: str, host: str) -> str:
    """The HTML page for a browser that sends too many cookies: how many, the largest by name, and what to do."""
    sizes = sorted(
        ((len(part.strip()), part.split("=", 1)[0].strip()) for part in cookie_header.split(";") if part.strip()),
        reverse=True,
    )
    largest = ", ".join(f"{html.escape(name[:40])} ({size:,} bytes)" for size, name in sizes[:5])
    host = html.escape(host or "this server")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>tinygpt: too many cookies</title></head>"
        "<body style='font-family:sans-serif;max-width:46rem;margin:3rem auto;font-size:1.2rem;line-height:1.5'>"
        "<h1>tinygpt cannot open: this browser sends too many cookies</h1>"
        f"<p>Your browser sends {len(cookie_header):,} bytes of cookies to {host}, over the {COOKIE_LIMIT:,} this "
        "server accepts. A browser sends every cookie of a host to each of its ports, so most of them come from other "
        f"apps on {host}. The largest: {largest}.</p>"
        f"<p>Delete the cookies of {host} in your browser's settings (tinygpt keeps only your name and a learner id "
        "there), or open tinygpt by another name for the same machine (127.0.0.1 instead of localhost, or the "
        "reverse), then reload this page.</p></body></html>"
    )


class CookieLimit:
    """ASGI middleware: a page request with an oversized Cookie header gets `cookie_report` (HTTP 431) instead."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            cookie = b"; ".join(value for name, value in scope.get("headers", ()) if name == b"cookie")
            if len(cookie) > COOKIE_LIMIT:
                host = next((v for n, v in scope["headers"] if n == b"host"), b"").decode("latin-1").split(":")[0]
                body = cookie_report(cookie.decode("latin-1"), host).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 431,
                        "headers": [
                            (b"content-type", b"text/html; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


# The default page (Train) is served at "/" only: Streamlit answers its own name with "Page not found". An
# instructor who types /train on the projector, or a link copied from an old bookmark, lands on it instead.
DEFAULT_PAGE_ALIASES = ("/train", "/train/")


class DefaultPageAlias:
    """ASGI middleware: a GET of /train (under any base path) is redirected to the app's root with its query string
    kept (?run=..., ?preset=...), where Streamlit serves the Train page."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        base = "/" + _base_url_path().strip("/") if _base_url_path().strip("/") else ""
        if path.removeprefix(base) in DEFAULT_PAGE_ALIASES and scope.get("method", "GET") in ("GET", "HEAD"):
            root = base + "/"
            query = scope.get("query_string", b"")
            location = root.encode("latin-1") + (b"?" + query if query else b"")
            await send({"type": "http.response.start", "status": 307,
                        "headers": [(b"location", location), (b"content-length", b"0")]})  # fmt: skip
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


def _base_url_path() -> str:
    """Streamlit's server.baseUrlPath ("" by default), the prefix every page's path carries."""
    try:
        from streamlit import config

        return str(config.get_option("server.baseUrlPath") or "")
    except Exception:  # outside a Streamlit server (a test): no prefix
        return ""


_REFUSED: set[str] = set()  # widget ids whose forged values were refused, said once each on the terminal


def refuse_unreadable_widget_values() -> None:
    """Make Streamlit's read of a widget value from the browser refuse one its deserializer cannot read, instead of
    raising before the page runs (issue 34, finding 7: "cannot convert float NaN to integer" for a forged whole-number
    box). Streamlit deserializes every changed widget's value to call its on_change before any page code runs, so
    only here can it be caught. Idempotent; a Streamlit without this internal class keeps its own behaviour."""
    try:
        from streamlit.runtime.state.session_state import WStates
    except ImportError:
        return
    if getattr(WStates, "_tinygpt_guarded", False):
        return
    original = WStates.__getitem__

    def getitem(self, widget_id: str) -> Any:
        try:
            return original(self, widget_id)
        except KeyError:
            raise
        except Exception as exc:  # noqa: BLE001 - the deserializer of a forged value: refuse the value, not the page
            # Read as absent (the widget keeps its previous value); not deleted: Streamlit may be iterating the dict.
            if len(_REFUSED) < 1000 and widget_id not in _REFUSED:
                _REFUSED.add(widget_id)
                print(f"tinygpt: refused a widget value from a browser ({widget_id[-60:]}): {exc}", file=sys.stderr)
            raise KeyError(widget_id) from None

    WStates.__getitem__ = getitem
    WStates._tinygpt_guarded = True
