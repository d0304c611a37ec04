"""Who is in the room: each browser's learner identity, the instructor, and who may change which run.

A learner is a secret token kept in a cookie (never in the URL: a link copied from the address bar must not
carry its author's identity) plus a name they can edit, defaulting to a friendly generated one. The token's hash
is the learner's public id, recorded as the owner of every run they start (tinygpt.runstore.run_learner).
A learner controls their own runs; other learners' runs are read-only for them (view, compare, sample).

The instructor holds a key: $TINYGPT_INSTRUCTOR_KEY, or one generated when the server starts and printed on its
terminal. Entered once in the instructor's browser (sidebar), it is kept in a cookie; the instructor may control
any run and sees the room dashboard.

What this protects against: learners in one workshop changing, stopping or deleting each other's runs by
accident or curiosity, and shared links that attach everyone to one person's run. What it does not: anyone who
can read the network traffic (plain HTTP carries the cookies in clear: use HTTPS, e.g. a reverse proxy, if that
matters), or a learner who copies another's cookie on purpose. It is a classroom lock, not authentication.

Cookies are read from Streamlit's `st.context.cookies` (sent with the page's websocket handshake) and written
with a line of JavaScript (st.html with unsafe_allow_javascript), because Streamlit has no API to set one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from urllib.parse import unquote

import streamlit as st

from tinygpt.runstore import Actor, may_control
from tinygpt.ui import safe, state

LEARNER_COOKIE = "tinygpt_learner"  # the learner's secret token
NAME_COOKIE = "tinygpt_name"
INSTRUCTOR_COOKIE = "tinygpt_instructor"
LARGE_COOKIE = "tinygpt_large"  # "1" or "0": this browser's Large fonts, kept across refreshes (a projector's)
COOKIE_DAYS = 30
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
ADJECTIVES = ("brave", "calm", "clever", "curious", "eager", "gentle", "happy", "keen", "lucky", "merry",
              "nimble", "patient", "quick", "quiet", "sharp", "steady", "sunny", "swift", "tidy", "witty")  # fmt: skip
ANIMALS = ("otter", "falcon", "badger", "heron", "lynx", "panda", "raven", "seal", "tiger", "wombat",
           "fox", "gecko", "ibis", "koala", "lemur", "marten", "newt", "orca", "puffin", "yak")  # fmt: skip


def friendly_name(token: str) -> str:
    """A readable default name derived from the token, e.g. "curious-otter" (stable for the same browser)."""
    digest = hashlib.sha256(token.encode()).digest()
    return f"{ADJECTIVES[digest[0] % len(ADJECTIVES)]}-{ANIMALS[digest[1] % len(ANIMALS)]}"


def public_id(token: str) -> str:
    """The learner's id as recorded in run folders: a hash, so reading a run never reveals the token."""
    return hashlib.sha256(b"tinygpt-learner:" + token.encode()).hexdigest()[:16]


def clean_name(text: str) -> str:
    """A learner's name as shown to the room: printable, one line, at most 32 characters."""
    name = " ".join("".join(c for c in str(text) if c.isprintable()).split())[:32]
    return name


@st.cache_resource(show_spinner=False)
def instructor_key() -> str:
    """The instructor key of this server: $TINYGPT_INSTRUCTOR_KEY, or generated once and printed on the terminal
    (the first time any browser connects)."""
    key = os.environ.get("TINYGPT_INSTRUCTOR_KEY", "").strip()
    if not key:
        key = secrets.token_urlsafe(9)
        print(f"tinygpt: instructor key for this server: {key}  (enter it under 'Instructor' in the sidebar)")
    return key


def is_instructor_key(text: str) -> bool:
    """Whether `text` is this server's key, in constant time. Compared as UTF-8 bytes: compare_digest refuses str
    with non-ASCII characters (a cookie "été" locked its browser out of every page); a lone surrogate that no
    key can hold is simply wrong."""
    typed = str(text or "").strip().encode("utf-8", errors="surrogatepass")
    return bool(typed) and hmac.compare_digest(typed, instructor_key().encode("utf-8"))


def _set_cookie(name: str, value: str) -> None:
    """Write a cookie from the page (Streamlit has no API for it); SameSite=Lax, path=/, COOKIE_DAYS long."""

    def js(text: str) -> str:  # a JS string literal that cannot end the <script> element early
        return json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e")

    script = (
        f"document.cookie = {js(name)} + '=' + encodeURIComponent({js(value)}) + "
        f"'; path=/; max-age={COOKIE_DAYS * 86400}; SameSite=Lax';"
    )
    st.html(f"<script>{script}</script>", unsafe_allow_javascript=True)


