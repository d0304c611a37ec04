"""The instructor's "Long runs: N training or waiting for a slot, ready in about M min" under the lesson's buttons
(the sidebar pane's, or the sidebar beside the projector's banner), from the prepared runs' own measured pace
(tinygpt.runs.scheduler's prepared_eta).

It is drawn in a fragment of its own that refreshes with the lesson's check: drawn with the page, the line kept the
count and the minutes of the page's last full run while the check above it moved on every 3 s (a review read
"2 training" beside a check that had counted them done)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import streamlit as st

from tinygpt.runs.status import read_status
from tinygpt.ui.host import resources
from tinygpt.ui.teach import teach_keys

# Pressed at step 1, the lecture run training (docs/TEACHING.md, "With Prepare pressed at step 1"), not "Before class"
PREPARE_HELP = (
    "Press it at step 1, at the latest: it starts the long steps' runs now (the pitfalls', the multiple-heads "
    "step's and the induction experiment's), queued in the lesson's order behind the live lecture run, which keeps "
    "its slot, so each of those steps has its result when the class reaches it."
)


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


def states_line(states: Iterable[str | None]) -> str:
    """ "Long runs: 21 started: 19 finished · 1 diverged · 1 failed" from the prepared runs' states (pure). The
    banner read "Long runs: started (21)" for the whole class, every run long ended, one of them failed (a review):
    the states say when they are ready and which did not finish, each step's check what its runs did."""
    # as the Room counts them: "starting" and "running" are training
    counts = Counter({"running": "training", "starting": "training"}.get(s or "", s or "not started") for s in states)
    order = ("training", "queued", "paused", "finished", "diverged", "stopped", "failed")
    parts = [f"{counts[s]} {s}" for s in order if counts[s]] + [
        f"{n} {s}" for s, n in sorted(counts.items()) if s not in order
    ]
    total = sum(counts.values())
    return f"Long runs: {total} started" + (f": {' · '.join(parts)}" if parts else "")


def started_line(run_ids: Iterable[str]) -> str:
    """`states_line` for these runs, their states read from their folders now."""
    store = resources.get_manager().store
    return states_line(read_status(store.path(run_id)).get("state") for run_id in run_ids)


def _started(run_ids: tuple[str, ...], template: str) -> None:
    st.caption(template.format(started_line(run_ids)))


def draw_started(run_ids: Iterable[str], template: str = "{}") -> None:
    """`started_line` in `template`, redrawn every REFRESH_S seconds with the check (drawn with the page, the
    states would stay those of the page's last full run)."""
    st.fragment(run_every=teach_keys.REFRESH_S)(_started)(tuple(run_ids), template)


def _caption() -> None:
    if said := line():
        st.caption(said)


def draw() -> None:
    """The line, in the container the caller is in, redrawn every REFRESH_S seconds (nothing while none wait)."""
    st.fragment(run_every=teach_keys.REFRESH_S)(_caption)()
