"""The Room table's columns and cells: which of a row's cells are shown, so that every cell reads whole on the
projector (1280x720, Large fonts: a main column of about 780 px).

The rows (tinygpt.ui.host.runlist.room_rows, with positions and flags) keep every cell; the table shows fewer:
"steps" ("1,134 / 3,000") stands for "step" and "max steps", the run's id and its owner class ("whose", counted
above the table) stay out of sight (the picker below the table names the run), the queued runs' reason is said
once under the table (`queue_note`), and a column empty on every row ("live changes" when no knob moved, the
lesson's columns outside a lesson) is left out. The page draws it as a table whose cells wrap (st.table): a data
frame's fixed-height cells cut the learner, the run's name and the flag at 1280 Large ("tidy-womba…",
"2L×4H×64 · syntheti…", "diverged: div…"), and the important words were only whole on hover. A flag's cell is its
words ("diverged", "leaking"); its reasons, a paragraph each, are said under the table (`flag_notes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tinygpt.ui.words import safe

SHOWN = ("learner", "name", "lesson step", "in view", "state", "steps", "held-out", "flag", "live changes")
KEPT = ("learner", "name", "state", "steps", "flag")  # shown even when empty on every row: what the room is about
LABELS = {"lesson step": "lesson", "live changes": "changes"}  # short headers: the narrow columns stay narrow


def columns(rows: Sequence[dict]) -> list[str]:
    """The columns the table shows for these rows: SHOWN, less those empty on every row (but KEPT)."""
    return [c for c in SHOWN if c in KEPT or any(r.get(c) not in (None, "") for r in rows)]


def table(rows: Sequence[dict]) -> list[dict]:
    """The table's rows: the shown columns under their headers, every cell whole ("" for none), a flag as its
    words (room_flags.with_flags' "flag words"; the reasons are `flag_notes`)."""
    shown = columns(rows)
    out = []
    for row in rows:
        cells = {**row, "flag": row.get("flag words", row.get("flag"))}
        out.append({LABELS.get(c, c): "" if cells.get(c) is None else str(cells.get(c)) for c in shown})
    return out


def flag_notes(rows: Sequence[dict]) -> list[str]:
    """Under the table, one line per flagged run: "tidy-wombat · 2L×4H×64 · shakespeare · …: diverged: loss nan
    at step 50 ...", the reasons the flag cell leaves out."""
    # safe.md: a learner picks their name, and markdown in it stays text
    return [f"**{safe.md(r.get('learner'))} · {safe.md(r.get('name'))}**: {safe.md(r['flag'])}"
            for r in rows if r.get("flag")]  # fmt: skip


def paused_notes(rows: Sequence[dict]) -> list[str]:
    """Under the table, one line per paused run with who paused it and why it has no worker: the cell said only
    "paused" for the lecture run step 8 paused, and a review could not tell the instructor's pause from a learner's."""
    return [f"**{safe.md(r.get('learner'))} · {safe.md(r.get('name'))}**: {safe.md(r['paused'])}"
            for r in rows if r.get("state") == "paused" and r.get("paused")]  # fmt: skip


def queue_note(rows: Sequence[dict]) -> str:
    """What the queued runs wait for, said once under the table (their "queue" cell, the same on every queued row,
    was a column of its own that pushed the table past the projector's width); "" when none waits. Each fact once:
    a reason is facts joined by "; " (tinygpt.runs.forecast.queued_reason), and the rows' reasons share their
    first, so joining whole reasons read "waiting for a free training slot (2 run(s) train at once); waiting for a
    free training slot (2 run(s) train at once); live runs go first"."""
    reasons = [r["queue"] for r in rows if r.get("state") == "queued" and r.get("queue")]
    facts = dict.fromkeys(f.strip() for reason in reasons for f in str(reason).split("; ") if f.strip())
    queued = sum(r.get("state") == "queued" for r in rows)
    return f"{queued} queued run(s): {'; '.join(facts)}." if facts else ""
