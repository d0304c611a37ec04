"""tinygpt/ui/charts/compare.py: several runs on one axis, the settings that differ, next-character bars and
memory by category, read back through `to_dict()`."""

from __future__ import annotations

import numpy as np
import pytest
from chart_helpers import EVALS, METRICS, all_rows, axis_titles, mark_type, title_text, views, y_title_lines

from tinygpt.ui.charts import compare, style, theme

# ---------------------------------------------------------------- sampling


def test_next_char_chart_groups_before_and_after():
    vocab = list(" \nabcdefghij")
    raw = np.linspace(1, 2, len(vocab))
    raw /= raw.sum()
    after = np.zeros_like(raw)
    after[[0, 1, 2]] = [0.5, 0.3, 0.2]
    spec = compare.next_char_chart(vocab, raw, after, top=5).to_dict()
    bars = next(v for v in views(spec) if mark_type(v) == "bar")
    rows = [r for r in all_rows(spec) if "which" in r]
    assert len(rows) == 10 and {r["which"] for r in rows} == {
        "before (temperature 1, no filter)",
        "after temperature / top-k / top-p",
    }
    assert bars["encoding"]["x"]["sort"][:3] == ["␣", "⏎", "a"]  # most likely after filtering first
    assert bars["encoding"]["y"]["title"] == "probability"
    assert "xOffset" in bars["encoding"]
    assert title_text(compare.next_char_chart([], [], []).to_dict()).endswith("nothing sampled yet")


# ---------------------------------------------------------------- runs, settings, memory


def test_compare_chart_overlays_runs():
    spec = compare.compare_chart({"baseline": METRICS, "no warmup": METRICS[:100]}, "loss", evals={"baseline": EVALS})
    spec = spec.to_dict()
    line = next(v for v in views(spec) if mark_type(v) == "line")
    assert line["encoding"]["color"]["scale"]["domain"] == ["baseline", "no warmup"]
    rows = all_rows(spec)
    assert {(r["run"], r["curve"]) for r in rows} == {
        ("baseline", "loss"),
        ("no warmup", "loss"),
        ("baseline", "val_loss"),
    }
    assert axis_titles(spec, "y") == {"loss (nats per char)"}  # the chart's title says which loss
    grad = compare.compare_chart({"a": METRICS}, "grad_norm").to_dict()
    assert next(v for v in views(grad) if mark_type(v) == "line")["encoding"]["y"]["scale"]["type"] == "log"
    compare.compare_chart({}, "loss").to_dict()
    other = compare.compare_chart({"a": [{"step": 1, "attention_grad_norm": 0.0}]}, "attention_grad_norm").to_dict()
    line = next(v for v in views(other) if mark_type(v) == "line")
    assert line["encoding"]["y"]["scale"]["type"] == "log" and axis_titles(other, "y") == {"gradient norm (log scale)"}
    # Large fonts: a title longer than the plot goes on lines, its units on the last (cut before).
    large = compare.compare_chart({"a": METRICS}, "loss", large=True).to_dict()
    assert next(v for v in views(large) if mark_type(v) == "line")["encoding"]["y"]["title"] == [
        "loss", "(nats per char)"]  # fmt: skip


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("field", list(compare.FIELD_TITLES))
def test_every_compare_charts_y_title_fits_half_the_plots_height(large, field):
    """The Experiments page at 1280x720 with Large fonts: beside half-width plots the y titles ran along most of
    the plot ("training loss (nats per character)", "attention gradient norm (log scale)"; read cut as "(nat" and
    "attention gradie" where the page's header covered the chart's top). Every line now fits half the chart's plot
    height at the axis-title font (a character at most 0.6 of the font size wide, style.y_title_lines), in at most
    two lines, the chart's title names the curve, and the units are still said."""
    series = {"a": [{"step": s, field: 1.0 + s} for s in range(5)], "b": [{"step": s, field: 2.0} for s in range(5)]}
    spec = compare.compare_chart(series, field, large=large).to_dict()
    t = theme.theme(large)
    found = y_title_lines(spec)
    assert found and all(lines == found[0][0] for lines, _ in found)  # one title on every layer
    lines = found[0][0]
    assert len(lines) <= 2 and all(len(line) * style.CHAR_EM * t["axis_title"] <= 0.5 * t["height"] for line in lines)
    said, short = " ".join(lines), compare.Y_TITLES.get(field) or compare.FIELD_TITLES[field]
    assert said == short + (" (log scale)" if field.endswith("grad_norm") and "log" not in short else "")
    if "(" in compare.FIELD_TITLES[field]:  # units in the full title: on the axis too
        assert compare.FIELD_TITLES[field].rsplit(" (", 1)[1].split()[0].rstrip(")") in said
    assert title_text(spec) == compare.FIELD_TITLES[field].split(" (")[0].capitalize()


