"""One vocabulary for knob changes (issue 21, "one idea, many spellings"): every place that names a change writes it
the one way (tinygpt/ui/words/knob_words.py), and the three charts that mark changes draw the one builder's rows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tinygpt.config import LIVE_KNOBS
from tinygpt.runs.names import settings_name
from tinygpt.ui.charts import circuits, compare, curves
from tinygpt.ui.words import knob_words, runinfo

UI = Path(__file__).resolve().parents[3] / "tinygpt" / "ui"
CONFIG = {
    "model": {"num_layers": 2, "num_heads": 4, "hidden_dim": 64, "mask": "causal", "attn_scale": "head_dim"},
    "train": {"learning_rate": 0.002, "min_lr": 0.0002},
    "data": {"source": "synthetic:copy"},
}


def knob(name, old, new, step, **extra):
    return {"kind": "knob", "knob": name, "ok": True, "old": old, "new": new, "step": step, **extra}


EVENTS = [
    knob("learning_rate", 0.002, 0.004, 40),
    knob("min_lr", 0.0002, 0.0004, 40, coupled_to="learning_rate"),  # part of the LR change: no label of its own
    knob("attn_scale_mult", 1.0, 2.5, 60),
    {"kind": "knob", "knob": "window", "ok": False, "error": "too long", "step": 70},  # refused: no label
    knob("mask", "causal", "none", 80),
    knob("ablated_heads", "", "L1H1", 90),
]
LABELS = ["LR 0.002→0.004 @40", "scale × 1→2.5 @60", "mask causal→none @80", "heads off none→L1H1 @90"]


def test_every_live_knob_and_every_live_field_of_the_train_form_has_a_short_word():
    from tinygpt.ui.train import settings

    assert set(knob_words.KNOB_WORDS) == set(LIVE_KNOBS)
    assert {f.name for f in settings.KNOB_FIELDS} <= set(knob_words.KNOB_WORDS)
    # Short: a chart lists each change on one line, and the Room chart's 210 px panels show a run name's parts
    assert max(len(word) for word in knob_words.KNOB_WORDS.values()) <= 12


def test_one_format_old_to_new_at_the_step():
    assert [knob_words.change_label(e) for e in knob_words.shown_changes(EVENTS)] == LABELS
    assert knob_words.change_label(EVENTS[4], old=False) == "mask→none @80"
    assert knob_words.knob_word("a_future_knob") == "a_future_knob"  # an older or newer run's knob: by its name
    assert knob_words.knob_marks(EVENTS[:1], run="A") == [{"step": 40, "label": "A: LR 0.002→0.004 @40", "run": "A"}]


def test_the_four_label_sites_write_a_change_the_same_way():
    metrics = [{"step": s, "loss": 3.0} for s in range(1, 100)]
    chart = [r["label"] for r in curves.loss_chart(metrics, [], EVENTS, 65).to_dict()["datasets"]["knobs"]]
    rows = [{"step": s, "name": "L0H0", "role": "previous", "score": 0.5, "baseline": 0.1} for s in range(0, 100, 10)]
    spec = circuits.role_history_chart(rows, events=EVENTS).to_dict()
    circuit = sorted({r["label"] for rs in spec["datasets"].values() for r in rs if "label" in r}, key=LABELS.index)
    table = runinfo.knob_history(EVENTS)  # the Runs and Room tables' "live changes"
    assert chart == circuit == table == LABELS
    # A run's name is its settings alone (tinygpt.runs.names): the changes are these labels, not part of it
    name = settings_name(CONFIG)
    assert name.split(" · ")[2] == "LR 0.002" and "@" not in name  # the config's learning rate in the same word
    evals = [{"step": 95, "val_loss": 0.1}]
    assert runinfo.best_eval(CONFIG, EVENTS, evals)[2] == ["scale × 2.5", "mask none", "heads off L1H1", "LR 0.004"]


@pytest.mark.parametrize("module", [curves, compare, circuits], ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_the_three_charts_draw_the_one_builders_rows(module, monkeypatch):
    calls = []

    def builder(events, run=None):
        calls.append((events, run))
        return [{"step": 50, "label": "from the builder", **({"run": run} if run is not None else {})}]

    monkeypatch.setattr(module, "knob_marks", builder)
    metrics = [{"step": s, "loss": 3.0} for s in range(1, 100)]
    if module is curves:
        spec = curves.loss_chart(metrics, [], EVENTS, 65).to_dict()
    elif module is compare:
        spec = compare.compare_chart({"A": metrics}, "loss", events={"A": EVENTS}).to_dict()
    else:
        rows = [{"step": s, "name": "L0H0", "role": "previous", "score": 0.5, "baseline": 0.1} for s in range(0, 99, 9)]
        spec = circuits.role_history_chart(rows, events=EVENTS).to_dict()
    labels = {r.get("label") for rows in spec["datasets"].values() for r in rows}
    assert calls and calls[0][0] is EVENTS and "from the builder" in labels


def test_no_other_ui_module_keeps_a_knob_word_list():
    """The old copies stay deleted: no table keyed by live knob names outside knob_words (the charts had "LR",
    the tables "lr"), so a new knob gets its word in one place."""
    offenders = []
    for path in sorted(UI.rglob("*.py")):
        if path.name == "knob_words.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                if len(keys & set(LIVE_KNOBS)) >= 3:
                    offenders.append(f"{path.name}:{node.lineno} a dict of knob names")
    assert offenders == []


def test_a_long_run_name_is_cut_in_a_comparisons_list_of_changes():
    """The projector's layout probe: "① 2L×2H×32 · text 150c6b · LR 0.002 · ma…" ran past the chart's right edge at
    Large fonts once names carried their text's hash. The run's colour and the runs' legend say it whole."""
    name = "2L×2H×32 · text 150c6b · LR 0.002 · mask none"
    [mark] = knob_words.knob_marks(EVENTS[:1], run=name)
    assert mark["label"] == "2L×2H×32 · … · mask none: LR 0.002→0.004 @40" and mark["run"] == name
    assert len(mark["label"].split(": ")[0]) == knob_words.RUN_PREFIX
    # cut in the middle: two runs whose names differ at their ends stay apart (a review read two alike entries)
    a, b = (knob_words.knob_marks(EVENTS[:1], run=f"2L×4H×64 · sched.py · LR {lr}")[0]["label"] for lr in (2, 6))
    assert a != b


def test_a_branch_change_is_said_as_one_not_as_a_live_change():
    """The Room's "changes" read a branch's "LR 0.002→0.005 @200" as a learner turning the knob live (a review)."""
    from tinygpt.ui.words.knob_words import change_label

    event = {"kind": "knob", "knob": "learning_rate", "old": 0.002, "new": 0.005, "step": 200, "ok": True}
    assert change_label(event) == "LR 0.002→0.005 @200"
    assert change_label({**event, "branch": True}) == "LR 0.002→0.005 @200 (branch)"
