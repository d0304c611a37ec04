"""The instructor's "Long runs: N training or waiting for a slot, ready in about M min" under the lesson's buttons
(the sidebar pane's, or the sidebar beside the projector's banner), from the prepared runs' own measured pace
(tinygpt.runs.scheduler's prepared_eta).

It is drawn in a fragment of its own that refreshes with the lesson's check: drawn with the page, the line kept the
count and the minutes of the page's last full run while the check above it moved on every 3 s (a review read
"2 training" beside a check that had counted them done)."""

from __future__ import annotations

import streamlit as st

from tinygpt.ui.host import resources
from tinygpt.ui.teach import teach_keys


def line() -> str | None:
    ready = resources.get_manager().prepared_eta()  # the prepared runs' own measured pace
    if not ready["runs"]:
        return None
    when = "once their pace is measured" if ready["seconds"] is None else (
        f"in about {max(1, round(ready['seconds'] / 60))} min")  # fmt: skip
    # A review read "about 15 min" for runs done in 3: step 8's Set up paused the lecture run, whose slot and cores
    # the forecast had counted out. Which slots it counts is said.
    counted = ready["seconds"] is not None and ready.get("slots", 0) < ready.get("of", 0)
    shared = f" on {ready['slots']} of the {ready['of']} slots" if counted else ""
    return f"Long runs: {ready['runs']} training or waiting for a slot, ready {when}{shared}."


def _caption() -> None:
    if said := line():
        st.caption(said)


def draw() -> None:
    """The line, in the container the caller is in, redrawn every REFRESH_S seconds (nothing while none wait)."""
    st.fragment(run_every=teach_keys.REFRESH_S)(_caption)()
