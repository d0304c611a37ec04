"""The Circuits charts through to_dict(): the data they draw, their markers and labels, and empty inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from chart_helpers import y_title_lines

from tinygpt.inside import heads
from tinygpt.ui.charts import circuits as charts
from tinygpt.ui.charts import style, theme


def record(step: int, induction: float, second: float = 3.3) -> dict:
    return {
        "step": step,
        "roles": {
            "previous": [[0.6, 0.1], [0.1, 0.1]],
            "induction": [[0.05, 0.05], [0.05, induction]],
            "first": [[0.1, 0.1], [0.1, 0.1]],
            "self": [[0.1, 0.1], [0.1, 0.1]],
        },
        "baselines": {"previous": 0.12, "induction": 0.04, "first": 0.12, "self": 0.12},
        "copy_loss": {"first": 3.3, "second": second},
        "residual": {"resid": [0.5, 1.0, 2.0], "attn": [0.3, 0.6], "mlp": [0.4, 0.9], "ln": [5.0, 5.0, 5.0]},
    }


RECORDS = [record(s, 0.05) for s in range(0, 100, 10)] + [record(s, 0.8, 0.4) for s in range(100, 200, 10)]


def datasets(spec: dict) -> list[dict]:
    """Every row an Altair spec carries (inline datasets)."""
    return [row for rows in spec.get("datasets", {}).values() for row in rows]


def test_role_history_draws_every_head_and_role_with_its_baseline_and_markers():
    rows = heads.score_rows(RECORDS)
    change = {"step": 100, "label": "phase change @100"}
    events = [{"kind": "knob", "knob": "ablated_heads", "ok": True, "old": "", "new": "L1H1", "step": 150}]
    spec = charts.role_history_chart(rows, change=change, events=events).to_dict()
    data = datasets(spec)
    assert {r["name"] for r in data if "name" in r} == {"L0H0", "L0H1", "L1H0", "L1H1"}
    assert {r["baseline"] for r in data if "baseline" in r} == {0.12, 0.04}
    labels = {r["label"] for r in data if "label" in r}
    assert labels == {"phase change @100", "heads off none→L1H1 @150"}
    text = json.dumps(spec)
    for role in heads.ROLES:
        assert charts.ROLE_TITLES[role] in text
    assert "uniform attention" in text


def test_role_history_waits_without_records():
    assert "waiting" in json.dumps(charts.role_history_chart([]).to_dict())


def test_phase_change_chart_puts_both_runs_and_the_marker_on_both_panels():
    series = {
        "2 layers": {"best": heads.best_series(RECORDS), "copy": heads.copy_loss_series(RECORDS), "train": []},
        "1 layer (control)": {"best": heads.best_series(RECORDS[:3]), "copy": [], "train": []},
    }
    change = {"2 layers": {"step": 100, "label": "2 layers: phase change @100"}}
    spec = charts.phase_change_chart(series, changes=change, baseline=0.04, threshold=0.4).to_dict()
    data = datasets(spec)
    assert {r["run"] for r in data if "run" in r} == {"2 layers", "1 layer (control)"}
    assert {r["curve"] for r in data if "curve" in r} == {"first copy", "second copy"}
    assert any(r.get("label") == "2 layers: phase change @100" for r in data)
    for panel in spec["vconcat"]:  # the red rule on the score panel and on the loss panel
        marks = [layer["mark"] for layer in panel["layer"]]
        assert any(m.get("color") == charts.RED and m["type"] == "rule" for m in marks)
    assert {r["label"] for r in data if "ref" in r} == {"uniform", "induction head"}


def test_residual_chart_has_the_stream_and_each_write():
    data = datasets(charts.residual_chart(RECORDS).to_dict())
    assert {r["where"] for r in data if "where" in r} == {"into layer 0", "into layer 1", "final (into ln_f)"}
    assert {(r["layer"], r["sublayer"]) for r in data if "sublayer" in r} == {
        ("layer 0", "attention"),
        ("layer 0", "MLP"),
        ("layer 1", "attention"),
        ("layer 1", "MLP"),
    }


def test_ablation_heatmap_numbers_every_cell_and_outlines_the_selected_head():
    deltas = {"validation batches": np.array([[0.5, -0.1], [0.0, 1.2]]), "probe text": np.zeros((2, 2))}
    fig = charts.ablation_heatmap(deltas, mode="mean", selected=(1, 0)).to_dict()
    first = fig["data"][0]
    assert first["text"] == [["+0.500", "-0.100"], ["+0.000", "+1.200"]]
    assert list(first["y"]) == ["L0", "L1"] and list(first["x"]) == ["H0", "H1"]
    assert [d["type"] for d in fig["data"]] == ["heatmap", "scatter"] * 2 and "mean-ablated" in fig["layout"]["title"][
        "text"
    ]
    assert fig["layout"]["coloraxis"]["cmin"] == -1.2 and fig["layout"]["coloraxis"]["cmax"] == 1.2
    bar = fig["layout"]["coloraxis"]["colorbar"]  # its ends labelled with the largest change (+1.2), not +0.8
    assert bar["ticktext"][0] == "-1.2" and bar["ticktext"][-1] == "+1.2" and bar["tickvals"][-1] == 1.2
    outline = fig["layout"]["shapes"][0]
    assert (outline["x0"], outline["y0"]) == (-0.5, 0.5)
    assert "no checkpoint" in json.dumps(charts.ablation_heatmap(None).to_dict())


def test_a_click_on_an_ablation_cell_names_its_head():
    deltas = {"validation batches": np.arange(6.0).reshape(2, 3), "probe text": np.zeros((2, 3))}
    fig = charts.ablation_heatmap(deltas).to_dict()
    for k, clicks in enumerate(fig["data"][1::2]):  # one invisible marker per cell, on its panel's axes
        assert clicks["marker"]["color"] == "rgba(0,0,0,0)" and clicks["xaxis"] == fig["data"][2 * k]["xaxis"]
        cells = list(zip(clicks["y"], clicks["x"], strict=True))
        assert cells == [(f"L{i}", f"H{h}") for i in range(2) for h in range(3)]
        assert [list(c) for c in clicks["customdata"]] == [[i, h] for i in range(2) for h in range(3)]
    assert "+5.0000" in fig["data"][1]["hovertemplate"][5]  # L1 H2 hovers its own number
    assert list(fig["layout"]["xaxis"]["range"]) == [-0.5, 2.5]  # the cells fill the panel, layer 0 on top
    assert list(fig["layout"]["yaxis2"]["range"]) == [1.5, -0.5]
    # Streamlit's selection state after a click on the cell L1 H2, and what is not a click on a cell
    click = {"selection": {"points": [{"curve_number": 1, "x": "H2", "y": "L1", "customdata": [1, 2]}]}}
    assert charts.clicked_head(click, 2, 3) == (1, 2)
    assert charts.clicked_head(click, 2, 2) is None  # a head this model does not have
    assert charts.clicked_head({"selection": {"points": []}}, 2, 3) is None
    assert charts.clicked_head(None, 2, 3) is None
    assert charts.clicked_head({"selection": {"points": [{"customdata": ["a", None]}]}}, 2, 3) is None


def test_ablated_probs_chart_reads_the_right_next_character():
    vocab = list("abc")
    tokens = list("abca")
    clean = np.full((4, 3), 1 / 3)
    ablated = np.array([[0, 1.0, 0], [0, 0, 1.0], [0.5, 0.5, 0], [1.0, 0, 0]])
    fig = charts.ablated_probs_chart(tokens, clean, ablated, vocab, head="L1H1").to_dict()
    assert [round(v, 3) for v in fig["data"][0]["y"]] == [0.333] * 3
    assert list(fig["data"][1]["y"]) == [1.0, 1.0, 0.5]  # b after a, c after b, a after c
    assert list(fig["layout"]["xaxis"]["ticktext"]) == ["b", "c", "a"]


def test_logit_lens_chart_labels_every_cell_and_ticks_the_right_guesses():
    vocab = list("ab␣")
    tokens = list("aba")
    top_ids = np.array([[[0, 1], [0, 1], [1, 0]], [[1, 0], [0, 1], [1, 0]]])  # (2 rows, 3 positions, k=2)
    top_probs = np.full((2, 3, 2), 0.5)
    fig = charts.logit_lens_chart(["embeddings", "after layer 0"], tokens, top_ids, top_probs, vocab).to_dict()
    cells = fig["data"][0]["text"]
    assert cells == [["a", "a✓", "b"], ["b✓", "a✓", "b"]]  # next after a is b, after b is a
    assert list(fig["data"][0]["y"]) == ["embeddings", "after layer 0"]
    assert list(fig["layout"]["xaxis"]["ticktext"]) == ["a", "b", "a"]


def test_three_ablation_panels_stack_at_large_fonts():
    """The lesson's browser run at 1280x720 Large: three panels in a row left ~40 px a cell, and "+0.037" was clipped
    and overlapped its neighbours. Stacked, every panel is as wide as the chart; a row of two stays a row."""
    deltas = {name: np.zeros((2, 4)) for name in ("validation batches", "probe text", "second copy")}
    stacked = charts.ablation_heatmap(deltas, large=True).to_dict()["layout"]
    assert [list(stacked[f"xaxis{s}"]["domain"]) for s in ("", "2", "3")] == [[0.0, 1.0]] * 3
    bands = [stacked[f"yaxis{s}"]["domain"] for s in ("", "2", "3")]
    assert bands[0][0] > bands[1][1] - 1e-9 and bands[1][0] > bands[2][1] - 1e-9  # top to bottom, apart
    assert [stacked[f"xaxis{s}"]["title"]["text"] for s in ("", "2", "3")] == ["", "", "head"]  # names: above
    row = charts.ablation_heatmap(deltas, large=False).to_dict()["layout"]
    assert row["xaxis"]["domain"][1] < 0.4  # three in a row without Large fonts (wide cells there)
    two = charts.ablation_heatmap({k: deltas[k] for k in list(deltas)[:2]}, large=True).to_dict()["layout"]
    assert two["xaxis"]["domain"][1] < 0.5


def panel_titles(layout: dict) -> dict[str, tuple[float, float]]:
    """{panel name: (x, y)} of the ablation heatmap's panel-name annotations, in paper fractions."""
    return {a["text"].removeprefix("<b>").removesuffix("</b>"): (a["x"], a["y"]) for a in layout["annotations"]}


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("panels", [2, 3])
def test_each_ablation_panels_name_sits_above_its_own_cells(large, panels):
    """A browser run at 1280x720, Large fonts: the three stacked panels' names, drawn as x titles under each, sat
    right over the next panel ("head · validation batches" read as the probe text panel's title). Each name is
    centred over its own panel's x domain, at the top of its own y domain, below the panel above it."""
    names = ["validation batches", "probe text", "second copy"][:panels]
    layout = charts.ablation_heatmap({n: np.zeros((2, 4)) for n in names}, large=large).to_dict()["layout"]
    titles = panel_titles(layout)
    assert list(titles) == names
    axes = [("xaxis", "yaxis")] + [(f"xaxis{k}", f"yaxis{k}") for k in range(2, panels + 1)]
    for k, (name, (x_axis, y_axis)) in enumerate(zip(names, axes, strict=True)):
        (x0, x1), top = layout[x_axis]["domain"], layout[y_axis]["domain"][1]
        x, y = titles[name]
        assert x == pytest.approx((x0 + x1) / 2) and y == pytest.approx(top), name
        # each panel's ticks under its own cells
        assert (layout[x_axis]["anchor"], layout[y_axis]["anchor"]) == (y_axis[0] + y_axis[5:], x_axis[0] + x_axis[5:])
        if k:  # beside the panel before it, or under it
            before_right, before_bottom = layout[axes[k - 1][0]]["domain"][1], layout[axes[k - 1][1]]["domain"][0]
            assert x0 >= before_right or top < before_bottom, name
    stacked = large and panels == 3
    if stacked:  # between one panel's bottom and the next one's name: its tick labels
        plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
        bands = [layout[y]["domain"] for _, y in axes]
        gaps = [(bands[k][0] - bands[k + 1][1]) * plot_px for k in range(panels - 1)]
        assert all(g >= charts.ABLATION_ABOVE_PX + charts.ABLATION_BELOW_PX - 1 for g in gaps), gaps
    assert {a["yanchor"] for a in layout["annotations"]} == {"bottom"}


