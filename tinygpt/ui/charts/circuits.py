"""The Circuits page's figures: head roles over training, the induction phase change, head ablation, the logit
lens and the residual stream. Pure functions from the engine's plain data (tinygpt.inside.heads score rows,
tinygpt.inside.lens arrays) to an Altair chart or a plotly figure; nothing here computes a score.

Curves (roles, phase change, residual stream) are Altair: one small panel per role or quantity, heads coloured in a
fixed order, the uniform-attention baseline dashed, the phase change and knob changes as labelled rules. Tables of
cells (ablation, logit lens) are plotly heatmaps with the number or character in every cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import plotly.graph_objects as go

from tinygpt.ui.charts.colours import GREY, PURPLE, RED, colour_encoding, dash_encoding, dash_note, palette_for
from tinygpt.ui.charts.markers import marker_layers, marker_rows, numbered_marker_layers, numbered_markers
from tinygpt.ui.charts.style import Records, VegaLite, data_frame, step_x, thin_for_display, value_y, visible_char
from tinygpt.ui.charts.theme import cell_number, cell_text_style, end_ticks, plotly_layout_style, style_altair, theme
from tinygpt.ui.charts.tokens import placeholder
from tinygpt.ui.words.knob_words import knob_marks

ROLE_TITLES = {
    "previous": "previous token: A[t, t-1]",
    "induction": "induction: A[n+i, i+1] on a repeated probe",
    "first": "first token (sink): A[t, 0]",
    "self": "self: A[t, t]",
}


# A stacked chart is drawn at its own width (a plain spec: explain.show_chart), which must fit the content column:
# 780 px on a 1280 px screen with the sidebar open at Large fonts (820 px without), measured in Chromium on the
# Circuits page. Beside the plot go its y axis's labels and title and the overhang of the last step label past the
# plot's right edge ("3,000"): 88 px at Large fonts. Plots of 740 px (and panels Streamlit stretched to the column,
# axes outside it) ran 48-88 px past the column and cut "3,000" at Large fonts.
COLUMN_PX = {True: 780, False: 820}
AXES_PX = {True: 88, False: 64}
LARGE_PLOT_PX = 660  # + AXES_PX[True], with room to spare: inside COLUMN_PX[True]
ABLATION_PLOT_PX = {big: px - 200 for big, px in COLUMN_PX.items()}  # less the margins and the colour bar


def _steps_kept(rows: Sequence[Mapping[str, Any]], limit: int = 300) -> set[int]:
    return set(thin_for_display(sorted({int(r["step"]) for r in rows}), limit))


def role_history_chart(
    rows: Records | None,
    *,
    roles: Sequence[str] = ("previous", "induction", "first", "self"),
    change: Mapping[str, Any] | None = None,
    events: Records | None = None,
    large: bool = False,
):
    """Each role's score per head over training (rows from circuits.score_rows: step, name, role, score,
    baseline), one panel per role with its uniform baseline dashed. `change` {"step", "label"} marks the phase
    change (red) and the run's `events` its live knob changes (purple, numbered, as on the loss chart) on every
    panel."""
    t = theme(large)
    rows = [r for r in rows or [] if r.get("score") is not None]
    if not rows:
        return style_altair(alt.Chart(data_frame([])).mark_text().properties(title="Head roles: waiting"), large)
    keep = _steps_kept(rows)
    heads = sorted({r["name"] for r in rows}, key=lambda n: (int(n[1 : n.index("H")]), int(n[n.index("H") + 1 :])))
    colours = palette_for(heads)
    width = LARGE_PLOT_PX if large else 330  # two panels a row without Large fonts: 2 x (330 + 64) + 20 fits 820
    # Knob changes numbered (①, ②, ...) on every panel and listed once under the chart, as on the loss chart.
    x_max = max(int(r["step"]) for r in rows)
    numbered = numbered_markers(knob_marks(events), t, x_max)
    phase = marker_rows([dict(change)], t, x_max, stagger=False) if change else []
    phase_layers = marker_layers(phase, t, RED, "phase change", step_x()) if phase else []
    panels = []
    for role in roles:
        part = [dict(r) for r in rows if r["role"] == role and int(r["step"]) in keep]
        if not part:
            continue
        yspec = {"title": "score", "scale": alt.Scale(domain=[0, 1])}
        base = alt.Chart(data_frame(part, "step", "name", "score", "baseline"))
        tooltip = [alt.Tooltip("step:Q"), alt.Tooltip("name:N", title="head"), alt.Tooltip("score:Q", format=".3f")]
        lines = base.mark_line(strokeWidth=t["line"]).encode(
            x=step_x(),
            y=alt.Y("score:Q", **yspec),
            color=colour_encoding("name:N", heads, colours, "head", lines=True),
            tooltip=tooltip,
        )
        baseline = base.mark_line(color=GREY, strokeDash=[6, 4], strokeWidth=t["line"]).encode(
            x=step_x(), y=alt.Y("mean(baseline):Q", **yspec), tooltip=[alt.Tooltip("mean(baseline):Q", title="uniform")]
        )
        layers = [lines, baseline, *(numbered_marker_layers(numbered, t, PURPLE, step_x()) if numbered else [])]
        layers += phase_layers
        title = alt.TitleParams(ROLE_TITLES.get(role, role), fontSize=t["axis_title"])
        panels.append(alt.layer(*layers).properties(width=width, height=t["panel"], title=title))
    pairs = [alt.hconcat(*panels[i : i + 2]) for i in range(0, len(panels), 2)] if not large else panels
    chart = alt.vconcat(*pairs).resolve_scale(color="shared")
    subtitle = "dashed grey: a head with uniform attention over the keys it may see"
    styled = style_altair(chart.properties(title=alt.TitleParams("Head roles over training", subtitle=subtitle)), large)
    # As a plain spec, drawn at its own width: stretched to the page, each panel's plot took the column's width and
    # its y axis went past the column's right edge (88 px at Large fonts).
    return VegaLite(styled.to_dict())


def phase_change_chart(
    series: Mapping[str, Mapping[str, Records]],
    *,
    changes: Mapping[str, Mapping[str, Any] | None] | None = None,
    baseline: float | None = None,
    threshold: float | None = None,
    large: bool = False,
):
    """The induction experiment, runs side by side: top, the best head's induction score per run (circuits.
    best_series); bottom, the loss on each copy of the repeated probe per run (circuits.copy_loss_series: solid
    the second copy, dashed the first) and the training loss (dotted). `series` is {run label: {"best", "copy",
    "train"}} and `changes` {run label: {"step", "label"}} marks each run's phase change on both panels."""
    t = theme(large)
    labels = list(series)
    colours = palette_for(labels)
    width = LARGE_PLOT_PX if large else 560  # 740 and 900 ran 48 and ~100 px past a 1280 px projector's column
    score_rows, loss_rows = [], []
    for label, parts in series.items():
        score_rows += [{"step": r["step"], "score": r["score"], "run": label, "head": r["name"]} for r in parts["best"]]
        for r in parts.get("copy") or []:
            loss_rows.append({"step": r["step"], "loss": r["second"], "run": label, "curve": "second copy"})
            loss_rows.append({"step": r["step"], "loss": r["first"], "run": label, "curve": "first copy"})
        for step, value in thin_for_display([(m["step"], m["loss"]) for m in parts.get("train") or []], 400):
            if value is not None:
                loss_rows.append({"step": step, "loss": value, "run": label, "curve": "training loss"})
    colour = colour_encoding("run:N", labels, colours, "run", lines=True)
    tooltip = [alt.Tooltip("step:Q"), alt.Tooltip("run:N"), alt.Tooltip("head:N", title="best head (snapshot)")]
    top = [
        alt.Chart(data_frame(score_rows, "step", "score", "run", "head"))
        .mark_line(strokeWidth=t["line"], point=alt.OverlayMarkDef(size=3 * t["text"]))
        .encode(
            x=step_x(),
            y=value_y("score:Q", "best induction score", domain=[0, 1]),
            color=colour,
            tooltip=[*tooltip, alt.Tooltip("score:Q", format=".3f")],
        )
    ]
    refs = [{"ref": v, "label": lab} for v, lab in ((baseline, "uniform"), (threshold, "induction head")) if v]
    if refs:
        base = alt.Chart(data_frame(refs, "ref", "label"))
        top.append(base.mark_rule(color=GREY, strokeDash=[6, 4]).encode(y="ref:Q", tooltip="label:N"))
        top.append(
            base.mark_text(align="left", baseline="bottom", dx=4, color=GREY, fontSize=t["text"]).encode(
                y="ref:Q", x=alt.value(0), text="label:N"
            )
        )
    curves = ["second copy", "first copy", "training loss"]
    bottom = [
        alt.Chart(data_frame(loss_rows, "step", "loss", "run", "curve"))
        .mark_line(strokeWidth=t["line"])
        .encode(
            x=step_x(),
            y=value_y("loss:Q", "loss (nats)", zero=True),
            color=colour,
            strokeDash=dash_encoding("curve:N", curves),
            detail="curve:N",
            tooltip=[
                alt.Tooltip("step:Q"),
                alt.Tooltip("run:N"),
                alt.Tooltip("curve:N"),
                alt.Tooltip("loss:Q", format=".3f"),
            ],
        )
    ]
    marks = [dict(c) for c in (changes or {}).values() if c]
    if marks:  # the runs' changes staggered over three lines: two runs' changes a few steps apart stay readable
        x_max = max(r["step"] for r in score_rows + loss_rows + marks)
        rules = marker_layers(marker_rows(marks, t, x_max), t, RED, "phase change", step_x())
        top, bottom = top + rules, bottom + rules
    chart = alt.vconcat(
        alt.layer(*top).properties(width=width, height=t["panel"], title="Best head's induction score"),
        alt.layer(*bottom).properties(width=width, height=t["panel"], title="Loss on the repeated probe"),
    ).resolve_scale(color="shared")
    subtitle = dash_note(curves) + "; red: the detected phase change"
    styled = style_altair(
        chart.properties(title=alt.TitleParams("The induction phase change", subtitle=subtitle)), large
    )
    # As a plain spec: the app draws stacked specs at their own width (an Altair chart is stretched to the page,
    # which pushes a stacked panel's right edge out of view).
    return VegaLite(styled.to_dict())


