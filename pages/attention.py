"""Attention: every head of every layer on a probe text, scrubbed through training time, and one head in detail."""

import time

import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.ui import app_support as sup
from tinygpt.ui import charts, heatmaps, state

state.require_frame()  # a deep link's first run can skip app.py: see tinygpt/ui/state.py

FOLLOW_EVERY_S = 3.0  # while following a live run, redraw the grid at most this often
PLAY_EVERY_S = 0.8  # the play button's pace: one snapshot per tick

store = sup.get_store()
run_id = state.run_id()
rd = state.reader(store, run_id)

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
knobs = sup.current_knobs(config, rd.events)
status = rd.status()
large = bool(state.get(state.W_LARGE))
following_live = sup.is_live(run_id) and status.get("state") in sup.ACTIVE_STATES
if sup.is_live(run_id):
    sup.get_manager().touch(run_id)

if not snapshots:
    st.info("No attention snapshots yet: they appear every few steps once the run trains.")

state.init(state.W_PROBE, run_probe)
if state.get(state.PROBE_RUN) != run_id:  # a new run: its own probe text
    st.session_state[state.W_PROBE] = run_probe
    state.put(state.PROBE_RUN, run_id)
probe = st.text_input(
    "Probe text",
    key=state.W_PROBE,
    help="The run's own probe (its attention is saved as it trains). Other text is run through the checkpoint "
    "nearest the chosen step.",
)

c1, c2 = st.columns([1, 5])
if state.pop(state.ATTN_PLAY_DONE):  # the play loop reached the newest snapshot on its last tick
    st.session_state[state.ATTN_PLAYING] = False
playing = c1.toggle("Play", key=state.ATTN_PLAYING, disabled=len(snapshots) < 2)
if not playing:
    state.put(state.ATTN_PLAY_STARTED, False)
if snapshots:
    c2.caption(f"{len(snapshots)} snapshots from step {snapshots[0]} to {snapshots[-1]}.")


def _nearest(steps: list[int], step: int) -> int:
    return min(steps, key=lambda s: (abs(s - step), s))


