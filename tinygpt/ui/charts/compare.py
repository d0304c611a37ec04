"""Charts across runs and settings: several runs on one axis (`compare_chart`, Runs and Experiments pages) with
the table of settings that differ (`config_diff`), the next-character probabilities before and after sampling
filters (`next_char_chart`, Sample page) and memory by category (`memory_chart`).

Pure functions from plain data to a chart, built from the helpers in style.py (theme, colours, hover, thinning).
Deliberately left out: which runs to compare, and the memory estimate itself (computed by the engine, it arrives
here as bytes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np

from tinygpt.runs.knobs import knob_changes, knobs_first
from tinygpt.ui.charts.colours import BLUE, GREY, PALETTE, colour_encoding, dash_encoding, dash_note, palette_for
from tinygpt.ui.charts.markers import numbered_marker_layers, numbered_markers
from tinygpt.ui.charts.style import (
    LOG_FLOOR,
    SECONDS,
    STEP,
    Records,
    VegaLite,
    data_frame,
    finish,
    finite,
    hover_layer,
    hover_rows,
    legend_lines,
    live_spec,
    step_seconds,
    step_series,
    step_x,
    thin_for_display,
    value_y,
    visible_char,
    y_title_lines,
)
from tinygpt.ui.charts.theme import theme
from tinygpt.ui.words.knob_words import knob_marks

FIELD_TITLES = {  # `compare_chart`'s titles (up to " (") and its y titles where Y_TITLES has none, by metrics field
    "loss": "training loss (nats per character)",
    "val_loss": "validation loss (nats per character)",
    "grad_norm": "gradient norm, unclipped (log scale)",  # "before clipping" was cut at projector fonts
    "lr": "learning rate",
    "tokens_per_s": "throughput (tokens per second)",
    # Experiments page (pitfall lab) curves
    "attention_entropy": "mean attention entropy (nats)",
    "max_attention_weight": "mean max attention weight (0..1)",
    "attention_grad_norm": "attention gradient norm",  # "Attention blocks' gradient n…" at projector fonts
    "first_layer_grad_norm": "first layer gradient norm (L0.attn)",
}
# The y axis says what is measured and in what unit; the chart's title above it names the curve. The full titles
# ran along most of a half-width plot on the Experiments page at 1280x720 with Large fonts (250 of its 285 px), and
# as lines of half the plot's height (style.y_title_lines) they took three or four lines ("mean max" /
# "attention" / "weight" / "(0..1)"): these take at most two at both font sizes.
Y_TITLES = {
    "loss": "loss (nats per char)",
    "val_loss": "loss (nats per char)",
    "grad_norm": "norm, unclipped (log scale)",
    "tokens_per_s": "tokens per second",
    "attention_entropy": "entropy (nats)",
    "max_attention_weight": "max weight (0..1)",
    "attention_grad_norm": "gradient norm (log scale)",
    "first_layer_grad_norm": "L0.attn norm (log scale)",
}
MEMORY_CATEGORIES = ("parameters", "gradients", "optimizer state", "activations", "attention")  # `memory_chart`'s order


def compare_chart(
    series: Mapping[str, Records] | None,
    field: str = "loss",
    evals: Mapping[str, Records] | None = None,
    *,
    events: Mapping[str, Records] | None = None,
    branches: Mapping[str, tuple[int, str]] | None = None,
    seconds: bool = False,
    large: bool = False,
) -> VegaLite:
    """Several runs' curves of one metrics field on one axis, coloured by run name; with `evals` (run name -> eval
    records) the validation loss is added as dashed lines; with `events` (run name -> events) every live knob
    change is a numbered rule in its run's colour, listed under the chart as "① run: @step knob old→new", so a jump
    in one curve is never
    credited to the settings table alone. With `seconds` the x axis is each run's wall-clock seconds since its
    first step: "twice as fast to the same loss" is then visible. `branches` (run name -> (branch step, parent's
    name), tinygpt.ui.train.branching.branch_points) draws a solid rule in the branch's colour at the step it left its
    parent, labelled "from <parent>": up to there the two curves are one (the branch's history is the parent's,
    copied), after it they differ by the branch's change and by the live changes either run took since (each a
    numbered rule: a change made to the parent later never reaches the branch). A live chart: a cached template
    plus named datasets."""
    series = series or {}
    per_run = max(20, 4000 // max(1, len(series) + len(evals or {})))  # one budget shared by all curves
    rows = [
        {"step": s, "value": v, "shown": max(v, LOG_FLOOR), "run": str(name), "curve": field}
        for name, records in series.items()
        for s, v in thin_for_display(step_series(records, field), per_run)
    ]
    for name, records in (evals or {}).items():
        rows += [
            {"step": s, "value": v, "shown": v, "run": str(name), "curve": "val_loss"}
            for s, v in thin_for_display(step_series(records, "val_loss"), per_run)
        ]
    runs = tuple(dict.fromkeys([str(n) for n in series] + [str(n) for n in evals or {}]))
    # The title names the curve only ("Compare runs: ..." was cut to "Compare runs: …" in a half-width column at
    # projector fonts); the page's heading says these are runs side by side.
    # "no data yet" goes in the subtitle, never the title: "Gradient norm, unclipped (no data yet)" was cut to
    # "Gradient norm, unclipped (…" in a half-width column at projector fonts while a slow machine's runs started.
    title = FIELD_TITLES.get(field, field).split(" (")[0].capitalize()
    # A branch's history up to its branch step is its parent's, copied, its knob changes too: with the parent
    # compared they were drawn twice, once per run (a review's ②/③ and ⑥/⑦); the branch keeps its own from there
    since = {str(name): step for name, (step, parent) in (branches or {}).items() if parent in (events or {})}
    knobs = [mark for name, records in (events or {}).items() for mark in knob_marks(records, run=str(name))
             if mark["step"] >= since.get(str(name), 0)]  # fmt: skip
    forks = [
        {"step": step, "run": str(name), "label": f"from {parent}", "entry": f"branched from {parent} at step {step}"}
        for name, (step, parent) in (branches or {}).items()
        if str(name) in runs
    ]
    if seconds:  # each run on its own clock
        clocks = {str(name): step_seconds(records) for name, records in series.items()}
        rows = [{**r, "step": clocks.get(r["run"], step_seconds(None))(r["step"])} for r in rows]
        knobs = [{**k, "step": clocks.get(k["run"], step_seconds(None))(k["step"])} for k in knobs]
        forks = [{**f, "step": clocks.get(f["run"], step_seconds(None))(f["step"])} for f in forks]
    knobs = numbered_markers(knobs, theme(large), max((r["step"] for r in rows), default=None))
    datasets = {"compare": rows, "compare_hover": hover_rows(rows, "run", "curve"), "compare_knobs": knobs}
    datasets["compare_branches"] = forks
    below = legend_lines(len(runs) + 1, len(knobs) + (1 if knobs else 0))  # each legend has a title line
    # Whether there are branch rules is part of the template: a layer with no rows draws nothing but a Vega warning.
    key = (field, runs, bool(evals), title, SECONDS if seconds else STEP, large, below, not rows, fork_note(forks))
    return live_spec(_compare_template, key, datasets)


def _compare_template(
    field: str, runs: tuple, with_evals: bool, title: str, x_title: str, large: bool, below: int = 0,
    empty: bool = False, with_branches: str | None = None,
):  # fmt: skip
    t = theme(large)
    log = field.endswith("grad_norm")  # norms span orders of magnitude
    y_title = Y_TITLES.get(field) or FIELD_TITLES.get(field, field)
    y_title += " (log scale)" if log and "log" not in y_title else ""
    # Lines of at most half the plot's height (style.y_title_lines), as on the Train page's loss chart: Large fonts
    # split only titles over the whole height, and "training loss" / "(nats per character)" or "attention gradient
    # norm" / "(log scale)" each took ~200 px beside a 285 px plot (seen as "(nat", "attention gradie" when scrolled).
    y_title = y_title_lines(y_title, t)
    y = value_y("shown:Q", y_title, log=log, **({} if log else {"zero": False}))  # no zero on a log scale: a warning
    curves = [field, "val_loss"] if with_evals else [field]
    base = alt.Chart(alt.NamedData("compare")).encode(
        x=step_x(x_title),
        y=y,
        color=run_colours(runs),
        strokeDash=dash_encoding("curve:N", curves),
    )
    # Named by what they are: on the seconds axis the x value is seconds, not a step (a review read "step 57.946"),
    # and the curve its words, not its field ("curve val_loss").
    x_name = "seconds" if x_title == SECONDS else "step"
    words = {c: FIELD_TITLES.get(c, c).split(" (")[0] for c in curves}  # "validation loss", not "val_loss"
    tooltip = [
        alt.Tooltip("run:N"),
        alt.Tooltip("curve_words:N", title="curve"),
        alt.Tooltip("step:Q", title=x_name, format=".1f" if x_name == "seconds" else "d"),
        alt.Tooltip("value:Q", format=".4g"),
    ]
    layers = [
        base.mark_line(strokeWidth=t["line"]),
        *numbered_marker_layers("compare_knobs", t, base.encoding.color, step_x(x_title)),
        hover_layer(base.encode(tooltip=tooltip), "compare", data="compare_hover").transform_calculate(
            curve_words=f"{json.dumps(words)}[datum.curve] || datum.curve"
        ),
    ]
    if with_branches:
        layers += branch_layers("compare_branches", t, base.encoding.color, step_x(x_title))
    subtitle = "no data yet" if empty else (dash_note(["training", "validation"]) if with_evals else None)
    if with_branches:  # the branch rule's words, above the plot: along the rule they crossed the curves (a review)
        subtitle = [line for line in (subtitle, with_branches) if line]
    return finish(layers, title, t, subtitle, large, below)


def fork_note(forks: list[dict]) -> str | None:
    """The subtitle line that says what the solid rules are (None without one): "solid rule at step 120: «B»
    branched from «P»" for one branch, in words for several (each rule's tooltip names its own)."""
    if not forks:
        return None
    if len(forks) > 1:
        return f"solid rules: where each of {len(forks)} branches left its parent (hover one for which)"
    fork = forks[0]
    at = f"{fork['step']:.1f} s" if isinstance(fork["step"], float) else f"step {fork['step']:,}"
    return f"solid rule at {at}: «{fork['run']}» branched {fork['label']}"  # label: "from <parent>"


