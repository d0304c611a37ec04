"""What every chart shares: the theme and its fonts, colours and line styles, thinning, the Altair encodings and
layers that several charts draw (step axis, hover points, reference lines) and the live-chart template machinery.
No chart lives here; curves.py, heatmaps.py and compare.py import this module, never the other way round.

Conventions it carries out:
- `large=True` gives projector-sized fonts (`theme`); `style_altair` / `style_plotly` apply them.
- Long series go through `thin_for_display` before they are sent, so a 100k-step run sends a bounded payload and
  every DataFrame stays under Altair's 5,000-row guard (`MAX_ROWS`), which is left on (no global setting is
  changed).
- Characters are drawn visibly: space "␣", newline "⏎" (`visible_char`).
- Values arrive as the run store writes them, None where not finite; `finite` and `step_series` read them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd
import plotly.graph_objects as go

from .livespec import MAX_ROWS, VegaLite, live_spec  # noqa: F401 - the chart modules import these from style

Records = Sequence[Mapping[str, Any]]
"""Run-store records (metrics, evals, events): a sequence of dicts, None where a value was not finite."""

VISIBLE_CHARS = {" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍"}
LOG_FLOOR = 1e-8  # 0 cannot sit on a log axis: such values are drawn here, and tooltips show the real value
HEALTHY_UPDATE_RATIO = 1e-3  # the rule of thumb from cs231n and Karpathy's makemore part 3: log10(update/data) ~ -3
BLUE, ORANGE, GREEN, RED, PURPLE, GREY, PALE = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#888", "#aec7e8"
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
STEP = "training step"  # the step axis title
SECONDS = "seconds since the first step (wall clock)"  # the same axis on the clock: recipes race on it
HOVER_POINTS = 100  # per series in a live chart's hover layer: one every ~7 px of a 700 px plot
DASHES = ("solid", "dashed", "dotted")  # the order of `dash_encoding`'s line styles, as `dash_note` names them


# ---------------------------------------------------------------- theme and fonts


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


# ---------------------------------------------------------------- reading and thinning data


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


def finite(value: Any) -> float | None:
    """A finite float, or None (the run store writes non-finite values as null)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def step_series(records: Records | None, field: str) -> list[tuple[int, float]]:
    """(step, value) for the records where both are finite."""
    out = []
    for r in records or []:
        step, value = finite(r.get("step")), finite(r.get(field))
        if step is not None and value is not None:
            out.append((int(step), value))
    return out


def group_names(metrics: Records | None, field: str) -> list[str]:
    """Group names in the writer's order ("emb", "L0.attn", "L0.mlp", ..., "ln_f"), first seen first."""
    seen: dict[str, None] = {}
    for m in metrics or []:
        for g in m.get(field) or {}:
            seen.setdefault(str(g), None)
    return list(seen)


def data_frame(rows: list[dict], *columns: str) -> pd.DataFrame:
    """Chart data as a DataFrame: Streamlit ships it as Arrow, and Altair neither validates nor deep-copies it
    (inline values are both, which costs seconds per refresh). Every chart keeps each frame under MAX_ROWS."""
    return pd.DataFrame.from_records(rows[:MAX_ROWS], columns=list(columns) or None)


# ---------------------------------------------------------------- Altair encodings and shared layers


def step_x(title: str | None = STEP) -> alt.X:
    """The step axis: labels 1,500 below ten thousand and 25k above (short, and exact where steps are few)."""
    labels = "datum.value >= 10000 ? format(datum.value, '.3~s') : format(datum.value, ',~d')"
    return alt.X("step:Q", title=title, axis=alt.Axis(labelExpr=labels))


def value_y(field: str, title: str, log: bool = False, **scale: Any) -> alt.Y:
    """Every layer of a chart uses the same y title and scale type, or Vega-Lite would merge them ("loss, y")."""
    return alt.Y(field, title=title, scale=alt.Scale(type="log" if log else "linear", **scale))