def _cookie(name: str) -> str:
    try:
        value = st.context.cookies.get(name)
    except Exception:  # noqa: BLE001 - no request context: no cookies
        return ""
    return unquote(value) if isinstance(value, str) else ""  # AppTest hands out a mock: no cookies


def current() -> Actor:
    """This browser's learner (created on the first visit, kept in cookies and in the session)."""
    actor = state.get(state.LEARNER)
    if actor is not None:
        return actor
    token = _cookie(LEARNER_COOKIE)
    fresh = not _TOKEN_RE.match(token)
    if fresh:
        token = secrets.token_urlsafe(18)
    name = clean_name(_cookie(NAME_COOKIE)) or friendly_name(token)
    instructor = is_instructor_key(_cookie(INSTRUCTOR_COOKIE))
    actor = Actor(id=public_id(token), name=name, instructor=instructor)
    state.put(state.LEARNER, actor)
    if fresh:
        state.put(state.LEARNER_COOKIES, {LEARNER_COOKIE: token, NAME_COOKIE: name})
    return actor


def write_pending_cookies() -> None:
    """Called by the frame on every run: writes the cookies a new learner or a name change needs, into one
    container that exists on every run (an element present on the first run only would shift every element
    after it, and the browser would briefly show each widget twice)."""
    slot = st.container(height=1, border=False)  # 1 px, invisible: only scripts go here
    for name, value in (state.pop(state.LEARNER_COOKIES) or {}).items():
        with slot:
            _set_cookie(name, value)


def _queue_cookie(name: str, value: str) -> None:
    state.put(state.LEARNER_COOKIES, {**(state.get(state.LEARNER_COOKIES) or {}), name: value})


def large_fonts_before_toggle() -> None:
    """Called by the frame just before it draws the Large fonts toggle: a page's request ("Bring to the
    projector") wins and is remembered; else a new session starts as this browser last left it (the cookie), so
    a refresh of the projector's tab stays large without &large=1 in the address."""
    pending = state.apply_pending_large()
    if pending is not None:
        _queue_cookie(LARGE_COOKIE, "1" if pending else "0")
    elif not state.has(state.W_LARGE) and _cookie(LARGE_COOKIE) in ("0", "1"):
        state.put(state.W_LARGE, _cookie(LARGE_COOKIE) == "1")


def large_fonts_changed() -> None:
    """The toggle's on_change: remember the choice in this browser."""
    _queue_cookie(LARGE_COOKIE, "1" if state.large_fonts() else "0")


def rename(name: str) -> None:
    actor = current()
    name = clean_name(name) or actor.name
    state.put(state.LEARNER, Actor(actor.id, name, actor.instructor))
    state.put(state.LEARNER_COOKIES, {**(state.get(state.LEARNER_COOKIES) or {}), NAME_COOKIE: name})


def become_instructor(key: str) -> bool:
    """True (and the session becomes the instructor's, remembered in a cookie) if `key` is the instructor key."""
    if not is_instructor_key(key):
        return False
    actor = current()
    state.put(state.LEARNER, Actor(actor.id, actor.name, True))
    state.put(state.LEARNER_COOKIES, {**(state.get(state.LEARNER_COOKIES) or {}), INSTRUCTOR_COOKIE: key.strip()})
    return True


def can_control(config: dict | None) -> bool:
    """Whether this browser may change the run with this config.json (its owner, or the instructor)."""
    return may_control(config or {}, current())


def owner_name(config: dict | None) -> str:
    learner = (config or {}).get("learner") or {}
    return str(learner.get("name") or "")


def _renamed() -> None:
    rename(state.get(state.W_LEARNER_NAME) or "")


def _key_entered() -> None:
    key = state.get(state.W_INSTRUCTOR_KEY) or ""
    state.put(state.W_INSTRUCTOR_KEY, "")
    if become_instructor(key):
        state.flash("success", "Instructor mode: you may control every run, and the Room page is in the menu.")
    elif key:
        state.flash("error", "That is not this server's instructor key (it is printed on the server's terminal).")


def sidebar(learner: Actor) -> None:
    """Who you are in the room, your name (editable) and, for the instructor, the key box."""
    title = f"You: {safe.md(learner.name)}" + (" · instructor" if learner.instructor else "")  # a label is markdown
    with st.expander(title, icon=":material/person:"):
        state.init(state.W_LEARNER_NAME, learner.name)
        st.text_input("Your name (shown to the room)", key=state.W_LEARNER_NAME, max_chars=32, on_change=_renamed)
        st.caption("Your runs are yours: others can watch and sample them, only you (and the instructor) change them.")
        if not learner.instructor:
            st.text_input("Instructor key", key=state.W_INSTRUCTOR_KEY, type="password", on_change=_key_entered)