def residual_chart(records: Records | None, *, large: bool = False):
    """The residual stream over training (circuits score records' "residual"): left, the stream's mean norm
    entering each block and after the last (solid) and what its LayerNorm hands on (dashed); right, each
    sublayer's write (attention solid, MLP dashed)."""
    t = theme(large)
    stream, writes = [], []
    kept = _steps_kept([r for r in records or [] if r.get("residual")])
    for r in records or []:
        res = r.get("residual")
        if not res or int(r["step"]) not in kept:
            continue
        resid, ln = res.get("resid") or [], res.get("ln") or []
        for i, value in enumerate(resid):
            where = "final (into ln_f)" if i == len(resid) - 1 else f"into layer {i}"
            stream.append({"step": r["step"], "norm": value, "where": where, "kind": "stream"})
            if i < len(ln):
                stream.append({"step": r["step"], "norm": ln[i], "where": where, "kind": "after its LayerNorm"})
        for part, name in (("attn", "attention"), ("mlp", "MLP")):
            for i, value in enumerate(res.get(part) or []):
                writes.append({"step": r["step"], "norm": value, "layer": f"layer {i}", "sublayer": name})
    if not stream:
        return style_altair(alt.Chart(data_frame([])).mark_text().properties(title="Residual stream: waiting"), large)
    wheres = list(dict.fromkeys(s["where"] for s in stream))
    layers = list(dict.fromkeys(w["layer"] for w in writes))
    width = 620 if large else 330
    stream_kinds, sublayers = ["stream", "after its LayerNorm"], ["attention", "MLP"]
    left = _norm_panel(stream, "where", wheres, palette_for(wheres), "stream", "kind", stream_kinds,
                       "mean L2 norm per position", "The stream's size", width, t)  # fmt: skip
    right = _norm_panel(writes, "layer", layers, palette_for(layers)[::-1], "layer", "sublayer", sublayers,
                        "mean L2 norm of the write", "What each sublayer adds", width, t)  # fmt: skip
    chart = alt.vconcat(left, right) if large else alt.hconcat(left, right)
    chart = chart.resolve_scale(color="independent")
    subtitle = "left: " + dash_note(["the stream", "what its LayerNorm hands on"]) + "; right: "
    subtitle += dash_note(["attention", "MLP"])
    return style_altair(chart.properties(title=alt.TitleParams("The residual stream", subtitle=subtitle)), large)