def colour_encoding(
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


def dash_encoding(field: str, domain: Sequence[str]) -> alt.StrokeDash:
    """Line styles in a fixed order (DASHES). No legend: a dash legend next to a colour legend draws invisible
    symbols in Vega-Lite, so the chart's subtitle names the styles instead (`dash_note`)."""
    styles = [[1, 0], [7, 4], [2, 2]]
    return alt.StrokeDash(field, scale=alt.Scale(domain=list(domain), range=styles[: len(domain)]), legend=None)


def dash_note(names: Sequence[str]) -> str:
    """The subtitle that names `dash_encoding`'s styles: "solid: training, dashed: validation"."""
    return ", ".join(f"{style}: {name}" for style, name in zip(DASHES, names, strict=False))


def palette_for(domain: Sequence[str]) -> list[str]:
    """One PALETTE colour per domain value, cycling when there are more values than colours."""
    return (PALETTE * (1 + len(domain) // len(PALETTE)))[: len(domain)]


def hover_layer(chart: alt.Chart, name: str, size: int = 90, zoom: bool = True, data: str | None = None) -> alt.Chart:
    """Points that appear under the pointer (nearest point, no need to hit the line) and carry the tooltip; with
    `zoom`, dragging or scrolling also zooms the step axis. Both parameters sit on this one view: Altair names
    every view that has parameters, and inside a vconcat it would attach them to all of those views.
    `data`: draw the hover points from this named dataset instead of the chart's own (see `hover_rows`)."""
    sel = alt.selection_point(name=f"hover_{name}", nearest=True, on="pointerover", clear="pointerout", empty=False)
    params = [sel, alt.selection_interval(name=f"zoom_{name}", bind="scales", encodings=["x"])] if zoom else [sel]
    if data is not None:
        chart = chart.properties(data=alt.NamedData(data))
    return (
        chart.mark_point(filled=True, size=size)
        .encode(opacity=alt.condition(sel, alt.value(1), alt.value(0)))
        .add_params(*params)
    )


def hover_rows(rows: list[dict], *by: str, limit: int = HOVER_POINTS) -> list[dict]:
    """At most `limit` rows of each series (the fields `by` name a series): what a live chart's hover layer draws.
    Every hover row is an invisible point the browser re-renders, and the nearest-point search is a Voronoi diagram
    over them: measured in Chromium on the Train page, the hover layers were ~30% of the browser's CPU at 2 Hz."""
    series: dict[tuple, list[dict]] = {}
    for row in rows:
        series.setdefault(tuple(row.get(field) for field in by), []).append(row)
    return [row for part in series.values() for row in thin_for_display(part, limit)]


def reference_layers(
    source: str | list[dict], yspec: dict, t: dict, colour: str = GREY, dash: Sequence[int] = (6, 4),
    above: bool = False,
) -> list:  # fmt: skip
    """Labelled horizontal reference lines from rows {"ref", "label"} (see `reference_rows`; none: nothing drawn),
    on the same y title and scale (`yspec`, see `value_y`) as the chart. `source` names a live chart's dataset, or
    is the rows. `above`: the label sits on top of its line, for a reference that the lines stay under (a chart
    that keeps room above it)."""
    base = alt.Chart(alt.NamedData(source) if isinstance(source, str) else data_frame(source))
    y = value_y("ref:Q", **yspec)
    rule = base.mark_rule(strokeDash=list(dash), color=colour, strokeWidth=t["line"]).encode(
        y=y, tooltip=[alt.Tooltip("label:N", title="reference")]
    )
    # The label hangs just under its line: charts with a zoomable step axis clip marks to the plot area, and a
    # reference near the top of the y range (ln(V) at the start of training) would lose a label drawn above it.
    place = {"baseline": "bottom", "dy": -4} if above else {"baseline": "top", "dy": 4}
    text = base.mark_text(align="left", dx=6, color=colour, fontSize=t["text"], **place).encode(
        y=y, x=alt.value(0), text="label:N"
    )
    return [rule, text]


def reference_rows(value: Any, label: str) -> list[dict]:
    """The one row of a reference line at `value` labelled `label`, or no row when `value` is not finite."""
    return [{"ref": float(value), "label": label}] if finite(value) is not None else []


def finish(layers: list, title: str, t: dict, subtitle: str | None = None, large: bool = False, below: int = 0):
    """`layers` as one styled chart of the theme's height, with a title (and subtitle). `below`: lines of legend
    under the plot (`legend_lines`); the chart grows by their height, since Streamlit fits the whole chart, legend
    included, into the height it is given (four knob changes squeezed the loss plot to a sliver)."""
    title_params = alt.TitleParams(title, subtitle=subtitle) if subtitle else title
    height = t["height"] + (below * (t["label"] + 7) + 2 * t["label"] + 10 if below else 0)
    return style_altair(alt.layer(*layers).properties(title=title_params, height=height), large)


def legend_lines(*entries: int) -> int:
    """The lines kept for the legends under a chart (one per entry), in steps of four and capped: the height is
    part of a live chart's template, so a new knob change rebuilds the view only at the 1st, 5th, 9th... change
    (every other one only swaps data in)."""
    total = sum(entries)
    return min(-(-total // 4) * 4, 24)


# ---------------------------------------------------------------- markers: labelled rules, numbered knob changes


def marker_rows(rows: list[dict], t: dict, x_max: float | None, stagger: bool = True) -> list[dict]:
    """Marker rows with their label's line ("y", pixels) and side: "right" (label left of the rule) past 60% of
    the x range that ends at `x_max`. For the few markers labelled on the plot (the learning-rate chart's "now",
    the Circuits charts' phase changes; drawn by `marker_layers`); knob changes, however many, are
    `numbered_markers`."""
    far = 0.6 * x_max if x_max else math.inf
    return [
        {
            **row,
            "y": t["text"] + 6 + (i % 3 if stagger else 0) * (t["text"] + 4),
            "side": "right" if row["step"] > far else "left",
        }
        for i, row in enumerate(rows)
    ]


def marker_layers(source: str | list[dict], t: dict, colour: str, tooltip_title: str, x: alt.X) -> list:
    """A dashed rule per `marker_rows` row (`source`: a live chart's dataset name, or the rows), its label at the
    top on the row's line, left of the rule near the right edge, where a zoomable chart would clip it. The
    learning-rate chart's "now" and the Circuits charts' phase changes."""
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("label:N", title=tooltip_title)]
    rows = None if isinstance(source, str) else data_frame(source, "step", "label", "y", "side")
    base = alt.Chart(alt.NamedData(source) if rows is None else rows)
    labels = [
        base.transform_filter(f"datum.side == '{side}'")
        .mark_text(align=side, baseline="top", dx=4 if side == "left" else -4, color=colour, fontSize=t["text"])
        .encode(x=x, y=alt.Y("y:Q", scale=None), text="label:N", tooltip=tooltip)
        for side in ("left", "right")
    ]
    rule = base.mark_rule(color=colour, strokeDash=[3, 3], strokeWidth=t["line"])
    return [rule.encode(x=x, tooltip=tooltip), *labels]


CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩"  # all the chart font (DejaVu Sans) has: ⑪-⑳ drew as empty boxes, so (11) on
BADGE_LINES = 3
# The narrowest plot a chart with knob markers is drawn in: the Train page's gradient chart in half the content
# column of a 1280 px projector with the sidebar open. Badges are spaced for it (a 700 px plot wastes a little).
NARROWEST_PLOT_PX = 320


def badge_gap(t: dict) -> float:
    """A badge's width as a share of the x range of the narrowest plot (`NARROWEST_PLOT_PX`): a bold circled digit
    at the theme's marker font plus its 3 px offset from the rule (~8% at projector fonts). Two badges closer than
    this share no line; the lesson's optimisation step (three knobs within a few steps, at the end of the axis)
    drew "②" over "③" on the gradient chart when the gap was a fixed 4.5%, sized for a 700 px plot."""
    return (t["text"] + 2 + 6) / NARROWEST_PLOT_PX


def badge(n: int) -> str:
    """The mark drawn on a chart for marker `n` (1-based): ① .. ⑩, then (11), (12), ..."""
    return CIRCLED[n - 1] if 1 <= n <= len(CIRCLED) else f"({n})"


def badge_widths(n: int) -> float:
    """How many circled-digit widths marker `n`'s badge takes: 1 for ① .. ⑩, about 0.55 a character for "(11)"."""
    return 1.0 if 1 <= n <= len(CIRCLED) else 0.55 * len(badge(n))


def numbered_markers(rows: Sequence[Mapping[str, Any]], t: dict, x_max: float | None) -> list[dict]:
    """Knob-change markers that stay readable however many there are: each row {"step", "label", ...} (in any
    order) gets its number "n" (by step), a "badge" (①, drawn at the top of its rule), the "entry" listed under
    the chart ("① mask causal→none @30"), a badge line "y" (pixels from the top) and a "side". Labels never
    sit on the plot, where three neighbouring changes used to smear into one another; badges are one character
    (`badge_gap` of the x range wide), and two that would touch go on different lines (up to BADGE_LINES, then the
    line whose last badge is furthest away). "side" is "right" (badge left of its rule) within a badge's width of
    the end of the x range, where a badge right of its rule would be clipped by the plot's edge; a badge drawn
    right of its rule followed by one drawn left of its rule face each other and need two widths between them."""
    ordered = sorted((dict(r) for r in rows), key=lambda r: r["step"])
    x0 = min((r["step"] for r in ordered), default=0)
    span = max((x_max or 0) - min(0, x0), 1e-9)
    last: list[tuple[float, str, float]] = []  # per badge line: the step, side and width of its last badge
    out = []
    for n, row in enumerate(ordered, start=1):
        width = badge_gap(t) * span * badge_widths(n)  # this badge, in steps
        side = "right" if x_max is not None and row["step"] > x_max - width else "left"

        def clear(prev: tuple[float, str, float], step: float = row["step"], side: str = side, width=width) -> bool:
            apart = prev[1] == "right" and side == "left"  # |① ②|... each badge on the far side of its rule
            # the badges between the two rules: the earlier one's if drawn right of its rule, and this one's if left
            needed = (prev[2] if prev[1] == "left" else 0.0) + (width if side == "right" else 0.0)
            return apart or step - prev[0] >= needed

        free = [i for i, prev in enumerate(last) if clear(prev)]
        if free:
            line = free[0]
        elif len(last) < BADGE_LINES:
            line = len(last)
            last.append((row["step"], side, width))
        else:
            line = min(range(len(last)), key=lambda i: last[i][0])
        last[line] = (row["step"], side, width)
        out.append({**row, "n": n, "badge": badge(n), "entry": f"{badge(n)} {row['label']}",
                    "y": 4 + line * (t["text"] + 6), "side": side})  # fmt: skip
    return out


def numbered_marker_layers(
    source: str | list[dict], t: dict, colour: Any, x: alt.X, title: str = "knob changes"
) -> list:
    """The layers of `numbered_markers` rows (`source`: a live chart's dataset name, or the rows): a dashed rule per
    change, its badge at the top,
    and the list of changes ("① mask causal→none @30", one per line) as a legend under the chart, so every entry
    is whole and the chart's width does not depend on how many there are. `colour` is a colour string or a
    colour encoding (a comparison colours each change by its run). The list is the rules' opacity legend (every
    entry opaque): the colour legend stays free for the curves, and the list follows the data without changing
    the template, so a live chart keeps updating in place."""
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("entry:N", title=title)]
    if isinstance(source, str):
        base = alt.Chart(alt.NamedData(source))
    else:
        base = alt.Chart(data_frame(source, "step", "label", "n", "badge", "entry", "y", "side"))
    paint = {"color": colour} if not isinstance(colour, str) else {}
    mark_colour = {"color": colour} if isinstance(colour, str) else {}
    entries = alt.Opacity(
        "entry:N",
        sort=alt.EncodingSortField("n", order="ascending"),
        scale=alt.Scale(range=[1, 1]),
        # No legend title: a run without changes would still show it, alone, under the chart ("knob chan").
        legend=alt.Legend(
            title=None, orient="bottom", direction="vertical", columns=1, labelLimit=0, symbolType="stroke",
            symbolStrokeColor=PURPLE if not mark_colour else mark_colour["color"], symbolDash=[3, 3],
            symbolStrokeWidth=2,
        ),
    )  # fmt: skip
    rule = base.mark_rule(strokeDash=[3, 3], strokeWidth=t["line"], **mark_colour)
    layers = [rule.encode(x=x, opacity=entries, tooltip=tooltip, **paint)]
    for side in ("left", "right"):
        layers.append(
            base.transform_filter(f"datum.side == '{side}'")
            .mark_text(
                align=side,
                baseline="top",
                dx=3 if side == "left" else -3,
                fontSize=t["text"] + 2,
                fontWeight="bold",
                **mark_colour,
            )  # fmt: skip
            .encode(x=x, y=alt.Y("y:Q", scale=None), text="badge:N", tooltip=tooltip, **paint)
        )
    return layers


def step_seconds(records: Records | None):
    """A function step -> seconds since the first record of `records` (metrics with "step" and "time"), by linear
    interpolation between records (evals and markers fall between metric records); steps outside the records are
    clamped to the ends. The identity's zero when there are no times: a chart stays drawable."""
    pairs = sorted({(r["step"], r["time"]) for r in records or [] if finite(r.get("step")) is not None
                    and finite(r.get("time")) is not None})  # fmt: skip
    if not pairs:
        return lambda step: 0.0
    steps = [p[0] for p in pairs]
    times = [p[1] - pairs[0][1] for p in pairs]

    def seconds(step: float) -> float:
        import bisect

        i = bisect.bisect_left(steps, step)
        if i <= 0:
            return round(times[0], 3)
        if i >= len(steps):
            return round(times[-1], 3)
        s0, s1, t0, t1 = steps[i - 1], steps[i], times[i - 1], times[i]
        return round(t0 + (t1 - t0) * (step - s0) / (s1 - s0), 3)

    return seconds
