"""One-shot messages for the next run of a page: a widget callback says what happened, the page shows it once, over
the run it is about."""

from __future__ import annotations

import streamlit as st

from tinygpt.ui.state import RUN_ID
from tinygpt.ui.words.safe import md

FLASH = "flash"  # one-shot messages for the next run of a page: [(kind, text, run id or None)]
SHOWN = "_flash_shown"  # the messages the latest show_flashes showed (`show_again`)


def flash(kind: str, text: str, run_id: str | None = None) -> None:
    """Show `text` as st.<kind> (success, info, warning, error) at the top of the next page run, once (a widget
    callback that fires again must not put it there twice). `run_id`: it is about that run, and shows only over it."""
    pending = st.session_state.setdefault(FLASH, [])
    if (kind, text, run_id) not in pending:
        pending.append((kind, text, run_id))


def show_flashes(run_id: str | None = None) -> None:
    """Show the pending one-shot messages as text (they often carry a value from the URL or a user's file): those
    about no run, and those about `run_id` (None: the run in view). One about another run is dropped, not kept: it
    was news of that click, stale by the time its run is in view again (Bring to the projector shows none)."""
    shown = run_id or st.session_state.get(RUN_ID)
    st.session_state[SHOWN] = []
    for kind, text, about in st.session_state.pop(FLASH, []):
        if about is None or about == shown:
            getattr(st, kind)(md(text))
            st.session_state[SHOWN].append((kind, text, about))


def show_again() -> None:
    """The messages this script run showed, pending again: for a run the frame reruns at once (fonts.remount_grids),
    where they would have gone before anyone read them ("On your screen, in large fonts: anna's run" vanished)."""
    for kind, text, about in st.session_state.pop(SHOWN, []):
        flash(kind, text, about)
