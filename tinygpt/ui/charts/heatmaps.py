"""The plotly heatmaps: attention maps (all heads, one head step by step, the newest character's row) and
per-layer gradients over steps. The mask heatmaps are in masks.py, the shared token axes in tokens.py.

Pure functions from numpy arrays (attention weights (L, H, T, T), one head's intermediate (T, T) matrices, a bool
mask, the newest character's attention row (L, H, S)) or metrics records to a `plotly.graph_objects.Figure`.
One figure with subplots, never one figure per head: sixteen separate heatmaps re-sent at 2 Hz cost ~600 kB/s of
websocket traffic in the app's prototype. Axes are categories named by position ("'a' (pos 3)") with the bare
visible character as tick text, so a repeated character keeps its own cells and the hover names query and key
without a per-cell text array (which would multiply the payload). Weights are sent as float32: plotly.js has no
float16 typed array.

The theme, fonts, `visible_char` and `thin_for_display` come from style.py, the "what to look for" sentences
from help.py; pages call `heatmaps.attention_grid` and so on.
Deliberately left out: computing the matrices (tinygpt/attention.py returns them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tinygpt.ui.charts.colours import GREY
from tinygpt.ui.charts.style import HEALTHY_UPDATE_RATIO, STEP, Records, finite, group_names, thin_for_display
from tinygpt.ui.charts.theme import plotly_layout_style, style_plotly, theme
from tinygpt.ui.charts.tokens import (
    MIN_TOKEN_FONT,
    WEIGHT_AXIS,
    as_array,
    mask_scale,
    placeholder,
    square_cells,
    tick_step,
    token_axis,
    token_font,
    token_ticks,
)

KEY_TITLE = "key (attended to)"
TITLE_CHAR_EM = 0.55  # an axis title's average character width, in font sizes (plotly's Open Sans / Arial)
GRID_MIN_PX = 640  # the grid's narrowest plot width: 1280 px with the sidebar, less the y titles and colour bar


def attention_grid(
    weights: Any,
    tokens: Sequence[str] | None,
    layer_names: Sequence[str] | None = None,
    max_tokens: int = 64,
    *,
    title: str = "Attention weights: layers x heads",
    large: bool = False,
) -> go.Figure:
    """One figure with a heatmap per (layer, head) of `weights` (L, H, T, T): rows = layers, columns = heads, the
    probe's characters on both axes, one 0..1 colour scale. Only the last `max_tokens` positions are drawn."""
    w = as_array(weights, 4, "weights")
    if w is None:
        return placeholder(title, "no attention snapshot yet", large)
    t = theme(large)
    num_layers, num_heads, size = w.shape[0], w.shape[1], w.shape[2]
    start = max(0, size - max_tokens)
    w = w[:, :, start:, start:].astype(np.float32)  # float16 has no typed array in plotly.js
    cats, ticks = token_axis(tokens, size, 0)
    cats, ticks = cats[start:], ticks[start:]
    names = list(layer_names or [f"L{i}" for i in range(num_layers)])
    names += [f"L{i}" for i in range(len(names), num_layers)]
    # Square panels: about the row height, or narrower when many heads share the content column (~850 px); taller
    # rows when the probe is long, so a 7 px label fits each token. Every token gets a label when it fits; a grid
    # too dense for that (many heads and a long probe) labels every k-th, and the step-by-step view below labels
    # every character of one head.
    panel_px = min(max(t["panel"] - 40, len(cats) * MIN_TOKEN_FONT * 1.15), 850 / num_heads)
    height = int(num_layers * max(t["panel"], panel_px + 40) + 140)
    # Built as one layout dict and one Figure() call: make_subplots plus per-axis update_* calls took 220-310 ms
    # for 4 x 4 heads (plotly re-validates the layout on every update), this ~30 ms. Same figure either way.
    # Many heads: panels ~50 px wide, where "L0 H10" titles ran into each other ("L0 H0 H10 H20..."), as did one
    # "key (attended to)" under each panel. Then only the top row names its heads ("H10"), each row's y title
    # names its layer, and one x title says "key".
    narrow = panel_px < 110
    titles = [
        (f"H{h}" if i == 0 else "") if narrow else f"{names[i]} H{h}"
        for i in range(num_layers)
        for h in range(num_heads)
    ]
    layout = _subplot_grid(
        num_layers,
        num_heads,
        titles,
        horizontal_spacing=min(0.03, 0.9 / max(1, num_heads - 1)),
        vertical_spacing=min(50 / height, 0.9 / max(1, num_layers - 1)),
        title_size=min(t["axis_title"], int(panel_px / 2.2)) if narrow else t["axis_title"],
    )
    tick_font = token_font(len(cats), panel_px, t["label"])
    every = 1 if len(cats) * MIN_TOKEN_FONT * 1.15 <= panel_px else tick_step(len(cats), panel_px, MIN_TOKEN_FONT)
    tick = {"tickmode": "array", "tickvals": cats[::every], "ticktext": ticks[::every], "tickangle": 0}

    def axis_fonts() -> dict[str, Any]:  # a fresh dict per axis: titles are filled in per axis below
        return {"title": {"font": {"size": t["axis_title"]}}, "tickfont": {"size": tick_font}, "showgrid": False}

    traces = []
    for i in range(num_layers):
        for h in range(num_heads):
            k = i * num_heads + h
            x_name, y_name = _axis_name("x", k), _axis_name("y", k)
            layout[x_name].update(tick, **axis_fonts(), constrain="domain", showticklabels=i == num_layers - 1)
            layout[y_name].update(
                tick,
                **axis_fonts(),
                autorange="reversed",
                scaleanchor=_axis_ref("x", k),
                constrain="domain",
                showticklabels=h == 0,
            )
            traces.append(
                go.Heatmap(
                    z=w[i, h],
                    x=cats,
                    y=cats,
                    coloraxis="coloraxis",
                    zmin=0,
                    zmax=1,
                    name=f"{names[i]} H{h}",
                    hovertemplate=f"{names[i]} H{h}: query %{{y}} → key %{{x}}: weight %{{z:.3f}}<extra></extra>",
                    xaxis=_axis_ref("x", k),
                    yaxis=_axis_ref("y", k),
                )
            )
    # "key (attended to)" only where it fits under its panel in the narrowest content column it gets (GRID_MIN_PX:
    # 1280 px with the sidebar open): at Large fonts four of them, ~190 px each under ~150 px panels, ran into each
    # other. Then each panel says "key"; the caption says what a column is.
    full = len(KEY_TITLE) * TITLE_CHAR_EM * t["axis_title"] <= GRID_MIN_PX / num_heads
    for h in range(1 if narrow else num_heads):
        layout[_axis_name("x", (num_layers - 1) * num_heads + h)]["title"]["text"] = KEY_TITLE if full else "key"
    for i in range(num_layers):
        layout[_axis_name("y", i * num_heads)]["title"]["text"] = f"{names[i]} query" if narrow else "query"
    suffix = f" (last {max_tokens} of {size} characters)" if start else ""
    bar_fonts = {"tickfont": {"size": t["label"]}, "title": {"text": "weight", "font": {"size": t["label"]}}}
    layout.update(
        coloraxis={**WEIGHT_AXIS, "colorbar": bar_fonts},
        height=height,
        **plotly_layout_style(title + suffix, t),
    )
    return go.Figure(data=traces, layout=layout)


