"""The plotly heatmaps: attention maps, the attention mask and per-layer gradients over steps.

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

from tinygpt.ui.charts.style import (
    GREY,
    HEALTHY_UPDATE_RATIO,
    STEP,
    Records,
    finite,
    group_names,
    plotly_layout_style,
    style_plotly,
    theme,
    thin_for_display,
    visible_char,
)

MASK_COLOURS = ("#d0d0d0", "#1f77b4")  # masked, may attend


def _token_axis(tokens: Sequence[str] | None, size: int, offset: int = 0) -> tuple[list[str], list[str]]:
    """Category names that are unique per position ("'a' (pos 3)"), and the visible characters as tick text.
    `tokens` is fitted to `size` (the last ones kept, "?" padding), so a probe that changed never raises."""
    if tokens is None:
        return [f"pos {offset + i}" for i in range(size)], [str(offset + i) for i in range(size)]
    toks = (["?"] * size + list(tokens))[-size:]
    return [f"'{visible_char(c)}' (pos {offset + i})" for i, c in enumerate(toks)], [visible_char(c) for c in toks]


def _tick_step(count: int, panel_px: float, font_px: int) -> int:
    """Show every k-th tick label so labels do not overlap in a panel of about `panel_px` pixels."""
    return max(1, math.ceil(count * font_px * 1.3 / max(panel_px, 1)))


def _placeholder(title: str, message: str, large: bool) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(
        text=message,
        showarrow=False,
        x=0.5,
        y=0.5,
        xref="paper",
        yref="paper",
        font={"size": theme(large)["axis_title"]},
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return style_plotly(fig, title, large, height=theme(large)["panel"])


def _array(value: Any, ndim: int, name: str) -> np.ndarray | None:
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.size == 0:
        return None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    return arr


def _token_ticks(fig: go.Figure, cats: list[str], ticks: list[str], step: int, axis: str, **where: Any) -> None:
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    update(tickmode="array", tickvals=cats[::step], ticktext=ticks[::step], tickangle=0, showgrid=False, **where)


def _square(fig: go.Figure, rows: int, cols: int) -> None:
    """Square cells: each subplot's y axis is scaled to its x axis."""
    for i in range(rows * cols):
        fig.layout[f"yaxis{i + 1 if i else ''}"].update(scaleanchor=f"x{i + 1 if i else ''}", constrain="domain")
        fig.layout[f"xaxis{i + 1 if i else ''}"].update(constrain="domain")