@st.fragment(run_every=PLAY_EVERY_S if playing else None)
def grid_and_detail() -> None:
    steps = [int(s["step"]) for s in rd.attention_index().get("snapshots", [])] or [0]
    chosen = st.session_state.get(state.W_ATTN_STEP)
    if playing:
        state.put(state.ATTN_FOLLOW, False)
        if not state.get(state.ATTN_PLAY_STARTED):  # pressing play at the newest snapshot starts from the first
            state.put(state.ATTN_PLAY_STARTED, True)
            if chosen is None or chosen >= steps[-1]:
                chosen = st.session_state[state.W_ATTN_STEP] = steps[0]
        else:  # one snapshot per tick; stop at the newest
            later = [s for s in steps if s > (chosen or steps[0])]
            if later:
                st.session_state[state.W_ATTN_STEP] = later[0]
            else:
                state.put(state.ATTN_PLAY_DONE, True)
                st.rerun()
    if st.session_state.get(state.W_ATTN_STEP) is None or state.get(state.ATTN_FOLLOW, True):
        st.session_state[state.W_ATTN_STEP] = steps[-1]
    # The slider spans the whole run (0 .. max_steps), so its range stays put while snapshots arrive (a changing
    # range would make it a new widget on every snapshot); it shows the snapshot nearest the chosen step.
    end = max(int(rd.status().get("max_steps") or 0), int(config.get("train", {}).get("max_steps") or 0), steps[-1], 1)
    st.session_state[state.W_ATTN_STEP] = min(max(int(st.session_state[state.W_ATTN_STEP]), 0), end)
    if len(steps) > 1:
        st.slider(
            "Training step",
            0,
            end,
            key=state.W_ATTN_STEP,
            on_change=lambda: state.put(state.ATTN_FOLLOW, st.session_state[state.W_ATTN_STEP] >= steps[-1]),
            help="Scrub through training time; the grid shows the attention snapshot nearest to this step.",
        )
    step = _nearest(steps, st.session_state[state.W_ATTN_STEP])

    try:
        ckpts = rd.checkpoints()
        custom = probe != run_probe or not snapshots
        if custom:
            ck = sup.nearest_checkpoint(ckpts, step)
            if ck is None:
                st.info("No checkpoint yet to run custom probe text through; the first one comes soon.")
                return
            model, tokenizer, _ = sup.load_model(str(rd.run_dir), ck)
            key = (run_id, "ckpt", ck, probe, large)
            source = f"checkpoint at step {ck}"
        else:
            key = (run_id, "snapshot", step, large)
            source = f"snapshot at step {step}"

        def build_grid():
            if custom:
                weights = sup.attention_from_model(model, tokenizer, probe)
                tokens = list(probe[-model.config.max_seq_len :])
            else:
                weights, tokens = rd.load_attention(step), index.get("tokens", list(run_probe))
            return heatmaps.attention_grid(weights, tokens, large=large)

        fig = state.cached_figure("attn_grid", key, build_grid)
        if (state.get(state.ATTN_GRID) or {}).get("key") != key:
            state.put(state.ATTN_GRID, {"key": key, "drawn": time.time()})
        st.markdown(f"**All heads** · {source}")
        sup.show_chart(fig, "attention_grid", key="attn_grid")
    except TinyGPTError as e:
        st.warning(str(e))
        return

    st.subheader("One head, step by step")
    num_layers = int(config.get("model", {}).get("num_layers", 1))
    num_heads = int(config.get("model", {}).get("num_heads", 1))
    h1, h2 = st.columns(2)
    state.init(state.W_ATTN_LAYER, 0)
    state.init(state.W_ATTN_HEAD, 0)
    layer = h1.selectbox("Layer", list(range(num_layers)), key=state.W_ATTN_LAYER)
    head = h2.selectbox("Head", list(range(num_heads)), key=state.W_ATTN_HEAD)
    ck = sup.nearest_checkpoint(rd.checkpoints(), step)
    if ck is None:
        st.info("The detail view needs a checkpoint; the first one is written after a few steps.")
    else:
        text = probe or run_probe

        def build_detail():
            model, tokenizer, _ = sup.load_model(str(rd.run_dir), ck)
            d = sup.attention_steps(model, tokenizer, text, layer, head)
            fig = heatmaps.attention_detail(
                d["qk"], d["scaled"], d["mask"], d["masked"], d["weights"], d["tokens"], large=large
            )
            return fig, f"scale = {d['scale']:.4g}, mask = {model.config.mask}"

        try:
            fig, knobs_then = state.cached_figure("attn_detail", (run_id, ck, layer, head, text, large), build_detail)
        except TinyGPTError as e:
            st.warning(str(e))
        else:
            st.caption(
                f"From the checkpoint at step {ck} (nearest to step {step}); {knobs_then} "
                "(the knobs as they were at that checkpoint)."
            )
            sup.show_chart(fig, "attention_detail", key="attn_detail")


grid_and_detail()


@st.fragment(run_every=1.0 if following_live and not playing else None)
def follow_live() -> None:
    """While the run trains: when a new snapshot arrives and the user is watching the newest one, redraw
    the page (at most every FOLLOW_EVERY_S); the grid is not re-sent while nothing changed."""
    if not following_live:
        return
    rd.poll()
    sup.get_manager().touch(run_id)
    steps = [int(s["step"]) for s in rd.attention_index().get("snapshots", [])]
    drawn = (state.get(state.ATTN_GRID) or {}).get("drawn", 0)
    shown = st.session_state.get(state.W_ATTN_STEP)
    st.caption(f"Live: newest snapshot at step {steps[-1] if steps else 0}.")
    if steps and state.get(state.ATTN_FOLLOW, True) and shown != steps[-1] and time.time() - drawn > FOLLOW_EVERY_S:
        st.rerun()
    if rd.status().get("state") not in sup.ACTIVE_STATES:
        st.rerun()


follow_live()

st.subheader("The mask of the current mode")
mode, window = knobs.get("mask") or "causal", int(knobs.get("window") or 16)
tokens = list(probe or run_probe)[-int(config.get("model", {}).get("max_seq_len", 64)) :] or ["·"]
sup.show_chart(
    heatmaps.mask_matrix(sup.mask_of(mode, len(tokens), window), tokens, title=f"Mask: {mode}", large=large),
    "mask_matrix",
)

st.subheader("Heads over training time")
seq_len = len(index.get("tokens") or run_probe) or None
stats_key = (run_id, tuple(snapshots), large)  # rebuilt only when the set of snapshots changed
sup.show_chart(
    state.cached_figure(
        "head_stats", stats_key, lambda: charts.head_stats_chart(sup.head_stats(rd), seq_len=seq_len, large=large), 2
    ),
    "head_stats_chart",
)
