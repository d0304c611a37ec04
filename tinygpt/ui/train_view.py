"""The Train page's live view, built outside the page: its three charts (datasets already Arrow bytes) and texts
from a run's records (`build_view`), and the chart options under them (`chart_options`). pages/train.py decides
when to draw them."""

from __future__ import annotations

import streamlit as st

from tinygpt.runstore import knobs_now
from tinygpt.ui import explain, runinfo, settings, state
from tinygpt.ui.charts import curves

LIVE_POINTS = 400  # points per live curve: plenty for a chart ~900 px wide, and cheap to rebuild twice a second


def build_view(store, rd, config: dict, status: dict, large: bool) -> dict:
    """The live view's figures (datasets already Arrow bytes) and texts, from the run's records."""
    vocab_size = len(config.get("vocab") or []) or config.get("model", {}).get("vocab_size", 65)
    knobs = knobs_now(config, rd.events)
    parent = state.reader(store, config.get("parent"))  # the run this one replaced: its curve, faint
    ghost = dict(ghost=parent.metrics, ghost_label=settings.ghost_label(parent.config(), config)) if parent else {}
    loss = curves.loss_chart(
        rd.metrics, rd.evals, rd.events, vocab_size, target=state.get(state.W_TARGET) or None,
        smoothing=state.get(state.W_SMOOTH, 0.0), max_points=LIVE_POINTS, large=large,
        seconds=state.get(state.W_X_AXIS) == "seconds", **ghost,
    )  # fmt: skip
    schedule = runinfo.lr_schedule(config, knobs, points=200)
    lr = curves.lr_chart(
        rd.metrics, current_step=status.get("step"), schedule=schedule, max_points=LIVE_POINTS, large=large
    )
    grad = curves.grad_norm_chart(rd.metrics, knobs.get("max_grad_norm") or 0.0, rd.events, max_points=LIVE_POINTS,
                                  large=large)  # fmt: skip
    notes = [runinfo.knob_note(rd.events, n["request"], knob, n["value"]) for knob, n in state.knob_notes().items()]
    figures = {name: explain.arrow_datasets(fig) for name, fig in (("loss", loss), ("lr", lr), ("grad", grad))}
    last = rd.samples[-1] if rd.samples else None
    return {**figures, "markers": runinfo.event_notes(rd.events), "knob_notes": notes, "sample": last}


def chart_options() -> None:
    """Outside the live fragment: widgets re-sent at every refresh cost the browser a re-render each time."""
    with st.expander("Chart options"):
        o1, o2 = st.columns(2)
        state.init(state.W_TARGET, 0.0)
        state.init(state.W_SMOOTH, 0.0)
        o1.number_input("Target loss (0 = none)", 0.0, 10.0, step=0.1, key=state.W_TARGET)
        o2.slider("Smoothing", 0.0, 0.99, key=state.W_SMOOTH)
        state.init(state.W_X_AXIS, "steps")
        o1.segmented_control(
            "Loss x axis", ["steps", "seconds"], key=state.W_X_AXIS, help="Wall-clock seconds race recipes"
        )