def branch_layers(source: str, t: dict, colour: Any, x: alt.X) -> list:
    """A solid rule per branch point in the branch's colour (knob changes are the dashed ones), named in the
    subtitle (`fork_note`) and its tooltip. Its label along the rule, read upwards from the plot's foot, crossed the
    curves there (three reviews); a halo behind it would not suit the dark theme."""
    base = alt.Chart(alt.NamedData(source))
    tooltip = [alt.Tooltip("entry:N", title="branch"), alt.Tooltip("step:Q", title="step")]
    return [base.mark_rule(strokeWidth=t["line"], opacity=0.8).encode(x=x, color=colour, tooltip=tooltip)]


def run_colours(runs: Sequence[str]) -> alt.Color:
    """The colour by run of a comparison, its legend above the plot, one run per line and no label limit: run
    names are long ("2L×4H×64 · synthetic:copy · lr 0.002"), and a one-row legend over a half-width chart cut
    them ("scaled 1/sqrt(d_he") or dropped the fourth. Above, not below: the list of knob changes is the legend
    below, and Vega lays two legends on one side out in a row, the second past the chart's right edge."""
    runs = list(runs)
    legend = alt.Legend(title="run", orient="top", direction="vertical", columns=1, labelLimit=0,
                        symbolType="stroke", symbolStrokeWidth=3)  # fmt: skip
    return alt.Color("run:N", scale=alt.Scale(domain=runs, range=palette_for(runs)), legend=legend, sort=runs)


