"""The app's charts: pure functions from run data to a figure, plus what every chart shares. No streamlit, no file IO.

This module holds the shared parts (the `theme` and `style_altair` / `style_plotly`, `visible_char`,
`thin_for_display`, the colours, `CHART_HELP` and `FIELD_TITLES`), one run's training curves in Altair (loss,
learning rate, gradient norms, per-layer norms, per-head attention statistics) and `config_diff`, the settings table
that explains a comparison. Two sibling modules build on these helpers:
- `tinygpt/ui/heatmaps.py`: the plotly heatmaps (attention maps, the mask, per-layer gradients over steps).
- `tinygpt/ui/compare_charts.py`: several runs on one axis, the next-character bars, memory by category.
Both import this module (never the other way round); pages import whichever module draws the chart they need.

Inputs are plain data as `tinygpt.runstore.RunReader` hands it out (lists of dicts, None where a value was not
finite), numpy arrays (attention maps, masks, probabilities) and lists of characters. Outputs are figures:
- Altair (Vega-Lite) for line and bar charts: Streamlit updates a Vega-Lite view in place when only its data
  changes, so a live chart keeps its zoom and hover between refreshes.
- plotly for heatmaps (see heatmaps.py).
Tests read the figures through `to_dict()`; no browser is needed.

Conventions:
- Every chart has a title, axis titles with units and hover tooltips; `CHART_HELP[name]` says what to look for.
- `large=True` gives projector-sized fonts (`theme`); `style_altair` / `style_plotly` apply them.
- Long series go through `thin_for_display` before they are sent, so a 100k-step run sends a bounded payload and
  every DataFrame stays under Altair's 5,000-row guard, which is left on (no global setting is changed).
- Characters are drawn visibly: space "␣", newline "⏎" (`visible_char`).

Deliberately left out: computing what is drawn (entropies, memory estimates, sampling filters live in the engine
and arrive here as numbers), log-scale loss axes, and colours that assume a light background (Streamlit's theme
supplies the background, so the same figures work in the dark theme).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd
import plotly.graph_objects as go

Records = Sequence[Mapping[str, Any]]

CHART_HELP: dict[str, str] = {
    "loss_chart": "Training loss should start near the dashed ln(V) line (a uniform guess over the vocabulary) and "
    "fall below it within a few dozen steps. Validation loss pulling away upward from training loss is overfitting.",
    "lr_chart": "The learning rate the optimizer used at each step: a linear warmup, then a cosine decay. "
    "The faint line is the plan; the vertical rule is where training is now.",
    "grad_norm_chart": "The size of the whole gradient before clipping (log scale). Points above the clip line were "
    "scaled down to it; many clipped steps early on usually mean the learning rate is too high or warmup too short.",
    "layer_grad_chart": "Gradient norm of each layer's parameters, above the learning rate on the same steps. "
    "Layers should stay within a few orders of magnitude of each other; a line falling to the floor is a layer that "
    "no longer learns (for example a detached residual path).",
    "update_ratios": "How much one step changes each layer's weights, relative to their size. Around 1e-3 is the "
    "classic healthy value; far above it training is unstable, far below it that layer barely moves.",
    "layer_grad_heatmap": "Rows are layers, columns are steps, colour is the gradient norm (log10). A row that "
    "goes dark stopped receiving gradient; a bright column is a gradient spike, often followed by a loss spike.",
    "attention_grid": "Each square is one head: row = the character attending, column = the character attended to. "
    "Early in training rows are flat; watch heads specialise, e.g. a bright diagonal just left of the main one is a "
    "head that looks at the previous character.",
    "attention_detail": "One head, step by step: raw scores q·k, scaled by 1/sqrt(d_head) (without scaling the "
    "colours get darker and softmax saturates), the mask, the masked scores (blank = not allowed) and softmax rows "
    "that each sum to 1.",
    "mask_matrix": "Which keys each query position may attend to. The causal mask is lower-triangular: no position "
    "sees the future. Anything above the diagonal lets the model peek at the characters it must predict.",
    "head_stats_chart": "Entropy of each head's attention (nats, averaged over positions): near ln(T) a head looks "
    "everywhere, near 0 it looks at one character. Max weight near 1 means softmax has saturated to one-hot.",
    "next_char_chart": "The model's probabilities for the next character, before (temperature 1, no filtering) and "
    "after temperature, top-k and top-p. Lower temperature sharpens the bars; top-k and top-p cut the tail to zero.",
    "attention_row_chart": "Where each head looked when it produced the newest character: one row per layer and "
    "head, one column per context character.",
    "compare_chart": "The same curve for several runs on one axis: the gap between the lines is the effect of the "
    "settings that differ (see the table).",
    "memory_chart": "Where the memory goes. Parameters, gradients and optimizer state grow with the model; "
    "activations grow with batch x context, and the attention maps with context squared.",
}

VISIBLE_CHARS = {" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍"}
LOG_FLOOR = 1e-8  # 0 cannot sit on a log axis: such values are drawn here, and tooltips show the real value
HEALTHY_UPDATE_RATIO = 1e-3  # the rule of thumb from cs231n and Karpathy's makemore part 3: log10(update/data) ~ -3
MEMORY_CATEGORIES = ("parameters", "gradients", "optimizer state", "activations", "attention")
BLUE, ORANGE, GREEN, RED, PURPLE, GREY, PALE = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#888", "#aec7e8"
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
FIELD_TITLES = {
    "loss": "training loss (nats per character)",
    "val_loss": "validation loss (nats per character)",
    "grad_norm": "gradient norm before clipping (log scale)",
    "lr": "learning rate",
    "tokens_per_s": "throughput (tokens per second)",
    # Experiments page (pitfall lab) curves
    "attention_entropy": "mean attention entropy (nats)",
    "max_attention_weight": "mean max attention weight (0..1)",
    "attention_grad_norm": "attention blocks' gradient norm",
    "first_layer_grad_norm": "first layer (L0.attn) gradient norm",
}
STEP = "training step"
HOVER_POINTS = 100  # per series in a live chart's hover layer: one every ~7 px of a 700 px plot
MAX_ROWS = 5000  # Altair's default guard on rows per DataFrame: thinning keeps every frame under it, so it stays on


# ---------------------------------------------------------------- theme and small helpers


def theme(large: bool = False) -> dict[str, int]:
    """Font sizes (px), line width and plot sizes. `large` is for a projector seen from the back of a room.
    `wide` is the plot width of stacked panels, which Streamlit cannot stretch to the page: with axis labels it
    fits the content column of a 1400 px window with the sidebar open."""
    if large:
        return {
            "title": 26,
            "axis_title": 20,
            "label": 17,
            "text": 17,
            "line": 3,
            "height": 460,
            "panel": 300,
            "wide": 1000,
        }
    return {"title": 17, "axis_title": 14, "label": 12, "text": 12, "line": 2, "height": 340, "panel": 220, "wide": 720}


def style_altair(chart: alt.TopLevelMixin, large: bool = False) -> alt.TopLevelMixin:
    """Apply the theme's fonts. Returns a top-level chart (configured charts cannot be layered any further)."""
    t = theme(large)
    return (
        chart.configure_title(fontSize=t["title"], anchor="start", subtitleFontSize=t["label"], offset=10)
        .configure_axis(labelFontSize=t["label"], titleFontSize=t["axis_title"], titleFontWeight="normal")
        .configure_legend(labelFontSize=t["label"], titleFontSize=t["label"], orient="top", labelLimit=400)
        .configure_header(labelFontSize=t["axis_title"], titleFontSize=t["axis_title"])
    )