def _axis_ref(axis: str, k: int) -> str:
    """How traces and anchors name subplot k's (0-based, row-major) x or y axis: x, x2, ..."""
    return f"{axis}{k + 1}" if k else axis


def _axis_name(axis: str, k: int) -> str:
    """Layout key of subplot k's x or y axis: xaxis, xaxis2, ..."""
    return f"{axis}axis{k + 1}" if k else f"{axis}axis"


def _subplot_grid(
    rows: int,
    cols: int,
    titles: Sequence[str],
    horizontal_spacing: float,
    vertical_spacing: float,
    title_size: int,
) -> dict[str, Any]:
    """Axes (domains and anchors) and title annotations of a rows x cols grid of subplots, row 1 at the top: the
    layout `plotly.subplots.make_subplots` makes, as a plain dict."""
    width = (1 - horizontal_spacing * (cols - 1)) / cols
    height = (1 - vertical_spacing * (rows - 1)) / rows
    layout: dict[str, Any] = {"annotations": []}
    for r in range(rows):
        top = 1 - r * (height + vertical_spacing)
        for c in range(cols):
            k = r * cols + c
            left = c * (width + horizontal_spacing)
            x_domain = [max(0.0, left), min(1.0, left + width)]  # clamped: float rounding can leave [0, 1]
            y_domain = [max(0.0, top - height), min(1.0, top)]
            layout[_axis_name("x", k)] = {"domain": x_domain, "anchor": _axis_ref("y", k)}
            layout[_axis_name("y", k)] = {"domain": y_domain, "anchor": _axis_ref("x", k)}
            if not titles[k]:  # as make_subplots: no annotation for an empty title
                continue
            layout["annotations"].append(
                {
                    "text": titles[k],
                    "x": left + width / 2,
                    "y": top,
                    "xref": "paper",
                    "yref": "paper",
                    "xanchor": "center",
                    "yanchor": "bottom",
                    "showarrow": False,
                    "font": {"size": title_size},
                }
            )
    return layout