def next_char_chart(vocab: Sequence[str], probs_raw: Any, probs: Any, top: int = 20, *, large: bool = False):
    """Grouped bars of the top characters' probabilities before (temperature 1, unfiltered) and after temperature,
    top-k and top-p. Characters are shown visibly (space as ␣, newline as ⏎)."""
    t = theme(large)
    raw, after = np.asarray(probs_raw, dtype=np.float64).ravel(), np.asarray(probs, dtype=np.float64).ravel()
    size = min(len(vocab), raw.size, after.size)
    raw, after = np.nan_to_num(raw[:size]), np.nan_to_num(after[:size])
    order = (
        sorted(
            np.argsort(-np.maximum(raw, after), kind="stable")[: max(1, top)].tolist(),
            key=lambda i: (-after[i], -raw[i]),
        )
        if size
        else []
    )
    before_name, after_name = "before (temperature 1, no filter)", "after temperature / top-k / top-p"
    rows = [
        {"char": visible_char(vocab[i]), "rank": rank + 1, "which": which, "p": float(p[i])}
        for rank, i in enumerate(order)
        for which, p in ((before_name, raw), (after_name, after))
    ]
    chars = [visible_char(vocab[i]) for i in order]
    chart = (
        alt.Chart(data_frame(rows))
        .mark_bar()
        .encode(
            x=alt.X(
                "char:N",
                sort=chars,
                title="next character (most likely first)",
                axis=alt.Axis(labelAngle=0, labelFontSize=t["axis_title"]),
            ),
            xOffset=alt.XOffset("which:N", sort=[before_name, after_name]),
            y=alt.Y("p:Q", title="probability", scale=alt.Scale(zero=True)),
            color=colour_encoding("which:N", [before_name, after_name], [GREY, BLUE]),
            tooltip=[
                alt.Tooltip("char:N", title="character"),
                alt.Tooltip("which:N", title="distribution"),
                alt.Tooltip("p:Q", format=".3f", title="probability"),
                alt.Tooltip("rank:Q"),
            ],
        )
    )
    subtitle = f"top {len(order)} of {size} characters" if size else None
    return finish(
        [chart],
        "Next-character probabilities" if size else "Next-character probabilities: nothing sampled yet",
        t,
        subtitle,
        large,
    )