def plotly_layout_style(title: str, t: dict) -> dict[str, Any]:
    """The title, fonts and margins every plotly figure gets, as layout keys (for figures built as one dict)."""
    return {
        "title": {"text": title, "font": {"size": t["title"]}, "x": 0.01, "xanchor": "left"},
        "font": {"size": t["label"]},
        "hoverlabel": {"font": {"size": t["label"] + 2}},
        "margin": {"l": 70, "r": 30, "t": 90, "b": 60},
    }


def style_plotly(fig: go.Figure, title: str, large: bool = False, height: int | None = None) -> go.Figure:
    t = theme(large)
    fig.update_layout(**plotly_layout_style(title, t))
    fig.update_annotations(font_size=t["axis_title"])  # subplot titles are annotations
    fig.update_xaxes(title_font_size=t["axis_title"], tickfont_size=t["label"])
    fig.update_yaxes(title_font_size=t["axis_title"], tickfont_size=t["label"])
    bar_fonts = {"colorbar_tickfont_size": t["label"], "colorbar_title_font_size": t["label"]}
    fig.update_coloraxes(**bar_fonts)
    fig.update_traces(**bar_fonts, selector={"type": "heatmap"})
    if height:
        fig.update_layout(height=height)
    return fig


def visible_char(ch: str) -> str:
    """A character as it should appear on an axis: whitespace as a symbol, control characters escaped."""
    if ch in VISIBLE_CHARS:
        return VISIBLE_CHARS[ch]
    return ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")


def thin_for_display(records: Sequence[Any], max_points: int = 1500) -> list[Any]:
    """At most `max_points` of `records`: the first, the last, and every k-th in between.

    k is a power of two, so while a live series grows the kept points stay the same until k doubles: the line does
    not shimmer between refreshes as an evenly re-spaced sample would.
    """
    records, max_points = list(records), max(2, int(max_points))
    if len(records) <= max_points:
        return records
    stride = 1
    while len(records) / stride > max_points - 1:
        stride *= 2
    kept = records[::stride]
    if (len(records) - 1) % stride:
        kept.append(records[-1])
    return kept


