"""One run's training curves in Altair: loss, learning rate, gradient norms, per-layer norms and per-head attention
statistics. Pure functions from run-store records to a figure; the theme, colours and shared layers come from
style.py.

Altair (Vega-Lite), not plotly: Streamlit updates a Vega-Lite view in place when only its data changes, so a live
chart keeps its zoom and hover between refreshes. The four live charts (`loss_chart`, `lr_chart`,
`grad_norm_chart`, `layer_grad_chart`) return a `style.VegaLite`: a cached template plus named datasets
(`style.live_spec`), whose spec stays byte-identical while data grows. `head_stats_chart` is redrawn per snapshot
and returns a plain Altair chart.

Knob changes are drawn on the loss and gradient-norm charts as numbered vertical markers (①, ②, ...) with the
list of changes under the chart (rows from knob_words.knob_marks, as on every chart that marks them, laid out by
style.numbered_markers), non-finite steps as red rules (`_event_rows`, `_event_template_layers`); the current step
on the learning-rate chart is a labelled marker (style.marker_layers).
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
    dash_encoding,
    dash_note,
    palette_for,
)
from tinygpt.ui.charts.markers import marker_layers, marker_rows, numbered_marker_layers, numbered_markers
from tinygpt.ui.charts.style import (
    HEALTHY_UPDATE_RATIO,
    LOG_FLOOR,
    SECONDS,
    STEP,
    Records,
    VegaLite,
    data_frame,
    finish,
    finite,
    group_names,
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
)
from tinygpt.ui.charts.theme import style_altair, theme
from tinygpt.ui.words.knob_words import knob_marks

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


def _layer_and_part(group: str) -> tuple[str, str]:
    """ "L3.attn" -> ("L3", "attn"); "emb" -> ("emb", "other")."""
    layer, _, part = group.partition(".")
    return (layer, part) if part in ("attn", "mlp") else (group, "other")


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
    seconds: bool = False,
    max_points: int = 1500,
    large: bool = False,
) -> VegaLite:
    """Train loss per step (optionally EMA-smoothed), val loss, the ln(V) uniform baseline, an optional target,
    knob changes and non-finite steps. `ghost` is the train loss of the run this one replaced (started from a
    changed setting), drawn as a faint dashed line named in the subtitle by `ghost_label` (e.g. "previous run:
    num_heads 4"), so
    "what did more heads do?" is answered on one chart; it is drawn only as far as this run has come, so the axis
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
    datasets["ghost"] = [{"step": s, "loss": v} for s, v in step_series(ghost, "loss")]
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
    title = "Training loss" if rows else "Training loss: waiting for the first step"
    below = legend_lines(len(datasets["knobs"]))
    key = (raw_name, smooth_name, title, (ghost_label or "") if ghost else None, x_title, large, below, not rows)
    return live_spec(_loss_template, key, datasets)


def _loss_template(
    raw_name: str, smooth_name: str | None, title: str, ghost_label: str | None, x_title: str, large: bool,
    below: int = 0, waiting: bool = False,
):  # fmt: skip
    t = theme(large)
    # A title no taller than the plot: "cross-entropy loss (nats per character)" ran off its top (1280x720, both
    # font sizes). While it waits the axis starts at zero: its one value, the uniform guess, was a single tick
    # that read "4.174387".
    yspec = {"title": "loss (nats per char)" if large else "cross-entropy loss (nats/char)", "zero": waiting}
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
        *reference_layers("uniform", yspec, t),
        *reference_layers("target", yspec, t, colour=GREEN, dash=(2, 3)),
        *_event_template_layers(t, x_title),
    ]
    subtitle = None
    if ghost_label is not None:  # the run this one replaced, faint, named in the subtitle
        ghost = alt.Chart(alt.NamedData("ghost")).encode(x=step_x(x_title), y=value_y("loss:Q", **yspec))
        layers.insert(0, ghost.mark_line(color=GREY, opacity=0.55, strokeDash=[5, 3], strokeWidth=t["line"]))
        # Wrapped, not drawn at the line's end: "previous run: hidden_dim 32 → 64, num_heads 2 → 16" is wider
        # than a projector's plot, and a label at the plot's edge lost its start ("ous run: ...").
        subtitle = textwrap.wrap(f"grey dashed: {ghost_label or 'previous run'}", 44 if large else 70)
    return finish(layers, title, t, subtitle, large=large, below=below)


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
    title = "Learning rate schedule" if rows else "Learning rate: waiting for the first step"
    return live_spec(_lr_template, (title, large), {"lr": rows, "lr_hover": hover_rows(rows, "series"), "now": now})


