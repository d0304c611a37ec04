"""The Train page's live view, built outside the page: its three charts (datasets already Arrow bytes) and texts
from a run's records (`build_view`), and the chart options under them (`chart_options`). pages/train.py decides
when to draw them."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import streamlit as st

from tinygpt.runs.corpus import known_vocab_size
from tinygpt.runs.files import ENDED_STATES
from tinygpt.runs.knobs import knobs_now, leak_spans, with_queued
from tinygpt.ui import state
from tinygpt.ui.charts import curves
from tinygpt.ui.host import resources, runlist
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import explain
from tinygpt.ui.train import branching, train_keys
from tinygpt.ui.words import leaks, run_words, runinfo, safe, schedule_words, timing

LIVE_POINTS = 400  # points per live curve: plenty for a chart ~900 px wide, and cheap to rebuild twice a second


def build_view(store, rd, config: dict, status: dict, large: bool, viewer=None) -> dict:
    """The live view's figures (datasets already Arrow bytes) and texts, from the run's records; the status line
    in `viewer`'s words (run_words: "paused by you" only for the one who paused it)."""
    parent = in_view.reader(store, config.get("parent"))  # the run this one replaced: its curve, faint
    options = (
        large,
        state.get(train_keys.W_TARGET) or None,
        state.get(train_keys.W_SMOOTH, 0.0),
        state.get(train_keys.W_X_AXIS),
    )
    key = (str(rd.run_dir), str(parent.run_dir) if parent else None, options)
    # A queued run's knob changes wait in the server for its worker: the plan and the clip line draw them already
    waiting = status.get("state") in ("queued", "starting")
    queued = tuple(resources.get_manager().queued_knobs(rd.run_id)) if waiting else ()
    records = (_records(rd), _records(parent) if parent else None, queued)
    figures = shared_figures(key, records, lambda: _figures(rd, parent, config, status, options, queued))
    last = rd.samples[-1] if rd.samples else None
    said = {**status, "reason": run_words.reason_for(status.get("reason") or "", config, viewer)}
    # First what the curves did under a leak (tinygpt.ui.words.leaks, from the evals), then what the val curve scores.
    step = int(status.get("step") or 0)
    notes = [leaks.loss_leak_note(config, rd.events, step, rd.evals), run_words.val_note(config)]
    if known_vocab_size(rd.run_dir, config) is None:  # a named corpus before its worker loaded it
        notes.append("The uniform-guess line ln(V) comes once the run's worker has loaded the corpus and knows V.")
    if options[3] == "seconds":  # what the seconds count; with the previous run's curve, the loads it trained under
        runs = {"this run": rd} | ({"the run before it": parent} if parent else {})
        notes += timing.seconds_notes({name: {"metrics": r.metrics, "evals": r.evals, "status": r.status()}
                                       for name, r in runs.items()})  # fmt: skip
    return {**figures, "markers": runinfo.event_notes(rd.events), "sample": last,
            "status_line": runinfo.status_line(said, rd.metrics),
            "val_note": " ".join(n for n in notes if n) or None}  # fmt: skip


def _records(rd) -> tuple:
    """What a run's charts are drawn from, in a few numbers: how many records of each kind, and the newest step
    and time (a rewound run that grew back to the same length still differs)."""
    last = rd.metrics[-1] if rd.metrics else {}
    return (len(rd.metrics), last.get("step"), last.get("time"), len(rd.evals), len(rd.events))


def _figures(rd, parent, config: dict, status: dict, options: tuple, queued: tuple = ()) -> dict:
    large, target, smoothing, x_axis = options
    vocab_size = known_vocab_size(rd.run_dir, config)  # None: not known yet, and then no ln(V) line is drawn
    knobs = with_queued(knobs_now(config, rd.events), queued)
    # A branch's parent: where it left it, and the parent's later live changes the branch never took.
    label = branching.parent_label(parent.config(), config, parent.events, rd.events) if parent else ""
    ghost = dict(ghost=parent.metrics, ghost_label=label, ghost_from=branching.parent_from(config)) if parent else {}
    loss = curves.loss_chart(
        rd.metrics, rd.evals, rd.events, vocab_size, target=target, smoothing=smoothing, max_points=LIVE_POINTS,
        large=large, seconds=x_axis == "seconds", **ghost,
    )  # fmt: skip
    # An ended run has no plan from now on (a review's stopped run drew one to its max_steps)
    ended = status.get("state") in ENDED_STATES
    schedule = None if ended else runinfo.lr_schedule(config, knobs, points=200, now=status.get("step"))
    lr = curves.lr_chart(
        rd.metrics, current_step=status.get("step"), schedule=schedule, max_points=LIVE_POINTS, large=large
    )
    grad = curves.grad_norm_chart(rd.metrics, knobs.get("max_grad_norm") or 0.0, rd.events, max_points=LIVE_POINTS,
                                  large=large)  # fmt: skip
    figures = {name: explain.arrow_datasets(fig) for name, fig in (("loss", loss), ("lr", lr), ("grad", grad))}
    optimizer = (config.get("train") or {}).get("optimizer", "adamw")
    # Evals that are no best (copying), to the newest step recorded: status.json can lag the metrics, and a leak in
    # force then read "mask none from step 0 to step 1,520" on the newer steps (a review)
    newest = max(int(status.get("step") or 0), int((rd.metrics[-1].get("step") or 0) if rd.metrics else 0))
    leaks = leak_spans(config, rd.events, newest)
    since = (config.get("branch") or {}).get("step")  # a branch's steps up to it are its parent's
    return {**figures, "clip": runinfo.clip_caption(rd.metrics, knobs, optimizer, rd.evals, leaks, since,
                                                    rd.checkpoints() or ()),
            "lr_note": schedule_words.lr_note(config, knobs, ended, rd.events, status.get("step"))}  # fmt: skip