def _norm_panel(rows: list[dict], group: str, groups: list, palette: list, legend: str, dashed: str,
                dashes: list[str], y_title: str, title: str, width: int, t: dict) -> alt.Chart:  # fmt: skip
    """One panel of the residual-stream chart: a norm per step, a colour per `group`, a dash per `dashed`."""
    return (
        alt.Chart(data_frame(rows, "step", "norm", group, dashed))
        .mark_line(strokeWidth=t["line"])
        .encode(
            x=step_x(),
            y=value_y("norm:Q", y_title, zero=True),
            color=colour_encoding(f"{group}:N", groups, palette, legend, lines=True),
            strokeDash=dash_encoding(f"{dashed}:N", dashes),
            detail=f"{dashed}:N",
            tooltip=[
                alt.Tooltip("step:Q"),
                alt.Tooltip(f"{group}:N"),
                alt.Tooltip(f"{dashed}:N"),
                alt.Tooltip("norm:Q", format=".3f"),
            ],  # fmt: skip
        )
        .properties(width=width, height=t["panel"], title=title)
    )


# ---------------------------------------------------------------- plotly tables of cells


def _cell_figure(title: str, height: int, large: bool, **layout: Any) -> dict:
    t = theme(large)
    return {**plotly_layout_style(title, t), "height": height, **layout}