WEIGHT_AXIS = {"cmin": 0, "cmax": 1, "colorscale": "Viridis", "colorbar": {"title": {"text": "weight"}}}


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
    w = _array(weights, 4, "weights")
    if w is None:
        return _placeholder(title, "no attention snapshot yet", large)
    t = theme(large)
    num_layers, num_heads, size = w.shape[0], w.shape[1], w.shape[2]
    start = max(0, size - max_tokens)
    w = w[:, :, start:, start:].astype(np.float32)  # float16 has no typed array in plotly.js
    cats, ticks = _token_axis(tokens, size, 0)
    cats, ticks = cats[start:], ticks[start:]
    names = list(layer_names or [f"L{i}" for i in range(num_layers)])
    names += [f"L{i}" for i in range(len(names), num_layers)]
    height = num_layers * t["panel"] + 140
    # Built as one layout dict and one Figure() call: make_subplots plus per-axis update_* calls took 220-310 ms
    # for 4 x 4 heads (plotly re-validates the layout on every update), this ~30 ms. Same figure either way.
    layout = _subplot_grid(
        num_layers,
        num_heads,
        [f"{names[i]} H{h}" for i in range(num_layers) for h in range(num_heads)],
        horizontal_spacing=min(0.03, 0.9 / max(1, num_heads - 1)),
        vertical_spacing=min(50 / height, 0.9 / max(1, num_layers - 1)),
        title_size=t["axis_title"],
    )
    step = _tick_step(len(cats), 1000 / num_heads, t["label"])
    tick = {"tickmode": "array", "tickvals": cats[::step], "ticktext": ticks[::step], "tickangle": 0}

    def axis_fonts() -> dict[str, Any]:  # a fresh dict per axis: titles are filled in per axis below
        return {"title": {"font": {"size": t["axis_title"]}}, "tickfont": {"size": t["label"]}, "showgrid": False}

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
    for h in range(num_heads):
        layout[_axis_name("x", (num_layers - 1) * num_heads + h)]["title"]["text"] = "key (attended to)"
    for i in range(num_layers):
        layout[_axis_name("y", i * num_heads)]["title"]["text"] = "query"
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
    title: str = "One head, step by step",
    large: bool = False,
) -> go.Figure:
    """Five (T, T) panels: QK^T, scaled, the mask (may attend / masked), masked scores (-inf blank) and the softmax
    weights. Panels 1, 2 and 4 share one colour scale, so the effect of scaling is visible as paler colours."""
    mats = [
        _array(a, 2, n)
        for a, n in zip(
            (q_k_scores, scaled_scores, mask, masked_scores, weights),
            ("q_k_scores", "scaled_scores", "mask", "masked_scores", "weights"),
            strict=True,
        )
    ]
    if any(m is None for m in mats):
        return _placeholder(title, "no head selected yet", large)
    t = theme(large)
    size = mats[0].shape[0]
    start = max(0, size - max_tokens)
    qk, scaled, allowed, masked, w = (np.asarray(m, dtype=np.float64)[start:, start:] for m in mats)
    allowed = (allowed != 0).astype(np.int8)
    masked = np.where(np.isfinite(masked) & (allowed == 1), masked, np.nan)  # -inf -> blank
    finite = np.concatenate([a[np.isfinite(a)] for a in (qk, scaled, masked)] + [np.zeros(1)])
    bound = float(max(np.abs(finite).max(), 1e-9))
    scaled_title = f"2. scaled: × {scale:.3g}" if scale else "2. scaled"
    titles = ["1. scores Q·Kᵀ", scaled_title, "3. mask", "4. masked scores", "5. softmax weights"]
    fig = make_subplots(rows=1, cols=5, subplot_titles=titles, horizontal_spacing=0.03)
    cats, ticks = _token_axis(tokens, size, 0)
    cats, ticks = cats[start:], ticks[start:]
    panels = [
        (qk, "coloraxis", ".3f"),
        (scaled, "coloraxis", ".3f"),
        (allowed, "coloraxis2", "d"),
        (masked, "coloraxis", ".3f"),
        (w, "coloraxis3", ".3f"),
    ]
    for col, ((z, axis, fmt), name) in enumerate(zip(panels, titles, strict=True), start=1):
        value = "%{z} (1 = may attend, 0 = masked)" if axis == "coloraxis2" else f"%{{z:{fmt}}}"
        fig.add_trace(
            go.Heatmap(
                z=z.astype(np.float32) if axis != "coloraxis2" else z,
                x=cats,
                y=cats,
                coloraxis=axis,
                name=name,
                hoverongaps=False,
                hovertemplate=f"{name}<br>query %{{y}} → key %{{x}}: {value}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    step = _tick_step(len(cats), 200, t["label"])
    _token_ticks(fig, cats, ticks, step, "x", title_text="key")
    _token_ticks(fig, cats, ticks, step, "y", showticklabels=False, autorange="reversed")
    fig.update_yaxes(showticklabels=True, title_text="query", col=1)
    _square(fig, 1, 5)
    fig.update_layout(
        coloraxis={
            "cmin": -bound,
            "cmax": bound,
            "colorscale": "RdBu_r",
            "colorbar": _colorbar_under(fig, 1, 2, title={"text": "score (panels 1, 2, 4)", "side": "top"}),
        },
        coloraxis2={
            "cmin": 0,
            "cmax": 1,
            "colorscale": _mask_scale(),
            "colorbar": _colorbar_under(fig, 3, 3, tickvals=[0.25, 0.75], ticktext=["masked", "may attend"]),
        },
        coloraxis3={**WEIGHT_AXIS, "colorbar": _colorbar_under(fig, 5, 5, title={"text": "weight", "side": "top"})},
    )
    fig.update_layout(margin={"b": 150})
    return style_plotly(fig, title, large, height=t["panel"] + 300)


def _mask_scale() -> list:
    """Two flat colours: 0 (masked) in the lower half, 1 (may attend) in the upper half."""
    off, on = MASK_COLOURS
    return [[0.0, off], [0.5, off], [0.5, on], [1.0, on]]


def mask_matrix(
    mask: Any,
    tokens: Sequence[str] | None = None,
    title: str = "Attention mask",
    *,
    max_tokens: int = 256,
    large: bool = False,
) -> go.Figure:
    """A (T, T) bool mask (True = may attend) as a two-colour heatmap, queries down, keys across. Only the first
    `max_tokens` positions are drawn (every mask the engine builds repeats its pattern along the diagonal)."""
    m = _array(mask, 2, "mask")
    if m is None:
        return _placeholder(title, "no mask yet", large)
    t = theme(large)
    size = min(m.shape[0], max_tokens)
    z = (m[:size, :size] != 0).astype(np.int8)
    cats, ticks = _token_axis(None if tokens is None else list(tokens)[:size], size)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=cats,
            y=cats,
            zmin=0,
            zmax=1,
            colorscale=_mask_scale(),
            xgap=1 if size <= 32 else 0,
            ygap=1 if size <= 32 else 0,
            colorbar={"tickvals": [0.25, 0.75], "ticktext": ["masked", "may attend"], "thickness": 16},
            hovertemplate="query %{y} → key %{x}: %{z} (1 = may attend, 0 = masked)<extra></extra>",
        )
    )
    step = _tick_step(size, t["panel"] * 1.8, t["label"])
    _token_ticks(fig, cats, ticks, step, "x", title_text="key position (attended to)", side="top")
    _token_ticks(fig, cats, ticks, step, "y", title_text="query position (attending)", autorange="reversed")
    _square(fig, 1, 1)
    return style_plotly(fig, title, large, height=int(t["panel"] * 2))


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
    r = _array(row, 3, "row")
    if r is None:
        return _placeholder(title, "generate some text first", large)
    t = theme(large)
    num_layers, num_heads, size = r.shape
    start = max(0, size - max_tokens)
    z = r[:, :, start:].reshape(num_layers * num_heads, size - start).astype(np.float32)  # (L, H, S) -> (L*H, S)
    cats, ticks = _token_axis(tokens, size)
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
    _token_ticks(
        fig, cats, ticks, _tick_step(len(cats), 900, t["label"]), "x", title_text="context character (attended to)"
    )
    fig.update_yaxes(title_text="layer · head", autorange="reversed", showgrid=False)
    fig.update_layout(coloraxis=WEIGHT_AXIS)
    return style_plotly(fig, title, large, height=150 + len(heads) * (t["label"] + 12))


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
        return _placeholder(title, "waiting for the first step", large)
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
