"""Markers on a chart: a few labelled rules (`marker_rows`, `marker_layers`: the learning-rate chart's "now", the
phase changes), and knob changes, however many, as numbered badges on their rules listed under the chart
(`numbered_markers`, `numbered_marker_layers`). The badges use only glyphs the chart font has: ① .. ⑩ (DejaVu Sans
has no ⑪-⑳), then the number itself, "(11)"."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt

from tinygpt.ui.charts.colours import PURPLE
from tinygpt.ui.charts.style import data_frame


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


CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩"  # all the chart font (DejaVu Sans) has: ⑪-⑳ drew as empty boxes, so 11 on are "(11)"
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
