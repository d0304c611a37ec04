"""A page drawing a run that is not training still follows it: when someone else resumes, steps, stops or restarts
it, the page redraws within FOLLOW_S. A page's own live refresh runs only while the run trains (its fragment's timer
is set on the page's full run), so a watcher who opened Gradients, Attention or Circuits on a paused run kept "step
513 · paused by the instructor" while the run trained past step 2,200, until some other click redrew the page (a
review, twice). The Train page has had this follower since the instructor's pause came in."""

from __future__ import annotations

import streamlit as st

from tinygpt.runs.files import ACTIVE_STATES
from tinygpt.runs.knobs import knob_changes
from tinygpt.runs.reader import RunReader
from tinygpt.runs.store import RunStore
from tinygpt.ui.host import resources
from tinygpt.ui.run.in_view import RunHandle

FOLLOW_S = 2.0


def trains(run: RunHandle | None) -> bool:
    """The run is training in a worker now, as the page's full run read it: its live refresh follows it."""
    return run is not None and bool(run.rules.live) and run.status.get("state") in ACTIVE_STATES


def live_changes(reader: RunReader) -> int:
    """How many live changes (knob changes applied) the run has had: a page drawn with fewer is out of date."""
    return len(knob_changes(reader.events))


def shown_as(run: RunHandle) -> tuple[str | None, bool]:
    """What a page drew the run as: its state and whether a worker had it."""
    return run.status.get("state"), bool(run.rules.live)


# A constant timer, drawn on every full run of the page (before any st.stop): a fragment whose run_every changes
# between full reruns (or that stops being drawn) can leave the browser a timer for a fragment the page no longer
# has (Streamlit #15084).
@st.fragment(run_every=FOLLOW_S)
def follow_idle_run(store: RunStore, run: RunHandle | None, following_live: bool) -> None:
    """Rerun the page once the run's state or its worker differs from what the page drew (`shown_as`); nothing while
    the page's own live refresh follows it (`following_live`) or no run is drawn."""
    if run is None or following_live:
        return
    now = run.reader_now(store)
    if now is None or (now.status().get("state"), resources.is_live(run.id)) != shown_as(run):
        st.rerun()


@st.fragment(run_every=FOLLOW_S)
def steps_since_drawn(store: RunStore, run: RunHandle | None, drawn_at: int, on_newest, key: str) -> None:
    """For a page that does not redraw itself while the run trains (Circuits: its ablations are computed per
    checkpoint): how far the run has gone since the page was drawn at `drawn_at`, and a button that draws it at the
    newest step (`on_newest`, a callback that moves the page's step). A watcher read "Heads at step 1040" while the
    run trained past 2,200, with nothing saying the page stood still (a review)."""
    if run is None or not trains(run):
        return
    now = run.reader_now(store)
    step = int((now.status().get("step") if now is not None else None) or 0)
    if step <= drawn_at:
        return
    words, button = st.columns([4, 1], vertical_alignment="center")
    words.caption(f"The run trains on: step {step:,} now. This page shows it up to step {drawn_at:,}, where it was "
                  "drawn; it does not redraw itself while the run trains.")  # fmt: skip
    if button.button("Show the newest", key=key, on_click=on_newest):  # a click reruns this fragment alone
        st.rerun(scope="app")