# The stacked ablation panels' bands, in pixels: each panel's name above it, its tick labels below it (the last
# panel's "head" title goes in the bottom margin: one under each panel sat right on the next panel's name).
ABLATION_ABOVE_PX, ABLATION_BELOW_PX = 44, 40


def _ablation_domains(k: int, n: int, layers: int, plot_px: int, stacked: bool, row_px: int) -> tuple[list, list]:
    """(x domain, y domain) of panel k of n, in paper fractions of the plot area (`plot_px` high). In a row: a
    third (a half) of the width each, a gap between for the next one's "layer" labels; each name goes in the top
    margin. Stacked: full width, panel k's band from the top, its cells `row_px` a layer with room above for its
    name and below for its tick labels."""
    if not stacked:
        return [k / n + (0.02 if k else 0), (k + 1) / n - 0.04], [0.0, 1.0]
    band = ABLATION_ABOVE_PX + row_px * layers + ABLATION_BELOW_PX
    top = 1 - (k * band + ABLATION_ABOVE_PX) / plot_px
    return [0.0, 1.0], [top - row_px * layers / plot_px, top]


def ablation_heatmap(
    deltas: Mapping[str, Any] | None,
    *,
    mode: str = "zero",
    selected: tuple[int, int] | None = None,
    large: bool = False,
) -> go.Figure:
    """Loss change when each head is ablated, layers x heads, one panel per measure ({"validation batches": (L, H),
    "probe text": (L, H)}), the number in every cell that has room for it (`theme.cell_text_style`), red = the loss
    rose (the head helped), blue = it fell. `selected` (layer, head) is outlined.

    Plotly cannot select heatmap cells, so each panel also carries an invisible scatter trace with one square
    marker on every cell (customdata [layer, head]): with st.plotly_chart(..., on_select=..., selection_mode=
    "points") a click on a cell selects that marker and the page reads the head from it (`clicked_head`)."""
    title = f"Loss change when one head is {mode}-ablated"
    if not deltas:
        return placeholder(title, "no checkpoint to ablate yet", large)
    t = theme(large)
    names = list(deltas)
    arrays = [np.asarray(deltas[n], dtype=np.float64) for n in names]
    L, H = arrays[0].shape
    limit = max(1e-6, max(float(np.abs(a).max()) for a in arrays))
    n, traces, layout, annotations = len(names), [], {}, []
    # Three in a row left ~40 px a cell for "+0.037" at Large fonts (clipped, overlapping: the lesson's browser run),
    # ~45 px without ("+0.046+0.040" touched). They stack at Large fonts, or where no number fits; numbers fit.
    side_cell = min(x1 - x0 for (x0, x1), _ in (_ablation_domains(k, n, L, 1, False, 0) for k in range(n))) / H
    numbers = [float(v) for a in arrays for v in a.ravel()]
    stacked = n >= 3 and (large or cell_text_style(side_cell * ABLATION_PLOT_PX[large], t, numbers) is None)
    row_px = 70  # a layer's row when stacked: room for the numbers and the click markers
    margin = _cell_figure(title, 0, large)["margin"]  # the title's lines set the top margin
    if stacked:  # each band as high as its parts need
        height = n * (row_px * L + ABLATION_ABOVE_PX + ABLATION_BELOW_PX) + margin["t"] + margin["b"]
    else:
        height = max(t["panel"], 90 * L + 160)
    plot_px = height - margin["t"] - margin["b"]  # the plot area, which the axes' domains divide
    fits = cell_text_style((1 / H if stacked else side_cell) * ABLATION_PLOT_PX[large], t, numbers)
    compact, font = fits or (False, t["text"])
    for k, (name, z) in enumerate(zip(names, arrays, strict=True)):
        x_axis, y_axis = ("x", "y") if k == 0 else (f"x{k + 1}", f"y{k + 1}")
        x_domain, y_domain = _ablation_domains(k, n, L, plot_px, stacked, row_px)
        traces.append(
            go.Heatmap(
                z=z,
                x=[f"H{h}" for h in range(H)],
                y=[f"L{i}" for i in range(L)],
                zmin=-limit,
                zmax=limit,
                colorscale="RdBu_r",
                coloraxis="coloraxis",
                text=[[cell_number(v, compact) for v in row] for row in z],
                texttemplate="%{text}" if fits else "",
                textfont={"size": font},
                hovertemplate=f"{name}: %{{y}} %{{x}} ablated: loss %{{z:+.4f}}<extra></extra>",
                xaxis=x_axis,
                yaxis=y_axis,
            )
        )
        cells = [(layer, head) for layer in range(L) for head in range(H)]  # L H cells, row-major
        traces.append(
            go.Scatter(
                x=[f"H{h}" for _, h in cells],
                y=[f"L{i}" for i, _ in cells],
                customdata=[[i, h] for i, h in cells],
                mode="markers",
                # A square as big as a cell (about 90 px a layer), fully transparent: the heatmap shows through
                # and a click anywhere on the cell lands on its marker. Selecting must not dim anything either.
                marker={"symbol": "square", "size": 60, "color": "rgba(0,0,0,0)"},
                selected={"marker": {"opacity": 0}},
                unselected={"marker": {"opacity": 0}},
                hovertemplate=[
                    f"{name}: L{i} H{h} ablated: loss {z[i, h]:+.4f} (click to choose this head)<extra></extra>"
                    for i, h in cells
                ],
                showlegend=False,
                xaxis=x_axis,
                yaxis=y_axis,
            )
        )
        # Ranges pinned to the cells (category i spans i - 0.5 .. i + 0.5): autorange would pad them for the
        # click markers' size. Layer 0 on top, as the table reads.
        layout[f"xaxis{k + 1 if k else ''}"] = {
            "domain": x_domain,
            "title": {"text": "head" if k == n - 1 or not stacked else ""},
            "side": "bottom",
            "range": [-0.5, H - 0.5],
            "anchor": y_axis,
        }
        layout[f"yaxis{k + 1 if k else ''}"] = {
            "range": [L - 0.5, -0.5],
            "anchor": x_axis,
            "title": {"text": "layer" if k == 0 or stacked else ""},
            "domain": y_domain,
        }
        # The panel's name above its own cells, centred on them (as x titles under a row of three they read as
        # the next panel's heading when stacked, and overlapped at Large fonts side by side).
        annotations.append({"text": f"<b>{name}</b>", "x": sum(x_domain) / 2, "y": y_domain[1], "xref": "paper",
                            "yref": "paper", "xanchor": "center", "yanchor": "bottom", "yshift": 4,
                            "showarrow": False, "font": {"size": t["axis_title"]}})  # fmt: skip
    shapes = []
    if selected is not None:
        for k in range(len(names)):
            ref = "" if k == 0 else str(k + 1)
            layer, head = selected
            shapes.append({"type": "rect", "xref": f"x{ref}", "yref": f"y{ref}", "x0": head - 0.5, "x1": head + 0.5,
                           "y0": layer - 0.5, "y1": layer + 0.5, "line": {"color": "black", "width": 3}})  # fmt: skip
    bar = {"title": {"text": "Δ loss (nats)"}, "tickfont": {"size": t["label"]}, **end_ticks(limit)}
    fig_layout = _cell_figure(title, height, large, shapes=shapes, annotations=annotations, **layout)
    fig_layout["coloraxis"] = {"colorscale": "RdBu_r", "cmin": -limit, "cmax": limit, "colorbar": bar}
    return go.Figure(data=traces, layout=fig_layout)