# Shared by every session of this server: when the room watches one run (the instructor's, on the projector and on
# 20 laptops), its charts are built once per FRESH_S for everyone instead of once per page refresh. A run records a
# step every few milliseconds, so pages refreshing at different moments never see the same records: a page takes
# charts another page built less than FRESH_S ago (at most that much older than its own records), or builds them.
FRESH_S = 0.4  # under the fastest refresh period (tinygpt/ui/host/live.py BASE_S, 0.45 s)
SHARED_ENTRIES = 48  # charts of this many (run, options) at most; each is three charts' Arrow bytes (~50 KB)
_shared: OrderedDict = OrderedDict()  # key -> (monotonic time built, records, figures)
_shared_lock = threading.Lock()


def shared_figures(key: tuple, records: tuple, build: Callable[[], dict], fresh_s: float | None = None) -> dict:
    """The figures for `key` (a run and the chart options): the ones built for the same `records`, or built less
    than `fresh_s` ago, else new ones from `build` (two sessions at once may both build; either result is right)."""
    fresh_s = FRESH_S if fresh_s is None else fresh_s
    now = time.monotonic()
    with _shared_lock:
        entry = _shared.get(key)
        if entry is not None and (entry[1] == records or now - entry[0] < fresh_s):
            _shared.move_to_end(key)
            return entry[2]
    value = build()
    with _shared_lock:
        _shared[key] = (now, records, value)
        _shared.move_to_end(key)
        while len(_shared) > SHARED_ENTRIES:
            _shared.popitem(last=False)
    return value


def chart_options() -> None:
    """Outside the live fragment: widgets re-sent at every refresh cost the browser a re-render each time."""
    with st.expander("Chart options", key=train_keys.W_CHART_OPTIONS_BOX):
        o1, o2 = st.columns(2)
        state.init(train_keys.W_TARGET, 0.0)
        state.init(train_keys.W_SMOOTH, 0.0)
        o1.number_input("Target loss (0 = none)", 0.0, 10.0, step=0.1, key=train_keys.W_TARGET)
        o2.slider("Smoothing", 0.0, 0.99, key=train_keys.W_SMOOTH)
        state.init(train_keys.W_X_AXIS, "steps")
        o1.segmented_control(
            "Loss x axis", ["steps", "seconds"], key=train_keys.W_X_AXIS, help="Wall-clock seconds race recipes"
        )


def branch_expander(store, rd, learner) -> None:
    """Under the charts, for a run with checkpoints: "Branch from a checkpoint", the Runs page's control
    (branching.branch_panel). Anyone who sees a run may branch it, a watcher too: the branch is a new run of their
    own and the parent is only read."""
    if rd is None or not rd.checkpoints():
        return
    name = runlist.run_names(store).get(rd.run_id) or f"run {rd.run_id}"
    with st.expander("Branch from a checkpoint (a new run from there, settings changed, on the same batches)",
                     key=train_keys.W_BRANCH_BOX):  # fmt: skip
        branching.branch_panel(store, rd.run_id, name, learner)


def queue_note(run_id: str, config: dict, viewer) -> None:
    """While the run waits in the queue: when it will start, and, to its owner, what to watch meanwhile (a review:
    the instructor projecting a learner's queued run was told to "open the instructor's run", and a learner watching
    a neighbour's, to open a neighbour's)."""
    words = runinfo.queue_words(resources.queue_forecast(run_id))
    if run_words.is_owner(config, viewer):
        st.info(f"{words}. Meanwhile, open the instructor's or a neighbour's run on **Runs** (read-only) and watch it "
                "learn.")  # fmt: skip
    else:
        st.info(f"{words}. This is {run_words.watching(config)}: it trains once it leaves the queue.")


def no_run_yet(store, learner, in_lesson: bool) -> None:
    """Train with no run in view. A learner whose own run trains in another tab (or from before a server restart)
    is offered it by name: "No run yet" alone sent a review's learner to start a second run beside their first."""
    text = "No run in view. Choose settings on the left and press **Train**."
    if in_lesson:
        text += " Following the lesson? **Set up this step** in its pane opens the room's run here."
    st.info(text)
    own = runlist.newest_own(store, learner)
    if own is None:
        return
    name = runlist.run_names(store).get(own.run_id) or own.run_id
    # The label stays the same while the run's step moves: a label that changes between a click and its rerun
    # loses the click; the name and where it stands go in the caption beside it
    st.caption(f"Your newest run: **{safe.md(name)}** ({own.state}, step {own.step:,}).")
    if st.button("Open your newest run", key="train_open_own", icon=":material/open_in_new:"):
        in_view.set_run_id(own.run_id)
        st.rerun()