def _num(value: Any) -> float | None:
    """A finite float, or None (the run store writes non-finite values as null)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _series(records: Records | None, field: str) -> list[tuple[int, float]]:
    """(step, value) for the records where both are finite."""
    out = []
    for r in records or []:
        step, value = _num(r.get("step")), _num(r.get(field))
        if step is not None and value is not None:
            out.append((int(step), value))
    return out


def _nonfinite_steps(records: Records | None, field: str, events: Records | None) -> dict[int, str]:
    """Steps where `field` was written as null (not finite), plus the 'nonfinite' events, with a message each."""
    steps = {}
    for r in records or []:
        if field in r and r[field] is None and _num(r.get("step")) is not None:
            steps[int(r["step"])] = f"{field} was not finite"
    for e in events or []:
        if e.get("kind") == "nonfinite" and _num(e.get("step")) is not None:
            steps[int(e["step"])] = str(e.get("message") or "non-finite value")
    return steps


def _ema(values: Sequence[float], smoothing: float) -> list[float]:
    """Exponential moving average, debiased like TensorBoard's smoothing so the first points are not pulled to 0."""
    out, avg, weight = [], 0.0, 0.0
    for v in values:
        avg = smoothing * avg + (1 - smoothing) * v
        weight = smoothing * weight + (1 - smoothing)
        out.append(avg / weight)
    return out


def _data(rows: list[dict], *columns: str) -> pd.DataFrame:
    """Chart data as a DataFrame: Streamlit ships it as Arrow, and Altair neither validates nor deep-copies it
    (inline values are both, which costs seconds per refresh). Every chart keeps each frame under MAX_ROWS."""
    return pd.DataFrame.from_records(rows[:MAX_ROWS], columns=list(columns) or None)


def _x(title: str = STEP) -> alt.X:
    # 1,500 below ten thousand, 25k above: short labels that stay exact where steps are few
    labels = "datum.value >= 10000 ? format(datum.value, '.3~s') : format(datum.value, ',~d')"
    return alt.X("step:Q", title=title, axis=alt.Axis(labelExpr=labels))


def _y(field: str, title: str, log: bool = False, **scale: Any) -> alt.Y:
    """Every layer of a chart uses the same y title and scale type, or Vega-Lite would merge them ("loss, y")."""
    return alt.Y(field, title=title, scale=alt.Scale(type="log" if log else "linear", **scale))


def _hover(chart: alt.Chart, name: str, size: int = 90, zoom: bool = True, data: str | None = None) -> alt.Chart:
    """Points that appear under the pointer (nearest point, no need to hit the line) and carry the tooltip; with
    `zoom`, dragging or scrolling also zooms the step axis. Both parameters sit on this one view: Altair names
    every view that has parameters, and inside a vconcat it would attach them to all of those views.
    `data`: draw the hover points from this named dataset instead of the chart's own (see `_hover_rows`)."""
    sel = alt.selection_point(name=f"hover_{name}", nearest=True, on="pointerover", clear="pointerout", empty=False)
    params = [sel, alt.selection_interval(name=f"zoom_{name}", bind="scales", encodings=["x"])] if zoom else [sel]
    if data is not None:
        chart = chart.properties(data=alt.NamedData(data))
    return (
        chart.mark_point(filled=True, size=size)
        .encode(opacity=alt.condition(sel, alt.value(1), alt.value(0)))
        .add_params(*params)
    )


def _hover_rows(rows: list[dict], *by: str, limit: int = HOVER_POINTS) -> list[dict]:
    """At most `limit` rows of each series (the fields `by` name a series): what a live chart's hover layer draws.
    Every hover row is an invisible point the browser re-renders, and the nearest-point search is a Voronoi diagram
    over them: measured in Chromium on the Train page, the hover layers were ~30% of the browser's CPU at 2 Hz."""
    series: dict[tuple, list[dict]] = {}
    for row in rows:
        series.setdefault(tuple(row.get(field) for field in by), []).append(row)
    return [row for part in series.values() for row in thin_for_display(part, limit)]


def _colour(
    field: str,
    domain: Sequence[str],
    colours: Sequence[str] | None = None,
    title: str | None = None,
    lines: bool = False,
) -> alt.Color:
    """A colour encoding with a fixed order (and colours), so colours do not swap as series appear."""
    scale = alt.Scale(domain=list(domain), range=list(colours)) if colours else alt.Scale(domain=list(domain))
    legend = alt.Legend(title=title, symbolType="stroke", symbolStrokeWidth=3) if lines else alt.Legend(title=title)
    return alt.Color(field, scale=scale, legend=legend, sort=list(domain))


