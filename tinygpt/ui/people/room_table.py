"""The Room table's columns: which of a row's cells are shown, and how wide, so that the table fits the projector
(1280x720, Large fonts: a main column of about 780 px) without a column cut off at its right edge.

The rows (tinygpt.ui.host.runlist.room_rows, with positions and flags) keep every cell; the table shows fewer:
"steps" ("1,134 / 3,000") stands for "step" and "max steps", the run's id and its owner class ("whose", counted
above the table) stay out of sight (the picker below the table names the run), the queued runs' reason is said
once under the table (`queue_note`), and a column empty on every row ("live changes" when no knob moved, the
lesson's columns outside a lesson) is left out. A long cell (a flag's reasons, the live changes) is cut with "…"
in its column and reads whole on hover.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

SHOWN = ("learner", "name", "lesson step", "in view", "state", "steps", "flag", "live changes")
KEPT = ("learner", "name", "state", "steps", "flag")  # shown even when empty on every row: what the room is about
MAIN_PX = 778  # the table's inner width at 1280x720 with the sidebar open and Large fonts (measured in Chromium)
# Widths in px, 690 in all when every column shows (under MAIN_PX, so no column is cut at the right edge; the
# table's width="stretch" spreads what is left over the columns). A cut cell reads whole on hover or a click; the
# flags' reasons are in the chart's hover too.
COLUMN_CONFIG = {
    "learner": st.column_config.TextColumn(width=90),
    "name": st.column_config.TextColumn(width=140),
    "lesson step": st.column_config.TextColumn("lesson", width=75),
    "in view": st.column_config.TextColumn("in view", width=60),
    "state": st.column_config.TextColumn(width=70),
    "steps": st.column_config.TextColumn(width=95),
    "flag": st.column_config.TextColumn(width=90),
    "live changes": st.column_config.TextColumn("changes", width=70),
}


def columns(rows: Sequence[dict]) -> list[str]:
    """The columns the table shows for these rows: SHOWN, less those empty on every row (but KEPT)."""
    return [c for c in SHOWN if c in KEPT or any(r.get(c) not in (None, "") for r in rows)]


def queue_note(rows: Sequence[dict]) -> str:
    """What the queued runs wait for, said once under the table (their "queue" cell, the same on every queued row,
    was a column of its own that pushed the table past the projector's width); "" when none waits."""
    reasons = list(dict.fromkeys(r["queue"] for r in rows if r.get("state") == "queued" and r.get("queue")))
    queued = sum(r.get("state") == "queued" for r in rows)
    return f"{queued} queued run(s): {'; '.join(reasons)}." if reasons else ""
