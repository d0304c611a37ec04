"""Gradients: how hard each layer is pushed, next to the learning rate that scales the push."""

from tinygpt.ui import frame, state

# First, before the imports below: a deep link's first run on a fresh server skips app.py (see tinygpt/ui/frame.py), and
# app.py must paint the menu before torch loads.
frame.require()


import streamlit as st

from tinygpt.runs.files import ACTIVE_STATES
from tinygpt.runs.knobs import leak_spans
from tinygpt.ui.charts import curves, heatmaps, parts
from tinygpt.ui.gradients import gradients_keys
from tinygpt.ui.host import resources
from tinygpt.ui.people import room
from tinygpt.ui.run import follow, in_view
from tinygpt.ui.run.in_view import open_run
from tinygpt.ui.screen import backlog, explain, fonts
from tinygpt.ui.words import runinfo, safe

REFRESH_S = 1.0
LIVE_POINTS = 400  # points per curve while live (the charts thin older steps; hover still shows values)

store = resources.get_store()
run_id = in_view.run_id()
run = open_run(store, run_id, room.current())  # the run in view, once for this script run
rd = run.reader if run else None
follow.follow_idle_run(store, run, follow.trains(run))  # paused, stopped: a resume elsewhere redraws the page

st.title("tinygpt · Gradients")
st.caption(
    "Per-layer gradient norms share their time axis with the learning rate: watch warmup tame the first steps, "
    "clipping cap the spikes, and the update/weight ratio settle near 1e-3."
)
if rd is None:
    st.info("No run selected: start one on **Train** or open one on **Runs**.")
    st.stop()

active = follow.trains(run)
state.init(gradients_keys.W_GRAD_VIEW, "lines")
view = (
    st.segmented_control(
        "Per-layer view", ["lines", "heatmap"], key=gradients_keys.W_GRAD_VIEW, persist_state="session"
    )
    or "lines"
)


@backlog.live_fragment(REFRESH_S if active else None)
def live_gradients() -> None:
    in_view.redraw_if_moved(run_id)  # a timed refresh never draws a run no longer in view
    rd.poll()
    resources.touch(run_id)
    status = rd.status()
    config = rd.config()  # the reason in this viewer's words: a watcher read "stopped by you" of another's Stop
    st.markdown(f"**{safe.md(runinfo.status_line(status, rd.metrics, config, run.viewer))}**")
    knobs = run.knobs  # the config and the applied knob changes, as polled just now
    metrics = rd.metrics
    optimizer = (config.get("train") or {}).get("optimizer", "adamw")
    now = int(status.get("step") or 0)
    large = fonts.large_fonts()
    # Each per-layer chart carries the learning rate in a panel below it, on the same step axis.
    for field, help_name in (("layer_grad_norms", "layer_grad_chart"), ("update_ratios", "update_ratios")):
        if view == "heatmap":
            fig = heatmaps.layer_grad_heatmap(metrics, field, large=large)
            help_name = "layer_grad_heatmap" if field == "layer_grad_norms" else "update_ratio_heatmap"
        else:
            fig = parts.layer_grad_chart(metrics, field, max_rows=2400, large=large)
        explain.show_chart(fig, help_name, key=f"g_{field}", code=False)
        if field == "layer_grad_norms":
            explain.show_chart(
                curves.grad_norm_chart(
                    metrics, knobs.get("max_grad_norm") or 0.0, rd.events, max_points=LIVE_POINTS, large=large
                ),
                "grad_norm_chart",
                key="g_clip",
                code=False,
                caption=runinfo.clip_caption(metrics, knobs, optimizer, rd.evals, leak_spans(
                    config, rd.events, max(now, metrics[-1].get("step") or 0 if metrics else 0)),  # to the newest
                    (config.get("branch") or {}).get("step"), rd.checkpoints() or ()),  # a branch's: its own steps
            )
            notes = runinfo.event_notes(rd.events)
            if notes:
                st.caption(f"Markers: {safe.md(notes)}")  # messages come from events.jsonl
    bad = [e for e in rd.events if e.get("kind") in ("nonfinite", "diverged")]  # NaN, or a loss far above ln V
    if bad:
        st.error(f"Diverged at step {bad[-1].get('step')}: {safe.md(bad[-1].get('message'))}")
    if active and status.get("state") not in ACTIVE_STATES:
        st.rerun()


live_gradients()
# Outside the live fragment, so the static source text is not re-sent at every refresh.
per_layer = ["layer_grad_heatmap", "update_ratio_heatmap"] if view == "heatmap" else ["layer_grad_chart"]
explain.show_code([*per_layer, "grad_norm_chart"], "Show the code behind these charts")