DASHES = ("solid", "dashed", "dotted")


def _dash(field: str, domain: Sequence[str]) -> alt.StrokeDash:
    """Line styles in a fixed order (DASHES). No legend: a dash legend next to a colour legend draws invisible
    symbols in Vega-Lite, so the chart's subtitle names the styles instead (`_dash_note`)."""
    styles = [[1, 0], [7, 4], [2, 2]]
    return alt.StrokeDash(field, scale=alt.Scale(domain=list(domain), range=styles[: len(domain)]), legend=None)


def _dash_note(names: Sequence[str]) -> str:
    return ", ".join(f"{style}: {name}" for style, name in zip(DASHES, names, strict=False))


def _palette(domain: Sequence[str]) -> list[str]:
    return (PALETTE * (1 + len(domain) // len(PALETTE)))[: len(domain)]


def _finish(layers: list, title: str, t: dict, subtitle: str | None = None, large: bool = False):
    title_params = alt.TitleParams(title, subtitle=subtitle) if subtitle else title
    return style_altair(alt.layer(*layers).properties(title=title_params, height=t["height"]), large)


# ---------------------------------------------------------------- training curves (Altair)


# Live charts are a cached template plus named datasets. The template (every layer, encoding, colour and title)
# is built with Altair once per shape (theme, series present, title) and kept as JSON; each refresh only computes
# the rows. Two reasons, both measured on the Train page at 2 Hz: building and validating three Altair charts took
# ~70 ms each on the server; and Streamlit names Altair's data by a hash of its content, so every refresh changed
# the spec and the browser rebuilt all three views from scratch. With stable dataset names the spec stays
# byte-identical between refreshes and the browser swaps the data into the existing view (hover and zoom survive).


class VegaLite(dict):
    """A Vega-Lite spec as plain JSON data, its rows in named top-level `datasets` (`to_dict()` like Altair's)."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self)


@functools.lru_cache(maxsize=256)
def _template_json(builder: Callable[..., Any], key: tuple) -> str:
    return json.dumps(builder(*key).to_dict())


def _live(builder: Callable[..., Any], key: tuple, datasets: dict[str, list[dict]]) -> VegaLite:
    """`builder(*key)`'s Altair chart as a spec (built once per key), filled with `datasets` (name -> rows)."""
    spec = VegaLite(json.loads(_template_json(builder, key)))
    spec["datasets"] = {name: rows[:MAX_ROWS] for name, rows in datasets.items()}
    return spec


def _ref_layers(
    source: str | list[dict], yspec: dict, t: dict, colour: str = GREY, dash: Sequence[int] = (6, 4)
) -> list:
    """Labelled horizontal reference lines from rows {"ref", "label"} (see `_ref_rows`; none: nothing drawn), on the
    same y title and scale (`yspec`, see `_y`) as the chart. `source` names a live chart's dataset, or is the rows."""
    base = alt.Chart(alt.NamedData(source) if isinstance(source, str) else _data(source))
    y = _y("ref:Q", **yspec)
    rule = base.mark_rule(strokeDash=list(dash), color=colour, strokeWidth=t["line"]).encode(
        y=y, tooltip=[alt.Tooltip("label:N", title="reference")]
    )
    # The label hangs just under its line: charts with a zoomable step axis clip marks to the plot area, and a
    # reference near the top of the y range (ln(V) at the start of training) would lose a label drawn above it.
    text = base.mark_text(align="left", baseline="top", dx=6, dy=4, color=colour, fontSize=t["text"]).encode(
        y=y, x=alt.value(0), text="label:N"
    )
    return [rule, text]


def _ref_rows(value: Any, label: str) -> list[dict]:
    return [{"ref": float(value), "label": label}] if _num(value) is not None else []


def _marker_layers(name: str, t: dict, colour: str, tooltip_title: str) -> list:
    """Vertical rules at the steps of dataset `name`, labelled at the top. Rows are {"step", "label", "y", "side"}
    (see `_marker_rows`): y (pixels from the top) staggers labels over three lines so neighbours do not overlap, and
    side puts a label left of its rule near the right edge, where a zoomable chart would clip it."""
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("label:N", title=tooltip_title)]
    base = alt.Chart(alt.NamedData(name))
    labels = [
        base.transform_filter(f"datum.side == '{side}'")
        .mark_text(align=side, baseline="top", dx=4 if side == "left" else -4, color=colour, fontSize=t["text"])
        .encode(x=_x(), y=alt.Y("y:Q", scale=None), text="label:N", tooltip=tooltip)
        for side in ("left", "right")
    ]
    return [
        base.mark_rule(color=colour, strokeDash=[3, 3], strokeWidth=t["line"]).encode(x=_x(), tooltip=tooltip)
    ] + labels


def _marker_rows(rows: list[dict], t: dict, x_max: float | None, stagger: bool = True) -> list[dict]:
    """Marker rows with their label's line ("y", pixels) and side: "right" (label left of the rule) past 60% of
    the x range that ends at `x_max`."""
    far = 0.6 * x_max if x_max else math.inf
    return [
        {
            **row,
            "y": t["text"] + 6 + (i % 3 if stagger else 0) * (t["text"] + 4),
            "side": "right" if row["step"] > far else "left",
        }
        for i, row in enumerate(rows)
    ]


def _x_max(*row_lists: list[dict]) -> float | None:
    return max((row["step"] for rows in row_lists for row in rows), default=None)


def _event_template_layers(t: dict) -> list:
    """Knob changes as labelled purple rules ("knobs"); non-finite steps as red rules with a red marker along the
    top ("nonfinite")."""
    layers = _marker_layers("knobs", t, PURPLE, "knob change")
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("label:N", title="non-finite")]
    base = alt.Chart(alt.NamedData("nonfinite"))
    layers.append(base.mark_rule(color=RED, strokeWidth=t["line"], opacity=0.7).encode(x=_x(), tooltip=tooltip))
    layers.append(
        base.mark_point(shape="triangle-down", filled=True, size=12 * t["text"], color=RED).encode(
            x=_x(), y=alt.value(t["text"] // 2 + 2), tooltip=tooltip
        )
    )
    return layers


def _event_rows(
    events: Records | None, nonfinite: dict[int, str], t: dict, x_max: float | None
) -> dict[str, list[dict]]:
    knobs = [
        {"step": int(e["step"]), "label": str(e.get("message") or e.get("knob") or "knob")[:48]}
        for e in events or []
        if e.get("kind") == "knob" and _num(e.get("step")) is not None
    ]
    bad = [{"step": s, "label": m} for s, m in sorted(nonfinite.items())][-200:]
    return {"knobs": _marker_rows(knobs, t, x_max), "nonfinite": bad}


def loss_chart(
    metrics: Records | None,
    evals: Records | None,
    events: Records | None,
    vocab_size: int | None,
    target: float | None = None,
    smoothing: float = 0.0,
    *,
    target_label: str = "target",
    max_points: int = 1500,
    large: bool = False,
) -> VegaLite:
    """Train loss per step (optionally EMA-smoothed), val loss, the ln(V) uniform baseline, an optional target,
    knob changes and non-finite steps. Never raises on empty input: it shows a 'waiting' title instead."""
    t, smoothing = theme(large), min(max(float(smoothing or 0.0), 0.0), 0.999)
    train = _series(metrics, "loss")
    raw_name, smooth_name = ("train (raw)", f"train (EMA {smoothing:g})") if smoothing else ("train", None)
    rows = []
    smoothed = _ema([v for _, v in train], smoothing) if smoothing else [None] * len(train)
    for (step, value), ema in thin_for_display(list(zip(train, smoothed, strict=True)), max_points):
        rows.append({"step": step, "loss": value, "series": raw_name})
        if ema is not None:
            rows.append({"step": step, "loss": ema, "series": smooth_name})
    rows += [{"step": s, "loss": v, "series": "val"} for s, v in thin_for_display(_series(evals, "val_loss"), 500)]
    uniform = math.log(vocab_size) if vocab_size and vocab_size > 0 else None
    datasets = {
        "loss": rows,
        "loss_hover": _hover_rows(rows, "series"),
        "uniform": _ref_rows(uniform, f"uniform guess ln(V)={uniform:.2f}") if uniform else [],
        "target": _ref_rows(target, f"{target_label} {_num(target) or 0:.2f}"),
        **_event_rows(events, _nonfinite_steps(metrics, "loss", events), t, _x_max(rows)),
    }
    title = "Training loss" if rows else "Training loss: waiting for the first step"
    return _live(_loss_template, (raw_name, smooth_name, title, large), datasets)


def _loss_template(raw_name: str, smooth_name: str | None, title: str, large: bool):
    t = theme(large)
    yspec = {"title": "cross-entropy loss (nats per character)", "zero": False}
    domain, colours = [raw_name, "val"], [PALE if smooth_name else BLUE, ORANGE]
    if smooth_name:
        domain.insert(1, smooth_name)
        colours.insert(1, BLUE)
    base = alt.Chart(alt.NamedData("loss")).encode(
        x=_x(), y=_y("loss:Q", **yspec), color=_colour("series:N", domain, colours, lines=True)
    )
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("series:N"), alt.Tooltip("loss:Q", format=".4f")]
    layers = [
        base.mark_line(strokeWidth=t["line"]),
        base.mark_point(filled=True, size=6 * t["text"]).transform_filter(alt.datum.series == "val"),
        _hover(base.encode(tooltip=tooltip), "loss", data="loss_hover"),
        *_ref_layers("uniform", yspec, t),
        *_ref_layers("target", yspec, t, colour=GREEN, dash=(2, 3)),
        *_event_template_layers(t),
    ]
    return _finish(layers, title, t, large=large)


