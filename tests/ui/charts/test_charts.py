"""tinygpt/ui/charts/: the package's rules, the shared style helpers (style.py) and one run's curves (curves.py),
read back through `to_dict()`, no browser. Heatmaps: test_chart_heatmaps.py; several runs, next-character bars,
memory and the settings table: test_chart_compare.py. Shared data and figure readers: chart_helpers.py.

What is checked is what a viewer relies on: titles, axis titles, reference lines at the right values, event
labels, tick labels that show the characters, colour scales, and that empty or hostile input never raises.
"""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from chart_helpers import (
    EVALS,
    EVENTS,
    GROUPS,
    METRICS,
    all_rows,
    axis_titles,
    make_metrics,
    mark_type,
    rules_at,
    texts,
    title_text,
    tooltips,
    values,
    views,
    y_title_lines,
)

from tinygpt.ui.charts import colours, compare, curves, heatmaps, markers, masks, parts, style, theme
from tinygpt.ui.charts.help import CHART_HELP

REPO = Path(__file__).resolve().parents[3]
PACKAGE = REPO / "tinygpt" / "ui" / "charts"
CHART_FUNCTIONS = [
    "loss_chart",
    "lr_chart",
    "grad_norm_chart",
    "layer_grad_chart",
    "layer_grad_heatmap",
    "attention_grid",
    "attention_detail",
    "mask_matrix",
    "mask_comparison",
    "head_stats_chart",
    "next_char_chart",
    "attention_row_chart",
    "compare_chart",
    "memory_chart",
]


# ---------------------------------------------------------------- the package


def test_chart_help_covers_every_chart():
    modules = (curves, parts, heatmaps, masks, compare)
    for name in CHART_FUNCTIONS:
        assert any(callable(getattr(m, name, None)) for m in modules), name
        assert 20 < len(CHART_HELP[name]) < 400


