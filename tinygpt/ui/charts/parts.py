"""The charts of a model's parts, in Altair: per-layer gradient norms or update ratios over steps, small multiples
with the learning rate on top (`layer_grad_chart`, live: a `style.VegaLite` like curves.py's), and per-head attention
statistics at one snapshot (`head_stats_chart`, a plain Altair chart redrawn per snapshot). Pure functions from
run-store records to a figure."""

from __future__ import annotations

import altair as alt

from tinygpt.ui.charts.colours import (
    GREEN,
    GREY,
    colour_encoding,
    dash_encoding,
    dash_note,
    palette_for,
)
from tinygpt.ui.charts.style import (
    HEALTHY_UPDATE_RATIO,
    LOG_FLOOR,
    STEP,
    Records,
    VegaLite,
    data_frame,
    finite,
    group_names,
    hover_layer,
    hover_rows,
    live_spec,
    reference_layers,
    reference_rows,
    step_series,
    step_x,
    thin_for_display,
    value_y,
    y_title_lines,
)
from tinygpt.ui.charts.theme import style_altair, theme

# ---------------------------------------------------------------- reading records


def _layer_and_part(group: str) -> tuple[str, str]:
    """ "L3.attn" -> ("L3", "attn"); "emb" -> ("emb", "other")."""
    layer, _, part = group.partition(".")
    return (layer, part) if part in ("attn", "mlp") else (group, "other")


def _lr_panel_template(t: dict) -> alt.LayerChart:
    """The learning rate under a per-layer chart, from dataset "lr_panel" (rows {"step", "lr"})."""
    y = value_y("lr:Q", y_title_lines("learning rate", t, plot=int(t["height"] / 2.5)), zero=True, nice=True)
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
    # At Large fonts the y axis and its title take ~110 px left of the plot: 700 px of plot ran 33 px past the content
    # column of a 1280 px projector (a review)
    panel_width = (width or (t["wide"] - 60 if large else t["wide"])) if lr_metrics else None
    return live_spec(_layer_grad_template, (ratios, layers_order, title, panel_width, large), datasets)


def _layer_grad_template(ratios: bool, layers_order: tuple, title: str, panel_width: int | None, large: bool):
    t = theme(large)
    # Titles as lines that fit the plot (style.y_title_lines), here and in every panel below.
    y_title = "‖ΔW‖ / ‖W‖ per step (log scale)" if ratios else "gradient L2 norm (log scale)"
    # A lone chart is fitted to its height (half of it for a line); stacked panels are drawn at their own size.
    yspec = {"title": y_title_lines(y_title, t, plot=t["height"] if panel_width else None), "log": True}
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


def head_stats_chart(
    rows: Records | None,
    *,
    uniform: tuple | None = None,
    layer: int | None = None,
    large: bool = False,
):
    """Per-head attention entropy (nats) and mean max weight (0..1) over training steps, coloured by head: one row
    of two small charts per layer, or only `layer` if given. `uniform` is (entropy, label) of a head that spreads
    its weight evenly over the keys the mask in force lets it see (inside.uniform_entropy: the mean of
    ln(visible keys), about 2.55 under a causal mask at T = 32, not ln(32) = 3.47), drawn as the reference; or a
    tuple of such pairs, or of (entropy, label, first step, last step): one for each stretch of mask and window
    the run trained under, drawn over its own steps (drawn across every step, a review read window 5's line over
    steps that had window 8)."""
    refs = [uniform] if uniform and isinstance(uniform[0], (int, float)) else list(uniform or ())
    refs = [(r[0], r[1], *(r[2:4] if len(r) >= 4 else (None, None))) for r in refs if finite(r[0]) is not None]
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
        ent_spec: dict = {"title": y_title_lines("attention entropy (nats)", t, plot=height), "zero": True}
        if refs:  # room above the even-spread entropy, which no head exceeds, for its label
            ent_spec["domainMax"] = round(max([*(r[0] for r in refs), *(r["entropy"] for r in part)]) * 1.15, 2)
        ent_y = value_y("entropy:Q", **ent_spec)
        ent = [base.mark_line(point=point, strokeWidth=t["line"]).encode(y=ent_y, tooltip=tooltip)]
        if refs:  # above its line: the heads start at that entropy, so a label hung below it sat on their lines
            ent += _even_spread_lines(refs, ent_spec, t)
        maxw = base.mark_line(point=point, strokeWidth=t["line"]).encode(
            y=value_y("max_weight:Q", y_title_lines("max attention weight (0..1)", t, plot=height), domain=[0, 1]),
            tooltip=tooltip,
        )
        pair = (
            alt.layer(*ent).properties(title=small(f"layer {lay}: entropy"), width=width, height=height),
            maxw.properties(title=small(f"layer {lay}: max weight"), width=width, height=height),
        )
        panels.append(alt.vconcat(*pair) if large else alt.hconcat(*pair))
    title = "Attention entropy and max weight per head" + ("" if clean else ": waiting for the first snapshot")
    return style_altair(alt.vconcat(*panels).properties(title=title), large)


def _even_spread_lines(refs: list[tuple], yspec: dict, t: dict) -> list:
    """The even-spread references of head_stats_chart: (entropy, label, first, last) as a dashed segment over steps
    first..last, its label on it at its start; one without steps (first None) across the whole chart."""
    whole = [row for v, label, a, _ in refs if a is None for row in reference_rows(v, label)]
    layers = reference_layers(whole, yspec, t, above=True) if whole else []
    spans = [{"ref": float(v), "label": label, "from": a, "to": b} for v, label, a, b in refs if a is not None]
    if not spans:
        return layers
    y = value_y("ref:Q", **yspec)
    layers.append(alt.Chart(data_frame(spans)).mark_rule(strokeDash=[6, 4], color=GREY, strokeWidth=t["line"]).encode(
        x="from:Q", x2="to:Q", y=y, tooltip=[alt.Tooltip("label:N", title="reference")]))  # fmt: skip
    # A label reads from its segment's start, or for a segment in the right half up to its end: one drawn from a late
    # start ran past the plot's right edge onto the data at Large fonts (a review).
    end = max(r["to"] for r in spans) or 1
    # One label a reference: stretches of one pattern share it (said once, at the first; each segment's tooltip
    # says it): two at one height lay on each other (a review)
    labelled = list({r["label"]: r for r in reversed(spans)}.values())
    for align, at, rows in (("left", "from", [r for r in labelled if r["from"] < end / 2]),
                            ("right", "to", [r for r in labelled if r["from"] >= end / 2])):  # fmt: skip
        if rows:
            layers.append(alt.Chart(data_frame(rows)).mark_text(
                align=align, dx=4 if align == "left" else -4, dy=-4, baseline="bottom", color=GREY,
                fontSize=t["text"]).encode(x=f"{at}:Q", y=y, text="label:N"))  # fmt: skip
    return layers