@pytest.mark.parametrize("large", [False, True])
def test_the_memory_charts_y_title_fits(large):
    t = theme.theme(large)
    rows = [{"label": "T=64", "category": "parameters", "bytes": 4e6}]
    for lines, _ in y_title_lines(compare.memory_chart(rows, large=large).to_dict()):
        assert all(len(line) * style.CHAR_EM * t["axis_title"] <= 0.5 * t["height"] for line in lines)


def test_config_diff_returns_only_the_settings_that_differ():
    a = {"run_id": "aaaaaaaa", "model": {"num_heads": 4, "hidden_dim": 64}, "train": {"lr": 1e-3, "betas": [0.9, 0.95]}}
    b = {"run_id": "bbbbbbbb", "model": {"num_heads": 2, "hidden_dim": 64}, "train": {"lr": 1e-3, "betas": [0.9, 0.99]}}
    c = {"run_id": "cccccccc", "model": {"num_heads": 4, "hidden_dim": 64, "dropout": 0.1}, "train": {"lr": 1e-3}}
    rows = compare.config_diff({"A": a, "B": b, "C": c})
    assert rows == [
        {"setting": "model.num_heads", "A": "4", "B": "2", "C": "4"},
        {"setting": "train.betas", "A": "[0.9,0.95]", "B": "[0.9,0.99]", "C": "—"},
        {"setting": "model.dropout", "A": "—", "B": "—", "C": "0.1"},
    ]
    mixed = compare.config_diff({"A": {"mask": "causal", "heads": 4}, "B": {"mask": None, "heads": 2}})
    assert mixed == [{"setting": "mask", "A": "causal", "B": "null"}, {"setting": "heads", "A": "4", "B": "2"}]
    assert compare.config_diff({"A": a, "A2": dict(a)}) == []
    assert compare.config_diff({}) == []
    # a hash has no space to wrap at: its start only (the full 64 characters hid 4 of 6 runs at 1280 px, a review)
    texts = compare.config_diff({"A": {"data": {"text_sha256": "c260ef6e40e4" + "a" * 52}},
                                 "B": {"data": {"text_sha256": "2b43fbb6a1d9" + "b" * 52}}})  # fmt: skip
    assert texts == [{"setting": "data.text_sha256", "A": "c260ef6e40e4…", "B": "2b43fbb6a1d9…"}]


def test_settings_that_differ_leave_out_whose_run_it_is():
    """Issue 36: Compare listed a "learner.id 343270092a08349f" row, which is not a setting."""
    anna = {"learner": {"id": "343270092a08349f", "name": "anna"}, "model": {"num_heads": 4}}
    ben = {"learner": {"id": "9d1e55aa07c3b2f0", "name": "ben"}, "model": {"num_heads": 2}}
    rows = compare.config_diff({"2L×4H×64 · shakespeare · LR 0.002": anna, "2L×2H×64 · shakespeare · LR 0.002": ben})
    assert [r["setting"] for r in rows] == ["model.num_heads"]
    assert list(rows[0])[1:] == ["2L×4H×64 · shakespeare · LR 0.002", "2L×2H×64 · shakespeare · LR 0.002"]


def test_memory_chart_stacks_megabytes_by_category():
    rows = [
        {"label": label, "category": cat, "bytes": n * scale}
        for label, scale in (("T=64", 1), ("T=128", 2))
        for cat, n in zip(compare.MEMORY_CATEGORIES, (4e6, 4e6, 8e6, 1e6, 5e5), strict=True)
    ]
    spec = compare.memory_chart(rows, title="Memory (estimated)").to_dict()
    assert title_text(spec) == "Memory (estimated)"
    bars = next(v for v in views(spec) if mark_type(v) == "bar")
    assert bars["encoding"]["y"]["title"] == "memory (MB)" and bars["encoding"]["y"]["stack"] == "zero"
    assert bars["encoding"]["color"]["scale"]["domain"] == list(compare.MEMORY_CATEGORIES)
    assert bars["encoding"]["x"]["sort"] == ["T=64", "T=128"]
    assert [r for r in all_rows(spec) if r.get("mb")][0]["mb"] == 4.0
    assert title_text(compare.memory_chart([]).to_dict()).endswith("no data")


# ---------------------------------------------------------------- the Room's grid


