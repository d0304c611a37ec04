"""Attention: every head of every layer on a probe text, scrubbed through training time, and one head in detail."""

from tinygpt.ui import frame, state

# First, before the imports below: a deep link's first run on a fresh server skips app.py (see tinygpt/ui/frame.py), and
# app.py must paint the menu before torch loads.
frame.require()


import time

import streamlit as st

from tinygpt.config import MAX_TEXT_FIELDS, TransformerConfig, trains_until_stopped
from tinygpt.errors import TinyGPTError
from tinygpt.runs.files import ACTIVE_STATES, ENDED_STATES, PAUSED_STATES
from tinygpt.ui.attention import attention_keys, playback
from tinygpt.ui.attention import attention_view as view
from tinygpt.ui.host import resources
from tinygpt.ui.people import room
from tinygpt.ui.run import follow, in_view
from tinygpt.ui.run.in_view import open_run
from tinygpt.ui.screen import backlog, explain, fonts
from tinygpt.ui.words import leaks, runinfo, safe

FOLLOW_EVERY_S = 3.0  # while following a live run, redraw the grid at most this often
PLAY_EVERY_S = 0.8  # the play button's pace: one snapshot per tick

store = resources.get_store()
run_id = in_view.run_id()
run = open_run(store, run_id, room.current())  # the run in view, once for this script run
rd = run.reader if run else None
follow.follow_idle_run(store, run, follow.trains(run))  # paused, stopped: a resume elsewhere redraws the page

st.title("tinygpt · Attention")
st.caption(
    "Each square is one head: row = the character asking (query), column = a character it may look at (key). "
    "Scrub the training step to watch heads form."
)
if rd is None:
    st.info("No run selected: start one on **Train** or open one on **Runs**.")
    st.stop()

index = rd.attention_index()
snapshots = [int(s["step"]) for s in index.get("snapshots", [])]
run_probe = index.get("probe_text", "")
config = rd.config()
knobs = run.knobs
mode, window = knobs.get("mask") or "causal", int(knobs.get("window") or TransformerConfig.window)
large = fonts.large_fonts()
following_live = follow.trains(run)
resources.touch(run_id)
if not snapshots:
    st.info("No attention snapshots yet: they appear every few steps once the run trains.")

if state.get(attention_keys.PROBE_RUN) != run_id:  # a new run: its own probe text
    state.put(attention_keys.W_PROBE, run_probe)
    state.put(attention_keys.PROBE_RUN, run_id)


def toy_mode_changed() -> None:  # toy mode: a short probe whose every cell shows its number
    state.put(
        attention_keys.W_PROBE, run_probe[: view.TOY_PROBE_CHARS] if state.get(attention_keys.W_ATTN_TOY) else run_probe
    )


# A text area: the probe is a slice of the corpus, newlines included, which a one-line field dropped while the
# heatmaps showed them (⏎).
probe = st.text_area(
    "Probe text", key=attention_keys.W_PROBE, height=80, max_chars=MAX_TEXT_FIELDS["probe_text"],
    persist_state="session",  # kept over a visit to another page: the marker above never finds the box empty
    help="The run's own probe (its attention is saved as it trains). Other text is run through the checkpoint "
    "nearest the chosen step.",
)  # fmt: skip
c1, toy, c2 = st.columns([1, 1.5, 3.5])  # the toggles in one row: beside the probe, "Toy mode" read "Toy m..."
toy.toggle(
    "Toy mode", key=attention_keys.W_ATTN_TOY, on_change=toy_mode_changed, help="A 10-character probe, numbers in cells"
)
if state.pop(attention_keys.ATTN_PLAY_DONE):  # the play loop reached the newest snapshot on its last tick
    state.put(attention_keys.ATTN_PLAYING, False)
playing = c1.toggle("Play", key=attention_keys.ATTN_PLAYING, disabled=len(snapshots) < 2)
if not playing:
    state.put(attention_keys.ATTN_PLAY_STARTED, False)
if snapshots and not following_live:  # a live run's count is the live caption's below: one number, not two
    c2.caption(f"{len(snapshots)} snapshots from step {snapshots[0]} to {snapshots[-1]}.")


