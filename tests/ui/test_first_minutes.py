"""What a newcomer reads in the first five minutes, checked true (issue 36, items 2 and 6): the corpus caption,
the status line, the empty charts' axes, the Probe field, the Train page's sample."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt import data  # noqa: E402
from tinygpt.ui.screen import fonts
from tinygpt.ui.train import settings, train_keys  # noqa: E402
from tinygpt.ui.words import runinfo  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_the_corpus_caption_says_what_loading_does(monkeypatch, runs_dir):
    """Issue 36 item 2: it said "downloaded once on first use" of a copy that ships in the package."""

    def no_network(*args, **kwargs):
        raise AssertionError("Tiny Shakespeare was fetched from the network")

    monkeypatch.delenv(data.SHAKESPEARE_ENV, raising=False)
    monkeypatch.setattr(data, "urlopen", no_network)
    text = data.load_shakespeare(cache_dir=runs_dir / "no-cache")
    assert len(text.encode()) == data.SHAKESPEARE_BYTES  # what the caption's "1.1 MB" is
    assert "nothing is downloaded" in settings.SHAKESPEARE_CAPTION and "first use" not in settings.SHAKESPEARE_CAPTION
    assert f"{data.SHAKESPEARE_BYTES / 1e6:.1f} MB" in settings.SHAKESPEARE_CAPTION

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    at.selectbox(key=train_keys.W_SOURCE).set_value(settings.SOURCE_SHAKESPEARE).run()
    assert settings.SHAKESPEARE_CAPTION in [c.value for c in at.caption]
    assert not any("downloaded once" in str(c.value) for c in at.caption)


def test_the_status_line_has_no_empty_parts():
    """Issue 36 item 6: a starting run read "ETA - · · starting"."""
    line = runinfo.status_line({"state": "starting", "step": 0, "max_steps": 300}, [])
    assert " · · " not in line and "ETA -" not in line and line.endswith("starting")


# ---------------------------------------------------------------- the charts a Train press draws first


def _layers_with_empty_data(spec: dict) -> list[str]:
    """The layers (at any depth) that draw no row, and whose x or y domain Vega would compute from that nothing."""
    import re

    def fixed(layer: dict) -> bool:
        encoding = layer.get("encoding", {})
        return all("domain" in encoding[c].get("scale", {}) for c in ("x", "y") if c in encoding)

    def drawn(layer: dict) -> bool:
        rows = spec["datasets"].get(layer["data"]["name"]) or []
        for step in layer.get("transform", []):
            test = re.match(r"^\(?datum\.(\w+) ===? '([^']*)'\)?$", str(step.get("filter", "")))
            rows = [r for r in rows if str(r.get(test.group(1))) == test.group(2)] if test else rows
        return bool(rows)

    found = []

    def walk(view: dict) -> None:
        for layer in view.get("layer", []):
            if "name" in (layer.get("data") or {}) and not drawn(layer) and not fixed(layer):
                found.append(layer["data"]["name"])
        for part in (*view.get("vconcat", []), *view.get("hconcat", [])):
            walk(part)

    walk(spec)
    return found


def _no_dangling_selections(spec: dict) -> None:
    """Every selection belongs to a view that is drawn, and every selection a layer reads is defined."""
    import json
    import re

    drawn = json.dumps({k: v for k, v in spec.items() if k not in ("datasets", "params")})
    views = set(re.findall(r'"name": "(view_[^"]+)"', drawn))
    assert all(set(p.get("views", [])) <= views for p in spec.get("params", [])), spec.get("params")
    read = set(re.findall(r'"param": "([^"]+)"', drawn))
    assert read <= {p["name"] for p in spec.get("params", [])}, read


def _valid(spec: dict) -> None:
    import altair as alt

    alt.LayerChart.from_dict(spec, validate=True)  # still a Vega-Lite spec the schema accepts


def test_no_chart_hands_vega_an_empty_dataset():
    """Issue 36 item 6: ~20 "Infinite extent for field "step"" warnings in the browser's console at every Train
    press. Vega computes a shared axis from one extent per layer's dataset, and warns for each empty one: the charts
    waiting for their first step, and the knob, non-finite, target and previous-run layers with nothing yet."""
    from tinygpt.ui.charts import compare, curves, parts

    metrics = [{"step": s, "loss": 3 - s / 100, "lr": 1e-3, "grad_norm": 1.0, "time": s * 0.1,
                "layer_grad_norms": {"emb": 0.1, "L0.attn": 0.2}} for s in range(1, 50)]  # fmt: skip
    plan = [(s, 1e-3) for s in range(1, 300)]
    for records in ([], metrics):  # waiting, then steps but no evaluation, knob change or non-finite step yet
        charts = {
            "loss": curves.loss_chart(records, [], [], 65),
            "lr": curves.lr_chart(records, 10 if records else None, plan),
            "grad": curves.grad_norm_chart(records, 1.0, []),
            "layers": parts.layer_grad_chart(records),
            "compare": compare.compare_chart({"a": records, "b": records[:10]}, "loss"),
            "compare grad": compare.compare_chart({"a": records}, "grad_norm", seconds=True),
        }
        for name, chart in charts.items():
            spec = chart.to_dict()
            assert not _layers_with_empty_data(spec), (name, bool(records))
            _no_dangling_selections(spec)
            if "layer" in spec:
                assert spec["layer"], name  # something is always drawn: the waiting chart keeps its axes
                _valid(spec)
    waiting = curves.lr_chart([]).to_dict()
    assert waiting["layer"][0]["encoding"]["x"]["scale"]["domain"] == [0, 1]  # fixed: no extent to compute
    events = [{"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "none", "step": 20}]
    marked = curves.loss_chart(metrics, [], events, 65).to_dict()
    assert "knobs" in {layer.get("data", {}).get("name") for layer in marked["layer"]}  # drawn once there is one


def test_the_waiting_loss_chart_reads_from_zero_not_a_lone_tick():
    """Issue 36 item 6: its only value, the uniform guess ln(65), made one y tick reading "4.174387"."""
    from tinygpt.ui.charts import curves

    spec = curves.loss_chart([], [], [], 65).to_dict()
    scales = [layer["encoding"]["y"]["scale"] for layer in spec["layer"] if "y" in layer.get("encoding", {})]
    assert scales and all(scale.get("zero") is True for scale in scales)
    live = curves.loss_chart([{"step": 1, "loss": 4.0}], [], [], 65).to_dict()
    live_scales = [layer["encoding"]["y"].get("scale", {}) for layer in live["layer"] if "y" in layer["encoding"]]
    assert all(scale.get("zero") is False for scale in live_scales if "zero" in scale)


def test_the_entropy_baseline_label_sits_above_the_heads_lines():
    """Issue 36 item 6: the label hung under its line, where every head starts (and no head goes above it)."""
    import math

    from tinygpt.ui.charts import parts

    rows = [{"step": s, "layer": 0, "head": h, "entropy": 2.5 - s / 100, "max_weight": 0.3} for s in range(0, 100, 10)
            for h in range(2)]  # fmt: skip
    spec = parts.head_stats_chart(rows, uniform=(2.55, "even spread 2.55")).to_dict()
    texts = []

    def walk(node):
        if isinstance(node, dict):
            mark = node.get("mark")
            if isinstance(mark, dict) and mark.get("type") == "text":
                texts.append((mark, node["encoding"]["y"]["scale"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    [(mark, scale)] = texts
    assert mark["baseline"] == "bottom" and mark["dy"] < 0
    assert scale["domainMax"] > 2.55 and math.isclose(scale["domainMax"], round(2.55 * 1.15, 2))


def test_the_train_pages_sample_starts_with_its_prompt():
    """Issue 36 item 6: the continuation alone was printed, so the sample started mid-word."""
    heading, text = runinfo.sample_lines({"step": 300, "prompt": "ROMEO:\nBut sof", "text": "t, what light"})
    assert text == "ROMEO:\nBut soft, what light"
    assert "step 300" in heading and "first 14 characters are the prompt" in heading
    assert runinfo.sample_lines({"step": 1, "text": "abc"}) == ("**Sample at step 1**", "abc")


# ---------------------------------------------------------------- the Runs page at Large fonts


def test_the_runs_table_and_buttons_fit_large_fonts(runs_dir):
    """Issue 36 item 6: at 1280 px with Large fonts the Runs table's fourteen columns were cut and five buttons in
    a row read "Download b…" and "Share (read-…"."""
    from helpers import write_run

    run_id = write_run(runs_dir)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    first, every = at.dataframe[0], at.dataframe[1]
    assert list(first.proto.column_order) == runinfo.RUNS_TABLE_FIRST and runinfo.RUNS_TABLE_FIRST[0] == "name"
    assert not every.proto.column_order and "run" in every.value.columns  # the id one click away

    def buttons() -> list[float]:  # the page's first five columns: its button row(s)
        return [round(c.weight, 2) for c in at.columns][:5]

    assert buttons() == [0.2] * 5  # one row at the usual fonts
    at.toggle(key=fonts.W_LARGE).set_value(True).run()
    assert not at.exception, at.exception
    assert buttons() == [0.33] * 3 + [0.5] * 2  # two rows at Large fonts


# ---------------------------------------------------------------- the status line's pace


def _timed_run(steps: int, step_s: float = 0.1, eval_every: int = 100, eval_s: float = 5.0) -> list[dict]:
    """Step records as a worker writes them: each step `step_s` of wall clock, an evaluation every `eval_every`."""
    clock, out = 0.0, []
    for s in range(1, steps + 1):
        clock += step_s + (eval_s if s % eval_every == 0 else 0.0)
        out.append({"step": s, "time": clock, "tokens_per_s": 5000.0 if s % 2 else 150.0})
    return out


def test_the_eta_is_the_runs_own_pace_evaluations_included():
    """Issue 36 item 4: an ETA from the run's own pace, steady as evaluations come and go, and a smoothed
    tokens/s (one step's figure jumped between 146 and 5,827)."""
    true_left = 570 * 0.1 + 5 * 5.0  # steps 431-1000 and the five evaluations among them
    after_eval = runinfo.eta_seconds(_timed_run(430), 430, 1000)
    between = runinfo.eta_seconds(_timed_run(460), 460, 1000)
    assert abs(after_eval - true_left) / true_left < 0.1
    assert abs(between - after_eval) / after_eval < 0.1  # 50 steps of pace made these 114 s and 54 s
    assert runinfo.eta_seconds(_timed_run(5), 5, 1000) is None  # five steps are no pace to promise by
    line = runinfo.status_line({"state": "running", "step": 460, "max_steps": 1000}, _timed_run(460))
    assert "291 tokens/s" in line  # the harmonic mean of 5,000 and 150: tokens over step time, not one step's
    assert f"ETA {runinfo.format_duration(between)}" in line


def test_a_branchs_eta_is_its_own_pace_not_its_parents_copied_history():
    """A review's branch read "ETA 15 min 01 s" and ten seconds later 5 min 27 s: its first records are its
    parent's, timed when the parent trained, and the window spanned both."""
    parent = _timed_run(3200, step_s=0.1, eval_s=0.0)
    branch = [{"step": 3200 + s, "time": 10_000.0 + 0.2 * s, "tokens_per_s": 2500.0} for s in range(1, 51)]
    eta = runinfo.eta_seconds(parent + branch, 3250, 4000)
    assert eta == pytest.approx(750 * 0.2)  # the branch's own 0.2 s a step