def lr_chart(
    metrics: Records | None,
    current_step: int | None = None,
    schedule: Sequence[tuple[int, float]] | None = None,
    *,
    max_points: int = 1500,
    large: bool = False,
) -> VegaLite:
    """The learning rate used at each step, the planned schedule as a faint line, and the current step."""
    t = theme(large)
    rows = [{"step": s, "lr": v, "series": "used"} for s, v in thin_for_display(_series(metrics, "lr"), max_points)]
    planned = [(int(s), float(v)) for s, v in schedule or [] if _num(s) is not None and _num(v) is not None]
    rows += [{"step": s, "lr": v, "series": "planned"} for s, v in thin_for_display(planned, max_points)]
    now = []
    if current_step is not None and _num(current_step) is not None:
        now_row = {"step": int(current_step), "label": f"now: step {int(current_step)}"}
        now = _marker_rows([now_row], t, _x_max(rows, [now_row]), stagger=False)
    title = "Learning rate schedule" if rows else "Learning rate: waiting for the first step"
    return _live(_lr_template, (title, large), {"lr": rows, "lr_hover": _hover_rows(rows, "series"), "now": now})


def _lr_template(title: str, large: bool):
    t = theme(large)
    base = alt.Chart(alt.NamedData("lr")).encode(
        x=_x(),
        y=_y("lr:Q", "learning rate", zero=True),
        color=_colour("series:N", ["planned", "used"], [PALE, BLUE], lines=True),
    )
    tooltip = [
        alt.Tooltip("step:Q", title="step"),
        alt.Tooltip("series:N"),
        alt.Tooltip("lr:Q", format=".3e", title="learning rate"),
    ]
    layers = [
        base.mark_line(strokeWidth=t["line"]).encode(strokeDash=_dash("series:N", ["used", "planned"])),
        _hover(base.encode(tooltip=tooltip), "lr", data="lr_hover"),
        *_marker_layers("now", t, GREY, "position"),
    ]
    return _finish(layers, title, t, large=large)


