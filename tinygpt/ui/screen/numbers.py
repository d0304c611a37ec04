"""Number boxes whose range the server checks, and says so.

Streamlit's own min/max check runs in the browser: a value typed outside them turns the box red, a hint shows on
hover, and the widget keeps its last valid value, so the next button press used it unsaid (a review typed
999,999,999 in Max steps, pressed Train and got a 300-step run; a seed of -1 ran as 1337 beside the box still
showing -1). Here the browser's bounds are wide, the value reaches the server, and the box's on_change brings one
out of range to the nearest end of the range with a toast that names both, before any page code reads it: the box
then shows the value that will be used.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from tinygpt.ui.words.safe import md

WIDE_WHOLE = 2**53 - 1  # the widest whole numbers a browser holds exactly (Streamlit's own limit)
WIDE_REAL = 1e300
# A box's own default is its lowest value, and the browser sent it once with no key pressed: "Seed: -9,007,199,254,
# 740,991 is less than the least it takes, 0; it is 0 now." popped up on the Circuits page and set the seed to 0.
# Nobody types these numbers: the box keeps its last value, unsaid.
UNSET = (-WIDE_WHOLE, -WIDE_REAL)
LAST = "_number_box_last:"  # session-state prefix of each box's last value


def number_box(container, label: str, low: float, high: float, *, key: str, on_change=None, args: tuple = (),
               **kwargs: Any) -> Any:  # fmt: skip
    """container.number_input(label, low, high, key=key, ...) with the range checked on the server (`in_range`);
    `on_change` (with `args`) runs after the check, on the value the box will show."""
    whole = isinstance(low, int) and isinstance(high, int) and not isinstance(kwargs.get("step"), float)
    wide = (-WIDE_WHOLE, WIDE_WHOLE) if whole else (-WIDE_REAL, WIDE_REAL)
    value = container.number_input(label, *wide, key=key, on_change=_checked,
                                   args=(key, label, low, high, on_change, tuple(args)), **kwargs)  # fmt: skip
    if value not in UNSET:
        st.session_state[LAST + key] = value  # what `_checked` puts back if the browser sends the box's bare default
    return value


def in_range(value: Any, low: float, high: float) -> tuple[Any, str]:
    """(the value to keep, "" or the sentence that says it was moved) for a typed `value` (pure). A number outside
    [low, high] goes to the nearer end: "Max steps: 999,999,999 is more than the most it takes, 1,000,000; it is
    1,000,000 now." Anything else (None, a non-number) is left to the page's own checks."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return value, ""
    if low <= value <= high:
        return value, ""
    bound = low if value < low else high
    bound = int(bound) if isinstance(value, int) else float(bound)
    side = "less than the least" if value < low else "more than the most"
    return bound, f"{_said(value)} is {side} it takes, {_said(bound)}; it is {_said(bound)} now."


def _said(number: float) -> str:
    return f"{number:,}" if isinstance(number, int) else f"{number:,g}"


def _checked(key: str, label: str, low: float, high: float, then, args: tuple) -> None:
    if st.session_state.get(key) in UNSET:  # the box's bare default, not a number anyone typed (UNSET)
        st.session_state[key] = st.session_state.get(LAST + key, low)
        return
    value, said = in_range(st.session_state.get(key), low, high)
    if said:
        st.session_state[key] = value
        st.toast(md(f"{label}: {said}"), icon=":material/warning:", duration="long")  # 10 s: read after a click
    if then is not None:
        then(*args)
