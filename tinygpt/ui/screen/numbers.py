"""Number boxes whose range the server checks, and says so.

Streamlit's own min/max check runs in the browser: a value typed outside them turns the box red, a hint shows on
hover, and the widget keeps its last valid value, so the next button press used it unsaid (a review typed
999,999,999 in Max steps, pressed Train and got a 300-step run; a seed of -1 ran as 1337 beside the box still
showing -1). Here the browser's bounds are wide, the value reaches the server, and the box's on_change brings one
out of range to the nearest end of the range with a toast that names both, before any page code reads it: the box
then shows the value that will be used. A whole-number box is drawn as a real-number one showing no decimals, so
that "2.5" and "1e12" reach the server as typed (the browser had read them as 2 and 1): it rounds and says so, and
puts the box's value back to an int before any page reads it (`whole_again`).
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from tinygpt.ui.words.safe import md

WIDE_WHOLE = 2**53 - 1  # the bounds whole-number boxes had (Streamlit's limit for them): a default they sent
WIDE_REAL = 1e300  # every box's bounds in the browser: the server checks the range
# A box's own default is its lowest value, and the browser sent it once with no key pressed: "Seed: -9,007,199,254,
# 740,991 is less than the least it takes, 0; it is 0 now." popped up on the Circuits page and set the seed to 0.
# Nobody types these numbers: the box keeps its last value, unsaid.
UNSET = (-WIDE_WHOLE, -WIDE_REAL)
LAST = "_number_box_last:"  # session-state prefix of each box's last value
WHOLE = "_number_box_whole"  # session state: the keys of the whole-number boxes drawn (`whole_again`)


def number_box(container, label: str, low: float, high: float, *, key: str, on_change=None, args: tuple = (),
               **kwargs: Any) -> Any:  # fmt: skip
    """container.number_input(label, low, high, key=key, ...) with the range checked on the server (`in_range`);
    `on_change` (with `args`) runs after the check, on the value the box will show."""
    whole = isinstance(low, int) and isinstance(high, int) and not isinstance(kwargs.get("step"), float)
    if whole:
        # A whole-number box's text is read by the browser as an integer: "2.5" came as 2 and "1e12" as 1, unsaid (a
        # review). Drawn as a real-number box that shows no decimals, what was typed reaches the server, which keeps
        # a whole number in range and says what it kept (`_checked`); the page reads an int.
        kwargs = {**kwargs, "step": float(kwargs.get("step", 1)), "format": kwargs.get("format", "%.0f")}
        st.session_state.setdefault(WHOLE, set()).add(key)
        _whole_again(key)
    value = container.number_input(label, -WIDE_REAL, WIDE_REAL, key=key, on_change=_checked,
                                   args=(key, label, low, high, whole, on_change, tuple(args)), **kwargs)  # fmt: skip
    if whole and isinstance(value, float) and value.is_integer():
        value = int(value)
    if value not in UNSET:
        st.session_state[LAST + key] = value  # what `_checked` puts back if the browser sends the box's bare default
    return value


def whole_again() -> None:
    """At the start of a script run (tinygpt/ui/frame.py), before any page code reads them: every whole-number box's
    value an int again. The browser sends a box drawn as a real-number one back as 10.0 on every rerun, and a guard
    that takes only ints read "Steps per Step click: the browser sent 10.0, which it cannot take"."""
    for key in list(st.session_state.get(WHOLE, ())):
        _whole_again(key)


def _whole_again(key: str) -> None:
    held = st.session_state.get(key)
    if isinstance(held, float) and math.isfinite(held) and held.is_integer():
        st.session_state[key] = int(held)


def whole_number(value: Any) -> tuple[Any, str]:
    """(a whole number, "" or the words that say it was rounded) for a number typed in a whole-number box (pure):
    2.5 -> (3, "2.5 is not a whole number; it is 3 now."), 12.0 -> (12, ""); a non-number is left as it is."""
    if isinstance(value, bool) or not isinstance(value, float) or not math.isfinite(value):
        return value, ""
    if value.is_integer():
        return int(value), ""
    kept = math.floor(value + 0.5)
    return kept, f"{value:,} is not a whole number; it is {_said(kept)} now."


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
    return f"{number:,}" if isinstance(number, int) and abs(number) < 10**15 else f"{number:,g}"


def _checked(key: str, label: str, low: float, high: float, whole: bool, then, args: tuple) -> None:
    typed = st.session_state.get(key)
    if typed in UNSET:  # the box's bare default, not a number anyone typed (UNSET): the last value, unsaid
        st.session_state[key] = st.session_state.get(LAST + key, low)
        return
    if isinstance(typed, float) and not math.isfinite(typed):  # no box sends one: forged (tinygpt/ui/train/guard.py)
        st.session_state[key] = kept = st.session_state.get(LAST + key, low)
        st.toast(md(f"{label}: the browser sent {typed!r}, which it cannot take; it is {kept!r} again."))
        return
    rounded, said_whole = whole_number(typed) if whole else (typed, "")
    value, said = in_range(rounded, low, high)
    if said_whole and said:  # one sentence for both: "-0.5 is not a whole number, and 0 is less than …"
        said = f"{typed:,} is not a whole number, and {said}"
    said = said or said_whole
    if said or value is not typed:
        st.session_state[key] = value  # whole boxes keep an int: the page reads the number it was told
    if said:
        st.toast(md(f"{label}: {said}"), icon=":material/warning:", duration="long")  # 10 s: read after a click
    if then is not None:
        then(*args)
