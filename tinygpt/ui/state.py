"""The session's get and put: the one door to Streamlit session state, which every other ui module goes through.

Each key lives with the part it serves: a page's keys beside its view (tinygpt/ui/train/train_keys.py, ...), the room's
in tinygpt/ui/people/people_keys.py, the lesson pane's in tinygpt/ui/teach/teach_keys.py, the run in view's URL in
tinygpt/ui/run/in_view.py. Here: get / put / pop / has / init, `put_widget` and `stale_echo` (a widget's value set
from the server's side, and the browser's stale copy of it coming back), and `RUN_ID`, the one key read below every
folder (the flashes show over the run in view; tinygpt/ui/run/in_view.py writes it).

Deliberately left out: anything that must outlive a browser session (that lives in the run folder).
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

RUN_ID = "run_id"
SET_BY_PAGE = "set_by_page"  # {widget key: (value replaced, value put, monotonic time)}: see put_widget


def get(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)


def put(key: str, value: Any) -> None:
    st.session_state[key] = value


def pop(key: str, default: Any = None) -> Any:
    return st.session_state.pop(key, default)


def has(key: str) -> bool:
    return key in st.session_state


def init(key: str, value: Any) -> None:
    """Give a widget key its first value (a widget's own `value=` would fight with session state)."""
    if key not in st.session_state:
        st.session_state[key] = value


ECHO_S = 5.0  # how long the browser may still send a widget's old value after the server replaced it


def put_widget(key: str, value: Any) -> None:
    """Set a widget's value from the server's side (a log slider's exact box following the slider, a preset, a
    clamp), remembering the value it replaced, so that `stale_echo` can recognise that value coming back.

    Why: the browser sends every widget's value with each rerun request, and a live fragment asks for one every
    half second. A request sent before the browser drew the server's new value carries the old one, which looks like
    the learner changing it back: one key press on the learning-rate slider moved the exact box, whose stale value
    then moved the slider back (two knob commands, 0.002 -> 0.005 -> 0.002, or four)."""
    old = get(key)
    if old != value:
        st.session_state.setdefault(SET_BY_PAGE, {})[key] = (old, value, time.monotonic())
    put(key, value)


def stale_echo(key: str) -> bool:
    """In a widget's on_change: is its "new" value only the browser's stale copy of the one `put_widget` replaced
    (within ECHO_S)? Then the server's value is put back, and the caller should do nothing else. Deliberately
    left out: telling an echo from a learner who sets the old value back on purpose within those seconds (the
    widget then shows the current value again, and a second try works)."""
    entry = get(SET_BY_PAGE, {}).get(key)
    if entry is None:
        return False
    old, new, at = entry
    if time.monotonic() - at > ECHO_S:
        del st.session_state[SET_BY_PAGE][key]
        return False
    if get(key) != old:
        return False
    put(key, new)
    return True
