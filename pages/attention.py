"""Attention: every head of every layer on a probe text, scrubbed through training time, and one head in detail."""

import time

import streamlit as st

from tinygpt import inside
from tinygpt.attention import build_mask
from tinygpt.errors import TinyGPTError
from tinygpt.runstore import ACTIVE_STATES, knobs_now
from tinygpt.ui import explain, playback, resources, runinfo, state
from tinygpt.ui.charts import curves, heatmaps
from tinygpt.ui.charts import help as help_text

state.require_frame()  # a deep link's first run can skip app.py: see tinygpt/ui/state.py

FOLLOW_EVERY_S = 3.0  # while following a live run, redraw the grid at most this often
PLAY_EVERY_S = 0.8  # the play button's pace: one snapshot per tick

store = resources.get_store()
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
knobs = knobs_now(config, rd.events)
large = state.large_fonts()
following_live = resources.is_live(run_id) and rd.status().get("state") in ACTIVE_STATES
resources.touch(run_id)

if not snapshots:
    st.info("No attention snapshots yet: they appear every few steps once the run trains.")

state.init(state.W_PROBE, run_probe)
if state.get(state.PROBE_RUN) != run_id:  # a new run: its own probe text
    state.put(state.W_PROBE, run_probe)
    state.put(state.PROBE_RUN, run_id)
probe = st.text_input(
    "Probe text",
    key=state.W_PROBE,
    help="The run's own probe (its attention is saved as it trains). Other text is run through the checkpoint "
    "nearest the chosen step.",
)

c1, c2 = st.columns([1, 5])
if state.pop(state.ATTN_PLAY_DONE):  # the play loop reached the newest snapshot on its last tick
    state.put(state.ATTN_PLAYING, False)
playing = c1.toggle("Play", key=state.ATTN_PLAYING, disabled=len(snapshots) < 2)
if not playing:
    state.put(state.ATTN_PLAY_STARTED, False)
if snapshots:
    c2.caption(f"{len(snapshots)} snapshots from step {snapshots[0]} to {snapshots[-1]}.")


def grid_figure(step: int, custom: bool):
    """(figure, cache key, where it came from) of all heads at `step`: the run's snapshot, or other probe text run
    through the checkpoint nearest the step; (None, None, "") when custom text has no checkpoint yet."""
    if not custom:

        def from_snapshot():
            return heatmaps.attention_grid(rd.load_attention(step), index.get("tokens", list(run_probe)), large=large)

        key = (run_id, "snapshot", step, large)
        return state.cached_figure("attn_grid", key, from_snapshot), key, f"snapshot at step {step}"
    ck = runinfo.nearest_checkpoint(rd.checkpoints(), step)
    if ck is None:
        return None, None, ""

    def from_checkpoint():
        loaded = resources.cached_model(str(rd.run_dir), ck)
        idx, tokens = inside.encode_probe(loaded.model, loaded.tokenizer, probe)
        return heatmaps.attention_grid(inside.attention_maps(loaded.model, idx), tokens, large=large)

    key = (run_id, "ckpt", ck, probe, large)
    return state.cached_figure("attn_grid", key, from_checkpoint), key, f"checkpoint at step {ck}"


def detail_figure(ck: int, layer: int, head: int, text: str):
    loaded = resources.cached_model(str(rd.run_dir), ck)
    idx, tokens = inside.encode_probe(loaded.model, loaded.tokenizer, text)
    d = inside.attention_steps(loaded.model, idx, layer, head)
    fig = heatmaps.attention_detail(d["qk"], d["scaled"], d["mask"], d["masked"], d["weights"], tokens, large=large)
    config = loaded.config.model
    caption = help_text.detail_caption(config.attn_scale, d["scale"], config.head_dim, d["mask_mode"], d["window"])
    return fig, caption