def grad_norm_chart(
    metrics: Records | None,
    max_grad_norm: float | None,
    events: Records | None,
    *,
    max_points: int = 1500,
    large: bool = False,
) -> VegaLite:
    """Global gradient norm before clipping (log y), the clip threshold, clipped steps and non-finite steps."""
    t = theme(large)
    norms = _series(metrics, "grad_norm")
    rows = [{"step": s, "norm": v, "shown": max(v, LOG_FLOOR)} for s, v in thin_for_display(norms, max_points)]
    clipped = [
        {"step": int(m["step"]), "norm": v, "shown": max(v, LOG_FLOOR), "clipped": "yes"}
        for m in metrics or []
        if m.get("clipped") and (v := _num(m.get("grad_norm"))) is not None and _num(m.get("step")) is not None
    ]
    clipping = (_num(max_grad_norm) or 0) > 0
    datasets = {
        "grad": rows,
        "grad_hover": _hover_rows(rows),
        "clip": _ref_rows(max_grad_norm, f"clip threshold {_num(max_grad_norm) or 0:g}") if clipping else [],
        "clipped": thin_for_display(clipped, 500),
        **_event_rows(events, _nonfinite_steps(metrics, "grad_norm", events), t, _x_max(rows)),
    }
    title = "Global gradient norm before clipping" + ("" if rows else ": waiting for the first step")
    # The subtitle is part of the template, so it says what the points are rather than how many (that would
    # change the spec, and rebuild the view, at every refresh).
    subtitle = "orange points: steps clipped to the threshold" if clipping else "clipping is off"
    return _live(_grad_norm_template, (title, subtitle, large), datasets)


def _grad_norm_template(title: str, subtitle: str, large: bool):
    t = theme(large)
    yspec = {"title": "gradient norm (L2, log scale)", "log": True}
    y = _y("shown:Q", **yspec)
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("norm:Q", format=".4g", title="norm before clipping")]
    base = alt.Chart(alt.NamedData("grad")).encode(x=_x(), y=y)
    layers = [
        base.mark_line(strokeWidth=t["line"], color=BLUE),
        _hover(base.encode(tooltip=tooltip, color=alt.value(BLUE)), "grad", data="grad_hover"),
        *_ref_layers("clip", yspec, t, colour=ORANGE),
        alt.Chart(alt.NamedData("clipped"))
        .mark_point(filled=True, color=ORANGE, size=6 * t["text"])
        .encode(x=_x(), y=y, tooltip=[*tooltip, alt.Tooltip("clipped:N", title="clipped to threshold")]),
        *_event_template_layers(t),
    ]
    return _finish(layers, title, t, subtitle=subtitle, large=large)