@pytest.mark.parametrize("large", [False, True])
def test_the_stacked_circuits_charts_fit_the_content_column(large):
    """The same run, Large fonts: the phase-change chart (740 px plots) ran 48 px and the head-roles chart (each
    panel stretched to the column) 88 px past the 780 px column, and the step label "3,000" was cut at its right
    edge. Both are plain specs drawn at their own width: each row's plots and their axes fit the column."""
    phase = {"2 layers": {"best": heads.best_series(RECORDS), "copy": heads.copy_loss_series(RECORDS), "train": []}}
    rows = heads.score_rows(RECORDS)
    for spec in (charts.phase_change_chart(phase, large=large).to_dict(),
                 charts.role_history_chart(rows, large=large).to_dict()):  # fmt: skip
        assert isinstance(spec, dict) and "vconcat" in spec  # a spec: explain.show_chart draws it at its own width
        for row in spec["vconcat"]:
            panels = row.get("hconcat", [row])
            used = sum(p["width"] + charts.AXES_PX[large] for p in panels) + 20 * (len(panels) - 1)
            assert used <= charts.COLUMN_PX[large], (large, used)


@pytest.mark.parametrize("large", [False, True])
def test_the_circuits_panels_y_titles_fit_their_panels(large):
    """Checked while fixing the Experiments page's y titles: each panel of the stacked Circuits charts is drawn at
    its own size, so a y title line may be as long as its panel is high (style.y_title_lines's rule for a panel):
    "mean L2 norm per position" (25 characters) is as tall as a 300 px panel at Large fonts at 0.6 em a
    character, and whole in Chromium (~0.45 em)."""
    phase = {"2 layers": {"best": heads.best_series(RECORDS), "copy": heads.copy_loss_series(RECORDS), "train": []}}
    t = theme.theme(large)
    specs = [charts.phase_change_chart(phase, large=large), charts.role_history_chart(heads.score_rows(RECORDS),
             large=large), charts.residual_chart(RECORDS, large=large)]  # fmt: skip
    for spec in specs:
        found = y_title_lines(spec.to_dict())
        assert found
        for lines, height in found:
            assert height and all(len(line) * style.CHAR_EM * t["axis_title"] <= height for line in lines), lines
    said = {" ".join(lines) for lines, _ in y_title_lines(specs[2].to_dict())}
    assert said == {"mean L2 norm per position", "mean L2 norm of the write"}