@st.fragment(run_every=PLAY_EVERY_S if playing else None)
def grid_and_detail() -> None:
    steps = [int(s["step"]) for s in rd.attention_index().get("snapshots", [])] or [0]
    move = playback.advance(
        steps, state.get(state.W_ATTN_STEP), playing, bool(state.get(state.ATTN_PLAY_STARTED)),
        bool(state.get(state.ATTN_FOLLOW, True)),
    )  # fmt: skip
    if move.done:
        state.put(state.ATTN_PLAY_DONE, True)
        st.rerun()
    state.put(state.ATTN_PLAY_STARTED, move.started)
    state.put(state.ATTN_FOLLOW, move.follow)
    # The slider spans the whole run (0 .. max_steps), so its range stays put while snapshots arrive (a changing
    # range would make it a new widget on every snapshot); it shows the snapshot nearest the chosen step.
    end = max(int(rd.status().get("max_steps") or 0), int(config.get("train", {}).get("max_steps") or 0), steps[-1], 1)
    state.put(state.W_ATTN_STEP, min(max(int(move.step), 0), end))
    if len(steps) > 1:
        st.slider(
            "Training step", 0, end, key=state.W_ATTN_STEP,
            on_change=lambda: state.put(state.ATTN_FOLLOW, state.get(state.W_ATTN_STEP) >= steps[-1]),
            help="Scrub through training time; the grid shows the attention snapshot nearest to this step.",
        )  # fmt: skip
    step = runinfo.nearest_snapshot(steps, state.get(state.W_ATTN_STEP))
    try:
        fig, key, source = grid_figure(step, custom=probe != run_probe or not snapshots)
    except TinyGPTError as e:
        st.warning(str(e))
        return
    if fig is None:
        st.info("No checkpoint yet to run custom probe text through; the first one comes soon.")
        return
    if (state.get(state.ATTN_GRID) or {}).get("key") != key:
        state.put(state.ATTN_GRID, {"key": key, "drawn": time.time()})
    st.markdown(f"**All heads** · {source}")
    explain.show_chart(fig, "attention_grid", key="attn_grid")

    st.subheader("One head, step by step")
    h1, h2 = st.columns(2)
    state.init(state.W_ATTN_LAYER, 0)
    state.init(state.W_ATTN_HEAD, 0)
    layer = h1.selectbox(
        "Layer", list(range(int(config.get("model", {}).get("num_layers", 1)))), key=state.W_ATTN_LAYER
    )
    head = h2.selectbox("Head", list(range(int(config.get("model", {}).get("num_heads", 1)))), key=state.W_ATTN_HEAD)
    ck = runinfo.nearest_checkpoint(rd.checkpoints(), step)
    if ck is None:
        st.info("The detail view needs a checkpoint; the first one is written after a few steps.")
        return
    text = probe or run_probe
    try:
        build = lambda: detail_figure(ck, layer, head, text)  # noqa: E731
        fig, knobs_then = state.cached_figure("attn_detail", (run_id, ck, layer, head, text, large), build)
    except TinyGPTError as e:
        st.warning(str(e))
        return
    st.caption(f"From the checkpoint at step {ck} (nearest to step {step}), with the knobs as they were then.")
    explain.show_chart(fig, "attention_detail", key="attn_detail", caption=knobs_then)


grid_and_detail()


@st.fragment(run_every=1.0 if following_live and not playing else None)
def follow_live() -> None:
    """While the run trains: when a new snapshot arrives and the user is watching the newest one, redraw
    the page (at most every FOLLOW_EVERY_S); the grid is not re-sent while nothing changed."""
    if not following_live:
        return
    rd.poll()
    resources.touch(run_id)
    steps = [int(s["step"]) for s in rd.attention_index().get("snapshots", [])]
    drawn = (state.get(state.ATTN_GRID) or {}).get("drawn", 0)
    shown = state.get(state.W_ATTN_STEP)
    st.caption(f"Live: newest snapshot at step {steps[-1] if steps else 0}.")
    if steps and state.get(state.ATTN_FOLLOW, True) and shown != steps[-1] and time.time() - drawn > FOLLOW_EVERY_S:
        st.rerun()
    if rd.status().get("state") not in ACTIVE_STATES:
        st.rerun()


follow_live()

st.subheader("The mask of the current mode")
mode, window = knobs.get("mask") or "causal", int(knobs.get("window") or 16)
tokens = list(probe or run_probe)[-int(config.get("model", {}).get("max_seq_len", 64)) :] or ["·"]
mask = build_mask(mode, len(tokens), window).numpy()
mask_fig = heatmaps.mask_matrix(mask, tokens, title=f"Mask: {mode}", large=large)
explain.show_chart(mask_fig, "mask_matrix", caption=help_text.mask_caption(mode, window))

st.subheader("Heads over training time")
seq_len = len(index.get("tokens") or run_probe)
uniform = None
if seq_len > 1:  # the reference: a head spreading its weight evenly over what the mask in force lets it see
    value = inside.uniform_entropy(build_mask(mode, seq_len, window).numpy())
    uniform = (value, f"uniform under the {mode} mask (T={seq_len}): mean ln(visible keys) = {value:.2f}")
stats_key = (run_id, tuple(snapshots), uniform, large)  # rebuilt only when the snapshots or the mask changed


def build_stats():
    return curves.head_stats_chart(resources.head_stats(rd), uniform=uniform, large=large)


explain.show_chart(state.cached_figure("head_stats", stats_key, build_stats, 2), "head_stats_chart")
