"""tinygpt/ui/charts.py: every chart read back through `to_dict()`, no browser.

What is checked is what a viewer relies on: titles, axis titles, reference lines at the right values, event
labels, tick labels that show the characters, colour scales, and that empty or hostile input never raises.
"""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tinygpt.ui import charts, compare_charts, heatmaps

REPO = Path(__file__).resolve().parent.parent
GROUPS = ["emb", "L0.attn", "L0.mlp", "L1.attn", "L1.mlp", "ln_f"]
CHART_FUNCTIONS = [
    "loss_chart",
    "lr_chart",
    "grad_norm_chart",
    "layer_grad_chart",
    "layer_grad_heatmap",
    "attention_grid",
    "attention_detail",
    "mask_matrix",
    "head_stats_chart",
    "next_char_chart",
    "attention_row_chart",
    "compare_chart",
    "memory_chart",
]


def make_metrics(steps: int, nan_at: int | None = None) -> list[dict]:
    """Metrics records as the run store writes them (None where a value was not finite)."""
    ratios = {g: 1e-3 * (j + 1) / 3 for j, g in enumerate(GROUPS)}
    out = []
    for i in range(1, steps + 1):
        bad = i == nan_at
        out.append(
            {
                "step": i,
                "time": float(i),
                "loss": None if bad else 4.2 * math.exp(-i / 300) + 1.5,
                "lr": 1e-3 * min(1.0, i / 100),
                "grad_norm": None if bad else 3.0 / (1 + i / 50),
                "clipped": i <= 20,
                "layer_grad_norms": {g: (j + 1) * 0.1 / (1 + i / 100) for j, g in enumerate(GROUPS)}
                if steps < 10_000
                else ratios,  # shared for long runs: building 100k dicts would dominate the test's time
                "update_ratios": ratios,
                "tokens_per_s": 1000.0,
            }
        )
    return out


METRICS = make_metrics(400, nan_at=77)
EVALS = [{"step": s, "train_loss": 2.0, "val_loss": 4.2 * math.exp(-s / 300) + 1.6} for s in range(0, 401, 100)]
EVENTS = [
    {"step": 150, "time": 1.0, "kind": "knob", "message": "mask: causal -> none", "knob": "mask", "old": "causal"},
    {"step": 200, "time": 2.0, "kind": "knob", "message": "learning_rate: 0.001 -> 0.003", "knob": "learning_rate"},
    {"step": 77, "time": 3.0, "kind": "nonfinite", "message": "loss is nan at step 77"},
    {"step": 300, "time": 4.0, "kind": "checkpoint", "message": "saved"},
]


# ---------------------------------------------------------------- reading Vega-Lite specs


def views(spec: dict) -> list[dict]:
    """Every unit view (one mark) of a spec, through layers and concatenations."""
    found = []
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for child in spec.get(key, []):
            found += views(child)
    if "mark" in spec:
        found.append(spec)
    return found


def mark_type(view: dict) -> str:
    return view["mark"]["type"] if isinstance(view["mark"], dict) else view["mark"]


def values(spec: dict, view: dict) -> list[dict]:
    """The rows a view draws (the top-level dataset its data names)."""
    return spec["datasets"][view["data"]["name"]] if "data" in view else []


def all_rows(spec: dict) -> list[dict]:
    """Every row of every dataset, each dataset once (several views often share one)."""
    return [row for rows in spec.get("datasets", {}).values() for row in rows]