def cell_px(fig: dict, k: int) -> float:
    """Panel k's cell width in px: its x domain of the estimated plot width, over its heads."""
    layout, data = fig["layout"], fig["data"][2 * k]
    x0, x1 = layout[f"xaxis{k + 1 if k else ''}"]["domain"]
    return (x1 - x0) * charts.ABLATION_PLOT_PX[layout["title"]["font"]["size"] > 20] / len(data["x"])


@pytest.mark.parametrize("heads_n", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("panels", [2, 3])
@pytest.mark.parametrize("large", [False, True])
def test_ablation_numbers_fit_their_cells(large, panels, heads_n):
    """Three panels in a row without Large fonts (4 heads) left ~45 px a cell, and "+0.046" at 14 px touched its
    neighbours ("+0.046+0.040"). A number now fits its cell with a fifth to spare (0.55 em a digit): smaller, then
    without the leading zero ("+.046"); three panels stack when none fits in a row; where nothing fits, the cells
    carry no number (the hover still says it)."""
    names = ["validation batches", "probe text", "second copy"][:panels]
    z = np.array([[0.046, -0.021] * 8, [1.25, 0.0] * 8])[:, :heads_n]
    fig = charts.ablation_heatmap({n: z for n in names}, large=large).to_dict()
    t = theme.theme(large)
    for k in range(panels):
        cells = fig["data"][2 * k]
        if not cells["texttemplate"]:  # many heads: not even "+1.250" at the smallest size fits
            assert heads_n >= 8 and 6 * theme.DIGIT_EM * (t["text"] - 2) * theme.CELL_SPARE > cell_px(fig, k)
            continue
        font, longest = cells["textfont"]["size"], max(len(v) for row in cells["text"] for v in row)
        assert t["text"] - 2 <= font <= t["text"] + 2
        assert longest * theme.DIGIT_EM * font * theme.CELL_SPARE <= cell_px(fig, k), (font, cells["text"])
    first = fig["data"][0]["text"]
    assert first[1][0] == "+1.250"  # one and more: never shortened
    if first[0][0] == "+.046":
        assert first[0][1] == "-.021"
    else:
        assert first[0][:2] == ["+0.046", "-0.021"][:heads_n]


def test_three_ablation_panels_without_large_fonts_stay_a_row_with_smaller_numbers():
    deltas = {n: np.full((2, 4), 0.037) for n in ("validation batches", "probe text", "second copy")}
    fig = charts.ablation_heatmap(deltas).to_dict()
    assert fig["layout"]["xaxis"]["domain"][1] < 0.4  # a row
    assert fig["data"][0]["text"][0][0] == "+.037" and fig["data"][0]["textfont"]["size"] == 12
    eight = charts.ablation_heatmap({n: np.full((2, 8), 0.037) for n in deltas}).to_dict()
    assert list(eight["layout"]["xaxis"]["domain"]) == [0.0, 1.0]  # 8 heads: stacked, each as wide as the chart
