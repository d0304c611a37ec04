"""Small untruths on screen (issue 20, finding 8), each reproduced on today's code first: Toy mode's colour scale,
the planned learning rate after a late warmup change, the residual-stream caption, and workshop links that
clamped silently or dropped every setting for one bad value."""

from __future__ import annotations

import numpy as np
import pytest
from chart_helpers import array

pytest.importorskip("streamlit")

from tinygpt.schedule import lr_at  # noqa: E402
from tinygpt.ui.charts import heatmaps  # noqa: E402
from tinygpt.ui.teach.workshop import parse_workshop  # noqa: E402
from tinygpt.ui.words import runinfo  # noqa: E402


def test_toy_modes_colour_scales_fit_the_numbers_each_panel_shows():
    """Reproduces: the scores' one colour scale spanned the raw Q·Kᵀ (±23 on a demo checkpoint, ±100 later) while
    the scaled scores softmax reads were about ±3, so their cells were all near-white."""
    rng = np.random.default_rng(0)
    qk = rng.normal(size=(10, 10)) * 40  # raw scores, large
    scale = 1 / 16**0.5
    mask = np.tril(np.ones((10, 10), dtype=bool))
    masked = np.where(mask, qk * scale, -np.inf)
    weights = np.exp(masked - masked.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    for per_row in (1, 2, 5):
        fig = heatmaps.attention_detail(qk, qk * scale, mask, masked, weights, list("abcdefghij"), scale=scale,
                                        per_row=per_row, large=True).to_dict()  # fmt: skip
        layout, panels = fig["layout"], fig["data"]
        # the scaled and the masked scores share a scale no wider than the numbers they show
        shown = max(float(np.nanmax(np.abs(array(panels[k]["z"])))) for k in (1, 3))
        axis = layout[panels[1]["coloraxis"]]
        assert axis["cmax"] == pytest.approx(shown, rel=1e-3) and axis["cmin"] == -axis["cmax"]
        raw = layout[panels[0]["coloraxis"]]
        assert raw["cmax"] == pytest.approx(float(np.abs(qk).max()), rel=1e-3)
        assert panels[0]["coloraxis"] != panels[1]["coloraxis"] and panels[1]["coloraxis"] == panels[3]["coloraxis"]
        bars = [layout[a]["colorbar"] for a in {p["coloraxis"] for p in panels}]
        assert all(0 <= b["y"] <= 1.0001 and b["len"] > 0 for b in bars)


def test_the_planned_learning_rate_starts_now_and_follows_the_trainer():
    """Reproduces: warmup_steps moved from 30 to 200 at step 250 redrew the plan's warmup ramp over steps 1-200,
    steps already taken."""
    config = {"train": {"max_steps": 1000, "learning_rate": 1e-3, "min_lr": 1e-4, "warmup_steps": 30}}
    plan = runinfo.lr_schedule(config, {"warmup_steps": 200}, now=250)
    assert plan[0][0] == 251 and plan[-1][0] == 1000  # nothing before the next step
    for step, lr in plan:  # exactly what the trainer will use (metrics' step s is taken with lr_at(s - 1))
        assert lr == pytest.approx(lr_at(step - 1, 1e-3, 1e-4, 200, 1000))
    assert runinfo.lr_schedule(config, {})[0][0] == 1  # before the first step: the whole run


def knob_answer(step: int, old: int, new: int) -> list[dict]:
    return [{"kind": "knob", "knob": "warmup_steps", "request": "r1", "ok": True, "step": step, "old": old, "new": new,
             "message": f"warmup_steps: {old} -> {new} at step {step}"}]  # fmt: skip


def test_a_warmup_change_after_warmup_says_what_it_did():
    config = {"train": {"max_steps": 100_000, "learning_rate": 1e-3, "min_lr": 1e-4, "warmup_steps": 30}}
    kind, text = runinfo.knob_note(knob_answer(250, 30, 60), "r1", "warmup_steps", 60, config)
    assert "warmup was already over (it ended at step 30)" in text and "no measurable effect on training" in text
    kind, text = runinfo.knob_note(knob_answer(250, 30, 1000), "r1", "warmup_steps", 1000, config)
    before, after = lr_at(250, 1e-3, 1e-4, 30, 100_000), lr_at(250, 1e-3, 1e-4, 1000, 100_000)
    assert f"drops from {before:.3g} to {after:.3g} and climbs back until step 1000" in text
    short = {"train": {**config["train"], "max_steps": 300}}
    kind, text = runinfo.knob_note(knob_answer(200, 30, 60), "r1", "warmup_steps", 60, short)
    before, after = lr_at(200, 1e-3, 1e-4, 30, 300), lr_at(200, 1e-3, 1e-4, 60, 300)
    assert f"the cosine decay shifts, so the learning rate goes from {before:.3g} to {after:.3g}" in text
    # A review read "goes from 0.00194 to 0.00194": as many digits as tell the two apart, and the change in percent
    kind, text = runinfo.knob_note(knob_answer(499, 30, 42), "r1", "warmup_steps", 42,
                                   {"train": {"max_steps": 4000, "learning_rate": 2e-3, "min_lr": 2e-4}})  # fmt: skip
    before, after = lr_at(499, 2e-3, 2e-4, 30, 4000), lr_at(499, 2e-3, 2e-4, 42, 4000)
    assert f"{before:.3g}" == f"{after:.3g}"  # the case: three digits do not tell them apart
    assert f"goes from {before:.4g} to {after:.4g} (+0.1%)" in text, text
    kind, text = runinfo.knob_note(knob_answer(10, 30, 60), "r1", "warmup_steps", 60, config)
    # in warmup too, what it did to the rate (a review read only "applied" where the rate doubled)
    assert text.startswith("warmup → 60: applied after step 10, from step 11"), text
    assert "the warmup was still running (to step 30): with 60 warmup steps it now ends at step 60" in text, text
    kind, text = runinfo.knob_note(knob_answer(784, 30, 1030), "r1", "warmup_steps", 1030, config)
    assert "applied after step 784, from step 785" in text and "so from step 785 the learning rate drops" in text


def residual(step: int, resid: list[float], ln: list[float]) -> dict:
    return {"step": step, "residual": {"resid": resid, "ln": ln, "attn": [0.1, 0.1], "mlp": [0.1, 0.1]}}


def test_the_residual_stream_caption_is_read_from_the_chart_data():
    """Reproduces: the caption said the LayerNorm line "stays about the same size whatever the stream does" beside
    a chart where it rose from 8 to 10."""
    from tinygpt.ui.charts.help import CHART_HELP
    from tinygpt.ui.circuits import circuits_view

    assert "same size" not in CHART_HELP["residual_chart"]
    rising = [residual(0, [1.0, 2.0, 3.0], [8.0, 8.0, 8.0]), residual(500, [1.2, 4.0, 9.0], [10.0, 9.6, 8.4])]
    text = circuits_view.residual_caption(rising)
    assert "From step 0 to step 500" in text and "from 3.0 to 9.0 (×3.00)" in text
    assert "layer 0's LayerNorm output from 8.0 to 10.0 (×1.25)" in text and "ln_f's output from 8.0 to 8.4" in text
    assert "changed less than the stream" in text
    same = [residual(0, [1.0, 2.0, 3.0], [8.0, 8.0, 8.0]), residual(500, [1.0, 2.0, 3.3], [10.0, 10.0, 10.0])]
    assert "about as much as the stream" in circuits_view.residual_caption(same)
    assert circuits_view.residual_caption(rising[:1]).startswith("Not enough data")


def test_one_bad_value_in_a_link_is_reported_and_ignored_and_the_rest_applies():
    """Reproduces: num_heads=64 was clamped to 16 with no message, while num_heads=3 dropped the whole link."""
    big = parse_workshop({"num_heads": "64", "mask": "none"})
    assert big.overrides == {"num_heads": 16, "mask": "none"}
    assert any("num_heads=64 is above the largest allowed 16" in e for e in big.errors)
    odd = parse_workshop({"num_heads": "3", "mask": "none", "learning_rate": "0.01"})
    assert odd.overrides == {"mask": "none", "learning_rate": 0.01}
    assert len(odd.errors) == 1 and "num_heads=3 does not divide the width 64" in odd.errors[0]
    wide = parse_workshop({"hidden_dim": "48", "num_heads": "6"})  # heads checked against the link's own width
    assert wide.overrides == {"hidden_dim": 48, "num_heads": 6} and not wide.errors
    clash = parse_workshop({"max_seq_len": "8", "mask": "sliding_window", "window": "4", "dropout": "0.1"})
    assert clash.overrides == {"max_seq_len": 8, "mask": "sliding_window", "window": 4, "dropout": 0.1}


def test_a_warmup_change_while_warming_up_says_the_rate_it_jumps_to():
    """A review: warmup 1,000 -> 200 at step 488 doubled the learning rate (0.00244 -> 0.00488 in metrics.jsonl), and
    the answer said only "warmup -> 200: applied after step 488"."""
    config = {"train": {"max_steps": 3000, "learning_rate": 5e-3, "min_lr": 5e-4, "warmup_steps": 1000}}
    kind, text = runinfo.knob_note(knob_answer(488, 1000, 200), "r1", "warmup_steps", 200, config)
    before, after = lr_at(488, 5e-3, 5e-4, 1000, 3000), lr_at(488, 5e-3, 5e-4, 200, 3000)
    assert "At step 488 the warmup was still running (to step 1000): with 200 warmup steps it is over" in text, text
    assert f"from step 489 the learning rate goes from {before:.3g} to {after:.3g} (+100%)" in text, text
    kind, text = runinfo.knob_note(knob_answer(488, 1000, 600), "r1", "warmup_steps", 600, config)
    assert "with 600 warmup steps it now ends at step 600" in text, text
