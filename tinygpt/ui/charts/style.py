"""What the line charts share: reading and thinning run records, the step axis, the Altair layers that several
charts draw (hover points, reference lines), a chart's finish, and the live-chart template machinery (livespec.py).
The theme and its fonts are theme.py, colours and line styles colours.py, markers (labelled rules, numbered knob
changes) markers.py. No chart lives here; curves.py, heatmaps.py and compare.py import these modules, never the
other way round.

Conventions it carries out:
- `large=True` gives projector-sized fonts (theme.py's `theme`); `style_altair` / `style_plotly` apply them.
- Long series go through `thin_for_display` before they are sent, so a 100k-step run sends a bounded payload and
  every DataFrame stays under Altair's 5,000-row guard (`MAX_ROWS`), which is left on (no global setting is
  changed).
- Characters are drawn visibly: space "␣", newline "⏎" (`visible_char`).
- Values arrive as the run store writes them, None where not finite; `finite` and `step_series` read them.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd

from tinygpt.ui.charts.colours import GREY
from tinygpt.ui.charts.theme import style_altair

from .livespec import MAX_ROWS, VegaLite, live_spec  # noqa: F401 - the chart modules import these from style

Records = Sequence[Mapping[str, Any]]
"""Run-store records (metrics, evals, events): a sequence of dicts, None where a value was not finite."""

VISIBLE_CHARS = {" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍"}
LOG_FLOOR = 1e-8  # 0 cannot sit on a log axis: such values are drawn here, and tooltips show the real value
HEALTHY_UPDATE_RATIO = 1e-3  # the rule of thumb from cs231n and Karpathy's makemore part 3: log10(update/data) ~ -3
STEP = "training step"  # the step axis title
# The same axis on the training clock (tinygpt/runs/clock.py: pauses left out): recipes race on it.
SECONDS = "seconds trained since the first step"
HOVER_POINTS = 100  # per series in a live chart's hover layer: one every ~7 px of a 700 px plot


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
    """The step axis: labels 1,500 below ten thousand and 25k above (short, and exact where steps are few). On the
    seconds axis, decimals below 100 s: a Demo run of 1.4 s was labelled "0 0 0 ... 1 1 1"."""
    labels = "datum.value >= 10000 ? format(datum.value, '.3~s') : format(datum.value, ',~d')"
    if title == SECONDS:
        labels = "datum.value >= 100 ? format(datum.value, ',~d') : format(datum.value, '.2~f')"
    return alt.X("step:Q", title=title, axis=alt.Axis(labelExpr=labels))


def value_y(field: str, title: str, log: bool = False, **scale: Any) -> alt.Y:
    """Every layer of a chart uses the same y title and scale type, or Vega-Lite would merge them ("loss, y")."""
    return alt.Y(field, title=title, scale=alt.Scale(type="log" if log else "linear", **scale))


# A y title runs along the plot's height, centred on it, and what does not fit is cut off where the canvas ends:
# the Train page's loss chart read "ropy loss (nats/char)" at normal fonts. A chart that Streamlit fits to its
# height gives the plot only part of it (its title, legend, subtitle, x axis and the knob legends take the rest), so
# a title line is kept within half of the theme's height; a panel drawn at its own size (a concat of panels) has a
# plot of the height it names, and a line may be as long as that. CHAR_EM is a character's width as a share of the
# font size (0.6: wide for Vega's sans-serif; measured in Chromium, ~0.45 for these titles), which leaves room.
CHAR_EM = 0.6
Y_TITLE_SHARE = 0.5


def y_title_room(t: dict, plot: int | None = None) -> float:
    """Characters a y title's line may have: of half the theme's chart height, or of a panel's own `plot` height
    (px; a panel drawn at its own size)."""
    return (plot or Y_TITLE_SHARE * t["height"]) / (CHAR_EM * t["axis_title"])


def y_title_lines(title: str, t: dict, plot: int | None = None) -> str | list[str]:
    """`title` as one line if it fits (`y_title_room`: half the theme's chart height at the axis-title font, or a
    panel's own `plot` height), else as lines (Vega draws a list as lines) broken before its units,
    "(nats/char)", and then at spaces (pure)."""
    room = y_title_room(t, plot)
    if len(title) <= room:
        return title
    main, _, units = title.rpartition(" (")
    lines = [main, f"({units}"] if main else [title]
    return [part for line in lines for part in (textwrap.wrap(line, int(room)) or [line])]


def hover_layer(chart: alt.Chart, name: str, size: int = 90, zoom: bool = True, data: str | None = None) -> alt.Chart:
    """Points that appear under the pointer (nearest point, no need to hit the line) and carry the tooltip; with
    `zoom`, dragging pans the step axis and Alt + scrolling zooms it: a plain scroll over a chart is the page's
    (a reviewer's two scrolls over Experiments' gradient chart zoomed it out to steps -1,600..1,100 and left the
    page where it was). Both parameters sit on this one view: Altair names every view that has parameters, and
    inside a vconcat it would attach them to all of those views.
    `data`: draw the hover points from this named dataset instead of the chart's own (see `hover_rows`)."""
    sel = alt.selection_point(name=f"hover_{name}", nearest=True, on="pointerover", clear="pointerout", empty=False)
    scales = alt.selection_interval(name=f"zoom_{name}", bind="scales", encodings=["x"], zoom="wheel![event.altKey]")
    params = [sel, scales] if zoom else [sel]
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
    above: bool = False, labelled: bool = True,
) -> list:  # fmt: skip
    """Labelled horizontal reference lines from rows {"ref", "label"} (see `reference_rows`; none: nothing drawn),
    on the same y title and scale (`yspec`, see `value_y`) as the chart. `source` names a live chart's dataset, or
    is the rows. `above`: the label sits on top of its line, for a reference that the lines stay under (a chart
    that keeps room above it). `labelled` False: the line alone, its words said elsewhere (the chart's subtitle)."""
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
    return [rule, text] if labelled else [rule]


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


def step_seconds(records: Records | None):
    """A function step -> seconds since the first record of `records` (metrics with "step" and "clock" or "time"),
    by linear interpolation between records (evals and markers fall between metric records); steps outside the
    records are clamped to the ends. The identity's zero when there are no times: a chart stays drawable.

    "clock" is the seconds the run has trained (tinygpt.runs.loop: pauses, the queue and a worker's restart left
    out), so a run paused for ten minutes is not ten minutes slower to its loss; a run that recorded no clock
    (written before it existed) falls back on the wall-clock "time", pauses included (`words.timing` says so)."""
    stepped = [r for r in records or [] if finite(r.get("step")) is not None]
    clocked = bool(stepped) and all(finite(r.get("clock")) is not None for r in stepped)
    field = "clock" if clocked else "time"
    pairs = sorted({(r["step"], r[field]) for r in stepped if finite(r.get(field)) is not None})
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
