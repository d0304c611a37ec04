"""Mask heatmaps: the mask in force, and every mask side by side with the attention one head produces under it.

Pure functions from bool (T, T) masks and (T, T) weights to plotly figures; the numbers come from
tinygpt.attention (the masks) and tinygpt.inside.maps (the weights under each mask).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tinygpt.ui.charts.theme import style_plotly, theme
from tinygpt.ui.charts.tokens import (
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
    m = as_array(mask, 2, "mask")
    if m is None:
        return placeholder(title, "no mask yet", large)
    t = theme(large)
    size = min(m.shape[0], max_tokens)
    z = (m[:size, :size] != 0).astype(np.int8)
    cats, ticks = token_axis(None if tokens is None else list(tokens)[:size], size)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=cats,
            y=cats,
            zmin=0,
            zmax=1,
            colorscale=mask_scale(),
            xgap=1 if size <= 32 else 0,
            ygap=1 if size <= 32 else 0,
            colorbar={"tickvals": [0.25, 0.75], "ticktext": ["masked", "may attend"], "thickness": 16},
            hovertemplate="query %{y} → key %{x}: %{z} (1 = may attend, 0 = masked)<extra></extra>",
        )
    )
    step = tick_step(size, t["panel"] * 1.8, t["label"])
    token_ticks(fig, cats, ticks, step, "x", title_text="key position (attended to)", side="top")
    token_ticks(fig, cats, ticks, step, "y", title_text="query position (attending)", autorange="reversed")
    square_cells(fig, 1, 1)
    return style_plotly(fig, title, large, height=int(t["panel"] * 2))


def mask_comparison(
    results: dict[str, tuple[Any, Any]],
    tokens: Sequence[str] | None,
    *,
    max_tokens: int = 16,
    title: str | None = None,
    large: bool = False,
) -> go.Figure:
    """All masks on the same text and checkpoint: for each mode its (T, T) mask and the attention weights one head
    produces under it. `results` is {mode: (mask, weights)}. Only the last `max_tokens` positions are drawn. Side by
    side (modes in columns, mask row above weights row) at normal fonts; at Large fonts one row per mode (its mask
    beside its weights), so each panel is a half of the column, not a quarter: four modes in a row left panels of
    ~107 px on a 1280 px projector, whose 12 labels ran together ("ow,␣neighbou", a review)."""
    modes = list(results)
    if not modes:
        return placeholder(title or "Masks side by side", "no checkpoint yet", large)
    t = theme(large)
    if large:  # (row, col) of each mode's mask and weights
        rows, cols = len(modes), 2
        where = {m: ((r, 1), (r, 2)) for r, m in enumerate(modes, start=1)}
        titles = [f"{m.replace('_', ' ')}: {kind}" for m in modes for kind in ("mask", "weights")]
        panel_px = (t["wide"] - 160) / 2 - 40
    else:
        rows, cols = 2, len(modes)
        where = {m: ((1, c), (2, c)) for c, m in enumerate(modes, start=1)}
        # Each column titled by its mode alone, wrapped ("sliding<br>window"); the rows say "mask" and "weights" on
        # their y axes: "weights under sliding_window" beside "weights under off_by_one" overlapped in four columns.
        titles = ["<br>".join(textwrap.wrap(m.replace("_", " "), 9)) for m in modes] + [""] * len(modes)
        panel_px = (t["wide"] + 180) / len(modes) - 30
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.08 if large else 0.04,
                        vertical_spacing=0.06 if large else 0.12)  # fmt: skip
    size = np.asarray(results[modes[0]][0]).shape[0]
    start = max(0, size - max_tokens)
    cats, ticks = token_axis(tokens, size, 0)
    cats, ticks = cats[start:], ticks[start:]
    for mode in modes:
        mask, weights = (np.asarray(a, dtype=np.float64)[start:, start:] for a in results[mode])
        (mask_row, mask_col), (weight_row, weight_col) = where[mode]
        fig.add_trace(
            go.Heatmap(z=(mask != 0).astype(np.int8), x=cats, y=cats, coloraxis="coloraxis2", name=f"mask {mode}",
                       hovertemplate=f"{mode}: query %{{y}} → key %{{x}}: %{{z}}<extra></extra>"),
            row=mask_row, col=mask_col,
        )  # fmt: skip
        fig.add_trace(
            go.Heatmap(z=weights.astype(np.float32), x=cats, y=cats, coloraxis="coloraxis", name=f"weights {mode}",
                       hovertemplate=f"{mode}: query %{{y}} → key %{{x}}: weight %{{z:.3f}}<extra></extra>"),
            row=weight_row, col=weight_col,
        )  # fmt: skip
    font = token_font(len(cats), panel_px, t["label"])
    token_ticks(fig, cats, ticks, 1, "x", tickfont={"size": font})
    token_ticks(fig, cats, ticks, 1, "y", autorange="reversed", tickfont={"size": font})
    square_cells(fig, rows, cols)
    if not large:
        fig.update_yaxes(title_text="mask: query", row=1, col=1)
        fig.update_yaxes(title_text="weights: query", row=2, col=1)
    else:  # rows are queries, columns keys: said once, on the first column and the last row
        fig.update_yaxes(title_text="query", col=1)
        fig.update_xaxes(title_text="key", row=rows)
    # The bars under the panels at Large fonts: beside them they took a third of a panel's width
    weight_bar = {"len": 0.45, "y": 0.0, "yanchor": "bottom", "title": {"text": "weight"}}
    mask_bar = {"len": 0.45, "y": 1.0, "yanchor": "top", "tickvals": [0.25, 0.75], "ticktext": ["masked", "may attend"]}
    if large:
        below = {"orientation": "h", "len": 0.45, "thickness": 14, "yanchor": "top", "y": -0.05}
        weight_bar = {**below, "x": 0.77, "title": {"text": "weight", "side": "top"}}
        mask_bar = {**below, "x": 0.23, "tickvals": [0.25, 0.75], "ticktext": ["masked", "may attend"]}
    fig.update_layout(
        coloraxis={**WEIGHT_AXIS, "colorbar": weight_bar},
        coloraxis2={"cmin": 0, "cmax": 1, "colorscale": mask_scale(), "colorbar": mask_bar},
    )
    suffix = f" (the last {size - start} of {size} positions)" if start else ""
    heading = (title or "Every mask on the same text and checkpoint") + suffix
    height = rows * (panel_px + 70) + 260 if large else int(2 * panel_px + 200)
    fig = style_plotly(fig, heading, large, height=int(height))
    # Column titles no wider than a panel (style_plotly sets every annotation to the axis-title size)
    column_font = min(theme(large)["axis_title"], max(11, int(panel_px / 5.5)))
    fig.update_annotations(font_size=column_font)
    # The column titles ("off by<br>one") stand in the top margin too: the title is held to the top of the figure and
    # the margin grows by their lines, or a three-line title at Large fonts sat on "causal" and "none" (a review)
    lines = max(len(w.split("<br>")) for w in titles)
    fig.update_layout(title={"yref": "container", "y": 1.0, "yanchor": "top", "pad": {"t": 28}},
                      margin={"t": fig.layout.margin.t + int(1.3 * column_font * lines),
                              "b": fig.layout.margin.b + (120 if large else 0)})  # fmt: skip
    return fig