def clicked_head(selection: Mapping[str, Any] | None, num_layers: int, num_heads: int) -> tuple[int, int] | None:
    """The (layer, head) a click on `ablation_heatmap` selected, from Streamlit's plotly selection state
    ({"selection": {"points": [{"customdata": [layer, head], ...}]}}), or None: no click, a click elsewhere, or
    a point outside the model's layers and heads (a selection left over from another run's chart)."""
    points = ((selection or {}).get("selection") or {}).get("points") or []
    for point in points:
        data = point.get("customdata")
        if isinstance(data, (list, tuple)) and len(data) == 2:
            try:
                layer, head = int(data[0]), int(data[1])
            except (TypeError, ValueError):
                continue
            if 0 <= layer < num_layers and 0 <= head < num_heads:
                return layer, head
    return None


def ablated_probs_chart(
    tokens: Sequence[str], clean: Any, ablated: Any, vocab: Sequence[str], *, head: str = "", large: bool = False
) -> go.Figure:
    """For each position of the probe, the probability of the character that really comes next, with every head
    on and with `head` ablated: clean (T, V) and ablated (T, V) next-character probabilities of tokens (T,)."""
    title = f"Next-character probability with {head} ablated" if head else "Next-character probability"
    if clean is None or len(tokens) < 2:
        return placeholder(title, "no probe to run", large)
    t = theme(large)
    stoi = {c: i for i, c in enumerate(vocab)}
    clean, ablated = np.asarray(clean), np.asarray(ablated)
    positions = list(range(len(tokens) - 1))
    targets = [stoi.get(tokens[i + 1]) for i in positions]
    cats = [f"{i}: {visible_char(tokens[i])}→{visible_char(tokens[i + 1])}" for i in positions]
    ticks = [visible_char(tokens[i + 1]) for i in positions]
    traces = []
    for name, probs, colour in (("all heads on", clean, "#1f77b4"), (f"{head} ablated", ablated, "#d62728")):
        p = [float(probs[i, j]) if j is not None else 0.0 for i, j in zip(positions, targets, strict=True)]
        top = [visible_char(vocab[int(np.argmax(probs[i]))]) for i in positions]
        traces.append(
            go.Bar(
                x=cats,
                y=p,
                name=name,
                marker_color=colour,
                customdata=top,
                hovertemplate=f"{name}<br>%{{x}}: p(next) %{{y:.3f}}, top guess '%{{customdata}}'<extra></extra>",
            )
        )
    layout = _cell_figure(title, t["height"], large, barmode="group", legend={"orientation": "h", "y": 1.12})
    layout["xaxis"] = {"tickmode": "array", "tickvals": cats, "ticktext": ticks, "tickangle": 0,
                       "title": {"text": "the character to predict, at each position"}}  # fmt: skip
    layout["yaxis"] = {"range": [0, 1], "title": {"text": "p(the right next character)"}}
    return go.Figure(data=traces, layout=layout)