def _groups(metrics: Records | None, field: str) -> list[str]:
    """Group names in the writer's order ("emb", "L0.attn", "L0.mlp", ..., "ln_f"), first seen first."""
    seen: dict[str, None] = {}
    for m in metrics or []:
        for g in m.get(field) or {}:
            seen.setdefault(str(g), None)
    return list(seen)


def _layer_and_part(group: str) -> tuple[str, str]:
    """ "L3.attn" -> ("L3", "attn"); "emb" -> ("emb", "other")."""
    layer, _, part = group.partition(".")
    return (layer, part) if part in ("attn", "mlp") else (group, "other")


def _lr_panel_template(t: dict) -> alt.LayerChart:
    """The learning rate under a per-layer chart, from dataset "lr_panel" (rows {"step", "lr"})."""
    base = alt.Chart(alt.NamedData("lr_panel")).encode(x=_x(), y=_y("lr:Q", "learning rate", zero=True, nice=True))
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("lr:Q", format=".3e", title="learning rate")]
    return alt.layer(
        base.mark_line(strokeWidth=t["line"], color=GREY),
        _hover(base.encode(tooltip=tooltip, color=alt.value(GREY)), "lr_panel", zoom=False, data="lr_panel_hover"),
    ).properties(height=int(t["height"] / 2.5))  # tall enough for the axis title "learning rate"