def _curve(steps: int) -> list[dict]:
    return [{"step": s, "loss": 4.0 - s / steps} for s in range(1, steps + 1, max(1, steps // 50))]


def test_the_room_grid_gives_each_panel_its_own_steps_in_the_order_it_is_given():
    """The review: one x axis ran to the lecture run's 25,000 steps, so every 200-3,000-step run was a vertical line
    at 0; the grid was sorted by name while the page said newest first; and "Every learner's training loss" drew
    the instructor's 22 runs among them."""
    learners, yours = "Learners' runs", "The instructor's runs (lecture and prepared)"
    series = {"zoe · short": _curve(200), "anna · long": _curve(3000), "teacher · lecture": _curve(25_000),
              "teacher · lab": _curve(200)}  # fmt: skip
    groups = {"zoe · short": learners, "anna · long": learners, "teacher · lecture": yours, "teacher · lab": yours}
    spec = compare.room_chart(series, groups=groups, large=True).to_dict()
    sections = spec["vconcat"]
    assert [s["title"]["text"] for s in sections] == [learners, yours]  # learners' first, each section named
    parts = (["zoe · short", "anna · long"], ["teacher · lecture", "teacher · lab"])
    for section, names in zip(sections, parts, strict=True):
        assert section["facet"]["sort"] == names  # as given (newest first), not by name
        assert section["resolve"]["scale"]["x"] == "independent"  # each panel its own step range
        drawn = spec["datasets"][section["data"]["name"]]
        assert list(dict.fromkeys(r["run"] for r in drawn)) == names
        assert max(r["step"] for r in drawn if r["run"] == names[0]) < 25_000
    title = spec["title"]
    assert title["text"] == "Training loss, one panel per run" and "learner" not in title["text"]
    assert title["subtitle"][0] == "Learners' runs, then the instructor's runs (lecture and prepared)"
    assert title["subtitle"][1] == f"{compare.ROOM_ORDER}; each panel its own steps"
    x = sections[0]["spec"]["encoding"]["x"]["axis"]
    assert "'k'" in x["labelExpr"] and x["tickCount"] == 4  # "25k": four labels fit a 210 px panel


def test_the_room_grid_without_sections_is_one_grid_in_the_given_order():
    spec = compare.room_chart({"b · run": _curve(100), "a · run": _curve(30)}).to_dict()
    assert "vconcat" not in spec and spec["facet"]["sort"] == ["b · run", "a · run"]
    assert spec["resolve"]["scale"]["x"] == "independent"
    assert spec["title"]["subtitle"] == [f"{compare.ROOM_ORDER}; each panel its own steps"]
    empty = compare.room_chart({}).to_dict()  # no runs: one empty panel says so
    assert [r["run"] for d in empty["datasets"].values() for r in d] == ["no runs yet"]


def test_the_compare_hover_names_its_x_and_its_curve_in_words():
    """A review read "step 57.946" on the seconds axis and "curve val_loss" in the hover."""
    import json

    metrics = {"A": [{"step": s, "loss": 3.0 - s / 100, "time": float(s)} for s in range(1, 50)]}
    evals = {"A": [{"step": 40, "val_loss": 2.5, "time": 40.0}]}
    for seconds, x_name in ((True, "seconds"), (False, "step")):
        text = json.dumps(compare.compare_chart(metrics, "loss", evals, seconds=seconds).to_dict())
        assert f'"title": "{x_name}"' in text and '"field": "curve_words"' in text
        assert '\\"val_loss\\": \\"validation loss\\"' in text and '\\"loss\\": \\"training loss\\"' in text


def test_the_seconds_axis_counts_training_time_so_a_pause_is_not_slowness():
    # Steps 1-3 one second apart, then a 600 s pause before step 4: the wall clock says 603 s, the run trained 4.
    paused = [{"step": s, "loss": 3.0, "time": t, "clock": c}
              for s, t, c in ((1, 0.0, 0.0), (2, 1.0, 1.0), (3, 2.0, 2.0), (4, 603.0, 3.0))]  # fmt: skip
    spec = compare.compare_chart({"paused": paused}, "loss", seconds=True).to_dict()
    assert max(r["step"] for r in spec["datasets"]["compare"]) == 3.0
    older = [{k: v for k, v in r.items() if k != "clock"} for r in paused]  # a run written before the clock existed
    spec = compare.compare_chart({"older": older}, "loss", seconds=True).to_dict()
    assert max(r["step"] for r in spec["datasets"]["compare"]) == 603.0


def test_more_runs_than_the_grid_holds_read_one_line_a_run():
    """A review: Compare's settings grid for 6 runs was 1,110 px wide in a 778 px column at 1280x720, two runs off
    the screen. Up to GRID_RUNS runs side by side; more, one row a run with its values."""
    configs = {f"run {i}": {"model": {"mask": m, "num_heads": 4}} for i, m in enumerate(["causal", "none"] * 2)}
    rows = compare.config_diff(configs)
    shown = compare.shown_diff(rows)
    assert shown == [{"run": f"run {i}", "its settings where the runs differ": f"model.mask {m}"}
                     for i, m in enumerate(["causal", "none"] * 2)]  # fmt: skip
    assert compare.shown_diff(rows[:0]) == [] and compare.shown_diff(
        compare.config_diff(dict(list(configs.items())[:3]))
    ) == [{"setting": "model.mask", "run 0": "causal", "run 1": "none", "run 2": "causal"}]