def logit_lens_chart(
    names: Sequence[str],
    tokens: Sequence[str],
    top_ids: Any,
    top_probs: Any,
    vocab: Sequence[str],
    *,
    large: bool = False,
) -> go.Figure:
    """The logit lens as a table: rows = where the stream is read (embeddings, after each layer; the last row is
    the model's output), columns = probe positions, each cell the most likely next character and its colour its
    probability; hover lists the top k. A cell whose top guess is the right next character is shown in capitals
    of ✓ (e.g. "e✓"). tokens (T,), top_ids and top_probs (L+1, T, k)."""
    title = "Logit lens: the next-character guess read after each layer"
    if top_ids is None or not len(tokens):
        return placeholder(title, "no checkpoint yet", large)
    t = theme(large)
    ids, probs = np.asarray(top_ids), np.asarray(top_probs, dtype=np.float64)
    rows, T, k = ids.shape
    nxt = [tokens[i + 1] if i + 1 < T else None for i in range(T)]
    cats = [f"{i}: {visible_char(c)}" for i, c in enumerate(tokens)]
    text, hover = [], []
    for r in range(rows):
        text.append(
            [visible_char(vocab[ids[r, i, 0]]) + ("✓" if vocab[ids[r, i, 0]] == nxt[i] else "") for i in range(T)]
        )
        hover.append(
            [
                f"next should be '{visible_char(nxt[i]) if nxt[i] is not None else '?'}'<br>"
                + "<br>".join(f"'{visible_char(vocab[ids[r, i, j]])}' {probs[r, i, j]:.3f}" for j in range(k))
                for i in range(T)
            ]
        )
    # A cell's text is a character and maybe a check mark, about 1.4 font sizes wide: it must fit the cell. At Large
    # fonts the plot is ~560 px (1280-pixel screen, sidebar, colour bar): "c✓" overlapped its neighbours at
    # 900 / T / 1.2 (the lesson's browser run, step 12).
    plot_px = 560 if large else 900
    font = max(7, min(t["text"] + 1, int(plot_px / max(T, 1) * (0.62 if large else 1 / 1.2))))
    trace = go.Heatmap(
        z=probs[:, :, 0].astype(np.float32),
        x=cats,
        y=list(names),
        zmin=0,
        zmax=1,
        colorscale="Blues",
        text=text,
        texttemplate="%{text}",
        textfont={"size": font},
        customdata=hover,
        hovertemplate="%{y}, position %{x}<br>%{customdata}<extra></extra>",
        colorbar={"title": {"text": "p(top guess)"}},
    )
    layout = _cell_figure(title, max(t["panel"], 60 * rows + 180), large)
    ticks = [visible_char(c) for c in tokens]
    title_x = {"text": "probe text (input character)"}
    layout["xaxis"] = {
        "tickmode": "array",
        "tickvals": cats,
        "ticktext": ticks,
        "tickangle": 0,
        "tickfont": {"size": font},
        "title": title_x,
    }
    layout["yaxis"] = {"autorange": "reversed", "title": {"text": "read from"}, "automargin": True}
    layout["margin"] = {**layout["margin"], "l": 130}  # room for "after layer 3"
    return go.Figure(data=[trace], layout=layout)
