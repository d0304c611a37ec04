"""Captions, labels and messages follow the data they describe (truthful views): each test reproduces a case
where the old text was written for the usual case and was wrong for this one."""

from __future__ import annotations

import pytest
import torch

from tinygpt.config import TransformerConfig
from tinygpt.errors import TinyGPTError
from tinygpt.model import TinyGPT
from tinygpt.ui.charts import curves
from tinygpt.ui.charts import help as help_text
from tinygpt.ui.words import runinfo


def test_status_line_says_the_state_once():
    line = runinfo.status_line({"state": "finished", "reason": "finished: reached max_steps 300", "step": 300}, [])
    assert line.endswith("finished: reached max_steps 300") and "finished: finished" not in line
    paused = runinfo.status_line({"state": "paused", "reason": "paused: nobody watched for 10 min"}, [])
    assert "paused: paused" not in paused and paused.endswith("paused: nobody watched for 10 min")


@pytest.mark.parametrize("mode", ["causal", "none", "off_by_one", "sliding_window"])
def test_the_mask_caption_describes_the_mask_in_force(mode):
    caption = help_text.mask_caption(mode, 8)
    assert caption.lower().startswith({"off_by_one": "off by one", "sliding_window": "sliding window"}.get(mode, mode))
    if mode == "sliding_window":
        assert "last 8 positions" in caption
    if mode != "causal":
        assert "lower-triangular" not in caption


def test_the_step_by_step_caption_says_the_real_scale():
    unscaled = help_text.detail_caption("none", 1.0, 16, "causal", 16)
    assert "1/√d_head" not in unscaled.split("(")[1].split(")")[0] and "multiplied by 1 (no scaling)." in unscaled
    scaled = help_text.detail_caption("head_dim", 0.25, 16, "causal", 16)
    assert "0.25 (1/√d_head)" in scaled
    doubled = help_text.detail_caption("head_dim", 0.5, 16, "causal", 16)
    assert "× 2" in doubled
    # the softmax lab's ×24 on no scaling: not "multiplied by 24 (1 (no scaling))" (a review)
    overflow = help_text.detail_caption("none", 24.0, 16, "causal", 16, multiplier=24.0)
    assert "multiplied by 24 (no 1/√d scaling × 24)." in overflow and "(no scaling)" not in overflow, overflow
    assert "softmax saturates. " in overflow


def test_knob_markers_show_applied_changes_in_the_widgets_words():
    events = [
        {"kind": "knob", "knob": "attn_scale_mult", "ok": True, "old": 1.0, "new": 2.5, "step": 40},
        {"kind": "knob", "knob": "learning_rate", "ok": True, "old": 0.002, "new": 0.004, "step": 60},
        {
            "kind": "knob",
            "knob": "min_lr",
            "ok": True,
            "old": 2e-4,
            "new": 4e-4,
            "step": 60,
            "coupled_to": "learning_rate",
        },
        {"kind": "knob", "knob": "window", "ok": False, "error": "too long", "step": 70},
        {"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "causal", "step": 80},
    ]
    metrics = [{"step": s, "loss": 3.0} for s in range(1, 100)]
    spec = curves.loss_chart(metrics, [], events, 65).to_dict()
    labels = [row["label"] for row in spec["datasets"]["knobs"]]
    assert labels == ["scale × 1→2.5 @40", "LR 0.002→0.004 @60"]  # no refused, unchanged or coupled marker


def test_a_dtype_error_names_each_dtype_once():
    model = TinyGPT(TransformerConfig(vocab_size=5, hidden_dim=8, num_layers=1, num_heads=2, max_seq_len=4))
    with pytest.raises(TinyGPTError) as info:
        model(torch.zeros(1, 3))
    assert "int64 or int32," in str(info.value) and "int64 or int32 or int64" not in str(info.value)