def memory_chart(rows: Records | None, *, title: str = "Memory by category", large: bool = False):
    """Stacked bars of bytes by category (parameters, gradients, optimizer state, activations, attention) for each
    setting `label`; rows: {"label", "category", "bytes"}. Say in `title` whether the numbers are measured."""
    t = theme(large)
    clean = [
        {"label": str(r.get("label")), "category": str(r.get("category")), "bytes": int(b), "mb": b / 1e6}
        for r in rows or []
        if (b := finite(r.get("bytes"))) is not None
    ]
    labels = list(dict.fromkeys(r["label"] for r in clean))
    cats = [c for c in MEMORY_CATEGORIES if any(r["category"] == c for r in clean)]
    cats += [c for c in dict.fromkeys(r["category"] for r in clean) if c not in cats]
    for r in clean:
        r["order"] = cats.index(r["category"])
    x = alt.X("label:N", sort=labels, title="setting", axis=alt.Axis(labelAngle=0, labelLimit=300))
    base = alt.Chart(data_frame(clean))
    bars = base.mark_bar().encode(
        x=x,
        y=alt.Y("mb:Q", title=y_title_lines("memory (MB)", t), stack="zero"),
        color=colour_encoding("category:N", cats, palette_for(cats), "category"),
        order=alt.Order("order:Q"),
        tooltip=[
            alt.Tooltip("label:N", title="setting"),
            alt.Tooltip("category:N"),
            alt.Tooltip("mb:Q", format=",.2f", title="MB"),
            alt.Tooltip("bytes:Q", format=",d"),
        ],
    )
    totals = base.mark_text(dy=-6, baseline="bottom", fontSize=t["text"]).encode(
        x=x, y=alt.Y("sum(mb):Q", title=y_title_lines("memory (MB)", t)), text=alt.Text("sum(mb):Q", format=",.1f")
    )
    return finish([bars, totals], title if clean else f"{title}: no data", t, large=large)