def layer_grad_chart(
    metrics: Records | None,
    field: str = "layer_grad_norms",
    lr_metrics: bool = True,
    *,
    max_rows: int = 4000,
    width: int | None = None,
    large: bool = False,
) -> VegaLite:
    """One line per parameter group over steps (log y): colour = layer, dash = attention or MLP. With
    field="update_ratios" it draws ||dW|| / ||W|| with the 1e-3 reference. `lr_metrics`: add a learning-rate panel
    below, from the same metrics, sharing the step axis (zooming one zooms both). Streamlit cannot stretch two
    stacked panels to the page, so they get `width` pixels (default: the theme's `wide`). A live chart: a cached
    template plus named datasets (see `_live`)."""
    t = theme(large)
    groups = _groups(thin_for_display(list(metrics or []), 200), field)  # fixed for a run: a sample finds them
    ratios = field == "update_ratios"
    rows = [
        {"step": int(step), "group": str(g), "value": v}
        for m in thin_for_display(list(metrics or []), max(100, max_rows // max(1, len(groups))))
        if (step := _num(m.get("step"))) is not None
        for g, value in (m.get(field) or {}).items()
        if (v := _num(value)) is not None
    ]
    layers_order = tuple(dict.fromkeys(_layer_and_part(g)[0] for g in groups))
    title = "Update / weight ratio per layer" if ratios else "Per-layer gradient norms"
    if not rows:
        title += ": waiting for the first step"
    datasets = {
        "layers": rows,
        "layers_hover": _hover_rows(rows, "group"),
        "healthy": _ref_rows(HEALTHY_UPDATE_RATIO, "1e-3: classic healthy value") if ratios else [],
    }
    if lr_metrics:
        datasets["lr_panel"] = [{"step": s, "lr": v} for s, v in thin_for_display(_series(metrics, "lr"), 1500)]
        datasets["lr_panel_hover"] = _hover_rows(datasets["lr_panel"])
    panel_width = (width or t["wide"]) if lr_metrics else None
    return _live(_layer_grad_template, (ratios, layers_order, title, panel_width, large), datasets)


def _layer_grad_template(ratios: bool, layers_order: tuple, title: str, panel_width: int | None, large: bool):
    t = theme(large)
    y_title = "‖ΔW‖ / ‖W‖ per step (log scale)" if ratios else "gradient L2 norm (log scale)"
    yspec = {"title": y_title, "log": True}
    base = (
        alt.Chart(alt.NamedData("layers"))
        .transform_calculate(  # "L3.attn" -> layer "L3", part "attn"; "emb" -> layer "emb", part "other"
            layer="split(datum.group, '.')[0]",
            part="indexof(datum.group, '.') < 0 ? 'other' : split(datum.group, '.')[1]",
            shown=f"max(datum.value, {LOG_FLOOR})",
        )
        .encode(
            x=_x(None if panel_width else STEP),
            y=_y("shown:Q", **yspec),
            color=_colour("layer:N", list(layers_order), _palette(layers_order), "layer", lines=True),
            strokeDash=_dash("part:N", ["attn", "mlp", "other"]),
            detail="group:N",
        )
    )
    tooltip = [
        alt.Tooltip("step:Q", title="step"),
        alt.Tooltip("group:N", title="parameter group"),
        alt.Tooltip("value:Q", format=".3e"),
    ]
    layers = [
        base.mark_line(strokeWidth=t["line"]),
        _hover(base.encode(tooltip=tooltip), "layers", size=60, data="layers_hover"),
    ]
    if ratios:
        layers += _ref_layers("healthy", yspec, t, colour=GREEN)
    main = alt.layer(*layers).properties(height=t["height"])
    if panel_width:
        panels = [main.properties(width=panel_width), _lr_panel_template(t).properties(width=panel_width)]
        chart = alt.vconcat(*panels).resolve_scale(x="shared", color="independent")
    else:
        chart = main
    note = _dash_note(["attention", "MLP", "embeddings / final layer norm"])
    return style_altair(chart.properties(title=alt.TitleParams(title, subtitle=note)), large)


def head_stats_chart(
    rows: Records | None,
    *,
    seq_len: int | None = None,
    layer: int | None = None,
    large: bool = False,
):
    """Per-head attention entropy (nats, with the ln(seq_len) uniform reference) and mean max weight (0..1) over
    training steps, coloured by head: one row of two small charts per layer, or only `layer` if given."""
    t = theme(large)
    width, height = (460, 400) if large else (340, 280)

    def small(text: str) -> alt.TitleParams:  # panel titles below the chart's own, sized like axis titles
        return alt.TitleParams(text, fontSize=t["axis_title"])

    clean = [
        {"step": int(r["step"]), "layer": int(r["layer"]), "head": f"H{int(r['head'])}", "entropy": e, "max_weight": w}
        for r in rows or []
        if None not in (_num(r.get("step")), _num(r.get("layer")), _num(r.get("head")))
        and (e := _num(r.get("entropy"))) is not None
        and (w := _num(r.get("max_weight"))) is not None
    ]
    keep = set(thin_for_display(sorted({r["step"] for r in clean}), 200))
    clean = [r for r in clean if r["step"] in keep and (layer is None or r["layer"] == layer)]
    heads = sorted({r["head"] for r in clean}, key=lambda h: int(h[1:]))
    panels = []
    for lay in sorted({r["layer"] for r in clean}) or [layer if layer is not None else 0]:
        part = [r for r in clean if r["layer"] == lay]
        base = alt.Chart(_data(part)).encode(
            x=_x(), color=_colour("head:N", heads, _palette(heads), "head", lines=True)
        )
        tooltip = [
            alt.Tooltip("step:Q"),
            alt.Tooltip("head:N"),
            alt.Tooltip("entropy:Q", format=".3f"),
            alt.Tooltip("max_weight:Q", format=".3f", title="max weight"),
        ]
        point = alt.OverlayMarkDef(filled=True, size=5 * t["text"])
        ent_spec = {"title": "attention entropy (nats)", "zero": True}
        ent_y = _y("entropy:Q", **ent_spec)
        ent = [base.mark_line(point=point, strokeWidth=t["line"]).encode(y=ent_y, tooltip=tooltip)]
        if seq_len and seq_len > 1:
            uniform = _ref_rows(math.log(seq_len), f"uniform over {seq_len} keys: ln(T)={math.log(seq_len):.2f}")
            ent += _ref_layers(uniform, ent_spec, t)
        maxw = base.mark_line(point=point, strokeWidth=t["line"]).encode(
            y=_y("max_weight:Q", "max attention weight (0..1)", domain=[0, 1]), tooltip=tooltip
        )
        panels.append(
            alt.hconcat(
                alt.layer(*ent).properties(title=small(f"layer {lay}: entropy"), width=width, height=height),
                maxw.properties(title=small(f"layer {lay}: max weight"), width=width, height=height),
            )
        )
    title = "Attention entropy and max weight per head" + ("" if clean else ": waiting for the first snapshot")
    return style_altair(alt.vconcat(*panels).properties(title=title), large)


# ---------------------------------------------------------------- tables


def _flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_diff(
    configs: Mapping[str, Mapping[str, Any] | None], ignore: Sequence[str] = ("run_id", "created", "vocab")
) -> list[dict]:
    """Rows {"setting": "model.num_heads", run1: "4", run2: "2", ...} for the flattened settings whose values
    differ, in first-seen order. Values are text (a table column of mixed ints and strings cannot become Arrow,
    so Streamlit would fail to show it): lists and dicts as compact JSON, a missing setting as "—". `ignore` skips
    settings that differ between any two runs."""
    flat = {str(name): _flatten(cfg or {}) for name, cfg in configs.items()}
    missing = object()

    def cell(value: Any) -> str:
        if value is missing:
            return "—"
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)

    rows = []
    for key in dict.fromkeys(k for f in flat.values() for k in f):
        values = {name: cell(f.get(key, missing)) for name, f in flat.items()}
        if key not in ignore and len(set(values.values())) > 1:
            rows.append({"setting": key, **values})
    return rows


# ---------------------------------------------------------------- charts kept in sibling modules