def _colorbar_under(fig: go.Figure, first_col: int, last_col: int, **bar: Any) -> dict:
    """A horizontal colour bar centred under subplot columns first_col..last_col (1-based, one row)."""
    x0 = fig.layout[f"xaxis{first_col if first_col > 1 else ''}"].domain[0]
    x1 = fig.layout[f"xaxis{last_col if last_col > 1 else ''}"].domain[1]
    return {
        "orientation": "h",
        "x": (x0 + x1) / 2,
        "xanchor": "center",
        "y": -0.22,
        "yanchor": "top",
        "len": x1 - x0,
        "thickness": 12,
        **bar,
    }


TOY_TOKENS = 12  # a probe this short shows the number in every cell: an instructor can read it out


def attention_detail(
    q_k_scores: Any,
    scaled_scores: Any,
    mask: Any,
    masked_scores: Any,
    weights: Any,
    tokens: Sequence[str] | None,
    *,
    scale: float | None = None,
    max_tokens: int = 64,
    per_row: int = 2,
    numbers: bool | None = None,
    title: str = "One head, step by step",
    large: bool = False,
) -> go.Figure:
    """Five (T, T) panels: QK^T, scaled, the mask (may attend / masked), masked scores (-inf blank) and the softmax
    weights, `per_row` panels a row (1 on a narrow screen or a projector, up to 5). Panels 1, 2 and 4 share one
    colour scale, so the effect of scaling is visible as paler colours. With `numbers` (default: a probe of at
    most TOY_TOKENS characters) every cell shows its value, so QK^T -> scale -> mask -> softmax can be read aloud."""
    mats = [
        as_array(a, 2, n)
        for a, n in zip(
            (q_k_scores, scaled_scores, mask, masked_scores, weights),
            ("q_k_scores", "scaled_scores", "mask", "masked_scores", "weights"),
            strict=True,
        )
    ]
    if any(m is None for m in mats):
        return placeholder(title, "no head selected yet", large)
    t = theme(large)
    per_row = max(1, min(5, int(per_row)))
    rows = math.ceil(5 / per_row)
    size = mats[0].shape[0]
    start = max(0, size - max_tokens)
    qk, scaled, allowed, masked, w = (np.asarray(m, dtype=np.float64)[start:, start:] for m in mats)
    allowed = (allowed != 0).astype(np.int8)
    masked = np.where(np.isfinite(masked) & (allowed == 1), masked, np.nan)  # -inf -> blank

    def bound(*arrays) -> float:  # a symmetric range fitted to the numbers the panels show
        finite = np.concatenate([a[np.isfinite(a)] for a in arrays] + [np.zeros(1)])
        return float(max(np.abs(finite).max(), 1e-9))

    scaled_title = f"2. scaled: × {scale:.3g}" if scale else "2. scaled"
    titles = ["1. scores Q·Kᵀ", scaled_title, "3. mask", "4. masked scores", "5. softmax weights"]
    # The content column (the stacked-chart width plus its axes; large fonts leave less room), less the gaps.
    panel_px = (t["wide"] + (40 if large else 180)) / per_row - 40
    fig = make_subplots(
        rows=rows, cols=per_row, subplot_titles=titles, horizontal_spacing=0.06, vertical_spacing=0.12 / rows
    )
    cats, ticks = token_axis(tokens, size, 0)
    cats, ticks = cats[start:], ticks[start:]
    numbers = len(cats) <= TOY_TOKENS if numbers is None else numbers
    cell_font = token_font(1, panel_px / max(len(cats), 1) / 3.2, t["label"])  # ~5 characters per cell
    # Raw Q·Kᵀ has a colour scale of its own: on one scale with the scaled scores (e.g. ±23 against ±3 after
    # × 1/√d_head) the panels that softmax reads were all near-white, their colour carrying nothing.
    panels = [
        (qk, "coloraxis4", ".2f"),
        (scaled, "coloraxis", ".2f"),
        (allowed, "coloraxis2", "d"),
        (masked, "coloraxis", ".2f"),
        (w, "coloraxis3", ".2f"),
    ]
    for k, ((z, axis, fmt), name) in enumerate(zip(panels, titles, strict=True)):
        value = "%{z} (1 = may attend, 0 = masked)" if axis == "coloraxis2" else f"%{{z:{fmt}}}"
        cells = {"texttemplate": f"%{{z:{fmt}}}", "textfont": {"size": cell_font}} if numbers else {}
        fig.add_trace(
            go.Heatmap(
                z=z.astype(np.float32) if axis != "coloraxis2" else z,
                x=cats,
                y=cats,
                coloraxis=axis,
                name=name,
                hoverongaps=False,
                hovertemplate=f"{name}<br>query %{{y}} → key %{{x}}: {value}<extra></extra>",
                **cells,
            ),
            row=k // per_row + 1,
            col=k % per_row + 1,
        )
    font = token_font(len(cats), panel_px, t["label"])
    token_ticks(fig, cats, ticks, 1, "x", title_text="key", tickfont={"size": font})
    token_ticks(fig, cats, ticks, 1, "y", autorange="reversed", tickfont={"size": font})
    fig.update_yaxes(title_text="query", col=1)
    square_cells(fig, rows, per_row)
    bars = _bars_by_row([axis for _, axis, _ in panels], per_row, fig)
    fig.update_layout(
        coloraxis4={
            "cmin": -bound(qk),
            "cmax": bound(qk),
            "colorscale": "RdBu_r",
            "colorbar": {**bars["coloraxis4"], "title": {"text": "Q·Kᵀ (panel 1)"}},
        },
        coloraxis={
            "cmin": -bound(scaled, masked),
            "cmax": bound(scaled, masked),
            "colorscale": "RdBu_r",
            "colorbar": {**bars["coloraxis"], "title": {"text": "score (panels 2, 4)"}},
        },
        coloraxis2={
            "cmin": 0,
            "cmax": 1,
            "colorscale": mask_scale(),
            "colorbar": {**bars["coloraxis2"], "tickvals": [0.25, 0.75], "ticktext": ["masked", "may attend"]},
        },
        coloraxis3={**WEIGHT_AXIS, "colorbar": {**bars["coloraxis3"], "title": {"text": "weight"}}},
    )
    return style_plotly(fig, title, large, height=int(rows * (panel_px + 70) + 120))