# ---------------------------------------------------------------- the settings that differ


def _flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_diff(
    configs: Mapping[str, Mapping[str, Any] | None],
    ignore: Sequence[str] = (
        *("run_id", "created", "vocab", "parent", "owner", "num_params", "branch"),  # "branch": and its keys
        *("learner.id", "learner.name"),
    ),
    events: Mapping[str, Records] | None = None,
) -> list[dict]:
    """Rows {"setting": "model.num_heads", run1: "4", run2: "2", ...} for the flattened settings whose values
    differ, in first-seen order. With `events`, a live knob change counts: the cell reads "causal→none @1810"
    (knob_words.change_label's format), so a run switched to mask none mid-run differs from one that stayed causal.
    Values are text (a table column of mixed ints and strings cannot become Arrow, so Streamlit would fail to show
    it): lists and dicts as compact JSON, a missing setting as "—". `ignore` skips what differs between any two
    runs without being a setting: identity and bookkeeping, and whose run it is (the learner's browser id read as a
    "learner.id 343270092a08349f" row; the Runs table says whose)."""
    flat = {str(name): _flatten(cfg or {}) for name, cfg in configs.items()}
    missing = object()

    def cell(value: Any) -> str:
        if value is missing:
            return "—"
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
        # A cell with no space to wrap at, a hash above all, kept short: the text's 64-character sha256 widened its
        # column until the table showed 1.5 of 6 runs at 1280 px (a review). Its start tells two texts apart.
        return text[:12] + "…" if len(text) > 24 and " " not in text else text

    cells = {name: {key: cell(value) for key, value in f.items()} for name, f in flat.items()}
    for name, records in (events or {}).items():
        # From the value its first step trained under (knobs_first): a branch's config.json holds its own start, and
        # its history up to the branch is the parent's, copied, its branch change last ("0.006→0.003 @975" was said
        # of a branch that trained at 0.002, 0.003 from step 976, 0.006 from its branch at 1000: a review)
        first, started = knobs_first(configs.get(name) or {}, records or []), set()
        for e in knob_changes(records or []):
            for key in (f"model.{e.get('knob')}", f"train.{e.get('knob')}"):
                if key in cells.get(str(name), {}):
                    if key not in started:
                        started.add(key)
                        cells[str(name)][key] = cell(first.get(e.get("knob"), e.get("old")))
                    cells[str(name)][key] += f"→{cell(e.get('new'))} @{e.get('step')}"
    rows = []
    for key in dict.fromkeys(k for f in flat.values() for k in f):
        values = {name: c.get(key, "—") for name, c in cells.items()}
        if key not in ignore and key.split(".", 1)[0] not in ignore and len(set(values.values())) > 1:
            rows.append({"setting": key, **values})
    return rows


GRID_RUNS = 3  # runs the settings table sets side by side; more read one line a run (6 columns ran off 1280 px)


def shown_diff(rows: list[dict]) -> list[dict]:
    """config_diff's rows as the page shows them: a run a column for up to GRID_RUNS runs; for more, one row a run,
    "setting value; …" (a review: with 6 runs at 1280x720 the grid was 1,110 px wide in a 778 px column, two runs
    off the screen)."""
    runs = [k for k in (rows[0] if rows else {}) if k != "setting"]
    if len(runs) <= GRID_RUNS:
        return rows
    return [{"run": run, "its settings where the runs differ": "; ".join(f"{r['setting']} {r[run]}" for r in rows)}
            for run in runs]  # fmt: skip


_THOUSANDS = "datum.value >= 1000 ? format(datum.value / 1000, '~g') + 'k' : format(datum.value, '~g')"
ROOM_ORDER = "live runs first, then newest first"  # the order room_chart_runs draws each owner's runs in


