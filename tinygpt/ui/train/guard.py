"""Values from the browser, checked before a widget takes them.

A widget's value comes back from the browser with every rerun, and a forged one (a websocket message of the wrong type)
reached Streamlit's own input handling: "cannot convert float NaN to integer" for Steps per Step click, "object of type
'float' has no len()" for the learning-rate slider, an exception box in the forger's page. Here, before each form widget
is drawn, the value its key holds is read (Streamlit deserializes it on that read, which is where a forged value fails)
and checked against the field's own type, range and options (tinygpt/ui/train/settings.py, inside the config's table of
limits); a value that does not pass is replaced by the field's fallback, with a message.

Some forged values never reach the page: Streamlit deserializes every changed widget's value before the script
runs (to call its on_change), and a value its own deserializer cannot read (NaN for a whole-number box, a float
where a slider sends a list of indices) raised there, outside any page code.
`server.refuse_unreadable_widget_values()` makes that one read refuse the value instead (tinygpt/ui/host/server.py:
the widget keeps the value it had, as for a widget state Streamlit has no metadata for) and says so on the server's
terminal: one place, for every widget of every page.

Streamlit calls are confined to `checked`; `valid` is pure and tested without a browser.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from tinygpt.ui.train import settings, train_keys
from tinygpt.ui.train.settings import Field
from tinygpt.ui.words import safe

_UNREADABLE = object()  # a value Streamlit itself could not deserialize


def _number(value: Any, low: float | None, high: float | None, whole: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    if whole and value != int(value):
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def valid(field: Field, value: Any) -> bool:
    """Whether `value` is one the field's widget can take: its type, within its range, among its options."""
    if field.widget in ("select", "radio"):
        return any(value == o and type(value) is type(o) for o in field.options)
    if field.widget == "heads":  # the head counts that divide the width: the form redraws a wrong one itself
        return _number(value, 1, None, whole=True)
    if field.widget == "slider":
        return _number(value, field.minimum, field.maximum, whole=True)
    if field.widget == "device":
        return isinstance(value, str) and len(value) <= 32
    whole = isinstance(field.minimum, int) and isinstance(field.maximum, int) and field.step is None
    return _number(value, field.minimum, field.maximum, whole)


def valid_count(value: Any, low: int, high: int) -> bool:
    """A whole-number box's value (Steps per Step click): an int in [low, high], never a float or a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _read(key: str) -> Any:
    try:
        return st.session_state[key]
    except KeyError:
        return None
    except Exception:  # noqa: BLE001 - Streamlit's deserializer failing on a forged value: treat it as unreadable
        return _UNREADABLE


def checked(key: str, label: str, ok, fallback: Any) -> None:
    """Before the widget under `key` is drawn: replace a value that `ok(value)` refuses (or that could not be read
    at all) by `fallback`, and say so once. A key nobody set yet is left for the widget's own default."""
    if key not in st.session_state:
        return
    value = _read(key)
    if value is not _UNREADABLE and ok(value):
        return
    st.session_state[key] = fallback
    shown = "a value it could not read" if value is _UNREADABLE else repr(value)[:40]
    # A toast, not a flash: it shows in this script run, wherever the widget sits on the page.
    st.toast(safe.md(f"{label}: the browser sent {shown}, which it cannot take; it is {fallback!r} again."))


def checked_field(field: Field, key: str) -> None:
    """`checked` with the field's own rule (its type, range and options), falling back to the preset's value."""
    checked(key, field.label, lambda value: valid(field, value), fallback(field))


def fallback(field: Field) -> Any:
    """The value a refused one is replaced by: the chosen preset's (the first preset's if that is unreadable too)."""
    if field.widget == "device":
        return "auto"  # every machine has it (resources.device_options)
    label = _read(train_keys.W_PRESET)
    if label not in settings.PRESET_LABELS:
        label = next(iter(settings.PRESET_LABELS))
    value = settings.preset_values(label).get(field.name)
    if value is None or not valid(field, value):
        value = field.options[0] if field.options else field.minimum
    return value