def array(value) -> np.ndarray:
    """A plotly array from `fig.to_dict()`: plotly ships numpy arrays as base64 typed arrays ({dtype, bdata, shape})."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return flat.reshape([int(n) for n in str(value.get("shape", len(flat))).split(",")])
    return np.asarray(value)


def title_text(spec: dict) -> str:
    title = spec.get("title", "")
    return title["text"] if isinstance(title, dict) else title


def axis_titles(spec: dict, channel: str) -> set[str]:
    return {v["encoding"][channel]["title"] for v in views(spec) if "title" in v.get("encoding", {}).get(channel, {})}


def rules_at(spec: dict, channel: str) -> list[float]:
    """Values of the rules drawn along `channel` (a horizontal rule has a y and no x)."""
    out = []
    for v in views(spec):
        if mark_type(v) == "rule" and channel in v["encoding"]:
            field = v["encoding"][channel]["field"]
            out += [row[field] for row in values(spec, v)]
    return out


def texts(spec: dict) -> list[str]:
    out = []
    for v in views(spec):
        if mark_type(v) == "text" and "field" in v["encoding"].get("text", {}):
            out += [str(row[v["encoding"]["text"]["field"]]) for row in values(spec, v)]
    return out


def tooltips(spec: dict) -> list:
    return [v["encoding"]["tooltip"] for v in views(spec) if "tooltip" in v.get("encoding", {})]


# ---------------------------------------------------------------- helpers


def test_thin_for_display_keeps_ends_and_bounds_the_count():
    assert charts.thin_for_display(range(10), 100) == list(range(10))
    for n in (1501, 4000, 100_000, 100_001):
        kept = charts.thin_for_display(range(n), 1500)
        assert kept[0] == 0 and kept[-1] == n - 1 and len(kept) <= 1500
        assert kept == sorted(set(kept))


def test_thin_for_display_is_stable_while_a_series_grows():
    """The kept points of a growing series stay the same between refreshes (no shimmering line)."""
    before, after = charts.thin_for_display(range(3000), 1500), charts.thin_for_display(range(3001), 1500)
    assert before[:-1] == after[:-1] or before[:-1] == after[:-2]


@pytest.mark.parametrize(
    ("ch", "shown"), [(" ", "␣"), ("\n", "⏎"), ("\t", "⇥"), ("a", "a"), ("é", "é"), ("\x00", "\\x00")]
)
def test_visible_char(ch, shown):
    assert charts.visible_char(ch) == shown


def test_chart_help_covers_every_chart():
    modules = (charts, heatmaps, compare_charts)
    for name in CHART_FUNCTIONS:
        assert any(callable(getattr(m, name, None)) for m in modules), name
        assert 20 < len(charts.CHART_HELP[name]) < 400


def test_charts_module_imports_no_streamlit():
    code = "import sys, tinygpt.ui.heatmaps, tinygpt.ui.compare_charts; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- loss, LR, gradient norm


def test_loss_chart_baseline_target_events_and_nonfinite():
    spec = charts.loss_chart(METRICS, EVALS, EVENTS, vocab_size=65, target=1.88).to_dict()
    assert title_text(spec) == "Training loss"
    assert axis_titles(spec, "x") == {"training step"}
    assert axis_titles(spec, "y") == {"cross-entropy loss (nats per character)"}
    assert any(abs(y - math.log(65)) < 1e-9 for y in rules_at(spec, "y"))
    assert 1.88 in rules_at(spec, "y")
    labels = texts(spec)
    assert "uniform guess ln(V)=4.17" in labels and "target 1.88" in labels
    assert "mask: causal -> none" in labels and "learning_rate: 0.001 -> 0.003" in labels
    assert "saved" not in labels  # only knob events are labelled
    assert {150, 200, 77} <= set(rules_at(spec, "x"))  # knob rules and the non-finite rule
    red = [v for v in views(spec) if v["mark"].get("color") == charts.RED]
    assert red and all(row["step"] == 77 for v in red for row in values(spec, v))
    assert {row["series"] for row in all_rows(spec) if "series" in row} == {"train", "val"}
    line = next(v for v in views(spec) if mark_type(v) == "line")
    drawn = [row for row in values(spec, line) if row.get("series") == "train"]
    assert len(drawn) == 399 and all(math.isfinite(row["loss"]) for row in drawn)  # the null at step 77 is skipped
    assert tooltips(spec)


def test_loss_chart_smoothing_adds_an_ema_line_that_starts_at_the_first_value():
    spec = charts.loss_chart(METRICS, [], [], vocab_size=65, smoothing=0.9).to_dict()
    rows = [row for row in all_rows(spec) if "series" in row]
    assert {r["series"] for r in rows} == {"train (raw)", "train (EMA 0.9)"}
    first = {r["series"]: r["loss"] for r in rows if r["step"] == 1}
    assert first["train (raw)"] == pytest.approx(first["train (EMA 0.9)"])  # debiased: not pulled towards 0


@pytest.mark.parametrize(
    "metrics",
    [[], None, [{"step": 1, "loss": None}], [{"step": 1}], [{"loss": 3.0}], [{"step": 1, "loss": float("nan")}]],
)
def test_loss_chart_waits_on_empty_or_broken_input(metrics):
    spec = charts.loss_chart(metrics, None, None, vocab_size=65).to_dict()
    assert title_text(spec) == "Training loss: waiting for the first step"
    json.dumps(spec, allow_nan=False)  # what goes to the browser is strict JSON


def test_loss_chart_without_vocab_has_no_baseline():
    spec = charts.loss_chart(METRICS, EVALS, EVENTS, vocab_size=None).to_dict()
    assert not [t for t in texts(spec) if t.startswith("uniform")]


def test_a_100k_step_run_sends_a_bounded_payload():
    long = make_metrics(100_000)
    for chart in (
        charts.loss_chart(long, EVALS, EVENTS, 65, smoothing=0.5),
        charts.lr_chart(long, 100_000, [(s, 1e-3) for s in range(100_000)]),
        charts.grad_norm_chart(long, 1.0, EVENTS),
        charts.layer_grad_chart(long),
        compare_charts.compare_chart({"a": long, "b": long, "c": long}, "grad_norm", evals={"a": EVALS}),
    ):
        spec = chart.to_dict()  # raises MaxRowsError if a frame went over Altair's guard
        assert all(len(rows) <= charts.MAX_ROWS for rows in spec["datasets"].values())
        assert len(json.dumps(spec)) < 1_000_000
    heat = heatmaps.layer_grad_heatmap(long).to_dict()
    assert len(heat["data"][0]["x"]) <= 400


def test_large_theme_has_larger_fonts():
    small = charts.loss_chart(METRICS, EVALS, EVENTS, 65).to_dict()["config"]
    large = charts.loss_chart(METRICS, EVALS, EVENTS, 65, large=True).to_dict()["config"]
    for part, key in (("title", "fontSize"), ("axis", "labelFontSize"), ("axis", "titleFontSize")):
        assert large[part][key] > small[part][key] >= 12


def test_lr_chart_marks_the_current_step_and_the_plan():
    schedule = [(s, 1e-3 * min(1.0, s / 100)) for s in range(0, 1001, 10)]
    spec = charts.lr_chart(METRICS, current_step=400, schedule=schedule).to_dict()
    assert title_text(spec) == "Learning rate schedule"
    assert axis_titles(spec, "y") == {"learning rate"}
    assert 400 in rules_at(spec, "x") and "now: step 400" in texts(spec)
    line = next(v for v in views(spec) if mark_type(v) == "line")
    series = [row["series"] for row in values(spec, line)]
    assert series.count("planned") == len(schedule) and series.count("used") == len(METRICS)
    assert title_text(charts.lr_chart([], None, None).to_dict()).endswith("waiting for the first step")
    # A label near the right edge goes left of its rule: the zoomable chart clips marks to the plot area.
    assert spec["datasets"]["now"][0]["side"] == "left"
    end = charts.lr_chart(METRICS, current_step=1000, schedule=schedule).to_dict()
    assert end["datasets"]["now"][0]["side"] == "right"
    aligned = {v["mark"]["align"] for v in views(end) if mark_type(v) == "text" and v["data"]["name"] == "now"}
    assert aligned == {"left", "right"}


def test_grad_norm_chart_log_scale_clip_threshold_and_clipped_points():
    spec = charts.grad_norm_chart(METRICS, 1.0, EVENTS).to_dict()
    assert title_text(spec) == "Global gradient norm before clipping"
    lines = [v for v in views(spec) if mark_type(v) == "line"]
    assert lines[0]["encoding"]["y"]["scale"]["type"] == "log"
    assert 1.0 in rules_at(spec, "y") and "clip threshold 1" in texts(spec)
    clipped = [row for row in all_rows(spec) if row.get("clipped") == "yes"]
    assert [row["step"] for row in clipped] == list(range(1, 21))
    assert 77 in rules_at(spec, "x")  # the non-finite step
    assert spec["title"]["subtitle"] == "orange points: steps clipped to the threshold"
    off = charts.grad_norm_chart(METRICS, None, []).to_dict()
    assert off["title"]["subtitle"] == "clipping is off"


@pytest.mark.parametrize(
    "name", ["loss_chart", "lr_chart", "grad_norm_chart", "layer_grad_chart", "update_ratios", "compare_chart"]
)
def test_live_charts_keep_the_same_spec_while_data_grows(name):
    """The browser swaps data into an existing view only when everything but `datasets` is unchanged; a different
    spec rebuilds the view (and loses hover and zoom). So new steps, evals, events, a moved target or clip threshold
    and a new current step change the datasets only."""
    build = {
        "loss_chart": lambda n: charts.loss_chart(
            METRICS[:n], EVALS[: n // 100], EVENTS[: n // 150], 65, target=n / 100
        ),
        "lr_chart": lambda n: charts.lr_chart(METRICS[:n], current_step=n, schedule=[(s, 1e-3) for s in range(n)]),
        "grad_norm_chart": lambda n: charts.grad_norm_chart(METRICS[:n], n / 100, EVENTS[: n // 150]),
        "layer_grad_chart": lambda n: charts.layer_grad_chart(METRICS[:n]),
        "update_ratios": lambda n: charts.layer_grad_chart(METRICS[:n], "update_ratios"),
        "compare_chart": lambda n: compare_charts.compare_chart(
            {"a": METRICS[:n], "b": METRICS[: n // 2]}, "loss", {"a": EVALS[: n // 100]}
        ),
    }[name]
    before, after = build(120).to_dict(), build(400).to_dict()
    assert before["datasets"] != after["datasets"]
    assert json.dumps({**before, "datasets": None}) == json.dumps({**after, "datasets": None})
    assert all(isinstance(rows, list) for rows in after["datasets"].values())  # plain rows, named


def test_live_hover_layers_draw_a_bounded_subset_of_each_series():
    """Hover points are re-rendered at every refresh: each series gets at most HOVER_POINTS of them, spanning the
    whole run, while the line keeps every thinned point."""
    long = make_metrics(3000)
    spec = charts.loss_chart(long, EVALS, [], 65, max_points=400).to_dict()
    hover = next(v for v in views(spec) if v.get("data", {}).get("name") == "loss_hover")
    rows = values(spec, hover)
    for series in ("train", "val"):
        mine = [r for r in rows if r["series"] == series]
        assert 0 < len(mine) <= charts.HOVER_POINTS
    train = [r["step"] for r in rows if r["series"] == "train"]
    assert train[0] == 1 and train[-1] == 3000  # both ends stay hoverable
    assert len(spec["datasets"]["loss"]) > len(rows)


def test_grad_norm_chart_draws_zero_at_the_log_floor():
    spec = charts.grad_norm_chart([{"step": 1, "grad_norm": 0.0}, {"step": 2, "grad_norm": 1.0}], 1.0, []).to_dict()
    rows = [row for v in views(spec) if mark_type(v) == "line" for row in values(spec, v)]
    assert rows[0] == {"step": 1, "norm": 0.0, "shown": charts.LOG_FLOOR}


# ---------------------------------------------------------------- per-layer gradients


def test_layer_grad_chart_lines_per_group_over_a_shared_lr_axis():
    spec = charts.layer_grad_chart(METRICS).to_dict()
    assert title_text(spec) == "Per-layer gradient norms"
    assert len(spec["vconcat"]) == 2 and spec["resolve"]["scale"]["x"] == "shared"
    assert axis_titles(spec, "y") == {"gradient L2 norm (log scale)", "learning rate"}
    groups = {row["group"] for row in all_rows(spec) if "group" in row}
    assert groups == set(GROUPS)
    colour = next(v for v in views(spec) if mark_type(v) == "line")["encoding"]["color"]
    assert colour["scale"]["domain"] == ["emb", "L0", "L1", "ln_f"]


def test_update_ratio_chart_has_the_healthy_reference():
    spec = charts.layer_grad_chart(METRICS, field="update_ratios", lr_metrics=False).to_dict()
    assert title_text(spec) == "Update / weight ratio per layer"
    assert "vconcat" not in spec
    assert 1e-3 in rules_at(spec, "y")
    assert "1e-3: classic healthy value" in texts(spec)


def test_layer_grad_heatmap_groups_by_steps_with_lr_below():
    fig = heatmaps.layer_grad_heatmap(METRICS).to_dict()
    heat, lr = fig["data"]
    assert heat["type"] == "heatmap" and list(heat["y"]) == GROUPS
    z = array(heat["z"])
    assert z.shape == (len(GROUPS), len(METRICS))
    assert z[1, 0] == pytest.approx(math.log10(0.2 / 1.01), abs=1e-5)
    assert lr["type"] == "scatter" and lr["xaxis"] == "x2"
    assert fig["layout"]["xaxis2"]["title"]["text"] == "training step"
    assert not heatmaps.layer_grad_heatmap([]).to_dict()["data"]


# ---------------------------------------------------------------- attention


def attention(num_layers: int, num_heads: int, size: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    w = rng.random((num_layers, num_heads, size, size)) * np.tril(np.ones((size, size)))
    return (w / w.sum(-1, keepdims=True)).astype(np.float16)  # (L, H, T, T), as the run store saves it


def test_attention_grid_is_one_figure_of_layers_x_heads():
    tokens = list("the cat\nsat")
    fig = heatmaps.attention_grid(attention(2, 3, len(tokens)), tokens).to_dict()
    cells = [d for d in fig["data"] if d["type"] == "heatmap"]
    assert len(cells) == 6
    assert all(d["zmin"] == 0 and d["zmax"] == 1 and d["coloraxis"] == "coloraxis" for d in cells)
    assert fig["layout"]["coloraxis"]["cmin"] == 0 and fig["layout"]["coloraxis"]["cmax"] == 1
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles == ["L0 H0", "L0 H1", "L0 H2", "L1 H0", "L1 H1", "L1 H2"]
    assert fig["layout"]["xaxis"]["ticktext"] == ["t", "h", "e", "␣", "c", "a", "t", "⏎", "s", "a", "t"]
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"  # the first query at the top
    x = list(cells[0]["x"])
    assert len(set(x)) == len(tokens) and x[3] == "'␣' (pos 3)"  # repeated characters stay separate columns
    assert "query %{y} → key %{x}: weight %{z:.3f}" in cells[0]["hovertemplate"]
    assert cells[0]["z"]["dtype"] == "f4"  # sent as a compact typed array, not JSON numbers


@pytest.mark.parametrize(("layers", "heads"), [(1, 1), (2, 3), (4, 4), (6, 8)])
def test_attention_grid_layout_matches_make_subplots(layers, heads):
    """The grid's layout is built by hand for speed; it must place subplots exactly where plotly's would."""
    from plotly.subplots import make_subplots

    fig = heatmaps.attention_grid(attention(layers, heads, 8), list("abcdefgh")).to_dict()
    height = fig["layout"]["height"]
    ref = make_subplots(
        rows=layers,
        cols=heads,
        subplot_titles=[f"L{i} H{h}" for i in range(layers) for h in range(heads)],
        horizontal_spacing=min(0.03, 0.9 / max(1, heads - 1)),
        vertical_spacing=min(50 / height, 0.9 / max(1, layers - 1)),
    ).to_dict()["layout"]
    for k in range(layers * heads):
        for axis in ("xaxis", "yaxis"):
            name = f"{axis}{k + 1 if k else ''}"
            assert fig["layout"][name]["domain"] == pytest.approx(ref[name]["domain"], abs=1e-9)
            assert fig["layout"][name]["anchor"] == ref[name]["anchor"]
        assert fig["data"][k]["xaxis"] == ref[f"yaxis{k + 1 if k else ''}"]["anchor"]
    for k in range(layers * heads):  # axis titles on the outer edges only: keys along the bottom, queries left
        x_title = fig["layout"][f"xaxis{k + 1 if k else ''}"].get("title", {}).get("text")
        y_title = fig["layout"][f"yaxis{k + 1 if k else ''}"].get("title", {}).get("text")
        assert x_title == ("key (attended to)" if k >= (layers - 1) * heads else None)
        assert y_title == ("query" if k % heads == 0 else None)
    for ours, theirs in zip(fig["layout"]["annotations"], ref["annotations"], strict=True):
        assert ours["text"] == theirs["text"]
        assert (ours["x"], ours["y"]) == pytest.approx((theirs["x"], theirs["y"]), abs=1e-9)


def test_attention_grid_keeps_the_last_max_tokens():
    tokens = [chr(ord("a") + i % 26) for i in range(100)]
    fig = heatmaps.attention_grid(attention(1, 1, 100), tokens, layer_names=["layer 0"], max_tokens=64).to_dict()
    heat = fig["data"][0]
    assert array(heat["z"]).shape == (64, 64)
    assert heat["x"][0] == "'k' (pos 36)" and heat["x"][-1] == "'v' (pos 99)"
    assert fig["layout"]["annotations"][0]["text"] == "layer 0 H0"
    assert "last 64 of 100" in fig["layout"]["title"]["text"]


@pytest.mark.parametrize("weights", [None, np.zeros((0, 0, 0, 0))])
def test_attention_grid_without_a_snapshot(weights):
    fig = heatmaps.attention_grid(weights, []).to_dict()
    assert fig["layout"]["annotations"][0]["text"] == "no attention snapshot yet"


def test_attention_grid_rejects_a_wrong_shape():
    with pytest.raises(ValueError, match="4 dimensions"):
        heatmaps.attention_grid(np.zeros((3, 3)), list("abc"))


def test_attention_grid_tolerates_tokens_of_the_wrong_length():
    fig = heatmaps.attention_grid(attention(1, 1, 4), list("ab")).to_dict()
    assert fig["layout"]["xaxis"]["ticktext"] == ["?", "?", "a", "b"]


def test_attention_detail_five_panels_step_by_step():
    size, scale = 6, 0.5
    rng = np.random.default_rng(1)
    qk = rng.normal(size=(size, size)) * 4
    mask = np.tril(np.ones((size, size), dtype=bool))
    masked = np.where(mask, qk * scale, -np.inf)
    weights = np.exp(masked - masked.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    fig = heatmaps.attention_detail(qk, qk * scale, mask, masked, weights, list("hello\n"), scale=scale).to_dict()
    assert [a["text"] for a in fig["layout"]["annotations"]] == [
        "1. scores Q·Kᵀ",
        "2. scaled: × 0.5",
        "3. mask",
        "4. masked scores",
        "5. softmax weights",
    ]
    panels = fig["data"]
    assert [p["coloraxis"] for p in panels] == ["coloraxis", "coloraxis", "coloraxis2", "coloraxis", "coloraxis3"]
    assert np.array_equal(array(panels[2]["z"]), mask.astype(int))
    assert np.isnan(array(panels[3]["z"])[0, 1]) and np.isfinite(array(panels[3]["z"])[1, 0])
    layout = fig["layout"]
    assert layout["coloraxis"]["cmin"] == -layout["coloraxis"]["cmax"]  # diverging, centred at 0
    assert layout["coloraxis2"]["colorbar"]["ticktext"] == ["masked", "may attend"]
    assert layout["coloraxis3"]["cmin"] == 0 and layout["coloraxis3"]["cmax"] == 1
    assert layout["xaxis"]["ticktext"][-1] == "⏎"


def test_mask_matrix_of_causal_is_lower_triangular():
    size = 8
    fig = heatmaps.mask_matrix(np.tril(np.ones((size, size), dtype=bool)), list("abcdefgh"), title="causal").to_dict()
    z = array(fig["data"][0]["z"])
    assert np.array_equal(z, np.tril(np.ones((size, size), dtype=int)))
    layout = fig["layout"]
    assert layout["title"]["text"] == "causal"
    assert layout["xaxis"]["title"]["text"] == "key position (attended to)"
    assert layout["yaxis"]["title"]["text"] == "query position (attending)"
    assert fig["data"][0]["colorbar"]["ticktext"] == ["masked", "may attend"]
    assert layout["xaxis"]["ticktext"] == list("abcdefgh")


def test_mask_matrix_without_tokens_labels_positions():
    fig = heatmaps.mask_matrix(np.ones((3, 3), dtype=bool)).to_dict()
    assert fig["layout"]["xaxis"]["ticktext"] == ["0", "1", "2"]
    assert fig["layout"]["title"]["text"] == "Attention mask"


def test_attention_row_chart_layer_heads_by_context():
    fig = heatmaps.attention_row_chart(attention(2, 2, 5)[:, :, -1, :], list("a b\nc")).to_dict()
    heat = fig["data"][0]
    assert list(heat["y"]) == ["L0 H0", "L0 H1", "L1 H0", "L1 H1"]
    assert array(heat["z"]).shape == (4, 5)
    assert fig["layout"]["xaxis"]["ticktext"] == ["a", "␣", "b", "⏎", "c"]
    assert fig["layout"]["coloraxis"]["cmax"] == 1


def test_head_stats_chart_entropy_and_max_weight_per_layer():
    rows = [
        {"step": s, "layer": lay, "head": h, "entropy": 3.0 - s / 200, "max_weight": 0.2 + s / 2000}
        for s in range(0, 501, 100)
        for lay in range(2)
        for h in range(4)
    ]
    spec = charts.head_stats_chart(rows, seq_len=64).to_dict()
    assert len(spec["vconcat"]) == 2  # one row per layer
    assert {"attention entropy (nats)", "max attention weight (0..1)"} <= axis_titles(spec, "y")
    assert math.log(64) in rules_at(spec, "y")
    only = charts.head_stats_chart(rows, layer=1).to_dict()
    assert len(only["vconcat"]) == 1
    assert {row["layer"] for row in all_rows(only) if "layer" in row} == {1}
    empty = charts.head_stats_chart([]).to_dict()
    assert title_text(empty).endswith("waiting for the first snapshot")


def test_next_char_chart_groups_before_and_after():
    vocab = list(" \nabcdefghij")
    raw = np.linspace(1, 2, len(vocab))
    raw /= raw.sum()
    after = np.zeros_like(raw)
    after[[0, 1, 2]] = [0.5, 0.3, 0.2]
    spec = compare_charts.next_char_chart(vocab, raw, after, top=5).to_dict()
    bars = next(v for v in views(spec) if mark_type(v) == "bar")
    rows = [r for r in all_rows(spec) if "which" in r]
    assert len(rows) == 10 and {r["which"] for r in rows} == {
        "before (temperature 1, no filter)",
        "after temperature / top-k / top-p",
    }
    assert bars["encoding"]["x"]["sort"][:3] == ["␣", "⏎", "a"]  # most likely after filtering first
    assert bars["encoding"]["y"]["title"] == "probability"
    assert "xOffset" in bars["encoding"]
    assert title_text(compare_charts.next_char_chart([], [], []).to_dict()).endswith("nothing sampled yet")


# ---------------------------------------------------------------- runs, compare, memory


def test_compare_chart_overlays_runs():
    spec = compare_charts.compare_chart(
        {"baseline": METRICS, "no warmup": METRICS[:100]}, "loss", evals={"baseline": EVALS}
    )
    spec = spec.to_dict()
    line = next(v for v in views(spec) if mark_type(v) == "line")
    assert line["encoding"]["color"]["scale"]["domain"] == ["baseline", "no warmup"]
    rows = all_rows(spec)
    assert {(r["run"], r["curve"]) for r in rows} == {
        ("baseline", "loss"),
        ("no warmup", "loss"),
        ("baseline", "val_loss"),
    }
    assert axis_titles(spec, "y") == {"training loss (nats per character)"}
    grad = compare_charts.compare_chart({"a": METRICS}, "grad_norm").to_dict()
    assert next(v for v in views(grad) if mark_type(v) == "line")["encoding"]["y"]["scale"]["type"] == "log"
    compare_charts.compare_chart({}, "loss").to_dict()
    other = compare_charts.compare_chart(
        {"a": [{"step": 1, "attention_grad_norm": 0.0}]}, "attention_grad_norm"
    ).to_dict()
    line = next(v for v in views(other) if mark_type(v) == "line")
    assert line["encoding"]["y"]["scale"]["type"] == "log" and line["encoding"]["y"]["title"].endswith("(log scale)")


def test_config_diff_returns_only_the_settings_that_differ():
    a = {"run_id": "aaaaaaaa", "model": {"num_heads": 4, "hidden_dim": 64}, "train": {"lr": 1e-3, "betas": [0.9, 0.95]}}
    b = {"run_id": "bbbbbbbb", "model": {"num_heads": 2, "hidden_dim": 64}, "train": {"lr": 1e-3, "betas": [0.9, 0.99]}}
    c = {"run_id": "cccccccc", "model": {"num_heads": 4, "hidden_dim": 64, "dropout": 0.1}, "train": {"lr": 1e-3}}
    rows = charts.config_diff({"A": a, "B": b, "C": c})
    assert rows == [
        {"setting": "model.num_heads", "A": "4", "B": "2", "C": "4"},
        {"setting": "train.betas", "A": "[0.9,0.95]", "B": "[0.9,0.99]", "C": "—"},
        {"setting": "model.dropout", "A": "—", "B": "—", "C": "0.1"},
    ]
    mixed = charts.config_diff({"A": {"mask": "causal", "heads": 4}, "B": {"mask": None, "heads": 2}})
    assert mixed == [{"setting": "mask", "A": "causal", "B": "null"}, {"setting": "heads", "A": "4", "B": "2"}]
    assert charts.config_diff({"A": a, "A2": dict(a)}) == []
    assert charts.config_diff({}) == []


def test_memory_chart_stacks_megabytes_by_category():
    rows = [
        {"label": label, "category": cat, "bytes": n * scale}
        for label, scale in (("T=64", 1), ("T=128", 2))
        for cat, n in zip(charts.MEMORY_CATEGORIES, (4e6, 4e6, 8e6, 1e6, 5e5), strict=True)
    ]
    spec = compare_charts.memory_chart(rows, title="Memory (estimated)").to_dict()
    assert title_text(spec) == "Memory (estimated)"
    bars = next(v for v in views(spec) if mark_type(v) == "bar")
    assert bars["encoding"]["y"]["title"] == "memory (MB)" and bars["encoding"]["y"]["stack"] == "zero"
    assert bars["encoding"]["color"]["scale"]["domain"] == list(charts.MEMORY_CATEGORIES)
    assert bars["encoding"]["x"]["sort"] == ["T=64", "T=128"]
    assert [r for r in all_rows(spec) if r.get("mb")][0]["mb"] == 4.0
    assert title_text(compare_charts.memory_chart([]).to_dict()).endswith("no data")


@pytest.mark.parametrize("name", ["loss_chart", "lr_chart", "grad_norm_chart", "layer_grad_chart", "compare_chart"])
def test_line_charts_have_hover_tooltips(name):
    args = {
        "loss_chart": (METRICS, EVALS, EVENTS, 65),
        "lr_chart": (METRICS,),
        "grad_norm_chart": (METRICS, 1.0, EVENTS),
        "layer_grad_chart": (METRICS,),
        "compare_chart": ({"a": METRICS},),
    }[name]
    module = next(m for m in (charts, compare_charts, heatmaps) if hasattr(m, name))
    spec = getattr(module, name)(*args).to_dict()
    names = {p["name"] for p in spec.get("params", [])} | {p["name"] for v in views(spec) for p in v.get("params", [])}
    assert any(n.startswith("hover") for n in names)
    assert any(t for t in tooltips(spec))
