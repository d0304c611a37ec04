"""The charts' theme: font sizes, line width and plot sizes (`theme`, projector-sized with `large=True`), titles
wrapped where they break best, and the styling `style_altair` / `style_plotly` apply to a figure. Pure: no
Streamlit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import plotly.graph_objects as go


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
            "height": 380,  # the loss chart fits a 720-line projector under the buttons and the status line
            "panel": 300,
            "wide": 700,  # plot width: with its axes it fits the content column of a 1280 px projector, sidebar open
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


# Characters of a plotly title line before it breaks (Plotly never wraps a title; Vega-Lite cuts one with "…"). At
# the projector's 26 px a character is 14-16 px wide by the font the browser has, so 46 fit the 780 px content
# column of a 1280 px screen with the sidebar open; "Every mask on the same text: L0 H0, checkpoint at step 300 (the
# last 48 of 64 positions)" ran 240 px past it on one line.
TITLE_LINE_CHARS = {True: 46, False: 76}
TITLE_BREAKS = (": ", ", ", " · ", " - ", " (")  # where a title breaks by preference; else at the last space


def wrap_title(title: str, max_chars: int) -> list[str]:
    """`title` as lines of at most `max_chars` characters (a word longer than that keeps its own line): each line
    ends at the last punctuation break of `TITLE_BREAKS` in its budget, or at its last space if that break would
    leave a stub of a line."""
    lines, rest = [], title.strip()
    while len(rest) > max_chars:
        ends = [at + (0 if mark.startswith(" ") else len(mark) - 1) for mark in TITLE_BREAKS
                if (at := rest.rfind(mark, 1, max_chars)) >= 0]  # fmt: skip
        cut = max(ends, default=-1)
        if cut <= max_chars // 3:
            cut = rest.rfind(" ", 1, max_chars + 1)
        if cut <= 0:
            cut = rest.find(" ", max_chars)
            if cut < 0:
                break
        lines.append(rest[:cut].rstrip())
        rest = rest[cut:].strip()
    return [*lines, rest] if rest else lines


# Numbers in heatmap cells ("+0.037"): a digit taken as 0.55 of the font size (Chromium: ~0.51), with a fifth of the
# cell to spare, so neighbouring numbers never touch.
DIGIT_EM, CELL_SPARE = 0.55, 1.2


def cell_number(value: float, compact: bool) -> str:
    """`value` as "+0.037", or "+.037" when `compact` (a value under one without its leading zero)."""
    text = f"{value:+.3f}"
    return text.replace("0.", ".", 1) if compact and abs(value) < 1 else text


def end_ticks(limit: float) -> dict:
    """A symmetric colour bar's ticks, its ends labelled with the largest value: plotly's own stopped at ±0.8 under
    a cell reading +1.000, and a review read the scale as stopping short of the value it showed."""
    ticks = [-limit, -limit / 2, 0.0, limit / 2, limit]
    return {"tickvals": ticks, "ticktext": [f"{v:+.3g}" if v else "0" for v in ticks]}


def cell_text_style(cell_px: float, t: dict, values: Sequence[float]) -> tuple[bool, int] | None:
    """(compact, font size) for the numbers `values` in cells `cell_px` wide: the first that fits the longest of
    them, the full number at the cell font (text + 2) and the label font, then compact at those sizes, then
    smaller; None: none fits (many heads; leave the number to the hover)."""
    for compact, font in ((False, t["text"] + 2), (False, t["text"]), (True, t["text"] + 2), (True, t["text"]),
                          (True, t["text"] - 2)):  # fmt: skip
        longest = max((len(cell_number(v, compact)) for v in values), default=0)
        if longest * DIGIT_EM * font * CELL_SPARE <= cell_px:
            return compact, font
    return None


def plotly_layout_style(title: str, t: dict) -> dict[str, Any]:
    """The title, fonts and margins every plotly figure gets, as layout keys (for figures built as one dict). A long
    title breaks into lines (`wrap_title`) and the top margin grows by a line each."""
    lines = wrap_title(title, TITLE_LINE_CHARS[t["title"] > 20])
    return {
        "title": {"text": "<br>".join(lines), "font": {"size": t["title"]}, "x": 0.01, "xanchor": "left"},
        "font": {"size": t["label"]},
        "hoverlabel": {"font": {"size": t["label"] + 2}},
        "margin": {"l": 70, "r": 30, "t": 90 + int(1.25 * t["title"]) * (len(lines) - 1), "b": 60},
    }


def style_plotly(fig: go.Figure, title: str, large: bool = False, height: int | None = None) -> go.Figure:
    """Apply the theme's title, fonts and margins to a plotly figure (subplot titles and colour bars included)."""
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