def _bars_by_row(axes: list[str], per_row: int, fig: go.Figure) -> dict[str, dict]:
    """Each colour axis's colorbar beside the row of the first panel that uses it; axes that start in the same row
    share its height, one above the other."""
    first_row: dict[str, int] = {}
    for k, axis in enumerate(axes):
        first_row.setdefault(axis, k // per_row)
    domains = sorted({tuple(v["domain"]) for k, v in fig.layout.to_plotly_json().items() if k.startswith("yaxis")},
                     reverse=True)  # fmt: skip  # top row first
    out = {}
    for row in set(first_row.values()):
        here = [a for a in first_row if first_row[a] == row]
        low, high = domains[min(row, len(domains) - 1)]
        share = (high - low) / len(here)
        for i, axis in enumerate(here):
            top = high - i * share
            out[axis] = {"len": share * 0.9, "thickness": 14, "x": 1.02, "y": top, "yanchor": "top"}
    return out


def attention_row_chart(
    row: Any,
    tokens: Sequence[str] | None,
    *,
    max_tokens: int = 128,
    title: str = "Where the newest character looked",
    large: bool = False,
) -> go.Figure:
    """`row` (L, H, S): each head's attention from the newest character over the context, as a heatmap with one
    row per layer·head and the context characters across."""
    r = as_array(row, 3, "row")
    if r is None:
        return placeholder(title, "generate some text first", large)
    t = theme(large)
    num_layers, num_heads, size = r.shape
    start = max(0, size - max_tokens)
    z = r[:, :, start:].reshape(num_layers * num_heads, size - start).astype(np.float32)  # (L, H, S) -> (L*H, S)
    cats, ticks = token_axis(tokens, size)
    cats, ticks = cats[start:], ticks[start:]
    heads = [f"L{i} H{h}" for i in range(num_layers) for h in range(num_heads)]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=cats,
            y=heads,
            coloraxis="coloraxis",
            zmin=0,
            zmax=1,
            hovertemplate="%{y} → key %{x}: weight %{z:.3f}<extra></extra>",
        )
    )
    token_ticks(
        fig, cats, ticks, tick_step(len(cats), 900, t["label"]), "x", title_text="context character (attended to)"
    )
    # automargin: at Large fonts the axis title sat on the row labels ("-0 H0"); a floor on the height: with two
    # rows the colour bar's 0, 0.5 and 1 ran into one another (a review)
    fig.update_yaxes(title_text="layer · head", autorange="reversed", showgrid=False, automargin=True)
    fig.update_layout(coloraxis=WEIGHT_AXIS)
    return style_plotly(fig, title, large, height=max(260, 150 + len(heads) * (t["label"] + 12)))