@backlog.live_fragment(PLAY_EVERY_S if playing else None)
def grid_and_detail() -> None:
    in_view.redraw_if_moved(run_id)  # a timed refresh never draws a run no longer in view
    steps = [int(s["step"]) for s in rd.attention_index().get("snapshots", [])] or [0]
    started, follow = (
        bool(state.get(attention_keys.ATTN_PLAY_STARTED)),
        bool(state.get(attention_keys.ATTN_FOLLOW, True)),
    )
    move = playback.advance(steps, state.get(attention_keys.W_ATTN_STEP), playing, started, follow)
    if move.done:
        state.put(attention_keys.ATTN_PLAY_DONE, True)
        st.rerun()
    state.put(attention_keys.ATTN_PLAY_STARTED, move.started)
    state.put(attention_keys.ATTN_FOLLOW, move.follow)
    # The slider spans the whole run (0 .. max_steps), so its range stays put while snapshots arrive (a changing
    # range would make it a new widget on every snapshot); it shows the snapshot nearest the chosen step.
    end = max(int(rd.status().get("max_steps") or 0), int(config.get("train", {}).get("max_steps") or 0), steps[-1], 1)
    if rd.status().get("state") in (*ENDED_STATES, *PAUSED_STATES):  # steps end where it stands (0-1,000 at 609, and
        # 0-16,000 at a paused run's 8,550: reviews); a paused run's range moves once more, when it resumes
        end = max(int(rd.status().get("step") or 0), steps[-1], 1)
    elif trains_until_stopped(end):  # no end: a range that doubles past the newest snapshot, so it rarely changes
        end = next(e for e in (1000 * 2**k for k in range(40)) if e >= steps[-1])
    state.put(attention_keys.W_ATTN_STEP, min(max(int(move.step), 0), end))
    if len(steps) > 1:
        st.slider(
            "Training step", 0, end, key=attention_keys.W_ATTN_STEP,
            on_change=lambda: state.put(attention_keys.ATTN_FOLLOW, state.get(attention_keys.W_ATTN_STEP) >= steps[-1]),
            help="Scrub through training time; the grid shows the attention snapshot nearest to this step.",
        )  # fmt: skip
    step = runinfo.nearest_snapshot(steps, state.get(attention_keys.W_ATTN_STEP))
    try:
        fig, key, source, shown = view.grid(rd, step, probe, large)
    except TinyGPTError as e:
        st.warning(safe.md(e))
        return
    if fig is None:
        st.info("No checkpoint yet to run custom probe text through; the first one comes soon.")
        return
    if (state.get(attention_keys.ATTN_GRID) or {}).get("key") != key:
        state.put(attention_keys.ATTN_GRID, {"key": key, "drawn": time.time()})
    st.markdown(f"**All heads** · {source}")
    if leak := leaks.snapshot_note(config, rd.events, shown, source.split()[0]):  # heads reading the answer
        st.warning(leak, icon=":material/visibility:")
    explain.show_chart(fig, "attention_grid", key="attn_grid")

    st.subheader("One head, step by step")
    h1, h2, h3 = st.columns([1, 1, 2])
    state.init(attention_keys.W_ATTN_LAYER, 0)
    state.init(attention_keys.W_ATTN_HEAD, 0)
    state.init(attention_keys.W_ATTN_PER_ROW, 1 if large else 2)
    layer = h1.selectbox(
        "Layer", list(range(int(config.get("model", {}).get("num_layers", 1)))), key=attention_keys.W_ATTN_LAYER
    )
    head = h2.selectbox(
        "Head", list(range(int(config.get("model", {}).get("num_heads", 1)))), key=attention_keys.W_ATTN_HEAD
    )
    per_row = h3.segmented_control("Panels per row", [1, 2, 3, 5], key=attention_keys.W_ATTN_PER_ROW) or 2
    ck = runinfo.nearest_checkpoint(rd.checkpoints(), step)
    if ck is None:
        st.info("The detail view needs a checkpoint; the first one is written after a few steps.")
        return
    text = probe or run_probe
    try:
        fig, caption = view.detail(rd, ck, layer, head, text, per_row, large)
        st.caption(leaks.checkpoint_caption(config, rd.events, ck, shown))  # its mask, and the grid's where they differ
        explain.show_chart(fig, "attention_detail", key="attn_detail", caption=caption)
        st.subheader("Every mask on the same text")
        masks = view.masks_side_by_side(rd, ck, layer, head, text, window, large)
        explain.show_chart(masks, "mask_comparison", key="attn_masks")
    except TinyGPTError as e:
        st.warning(safe.md(e))


grid_and_detail()


@backlog.live_fragment(1.0 if following_live and not playing else None)
def follow_live() -> None:
    """While the run trains: when a new snapshot arrives and the user is watching the newest one, redraw
    the page (at most every FOLLOW_EVERY_S); the grid is not re-sent while nothing changed."""
    if not following_live:
        return
    in_view.redraw_if_moved(run_id)
    rd.poll()
    resources.touch(run_id)
    steps = [int(s["step"]) for s in rd.attention_index().get("snapshots", [])]
    drawn = (state.get(attention_keys.ATTN_GRID) or {}).get("drawn", 0)
    shown = state.get(attention_keys.W_ATTN_STEP)
    st.caption(f"Live: {len(steps)} snapshots from step {steps[0]} to {steps[-1]}." if steps else
               "Live: no snapshot yet.")  # fmt: skip
    if (
        steps
        and state.get(attention_keys.ATTN_FOLLOW, True)
        and shown != steps[-1]
        and time.time() - drawn > FOLLOW_EVERY_S
    ):
        st.rerun()
    # a live change redraws it all (a review read "The mask in force now: sliding_window" a minute after causal)
    if rd.status().get("state") not in ACTIVE_STATES or follow.live_changes(rd) != changes_drawn:
        st.rerun()


changes_drawn = follow.live_changes(rd)  # the live changes this page was drawn with
follow_live()

st.subheader(f"The mask in force now: {mode}")
tokens = list(probe or run_probe)[-int(config.get("model", {}).get("max_seq_len", 64)) :] or ["·"]
mask_fig, mask_caption = view.mask_matrix(mode, window, tokens, large)
if not probe:  # the box emptied: say whose characters label the matrix (a review read them as a stale probe's)
    mask_caption = f"{mask_caption} The probe box is empty: drawn over the run's own probe text."
explain.show_chart(mask_fig, "mask_matrix", caption=mask_caption)
st.subheader("Heads over training time")
explain.show_chart(view.head_stats(rd, mode, window, large), "head_stats_chart")
