"""Teaching touches next to every chart: its "what to look for" sentence, and "Show the code", the library
functions that really produced the chart's numbers (each named here by the function itself, so a rename breaks
a test instead of showing stale code).

`show_chart` draws a figure of any kind the charts package makes (plotly, Altair, a Vega-Lite spec with named
datasets) followed by its help; `show_code` is the expander. Deliberately left out: building figures.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import streamlit as st

from tinygpt import attention, model, sampling, schedule, trainer
from tinygpt.inside import heads, lens
from tinygpt.inside import maps as inside
from tinygpt.lab import memory
from tinygpt.ui.charts.help import CHART_HELP

# chart name -> the functions whose numbers it draws
CHART_CODE: dict[str, list[Callable]] = {
    "loss_chart": [trainer.Trainer.loss_on, trainer.Trainer.evaluate],
    "lr_chart": [schedule.lr_at],
    "grad_norm_chart": [trainer.Trainer._step],
    "layer_grad_chart": [trainer.param_group_name, trainer.Trainer._step],
    "layer_grad_heatmap": [trainer.param_group_name, trainer.Trainer._step],
    "update_ratio_heatmap": [trainer.param_group_name, trainer.Trainer._step],
    "update_ratios": [trainer.Trainer._step],
    "attention_grid": [inside.attention_maps, model.MultiHeadAttention.forward, attention.scores_to_weights],
    "attention_detail": [
        inside.attention_steps,
        attention.attention_scores,
        attention.apply_mask,
        attention.scores_to_weights,
    ],
    "mask_matrix": [attention.mask_rows],
    "mask_comparison": [inside.attention_under_masks, attention.mask_rows],
    "head_stats_chart": [inside.head_stats, attention.attention_entropy],
    "next_char_chart": [sampling.filter_logits, sampling.next_token_probs],
    "attention_row_chart": [model.TinyGPT.stream],
    "memory_chart": [memory.memory_rows],
    "role_history_chart": [heads.role_keys, heads.stripe_score, heads.uniform_baseline],
    "residual_chart": [lens.residual_stream],
    "phase_change_chart": [heads.induction_probe, heads.copy_losses, heads.find_jump, heads.phase_change],
    "ablation_heatmap": [lens.head_ablation, lens.ablated_loss_sums],
    "ablated_probs_chart": [lens.ablated_probs, lens.replaced_head],
    "logit_lens_chart": [lens.logit_lens],
}


def source_of(function: Callable) -> str:
    """The source text of a library function."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return f"# source of {getattr(function, '__qualname__', function)} is not available"


def show_code_of(functions: list[Callable], label: str = "Show the code") -> None:
    """One expander with the source of each function (each once)."""
    functions = list(dict.fromkeys(functions))
    if functions:
        with st.expander(label, icon=":material/code:"):
            for function in functions:
                st.code(source_of(function), language="python")


def show_code(chart_names: list[str], label: str = "Show the code") -> None:
    """One expander with the library functions whose numbers the named charts draw."""
    show_code_of([f for name in chart_names for f in CHART_CODE.get(name, [])], label)


def show_chart(
    fig: Any, help_name: str | None = None, key: str | None = None, code: bool = True, caption: str | None = None
) -> None:
    """Draw a plotly, Altair or Vega-Lite figure, then the chart's 'what to look for' sentence and (with `code`)
    its "Show the code" expander. `caption` is added after the help: a sentence built from the data (the run's
    own mask, scale, knobs). Live fragments pass code=False and call `show_code` outside the fragment, so static
    text is not re-sent at every refresh."""
    if fig is None:
        return
    if hasattr(fig, "to_plotly_json"):
        st.plotly_chart(fig, key=key, config={"displaylogo": False}, theme=None)
    elif isinstance(fig, dict):  # a Vega-Lite spec with named datasets (charts.style.VegaLite): updates in place
        # Stacked panels keep their own width: "stretch" would widen each panel to the page and push the axis
        # labels past its edge.
        stacked = any(k in fig for k in ("vconcat", "hconcat", "concat"))
        st.vega_lite_chart(arrow_datasets(fig), key=key, width="content" if stacked else "stretch")
    else:
        st.altair_chart(fig, key=key, width="stretch")
    text = " ".join(t for t in (CHART_HELP.get(help_name or ""), caption) if t)
    if text:
        st.caption(text)
    if code and help_name:
        show_code([help_name])


def arrow_rows(rows: list[dict]) -> bytes | list[dict]:
    """Chart rows as Arrow IPC bytes, built column by column with pyarrow: ~15x cheaper than the DataFrame
    Streamlit would make of them (measured: 0.4 vs 6.5 ms for the loss chart's datasets), the biggest cost of a
    live refresh. Every key of every row becomes a column (a key missing from a row is null); rows pyarrow cannot
    type (mixed kinds in one column) are returned as they are, for Streamlit's own conversion."""
    import pyarrow as pa
    from streamlit.dataframe_util import convert_arrow_table_to_arrow_bytes

    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return rows
    columns = list(dict.fromkeys(k for r in rows for k in r))
    try:
        table = pa.table({str(c): pa.array([r.get(c) for r in rows]) for c in columns})
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return rows
    return convert_arrow_table_to_arrow_bytes(table)


def arrow_datasets(spec: dict) -> dict:
    """A Vega-Lite spec whose named datasets are Arrow bytes, which Streamlit sends as they are (`arrow_rows`)."""
    datasets = spec.get("datasets")
    if not isinstance(datasets, dict):
        return spec
    return {**spec, "datasets": {name: arrow_rows(rows) for name, rows in datasets.items()}}


@st.cache_resource(show_spinner=False)
def _blank_plotly_figure():
    import plotly.graph_objects as go

    return go.Figure(layout={"height": 10, "width": 10, "margin": {"l": 0, "r": 0, "t": 0, "b": 0}})


def preload_plotly() -> None:
    """An invisible 10-pixel plotly chart, so the browser fetches and compiles plotly.js (a 4.7 MB chunk that
    Streamlit loads lazily, with the first plotly chart of a page load) while the learner is on Train. Measured in
    headless Chromium: it was half of the first Attention view's ~1.1 s; later views took ~0.35 s."""
    with st.container(key="plotly_preload"):
        st.html("<style>.st-key-plotly_preload { display: none !important; }</style>")
        st.plotly_chart(_blank_plotly_figure(), config={"staticPlot": True}, theme=None, key="plotly_preload_chart")