def layer_grad_heatmap(
    metrics: Records | None,
    field: str = "layer_grad_norms",
    lr_metrics: bool = True,
    *,
    max_steps: int = 400,
    large: bool = False,
) -> go.Figure:
    """Parameter groups x steps, colour = log10 of the value; with `lr_metrics`, the learning rate below on the
    same step axis. For field="update_ratios" the colours diverge around the healthy 1e-3."""
    ratios = field == "update_ratios"
    title = "Update / weight ratio per layer over steps" if ratios else "Per-layer gradient norms over steps"
    groups = group_names(thin_for_display(list(metrics or []), 200), field)  # fixed for a run: a sample finds them
    kept = [m for m in thin_for_display(list(metrics or []), max_steps) if finite(m.get("step")) is not None]
    if not groups or not kept:
        return placeholder(title, "waiting for the first step", large)
    t = theme(large)
    steps = [int(m["step"]) for m in kept]
    raw = np.array(
        [[finite((m.get(field) or {}).get(g)) for m in kept] for g in groups], dtype=np.float64
    )  # (G, S), None -> nan
    z = np.log10(np.where(raw > 0, raw, np.nan)).astype(np.float32)
    fig = make_subplots(
        rows=2 if lr_metrics else 1,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.78, 0.22] if lr_metrics else None,
        vertical_spacing=0.06,
    )
    colour = {"colorscale": "RdBu_r", "zmid": math.log10(HEALTHY_UPDATE_RATIO)} if ratios else {"colorscale": "Viridis"}
    bar = {
        "title": {"text": "log10 ratio" if ratios else "log10 norm"},
        "len": 0.75 if lr_metrics else 1,
        "y": 1,
        "yanchor": "top",
    }
    fig.add_trace(
        go.Heatmap(
            z=z,
            x=steps,
            y=groups,
            customdata=raw.astype(np.float32),
            colorbar=bar,
            **colour,
            hovertemplate="step %{x}<br>%{y}: %{customdata:.3e}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.update_yaxes(title_text="parameter group", autorange="reversed", row=1, col=1)
    if lr_metrics:
        lr = [finite(m.get("lr")) for m in kept]
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=lr,
                mode="lines",
                line={"color": GREY, "width": t["line"]},
                name="learning rate",
                hovertemplate="step %{x}: learning rate %{y:.3e}<extra></extra>",
                showlegend=False,
            ),
            row=2,
            col=1,
        )
        fig.update_yaxes(title_text="LR", exponentformat="e", row=2, col=1)
    fig.update_xaxes(title_text=STEP, row=2 if lr_metrics else 1, col=1)
    return style_plotly(fig, title, large, height=140 + len(groups) * (t["label"] + 14) + (120 if lr_metrics else 0))
