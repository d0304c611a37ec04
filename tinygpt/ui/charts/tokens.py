"""What the heatmaps share: token axes (every token labelled, in a font that fits), square cells, placeholders and
the mask and weight colour scales. Public, so heatmaps.py and masks.py import no private name from each other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from tinygpt.ui.charts.style import visible_char
from tinygpt.ui.charts.theme import style_plotly, theme

MASK_COLOURS = ("#d0d0d0", "#1f77b4")  # masked, may attend


def token_axis(tokens: Sequence[str] | None, size: int, offset: int = 0) -> tuple[list[str], list[str]]:
    """Category names that are unique per position ("'a' (pos 3)"), and the visible characters as tick text.
    `tokens` is fitted to `size` (the last ones kept, "?" padding), so a probe that changed never raises."""
    if tokens is None:
        return [f"pos {offset + i}" for i in range(size)], [str(offset + i) for i in range(size)]
    toks = (["?"] * size + list(tokens))[-size:]
    return [f"'{visible_char(c)}' (pos {offset + i})" for i, c in enumerate(toks)], [visible_char(c) for c in toks]


def tick_step(count: int, panel_px: float, font_px: int) -> int:
    """Show every k-th tick label so labels do not overlap in a panel of about `panel_px` pixels."""
    return max(1, math.ceil(count * font_px * 1.3 / max(panel_px, 1)))


MIN_TOKEN_FONT = 7  # px: the smallest tick label still readable on a laptop screen


def token_font(count: int, panel_px: float, font_px: int) -> int:
    """The tick font (px) at which every one of `count` token labels fits along a panel of `panel_px` pixels
    (a label is about one line high): the theme's size when there is room, smaller down to MIN_TOKEN_FONT.
    Every token is labelled (a skipped label makes "abcabc" read "a c b"); hover names each cell too."""
    return int(max(MIN_TOKEN_FONT, min(font_px, panel_px / max(count, 1) / 1.15)))


def placeholder(title: str, message: str, large: bool) -> go.Figure:
    """An empty figure that says why it is empty (no snapshot yet, ...), instead of blank axes."""
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


def as_array(value: Any, ndim: int, name: str) -> np.ndarray | None:
    """`value` as an array of `ndim` dimensions; None when there is nothing (ValueError for a wrong rank)."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.size == 0:
        return None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    return arr


def token_ticks(fig: go.Figure, cats: list[str], ticks: list[str], step: int, axis: str, **where: Any) -> None:
    """Tick labels on every `step`-th token category of the x or y axes of every subplot."""
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    update(tickmode="array", tickvals=cats[::step], ticktext=ticks[::step], tickangle=0, showgrid=False, **where)


def square_cells(fig: go.Figure, rows: int, cols: int) -> None:
    """Square cells: each subplot's y axis is scaled to its x axis."""
    for i in range(rows * cols):
        fig.layout[f"yaxis{i + 1 if i else ''}"].update(scaleanchor=f"x{i + 1 if i else ''}", constrain="domain")
        fig.layout[f"xaxis{i + 1 if i else ''}"].update(constrain="domain")


WEIGHT_AXIS = {"cmin": 0, "cmax": 1, "colorscale": "Viridis", "colorbar": {"title": {"text": "weight"}}}


def mask_scale() -> list:
    """Two flat colours: 0 (masked) in the lower half, 1 (may attend) in the upper half."""
    off, on = MASK_COLOURS
    return [[0.0, off], [0.5, off], [0.5, on], [1.0, on]]
