"""One run's training curves in Altair: loss, learning rate and gradient norm. Pure functions from run-store records
to a figure; the theme, colours, markers and shared layers come from theme.py, colours.py, markers.py and style.py,
and the charts of the model's parts (per-layer norms, per-head attention statistics) are parts.py.

Altair (Vega-Lite), not plotly: Streamlit updates a Vega-Lite view in place when only its data changes, so a live
chart keeps its zoom and hover between refreshes. The three live charts here (`loss_chart`, `lr_chart`,
`grad_norm_chart`) return a `style.VegaLite`: a cached template plus named datasets (`style.live_spec`), whose spec
stays byte-identical while data grows.

Knob changes are drawn on the loss and gradient-norm charts as numbered vertical markers (①, ②, ...) with the
list of changes under the chart (rows from knob_words.knob_marks, as on every chart that marks them, laid out by
markers.numbered_markers), non-finite steps as red rules (`_event_rows`, `_event_template_layers`); the current step
on the learning-rate chart is a labelled marker (markers.marker_layers).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import altair as alt

from tinygpt.ui.charts.colours import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    PALE,
    PURPLE,
    RED,
    colour_encoding,
)
from tinygpt.ui.charts.markers import marker_layers, marker_rows, numbered_marker_layers, numbered_markers
from tinygpt.ui.charts.style import (
    LOG_FLOOR,
    SECONDS,
    STEP,
    Records,
    VegaLite,
    finish,
    finite,
    hover_layer,
    hover_rows,
    legend_lines,
    live_spec,
    reference_layers,
    reference_rows,
    step_seconds,
    step_series,
    step_x,
    thin_for_display,
    value_y,
    y_title_lines,
)
from tinygpt.ui.charts.theme import theme
from tinygpt.ui.words.knob_words import knob_marks

# A chart with no step yet says so in its subtitle, which wraps, and keeps its short title, which a column cuts.
WAITING = "waiting for the first step"

# ---------------------------------------------------------------- reading records


def _nonfinite_steps(records: Records | None, field: str, events: Records | None) -> dict[int, str]:
    """Steps where `field` was written as null (not finite), plus the 'nonfinite' events, with a message each."""
    steps = {}
    for r in records or []:
        if field in r and r[field] is None and finite(r.get("step")) is not None:
            steps[int(r["step"])] = f"{field} was not finite"
    for e in events or []:
        if e.get("kind") == "nonfinite" and finite(e.get("step")) is not None:
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


# ---------------------------------------------------------------- markers: knob changes, non-finite steps, now


def _x_max(*row_lists: list[dict]) -> float | None:
    return max((row["step"] for rows in row_lists for row in rows), default=None)


def _event_template_layers(t: dict, x_title: str = STEP) -> list:
    """Knob changes as numbered purple rules, listed under the chart ("knobs", see `numbered_markers`); non-finite
    steps as red rules with a red marker along the
    top ("nonfinite")."""
    layers = numbered_marker_layers("knobs", t, PURPLE, step_x(x_title))
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("label:N", title="non-finite")]
    base = alt.Chart(alt.NamedData("nonfinite"))
    rule = base.mark_rule(color=RED, strokeWidth=t["line"], opacity=0.7)
    layers.append(rule.encode(x=step_x(x_title), tooltip=tooltip))
    layers.append(
        base.mark_point(shape="triangle-down", filled=True, size=12 * t["text"], color=RED).encode(
            x=step_x(x_title), y=alt.value(t["text"] // 2 + 2), tooltip=tooltip
        )
    )
    return layers


def _event_rows(
    events: Records | None, nonfinite: dict[int, str], t: dict, x_max: float | None
) -> dict[str, list[dict]]:
    bad = [{"step": s, "label": m} for s, m in sorted(nonfinite.items())][-200:]
    return {"knobs": numbered_markers(knob_marks(events), t, x_max), "nonfinite": bad}


# ---------------------------------------------------------------- live charts


def loss_chart(
    metrics: Records | None,
    evals: Records | None,
    events: Records | None,
    vocab_size: int | None,
    target: float | None = None,
    smoothing: float = 0.0,
    *,
    target_label: str = "target",
    ghost: Records | None = None,
    ghost_label: str = "",
    ghost_from: int | None = None,
    seconds: bool = False,
    max_points: int = 1500,
    large: bool = False,
) -> VegaLite:
    """Train loss per step (optionally EMA-smoothed), val loss, the ln(V) uniform baseline, an optional target,
    knob changes and non-finite steps. `ghost` is the train loss of the run this one replaced (started from a
    changed setting), drawn as a faint dashed line named in the subtitle by `ghost_label` (e.g. "previous run:
    num_heads 4"), so
    "what did more heads do?" is answered on one chart; it is drawn from step `ghost_from` (a branch's branch step:
    before it the two curves are one) and only as far as this run has come, so the axis
    fits this run. With `seconds` the x axis is wall-clock seconds since the
    run's first step (from the records' times; pauses included), so two recipes race on one axis. Never raises
    on empty input: it shows a 'waiting' title."""
    t, smoothing = theme(large), min(max(float(smoothing or 0.0), 0.0), 0.999)
    train = step_series(metrics, "loss")
    raw_name, smooth_name = ("train (raw)", f"train (EMA {smoothing:g})") if smoothing else ("train", None)
    rows = []
    smoothed = _ema([v for _, v in train], smoothing) if smoothing else [None] * len(train)
    for (step, value), ema in thin_for_display(list(zip(train, smoothed, strict=True)), max_points):
        rows.append({"step": step, "loss": value, "series": raw_name})
        if ema is not None:
            rows.append({"step": step, "loss": ema, "series": smooth_name})
    rows += [{"step": s, "loss": v, "series": "val"} for s, v in thin_for_display(step_series(evals, "val_loss"), 500)]
    uniform = math.log(vocab_size) if vocab_size and vocab_size > 0 else None
    datasets = {
        "loss": rows,
        "loss_hover": hover_rows(rows, "series"),
        "uniform": reference_rows(uniform, f"uniform guess ln(V)={uniform:.2f}") if uniform else [],
        "target": reference_rows(target, f"{target_label} {finite(target) or 0:.2f}"),
        **_event_rows(events, _nonfinite_steps(metrics, "loss", events), t, _x_max(rows)),
    }
    # From `ghost_from` on (a branch's branch step), on the ghost's own clock counted from its first record.
    datasets["ghost"] = [{"step": s, "loss": v} for s, v in step_series(ghost, "loss") if s >= (ghost_from or 0)]
    x_title = STEP
    if seconds:  # every dataset's "step" becomes seconds since the first step, each run by its own clock
        mine, theirs = step_seconds(metrics), step_seconds(ghost)
        for name, rows_ in datasets.items():
            clock = theirs if name.startswith("ghost") else mine
            datasets[name] = [{**r, "step": clock(r["step"])} for r in rows_ if "step" in r] if rows_ else rows_
        x_title = SECONDS
    # The previous run only as far as this one has come: the x axis fits the run being watched (a 14k-step
    # previous run squeezed a new one into the left fifth of the axis, its label clipped at the edge).
    end = max((r["step"] for r in datasets["loss"]), default=None)
    shade = thin_for_display([r for r in datasets["ghost"] if end is not None and r["step"] <= end], max_points // 2)
    datasets["ghost"] = shade
    # The wait goes in the subtitle, never the title: "Training loss: waiting for the first step" was cut to
    # "Training loss: waiting for the first s…" in the Train page's column at 1280x720, Large fonts.
    title = "Training loss"
    below = legend_lines(len(datasets["knobs"]))
    # The uniform guess is named in the subtitle, not on the plot: its line sits at the top of the y range, where
    # the curve starts and the knob badges stand, and its label there lay under both (1280x720, Large fonts).
    uniform_words = f"flat dashed line at {uniform:.2f}: a uniform guess, ln(V)" if uniform else None
    key = (raw_name, smooth_name, title, (ghost_label or "") if ghost else None, x_title, large, below, not rows,
           uniform_words)  # fmt: skip
    return live_spec(_loss_template, key, datasets)


def _loss_template(
    raw_name: str, smooth_name: str | None, title: str, ghost_label: str | None, x_title: str, large: bool,
    below: int = 0, waiting: bool = False, uniform_words: str | None = None,
):  # fmt: skip
    t = theme(large)
    # A title no taller than the plot (style.y_title_lines): "cross-entropy loss (nats per character)" ran off its
    # top (1280x720, both font sizes), and "cross-entropy loss (nats/char)" lost its start at normal fonts. While
    # it waits the axis starts at zero: its one value, the uniform guess, was a single tick that read "4.174387".
    y_title = y_title_lines("loss (nats per char)" if large else "cross-entropy loss (nats/char)", t)
    yspec = {"title": y_title, "zero": waiting}
    domain, colours = [raw_name, "val"], [PALE if smooth_name else BLUE, ORANGE]
    if smooth_name:
        domain.insert(1, smooth_name)
        colours.insert(1, BLUE)
    base = alt.Chart(alt.NamedData("loss")).encode(
        x=step_x(x_title), y=value_y("loss:Q", **yspec), color=colour_encoding("series:N", domain, colours, lines=True)
    )
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("series:N"), alt.Tooltip("loss:Q", format=".4f")]
    layers = [
        base.mark_line(strokeWidth=t["line"]),
        base.mark_point(filled=True, size=6 * t["text"]).transform_filter(alt.datum.series == "val"),
        hover_layer(base.encode(tooltip=tooltip), "loss", data="loss_hover"),
        *reference_layers("uniform", yspec, t, labelled=False),
        *reference_layers("target", yspec, t, colour=GREEN, dash=(2, 3)),
        *_event_template_layers(t, x_title),
    ]
    subtitle = ([WAITING] if waiting else []) + ([uniform_words] if uniform_words else [])
    if ghost_label is not None:  # the run this one replaced, faint, named in the subtitle
        ghost = alt.Chart(alt.NamedData("ghost")).encode(x=step_x(x_title), y=value_y("loss:Q", **yspec))
        layers.insert(0, ghost.mark_line(color=GREY, opacity=0.55, strokeDash=[5, 3], strokeWidth=t["line"]))
        # Wrapped, not drawn at the line's end: "previous run: hidden_dim 32 → 64, num_heads 2 → 16" is wider
        # than a projector's plot, and a label at the plot's edge lost its start ("ous run: ...").
        # At most three lines on a projector: seven squeezed a review's plot to 80 px (the rest: Runs → Compare)
        subtitle += textwrap.wrap(f"grey dashed curve: {ghost_label or 'the run before this one'}", 44 if large else 70,
                                  max_lines=3 if large else 6, placeholder=" … (all: Runs → Compare)")
    return finish(layers, title, t, subtitle or None, large=large, below=below)


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
    rows = [{"step": s, "lr": v, "series": "used"} for s, v in thin_for_display(step_series(metrics, "lr"), max_points)]
    planned = [(int(s), float(v)) for s, v in schedule or [] if finite(s) is not None and finite(v) is not None]
    rows += [{"step": s, "lr": v, "series": "planned"} for s, v in thin_for_display(planned, max_points)]
    now = []
    if current_step is not None and finite(current_step) is not None:
        now_row = {"step": int(current_step), "label": f"now: step {int(current_step)}"}
        now = marker_rows([now_row], t, _x_max(rows, [now_row]), stagger=False)
    title = "Learning rate schedule"  # the wait in the subtitle, as the loss chart's: a narrow column cuts a title
    datasets = {"lr": rows, "lr_hover": hover_rows(rows, "series"), "now": now}
    return live_spec(_lr_template, (title, large, not rows), datasets)


def _lr_template(title: str, large: bool, waiting: bool = False):
    t = theme(large)
    base = alt.Chart(alt.NamedData("lr")).encode(
        x=step_x(),
        y=value_y("lr:Q", "learning rate", zero=True),
        color=colour_encoding("series:N", ["planned", "used"], [PALE, BLUE], lines=True),
    )
    tooltip = [
        alt.Tooltip("step:Q", title="step"),
        alt.Tooltip("series:N"),
        alt.Tooltip("lr:Q", format=".3e", title="learning rate"),
    ]
    # Two layers, not a strokeDash encoding of the colour's own field: Vega-Lite merged that with the colour legend
    # and warned in the console ("Conflicting legend property", "Unioning discrete legend values").
    layers = [
        base.mark_line(strokeWidth=t["line"]).transform_filter(alt.datum.series == "used"),
        base.mark_line(strokeWidth=t["line"], strokeDash=[7, 4]).transform_filter(alt.datum.series == "planned"),
        hover_layer(base.encode(tooltip=tooltip), "lr", data="lr_hover"),
        *marker_layers("now", t, GREY, "position", step_x()),
    ]
    return finish(layers, title, t, WAITING if waiting else None, large=large)


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
    norms = step_series(metrics, "grad_norm")
    rows = [{"step": s, "norm": v, "shown": max(v, LOG_FLOOR)} for s, v in thin_for_display(norms, max_points)]
    clipped = [
        {"step": int(m["step"]), "norm": v, "shown": max(v, LOG_FLOOR), "clipped": "yes"}
        for m in metrics or []
        if m.get("clipped") and (v := finite(m.get("grad_norm"))) is not None and finite(m.get("step")) is not None
    ]
    clipping = (finite(max_grad_norm) or 0) > 0
    datasets = {
        "grad": rows,
        "grad_hover": hover_rows(rows),
        "clip": reference_rows(max_grad_norm, f"clip threshold {finite(max_grad_norm) or 0:g}") if clipping else [],
        "clipped": thin_for_display(clipped, 500),
        **_event_rows(events, _nonfinite_steps(metrics, "grad_norm", events), t, _x_max(rows)),
    }
    # Not "Gradient norm before clipping": at projector fonts a half-page column (Experiments, two charts a row)
    # cut it to "Gradient norm before clippi…" (the lesson test's layout probe).
    title = "Gradient norm, unclipped"
    # The subtitle is part of the template, so it says what the points are rather than how many (that would
    # change the spec, and rebuild the view, at every refresh). The wait goes there too, not in the title, which a
    # half-width column cuts.
    # 45 characters at most: "… (the dashed line)" was cut at Large fonts in Train's column (the layout probe)
    subtitle = "orange: steps clipped to the dashed threshold" if clipping else "clipping is off"
    subtitle = subtitle if rows else f"{WAITING} ({subtitle})"
    return live_spec(_grad_norm_template, (title, subtitle, large, legend_lines(len(datasets["knobs"]))), datasets)


def _grad_norm_template(title: str, subtitle: str, large: bool, below: int = 0):
    t = theme(large)
    # On lines (style.y_title_lines): on one, the title was taller than the plot at Large fonts (Gradients page,
    # 1280x720: 237 px beside a 225 px plot, up against the subtitle).
    yspec = {"title": y_title_lines("gradient norm (L2, log scale)", t), "log": True}
    y = value_y("shown:Q", **yspec)
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("norm:Q", format=".4g", title="norm before clipping")]
    base = alt.Chart(alt.NamedData("grad")).encode(x=step_x(), y=y)
    layers = [
        base.mark_line(strokeWidth=t["line"], color=BLUE),
        hover_layer(base.encode(tooltip=tooltip, color=alt.value(BLUE)), "grad", data="grad_hover"),
        # Unlabelled on the plot: the norms cluster at the threshold when clipping acts, and its label lay under
        # the clipped points there, unreadable (a review at 1280x720, Large). Its value: the rule's tooltip, the
        # chart's caption (words.clipping) and the knob beside it.
        *reference_layers("clip", yspec, t, colour=ORANGE, labelled=False),
        alt.Chart(alt.NamedData("clipped"))
        .mark_point(filled=True, color=ORANGE, size=6 * t["text"])
        .encode(x=step_x(), y=y, tooltip=[*tooltip, alt.Tooltip("clipped:N", title="clipped to threshold")]),
        *_event_template_layers(t),
    ]
    return finish(layers, title, t, subtitle=subtitle, large=large, below=below)