def private_imports(source: str) -> list[str]:
    """Underscored names a module takes from another module: `from m import _x`, or `m._x` where `m` was imported
    (dunders such as `__version__` are not private)."""
    tree = ast.parse(source)
    imported, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                imported.add(alias.asname or alias.name)
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imported.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in imported
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_private_imports_finds_both_forms():
    source = "from a import _b, c\nimport d.e as f\nfrom g import h\nf._i\nh._j\nc.__doc__\nlocal = 1\nlocal._k\n"
    assert private_imports(source) == ["from a import _b", "f._i", "h._j"]


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_chart_module_imports_a_private_name(path):
    """What one chart module needs from another is public (named without an underscore, with a docstring)."""
    assert private_imports(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("shared", [colours, markers, style, theme], ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_shared_names_other_modules_use_have_docstrings(shared):
    """What the chart modules share (style.py and its topics: theme, colours, markers) is documented where it is
    defined, so a chart module's import line leads to an explanation."""
    used = set()
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == shared.__name__:
                used |= {alias.name for alias in node.names}
    functions = {n for n in used if callable(getattr(shared, n)) and not isinstance(getattr(shared, n), type)}
    assert functions and all(getattr(shared, name).__doc__ for name in functions), functions


def test_the_package_re_exports_nothing():
    import tinygpt.ui.charts as package

    public = {name for name in vars(package) if not name.startswith("_")}
    modules = {"circuits", "colours", "compare", "curves", "heatmaps", "help", "livespec", "markers", "masks", "style"}
    assert public <= modules | {"parts", "theme", "tokens"}


def test_chart_modules_import_no_streamlit_and_help_imports_no_plotting_library():
    modules = ", ".join(f"tinygpt.ui.charts.{p.stem}" for p in sorted(PACKAGE.glob("*.py")) if p.stem != "__init__")
    code = f"import sys, {modules}; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    code = "import sys, tinygpt.ui.charts.help; print(sorted({'altair', 'plotly', 'pandas'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- style helpers


def test_thin_for_display_keeps_ends_and_bounds_the_count():
    assert style.thin_for_display(range(10), 100) == list(range(10))
    for n in (1501, 4000, 100_000, 100_001):
        kept = style.thin_for_display(range(n), 1500)
        assert kept[0] == 0 and kept[-1] == n - 1 and len(kept) <= 1500
        assert kept == sorted(set(kept))


def test_thin_for_display_is_stable_while_a_series_grows():
    """The kept points of a growing series stay the same between refreshes (no shimmering line)."""
    before, after = style.thin_for_display(range(3000), 1500), style.thin_for_display(range(3001), 1500)
    assert before[:-1] == after[:-1] or before[:-1] == after[:-2]


@pytest.mark.parametrize(
    ("ch", "shown"), [(" ", "␣"), ("\n", "⏎"), ("\t", "⇥"), ("a", "a"), ("é", "é"), ("\x00", "\\x00")]
)
def test_visible_char(ch, shown):
    assert style.visible_char(ch) == shown


# ---------------------------------------------------------------- loss, LR, gradient norm


@pytest.mark.parametrize("large", [False, True])
def test_the_loss_charts_y_title_fits_the_plots_height(large):
    """At normal fonts the y title read "ropy loss (nats/char)": longer than the plot it runs along, its start was
    cut off. Every line of it now fits half the chart's plot height at the axis-title font (a character at most
    0.6 of the font size wide), and it still says what the loss is."""
    spec = curves.loss_chart(METRICS, EVALS, EVENTS, vocab_size=65, large=large).to_dict()
    t = theme.theme(large)
    titles = [v["encoding"]["y"]["title"] for v in views(spec) if "title" in v.get("encoding", {}).get("y", {})]
    assert titles and all(title == titles[0] for title in titles)  # one title on every layer, or Vega merges them
    lines = titles[0] if isinstance(titles[0], list) else [titles[0]]
    assert all(len(line) * 0.6 * t["axis_title"] <= 0.5 * t["height"] for line in lines), lines
    assert " ".join(lines) == ("loss (nats per char)" if large else "cross-entropy loss (nats/char)")


@pytest.mark.parametrize("large", [False, True])
def test_the_gradient_charts_y_titles_fit_their_plots(large):
    """Gradients page, 1280x720, Large fonts: "gradient norm (L2, log scale)" on one line ran 237 px beside a 225 px
    plot, up against the subtitle. A live chart fitted to its height: every line within half the theme's height.
    The per-layer chart's panels are drawn at their own size: a line within its panel's height."""
    t = theme.theme(large)
    grad = y_title_lines(curves.grad_norm_chart(METRICS, 1.0, EVENTS, large=large).to_dict())
    assert grad and all(lines == grad[0][0] for lines, _ in grad)
    assert " ".join(grad[0][0]) == "gradient norm (L2, log scale)"
    assert all(len(line) * style.CHAR_EM * t["axis_title"] <= 0.5 * t["height"] for line in grad[0][0])
    for field in ("layer_grad_norms", "update_ratios"):
        found = y_title_lines(parts.layer_grad_chart(METRICS, field, large=large).to_dict())
        for lines, height in found:
            assert height and all(len(line) * style.CHAR_EM * t["axis_title"] <= height for line in lines), lines
    rows = [{"step": s, "layer": 0, "head": h, "entropy": 1.0, "max_weight": 0.5} for s in (0, 10) for h in range(2)]
    for lines, height in y_title_lines(parts.head_stats_chart(rows, large=large).to_dict()):
        assert height and all(len(line) * style.CHAR_EM * t["axis_title"] <= height for line in lines), lines


def test_loss_chart_baseline_target_events_and_nonfinite():
    spec = curves.loss_chart(METRICS, EVALS, EVENTS, vocab_size=65, target=1.88).to_dict()
    assert title_text(spec) == "Training loss"
    assert axis_titles(spec, "x") == {"training step"}
    assert axis_titles(spec, "y") == {"cross-entropy loss (nats/char)"}
    assert any(abs(y - math.log(65)) < 1e-9 for y in rules_at(spec, "y"))
    assert 1.88 in rules_at(spec, "y")
    labels = texts(spec)
    assert "target 1.88" in labels
    # The uniform guess in the subtitle, not on the plot: its label lay under the curve's start and the knob badges
    assert not any("uniform" in label for label in labels)
    assert "flat dashed line at 4.17: a uniform guess, ln(V)" in spec["title"]["subtitle"]
    # Knob changes: numbered badges on the chart, their list ("① mask causal→none @150") in a legend under it
    entries = [row["entry"] for row in spec["datasets"]["knobs"]]
    assert entries == ["① mask causal→none @150", "② LR 0.001→0.003 @200"]
    assert "①" in labels and "②" in labels and not any("@150" in label for label in labels)
    legends = [v["encoding"]["opacity"].get("legend") for v in views(spec) if "opacity" in v.get("encoding", {})]
    legends = [legend for legend in legends if legend]
    assert legends and legends[0]["orient"] == "bottom" and legends[0]["labelLimit"] == 0
    assert "saved" not in " ".join(entries)  # only knob events are markers
    assert {150, 200, 77} <= set(rules_at(spec, "x"))  # knob rules and the non-finite rule
    red = [v for v in views(spec) if v["mark"].get("color") == colours.RED]
    assert red and all(row["step"] == 77 for v in red for row in values(spec, v))
    assert {row["series"] for row in all_rows(spec) if "series" in row} == {"train", "val"}
    line = next(v for v in views(spec) if mark_type(v) == "line")
    drawn = [row for row in values(spec, line) if row.get("series") == "train"]
    assert len(drawn) == 399 and all(math.isfinite(row["loss"]) for row in drawn)  # the null at step 77 is skipped
    assert tooltips(spec)


def test_loss_chart_smoothing_adds_an_ema_line_that_starts_at_the_first_value():
    spec = curves.loss_chart(METRICS, [], [], vocab_size=65, smoothing=0.9).to_dict()
    rows = [row for row in all_rows(spec) if "series" in row]
    assert {r["series"] for r in rows} == {"train (raw)", "train (EMA 0.9)"}
    first = {r["series"]: r["loss"] for r in rows if r["step"] == 1}
    assert first["train (raw)"] == pytest.approx(first["train (EMA 0.9)"])  # debiased: not pulled towards 0


@pytest.mark.parametrize(
    "metrics",
    [[], None, [{"step": 1, "loss": None}], [{"step": 1}], [{"loss": 3.0}], [{"step": 1, "loss": float("nan")}]],
)
def test_loss_chart_waits_on_empty_or_broken_input(metrics):
    spec = curves.loss_chart(metrics, None, None, vocab_size=65).to_dict()
    # The wait in the subtitle, which wraps; the title as short as the grad chart's (review: "Training loss:
    # waiting for the first s…", cut in the Train page's column at 1280x720, Large fonts).
    assert title_text(spec) == "Training loss"
    uniform = "flat dashed line at 4.17: a uniform guess, ln(V)"
    assert spec["title"]["subtitle"] == ["waiting for the first step", uniform]
    json.dumps(spec, allow_nan=False)  # what goes to the browser is strict JSON


def test_waiting_charts_keep_the_title_short_and_say_the_wait_below_it():
    large = curves.loss_chart([], None, None, vocab_size=None, ghost=METRICS, ghost_label="parent", large=True)
    spec = large.to_dict()
    assert title_text(spec) == "Training loss"
    assert spec["title"]["subtitle"] == ["waiting for the first step", "grey dashed curve: parent"]
    for chart in (curves.loss_chart([], None, None, None, large=True), curves.lr_chart([], None, None, large=True),
                  curves.grad_norm_chart([], 1.0, [], large=True)):  # fmt: skip
        title = title_text(chart.to_dict())
        assert "waiting" not in title and len(title) <= len("Gradient norm, unclipped"), title
    assert curves.loss_chart(METRICS, EVALS, EVENTS, None).to_dict()["title"] == "Training loss"  # no subtitle


def test_loss_chart_without_vocab_has_no_baseline():
    spec = curves.loss_chart(METRICS, EVALS, EVENTS, vocab_size=None).to_dict()
    assert not [t for t in texts(spec) if t.startswith("uniform")] and spec["title"] == "Training loss"


def test_a_100k_step_run_sends_a_bounded_payload():
    long = make_metrics(100_000)
    for chart in (
        curves.loss_chart(long, EVALS, EVENTS, 65, smoothing=0.5),
        curves.lr_chart(long, 100_000, [(s, 1e-3) for s in range(100_000)]),
        curves.grad_norm_chart(long, 1.0, EVENTS),
        parts.layer_grad_chart(long),
        compare.compare_chart({"a": long, "b": long, "c": long}, "grad_norm", evals={"a": EVALS}),
    ):
        spec = chart.to_dict()  # raises MaxRowsError if a frame went over Altair's guard
        assert all(len(rows) <= style.MAX_ROWS for rows in spec["datasets"].values())
        assert len(json.dumps(spec)) < 1_000_000
    heat = heatmaps.layer_grad_heatmap(long).to_dict()
    assert len(heat["data"][0]["x"]) <= 400


def test_large_theme_has_larger_fonts():
    small = curves.loss_chart(METRICS, EVALS, EVENTS, 65).to_dict()["config"]
    large = curves.loss_chart(METRICS, EVALS, EVENTS, 65, large=True).to_dict()["config"]
    for part, key in (("title", "fontSize"), ("axis", "labelFontSize"), ("axis", "titleFontSize")):
        assert large[part][key] > small[part][key] >= 12


def test_lr_chart_marks_the_current_step_and_the_plan():
    schedule = [(s, 1e-3 * min(1.0, s / 100)) for s in range(0, 1001, 10)]
    spec = curves.lr_chart(METRICS, current_step=400, schedule=schedule).to_dict()
    assert title_text(spec) == "Learning rate schedule"
    assert axis_titles(spec, "y") == {"learning rate"}
    assert 400 in rules_at(spec, "x") and "now: step 400" in texts(spec)
    line = next(v for v in views(spec) if mark_type(v) == "line")
    series = [row["series"] for row in values(spec, line)]
    assert series.count("planned") == len(schedule) and series.count("used") == len(METRICS)
    waiting = curves.lr_chart([], None, None).to_dict()
    assert title_text(waiting) == "Learning rate schedule"
    assert waiting["title"]["subtitle"] == "waiting for the first step"
    # A label near the right edge goes left of its rule: the zoomable chart clips marks to the plot area.
    assert spec["datasets"]["now"][0]["side"] == "left"
    end = curves.lr_chart(METRICS, current_step=1000, schedule=schedule).to_dict()
    assert end["datasets"]["now"][0]["side"] == "right"
    aligned = {v["mark"]["align"] for v in views(end) if mark_type(v) == "text" and v["data"]["name"] == "now"}
    assert aligned == {"right"}  # only the label layer of the side it is on: an empty one warns in the console


def test_grad_norm_chart_log_scale_clip_threshold_and_clipped_points():
    spec = curves.grad_norm_chart(METRICS, 1.0, EVENTS).to_dict()
    assert title_text(spec) == "Gradient norm, unclipped"
    lines = [v for v in views(spec) if mark_type(v) == "line"]
    assert lines[0]["encoding"]["y"]["scale"]["type"] == "log"
    assert 1.0 in rules_at(spec, "y") and spec["datasets"]["clip"][0]["label"] == "clip threshold 1"  # its tooltip
    # No label on the plot: it lay under the clipped points, which cluster at the threshold (a review)
    assert "clip threshold 1" not in texts(spec)
    clipped = [row for row in all_rows(spec) if row.get("clipped") == "yes"]
    assert [row["step"] for row in clipped] == list(range(1, 21))
    assert 77 in rules_at(spec, "x")  # the non-finite step
    assert spec["title"]["subtitle"] == "orange: steps clipped to the dashed threshold"
    off = curves.grad_norm_chart(METRICS, None, []).to_dict()
    assert off["title"]["subtitle"] == "clipping is off"


@pytest.mark.parametrize(
    "name", ["loss_chart", "lr_chart", "grad_norm_chart", "layer_grad_chart", "update_ratios", "compare_chart"]
)
def test_live_charts_keep_the_same_spec_while_data_grows(name):
    """The browser swaps data into an existing view only when everything but `datasets` is unchanged; a different
    spec rebuilds the view (and loses hover and zoom). So new steps, evals, events, a moved target or clip threshold
    and a new current step change the datasets only."""
    build = {
        "loss_chart": lambda n: curves.loss_chart(
            METRICS[:n], EVALS[: n // 100], EVENTS[: n // 150], 65, target=n / 100
        ),
        "lr_chart": lambda n: curves.lr_chart(METRICS[:n], current_step=n, schedule=[(s, 1e-3) for s in range(n)]),
        "grad_norm_chart": lambda n: curves.grad_norm_chart(METRICS[:n], n / 100, EVENTS[: n // 150]),
        "layer_grad_chart": lambda n: parts.layer_grad_chart(METRICS[:n]),
        "update_ratios": lambda n: parts.layer_grad_chart(METRICS[:n], "update_ratios"),
        "compare_chart": lambda n: compare.compare_chart(
            {"a": METRICS[:n], "b": METRICS[: n // 2]}, "loss", {"a": EVALS[: n // 100]}
        ),
    }[name]
    # 200 and 400 steps: one and two knob changes, both within the first four lines kept for the list of changes
    # under the chart (style.legend_lines; the first change grows the chart once)
    before, after = build(200).to_dict(), build(400).to_dict()
    assert before["datasets"] != after["datasets"]
    assert json.dumps({**before, "datasets": None}) == json.dumps({**after, "datasets": None})
    assert all(isinstance(rows, list) for rows in after["datasets"].values())  # plain rows, named


def test_live_hover_layers_draw_a_bounded_subset_of_each_series():
    """Hover points are re-rendered at every refresh: each series gets at most HOVER_POINTS of them, spanning the
    whole run, while the line keeps every thinned point."""
    long = make_metrics(3000)
    spec = curves.loss_chart(long, EVALS, [], 65, max_points=400).to_dict()
    hover = next(v for v in views(spec) if v.get("data", {}).get("name") == "loss_hover")
    rows = values(spec, hover)
    for series in ("train", "val"):
        mine = [r for r in rows if r["series"] == series]
        assert 0 < len(mine) <= style.HOVER_POINTS
    train = [r["step"] for r in rows if r["series"] == "train"]
    assert train[0] == 1 and train[-1] == 3000  # both ends stay hoverable
    assert len(spec["datasets"]["loss"]) > len(rows)


def test_grad_norm_chart_draws_zero_at_the_log_floor():
    spec = curves.grad_norm_chart([{"step": 1, "grad_norm": 0.0}, {"step": 2, "grad_norm": 1.0}], 1.0, []).to_dict()
    rows = [row for v in views(spec) if mark_type(v) == "line" for row in values(spec, v)]
    assert rows[0] == {"step": 1, "norm": 0.0, "shown": style.LOG_FLOOR}


@pytest.mark.parametrize("name", ["loss_chart", "lr_chart", "grad_norm_chart", "layer_grad_chart", "compare_chart"])
def test_line_charts_have_hover_tooltips(name):
    args = {
        "loss_chart": (METRICS, EVALS, EVENTS, 65),
        "lr_chart": (METRICS,),
        "grad_norm_chart": (METRICS, 1.0, EVENTS),
        "layer_grad_chart": (METRICS,),
        "compare_chart": ({"a": METRICS},),
    }[name]
    module = next(m for m in (curves, parts, compare, heatmaps) if hasattr(m, name))
    spec = getattr(module, name)(*args).to_dict()
    names = {p["name"] for p in spec.get("params", [])} | {p["name"] for v in views(spec) for p in v.get("params", [])}
    assert any(n.startswith("hover") for n in names)
    assert any(t for t in tooltips(spec))


# ---------------------------------------------------------------- per-layer gradients, per-head statistics


def test_layer_grad_chart_lines_per_group_over_a_shared_lr_axis():
    spec = parts.layer_grad_chart(METRICS).to_dict()
    assert title_text(spec) == "Per-layer gradient norms"
    assert len(spec["vconcat"]) == 2 and spec["resolve"]["scale"]["x"] == "shared"
    assert axis_titles(spec, "y") == {"gradient L2 norm (log scale)", "learning rate"}
    groups = {row["group"] for row in all_rows(spec) if "group" in row}
    assert groups == set(GROUPS)
    colour = next(v for v in views(spec) if mark_type(v) == "line")["encoding"]["color"]
    assert colour["scale"]["domain"] == ["emb", "L0", "L1", "ln_f"]


def test_update_ratio_chart_has_the_healthy_reference():
    spec = parts.layer_grad_chart(METRICS, field="update_ratios", lr_metrics=False).to_dict()
    assert title_text(spec) == "Update / weight ratio per layer"
    assert "vconcat" not in spec
    assert 1e-3 in rules_at(spec, "y")
    assert "1e-3: classic healthy value" in texts(spec)


def test_head_stats_chart_entropy_and_max_weight_per_layer():
    rows = [
        {"step": s, "layer": lay, "head": h, "entropy": 3.0 - s / 200, "max_weight": 0.2 + s / 2000}
        for s in range(0, 501, 100)
        for lay in range(2)
        for h in range(4)
    ]
    spec = parts.head_stats_chart(rows, uniform=(math.log(64), "uniform over 64 keys")).to_dict()
    assert len(spec["vconcat"]) == 2  # one row per layer
    assert {"attention entropy (nats)", "max attention weight (0..1)"} <= axis_titles(spec, "y")
    assert math.log(64) in rules_at(spec, "y")
    # One line per mask the run trained under, each labelled with its steps (a review read the none mask's 3.47
    # across the steps a sliding window of 8 had trained, whose uniform is ~2.1)
    both = parts.head_stats_chart(rows, uniform=((2.08, "sliding_window, steps 0-1,009"), (3.47, "none"))).to_dict()
    assert {2.08, 3.47} <= set(rules_at(both, "y")) and "sliding_window, steps 0-1,009" in texts(both)
    # Each stretch over its own steps, its label inside the plot: a review read window 5's 1.51 across steps
    # 103-600, where steps 103-126 had window 8, and the late label ran past the right edge at Large fonts
    stretches = ((2.55, "causal, steps 0-103", 0, 103), (1.89, "window 8, steps 103-126", 103, 126),
                 (1.51, "window 5, steps 126-500", 126, 500), (3.47, "none, steps 400-500", 400, 500))  # fmt: skip
    spec = parts.head_stats_chart(rows, uniform=stretches, large=True).to_dict()
    segments = [(row["ref"], row["from"], row["to"]) for v in views(spec) if mark_type(v) == "rule"
                for row in values(spec, v) if "from" in row]  # fmt: skip
    assert set(segments) == {(2.55, 0, 103), (1.89, 103, 126), (1.51, 126, 500), (3.47, 400, 500)}
    aligned = {row["label"]: v["mark"]["align"] for v in views(spec) if mark_type(v) == "text"
               for row in values(spec, v) if "from" in row}  # fmt: skip
    assert aligned["none, steps 400-500"] == "right" and aligned["causal, steps 0-103"] == "left"
    # Two stretches of one pattern share one label, said once (a review: two labels at one height on each other)
    again = ((2.55, "causal, steps 0-103, 127-500", 0, 103), (1.89, "window 8, steps 104-126", 103, 126),
             (2.55, "causal, steps 0-103, 127-500", 126, 500))  # fmt: skip
    spec = parts.head_stats_chart(rows, uniform=again, large=True).to_dict()
    said = [row["label"] for v in views(spec) if mark_type(v) == "text" for row in values(spec, v) if "from" in row]
    assert said.count("causal, steps 0-103, 127-500") == said.count("window 8, steps 104-126") == 2, said  # a layer
    ruled = [row for v in views(spec) if mark_type(v) == "rule" for row in values(spec, v) if "from" in row]
    assert len(ruled) == 6  # each stretch still has its segment, in each layer's panel
    only = parts.head_stats_chart(rows, layer=1).to_dict()
    assert len(only["vconcat"]) == 1
    assert {row["layer"] for row in all_rows(only) if "layer" in row} == {1}
    empty = parts.head_stats_chart([]).to_dict()
    assert title_text(empty).endswith("waiting for the first snapshot")


def test_loss_and_comparison_curves_on_a_wall_clock_axis():
    """Time to quality: the same curves with seconds since the first step on x, each run on its own clock."""
    fast = [{"step": s, "loss": 3.0 - s / 100, "time": 1000.0 + s * 0.01} for s in range(1, 101)]
    slow = [{"step": s, "loss": 3.0 - s / 100, "time": 5000.0 + s * 0.02} for s in range(1, 101)]
    spec = curves.loss_chart(fast, [{"step": 50, "val_loss": 2.5}], [], 65, seconds=True)
    assert "seconds trained since the first step" in axis_titles(spec, "x")
    steps = [r["step"] for r in spec["datasets"]["loss"] if r["series"] == "train"]
    assert steps[0] == 0.0 and steps[-1] == pytest.approx(0.99)
    val = [r for r in spec["datasets"]["loss"] if r["series"] == "val"]
    assert val[0]["step"] == pytest.approx(0.49)  # an eval step mapped through the run's own clock
    both = compare.compare_chart({"fast": fast, "slow": slow}, "loss", seconds=True)
    ends = {run: max(r["step"] for r in both["datasets"]["compare"] if r["run"] == run) for run in ("fast", "slow")}
    assert ends["slow"] == pytest.approx(2 * ends["fast"])  # twice as long to the same loss, visible on x


def test_numbered_markers_stay_readable_however_many_there_are():
    """Finding 6 (issue 20): three or more live changes smeared their labels together at the top of the loss
    chart. Each marker is now a one-character badge; badges closer than a badge's width (markers.badge_gap) go on
    another line; the full text is an entry of the list under the chart, numbered like its badge."""
    t = theme.theme(True)
    rows = [{"step": s, "label": f"@{s} knob {i}"} for i, s in enumerate([100, 101, 102, 103, 500, 990])]
    marks = markers.numbered_markers(list(reversed(rows)), t, x_max=1000)
    assert [m["n"] for m in marks] == [1, 2, 3, 4, 5, 6]
    assert [m["step"] for m in marks] == [100, 101, 102, 103, 500, 990]
    assert [m["badge"] for m in marks] == ["①", "②", "③", "④", "⑤", "⑥"]
    assert marks[0]["entry"] == "① @100 knob 0"
    first_three = [m["y"] for m in marks[:3]]
    assert len(set(first_three)) == 3  # neighbours on three different lines
    assert marks[4]["y"] == marks[0]["y"]  # far away: back on the first line
    assert marks[5]["side"] == "right" and marks[0]["side"] == "left"  # near the right edge: left of its rule
    assert markers.badge(21) == "(21)"
    assert markers.numbered_markers([], t, None) == []
    # The lesson's optimisation step: changes near the end of the axis, one badge drawn right of its rule, the next
    # left of its own (the plot's edge): facing each other they drew "②" over "③" on a half-width chart.
    near_end = markers.numbered_markers([{"step": 905, "label": "a"}, {"step": 1000, "label": "b"}], t, x_max=1000)
    assert [m["side"] for m in near_end] == ["left", "right"] and near_end[0]["y"] != near_end[1]["y"]
    apart = markers.numbered_markers([{"step": 100, "label": "a"}, {"step": 400, "label": "b"}], t, x_max=1000)
    assert apart[0]["y"] == apart[1]["y"]  # far apart: one line


def test_compare_legend_names_runs_readably_and_lists_every_entry_below_the_chart():
    """Finding 5 (issue 20) / 5 (issue 24): compare legends showed run ids and cut the fourth entry; titles were
    cut to "Compare runs: …" at projector fonts."""
    series = {name: METRICS for name in ["scaled 1/sqrt(d_head)", "unscaled", "third run", "fourth run"]}
    spec = compare.compare_chart(series, "grad_norm", large=True).to_dict()
    assert title_text(spec) == "Gradient norm, unclipped"
    colour = next(v["encoding"]["color"] for v in views(spec) if "color" in v.get("encoding", {}))
    assert (
        colour["legend"]["orient"] == "top" and colour["legend"]["columns"] == 1 and colour["legend"]["labelLimit"] == 0
    )
    assert colour["scale"]["domain"] == list(series)


def test_markers_past_ten_draw_the_number_itself_in_a_glyph_the_chart_font_has():
    """⑪-⑳ drew as empty boxes: the browsers' sans-serif (DejaVu Sans) has ①-⑩ only."""
    assert [markers.badge(n) for n in (1, 10, 11, 20, 21)] == ["①", "⑩", "(11)", "(20)", "(21)"]
    assert all(ord(c) <= 0x2469 for n in range(1, 31) for c in markers.badge(n))  # ASCII or ① (U+2460) .. ⑩
    t = theme.theme(False)
    steps = [400 * i for i in range(11)] + [4600]  # (11) at 4000, (12) 600 steps on: more than ⑩'s width apart
    marks = markers.numbered_markers([{"step": s, "label": f"knob {i}"} for i, s in enumerate(steps)], t, 6000)
    assert [m["entry"] for m in marks[9:]] == ["⑩ knob 9", "(11) knob 10", "(12) knob 11"]
    assert markers.badge_gap(t) * 6000 < 600 < markers.badge_gap(t) * 6000 * markers.badge_widths(11)
    assert marks[11]["y"] != marks[10]["y"]  # "(11)" is wider than ⑩: "(12)" goes on another line, not over it