def _lr_template(title: str, large: bool):
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
    return finish(layers, title, t, large=large)


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
    subtitle = "orange points: steps clipped to the threshold" if clipping else "clipping is off"
    subtitle = subtitle if rows else f"waiting for the first step ({subtitle})"
    return live_spec(_grad_norm_template, (title, subtitle, large, legend_lines(len(datasets["knobs"]))), datasets)


def _grad_norm_template(title: str, subtitle: str, large: bool, below: int = 0):
    t = theme(large)
    yspec = {"title": "gradient norm (L2, log scale)", "log": True}
    y = value_y("shown:Q", **yspec)
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("norm:Q", format=".4g", title="norm before clipping")]
    base = alt.Chart(alt.NamedData("grad")).encode(x=step_x(), y=y)
    layers = [
        base.mark_line(strokeWidth=t["line"], color=BLUE),
        hover_layer(base.encode(tooltip=tooltip, color=alt.value(BLUE)), "grad", data="grad_hover"),
        *reference_layers("clip", yspec, t, colour=ORANGE),
        alt.Chart(alt.NamedData("clipped"))
        .mark_point(filled=True, color=ORANGE, size=6 * t["text"])
        .encode(x=step_x(), y=y, tooltip=[*tooltip, alt.Tooltip("clipped:N", title="clipped to threshold")]),
        *_event_template_layers(t),
    ]
    return finish(layers, title, t, subtitle=subtitle, large=large, below=below)


