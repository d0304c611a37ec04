"""Large fonts (projector): the sidebar's toggle, and a page's request to turn it on or off (applied by the frame
before it draws the toggle)."""

from __future__ import annotations

import streamlit as st

W_LARGE = "w_large"
PENDING_LARGE = "pending_large"  # a page asked for Large fonts on/off: applied before the toggle is drawn next


def large_fonts() -> bool:
    """The sidebar's "Large fonts (projector)" toggle."""
    return bool(st.session_state.get(W_LARGE))


def request_large_fonts(on: bool = True) -> None:
    """Turn Large fonts on (or off) from a page: the toggle is drawn by the frame before any page runs, and a
    widget's value cannot change once it is drawn (StreamlitWidgetAlreadyInstantiatedError: "Bring to the
    projector" showed that traceback). The frame applies it on the next run, before the toggle."""
    st.session_state[PENDING_LARGE] = bool(on)


def apply_pending_large() -> bool | None:
    """Called by the frame just before it draws the toggle: the value a page asked for (None if none)."""
    pending = st.session_state.pop(PENDING_LARGE, None)
    if pending is not None:
        st.session_state[W_LARGE] = pending
    return pending
