"""Large fonts (projector): the sidebar's toggle, and a page's request to turn it on or off (applied by the frame
before it draws the toggle)."""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from tinygpt.ui.screen import flashes

W_LARGE = "w_large"
PENDING_LARGE = "pending_large"  # a page asked for Large fonts on/off: applied before the toggle is drawn next
GRID_FONTS = "_grid_fonts"  # Large fonts (True) or not: what the page's data grids were last mounted under
REMOUNT_WAIT_S = 0.5  # between the switch's run and the grids' remount (remount_grids)
GRID_DRAWN = "_grid_drawn"  # this script run drew a data grid (grid_place): only then does a switch rerun it


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


def grid_place(container: Any = None) -> Any:
    """Where to draw a table that shows as a data grid (st.dataframe): `container` (or the page) while the grids are
    mounted at normal fonts, a box inside it while at Large fonts (`remount_grids`). The grid paints on a canvas in
    pixels it worked out from the page's font size when it was mounted: it kept normal-size text after the switch
    until a page change remounted it (the Runs table on a projector). A box in its place is a different element, so
    the grid is mounted afresh, whichever way the switch goes."""
    where = st if container is None else container
    st.session_state[GRID_DRAWN] = True
    return where.container() if st.session_state.get(GRID_FONTS, False) else where


def remount_grids() -> None:
    """Called by the frame after the page has run: when this run drew grids mounted under the other font size,
    rerun once with them in their new place. Not in the same run as the switch: the switch's run sends the new
    size's style with the grids, and a grid mounted in that run still read the old size (checked in Chromium); one
    run later the style is on the page. A page without a grid is not rerun: its next grid mounts in the new place,
    under the style already there. A new session at Large fonts on a page with a grid takes the same extra run."""
    mounted, large = st.session_state.get(GRID_FONTS, False), large_fonts()
    st.session_state[GRID_FONTS] = large
    if mounted != large and st.session_state.pop(GRID_DRAWN, False):
        flashes.show_again()  # shown in this run, which the rerun replaces at once
        # A rerun sent at once reached the browser with this run, drawn in one go: the grid again read the old size
        # (1 of 3 tries in Chromium). Half a second lets the browser put this run's style on the page first.
        time.sleep(REMOUNT_WAIT_S)
        st.rerun(scope="app")