def _lr_panel_template(t: dict) -> alt.LayerChart:
    """The learning rate under a per-layer chart, from dataset "lr_panel" (rows {"step", "lr"})."""
    y = value_y("lr:Q", "learning rate", zero=True, nice=True)
    base = alt.Chart(alt.NamedData("lr_panel")).encode(x=step_x(), y=y)
    tooltip = [alt.Tooltip("step:Q", title="step"), alt.Tooltip("lr:Q", format=".3e", title="learning rate")]
    return alt.layer(
        base.mark_line(strokeWidth=t["line"], color=GREY),
        hover_layer(base.encode(tooltip=tooltip, color=alt.value(GREY)), "lr_panel", zoom=False, data="lr_panel_hover"),
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
    template plus named datasets (see `live_spec`)."""
    t = theme(large)
    groups = group_names(thin_for_display(list(metrics or []), 200), field)  # fixed for a run: a sample finds them
    ratios = field == "update_ratios"
    rows = [
        {"step": int(step), "group": str(g), "value": v}
        for m in thin_for_display(list(metrics or []), max(100, max_rows // max(1, len(groups))))
        if (step := finite(m.get("step"))) is not None
        for g, value in (m.get(field) or {}).items()
        if (v := finite(value)) is not None
    ]
    layers_order = tuple(dict.fromkeys(_layer_and_part(g)[0] for g in groups))
    title = "Update / weight ratio per layer" if ratios else "Per-layer gradient norms"
    if not rows:
        title += ": waiting for the first step"
    datasets = {
        "layers": rows,
        "layers_hover": hover_rows(rows, "group"),
        "healthy": reference_rows(HEALTHY_UPDATE_RATIO, "1e-3: classic healthy value") if ratios else [],
    }
    if lr_metrics:
        datasets["lr_panel"] = [{"step": s, "lr": v} for s, v in thin_for_display(step_series(metrics, "lr"), 1500)]
        datasets["lr_panel_hover"] = hover_rows(datasets["lr_panel"])
    panel_width = (width or t["wide"]) if lr_metrics else None
    return live_spec(_layer_grad_template, (ratios, layers_order, title, panel_width, large), datasets)


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
            x=step_x(None if panel_width else STEP),
            y=value_y("shown:Q", **yspec),
            color=colour_encoding("layer:N", list(layers_order), palette_for(layers_order), "layer", lines=True),
            strokeDash=dash_encoding("part:N", ["attn", "mlp", "other"]),
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
        hover_layer(base.encode(tooltip=tooltip), "layers", size=60, data="layers_hover"),
    ]
    if ratios:
        layers += reference_layers("healthy", yspec, t, colour=GREEN)
    main = alt.layer(*layers).properties(height=t["height"])
    if panel_width:
        panels = [main.properties(width=panel_width), _lr_panel_template(t).properties(width=panel_width)]
        chart = alt.vconcat(*panels).resolve_scale(x="shared", color="independent")
    else:
        chart = main
    note = dash_note(["attention", "MLP", "embeddings / final layer norm"])
    return style_altair(chart.properties(title=alt.TitleParams(title, subtitle=note)), large)


# ---------------------------------------------------------------- per-head attention statistics


def head_stats_chart(
    rows: Records | None,
    *,
    uniform: tuple[float, str] | None = None,
    layer: int | None = None,
    large: bool = False,
):
    """Per-head attention entropy (nats) and mean max weight (0..1) over training steps, coloured by head: one row
    of two small charts per layer, or only `layer` if given. `uniform` is (entropy, label) of a head that spreads
    its weight evenly over the keys the mask in force lets it see (inside.uniform_entropy: the mean of
    ln(visible keys), about 2.55 under a causal mask at T = 32, not ln(32) = 3.47), drawn as the reference."""
    t = theme(large)
    # Two panels side by side fit the content column of a 1400 px window (300 px each plus axes); with large fonts
    # they stack, so neither is cut at the right edge of a 1280 px projector.
    width, height = (620, 300) if large else (300, 260)

    def small(text: str) -> alt.TitleParams:  # panel titles below the chart's own, sized like axis titles
        return alt.TitleParams(text, fontSize=t["axis_title"])

    clean = [
        {"step": int(r["step"]), "layer": int(r["layer"]), "head": f"H{int(r['head'])}", "entropy": e, "max_weight": w}
        for r in rows or []
        if None not in (finite(r.get("step")), finite(r.get("layer")), finite(r.get("head")))
        and (e := finite(r.get("entropy"))) is not None
        and (w := finite(r.get("max_weight"))) is not None
    ]
    keep = set(thin_for_display(sorted({r["step"] for r in clean}), 200))
    clean = [r for r in clean if r["step"] in keep and (layer is None or r["layer"] == layer)]
    heads = sorted({r["head"] for r in clean}, key=lambda h: int(h[1:]))
    panels = []
    for lay in sorted({r["layer"] for r in clean}) or [layer if layer is not None else 0]:
        part = [r for r in clean if r["layer"] == lay]
        # Heads listed in rows of at most 8: a 16-head legend in one row ran ~300 px past a projector's edge.
        legend = alt.Legend(title="head", symbolType="stroke", symbolStrokeWidth=3, columns=min(8, max(1, len(heads))))
        colour = alt.Color("head:N", scale=alt.Scale(domain=heads, range=palette_for(heads)), legend=legend, sort=heads)
        base = alt.Chart(data_frame(part)).encode(x=step_x(), color=colour)
        tooltip = [
            alt.Tooltip("step:Q"),
            alt.Tooltip("head:N"),
            alt.Tooltip("entropy:Q", format=".3f"),
            alt.Tooltip("max_weight:Q", format=".3f", title="max weight"),
        ]
        point = alt.OverlayMarkDef(filled=True, size=5 * t["text"])
        ent_spec: dict = {"title": "attention entropy (nats)", "zero": True}
        baseline = finite(uniform[0]) if uniform is not None else None
        if baseline is not None:  # room above the even-spread entropy, which no head exceeds, for its label
            ent_spec["domainMax"] = round(max([baseline, *(r["entropy"] for r in part)]) * 1.15, 2)
        ent_y = value_y("entropy:Q", **ent_spec)
        ent = [base.mark_line(point=point, strokeWidth=t["line"]).encode(y=ent_y, tooltip=tooltip)]
        if uniform is not None and baseline is not None:
            # Above its line: the heads start at that entropy, so a label hung below it sat on their lines.
            ent += reference_layers(reference_rows(uniform[0], uniform[1]), ent_spec, t, above=True)
        maxw = base.mark_line(point=point, strokeWidth=t["line"]).encode(
            y=value_y("max_weight:Q", "max attention weight (0..1)", domain=[0, 1]), tooltip=tooltip
        )
        pair = (
            alt.layer(*ent).properties(title=small(f"layer {lay}: entropy"), width=width, height=height),
            maxw.properties(title=small(f"layer {lay}: max weight"), width=width, height=height),
        )
        panels.append(alt.vconcat(*pair) if large else alt.hconcat(*pair))
    title = "Attention entropy and max weight per head" + ("" if clean else ": waiting for the first snapshot")
    return style_altair(alt.vconcat(*panels).properties(title=title), large)