def room_chart(
    series: Mapping[str, Records] | None,
    *,
    flags: Mapping[str, Sequence[tuple[str, str]]] | None = None,
    groups: Mapping[str, str] | None = None,
    columns: int = 4,
    large: bool = False,
):
    """Small multiples for the instructor's room dashboard: one small training-loss panel per run (titled by its
    learner and run name), so a stuck or diverging learner stands out. Panels come in `series`' order (the facet's
    own order is by name) and each has its own step axis: one shared axis ran to the lecture run's 25,000 steps and
    drew every 200-3,000-step run as a vertical line at 0; the loss scale stays shared. `groups` {run: section
    title} (first seen, first drawn) cuts the grid into titled sections, e.g. learners' runs, then the instructor's;
    the subtitle names them in their order, and ROOM_ORDER.
    `flags`: {run: [(word, reason), ...]} (tinygpt.ui.people.room_flags): a flagged run's panel title gets a last line
    "flag: leaking, stalled", its curve turns red, and its hover says the reasons."""
    t, flags, groups = theme(large), flags or {}, groups or {}

    def panel(name: str) -> str:
        words = ", ".join(word for word, _ in flags.get(name) or ())
        return f"{name} · flag: {words}" if words else name  # "off:" read as unclear (a review)

    names = [str(name) for name in series or {}]
    sections = list(dict.fromkeys(groups.get(name, "") for name in names)) or [""]
    width, height = (210, 150) if large else (200, 110)  # three panels a row fit the projector's main column
    charts = []
    for section in sections:
        mine = [name for name in names if groups.get(name, "") == section]
        rows = [
            {"step": s, "loss": v, "run": panel(name), "off": "; ".join(f"{w}: {r}" for w, r in flags.get(name) or ())}
            for name in mine
            for s, v in thin_for_display(step_series((series or {})[name], "loss"), 150)
        ]
        if not rows:
            rows = [{"step": 0, "loss": None, "run": "no runs yet", "off": ""}]
        order = list(dict.fromkeys(r["run"] for r in rows))
        chart = (
            alt.Chart(data_frame(rows))
            .mark_line(strokeWidth=t["line"])
            .encode(
                # "25k", not "25,000": four labels a panel fit its 210 px at Large fonts ("~s" read "0k", "0.4k")
                x=alt.X("step:Q", title="step", axis=alt.Axis(tickCount=4, labelExpr=_THOUSANDS)),
                y=alt.Y("loss:Q", title="train loss", scale=alt.Scale(zero=False)),
                color=alt.condition("datum.off != ''", alt.value(PALETTE[3]), alt.value(BLUE)),  # red: flagged
                tooltip=[
                    alt.Tooltip("run:N"),
                    alt.Tooltip("step:Q", format=","),
                    alt.Tooltip("loss:Q", format=".3f"),
                    alt.Tooltip("off:N", title="flags"),
                ],
            )
            .properties(width=width, height=height)
            # A panel's title is its learner and run name, one part a line ("anna · 2L×4H×64 · ..." on one line made
            # a row of four panels 3,500 px wide on the projector); three panels a row at Large fonts.
            .facet(
                facet=alt.Facet(
                    "run:N",
                    title=None,
                    sort=order,
                    header=alt.Header(labelFontSize=t["label"], labelExpr="split(datum.label, ' · ')"),
                ),
                columns=min(columns, 3) if large else columns,
            )
            .resolve_scale(x="independent")
        )
        section_title = alt.TitleParams(section, fontSize=t["axis_title"])  # under the chart's title, smaller
        charts.append(chart.properties(title=section_title) if section else chart)
    named = [s if i == 0 else s[0].lower() + s[1:] for i, s in enumerate(x for x in sections if x)]
    subtitle = [", then ".join(named)] if named else []  # what is drawn in what order: the page's caption says it too
    subtitle.append(f"{ROOM_ORDER}; each panel its own steps")
    title = "Training loss, one panel per run"
    chart = charts[0] if len(charts) == 1 else alt.vconcat(*charts, spacing=30).resolve_scale(y="shared")
    chart = chart.properties(title=alt.TitleParams(title, subtitle=subtitle))
    return chart.configure_title(fontSize=t["title"], anchor="start", subtitleFontSize=t["label"]).configure_axis(
        labelFontSize=t["label"], titleFontSize=t["axis_title"]
    )
