"""One vocabulary for live knob changes: the word each knob goes by, the one way a change is written, and the one
builder of knob-change marker rows.

Every place that names a change uses it: the markers of the loss, gradient, comparison and head-role charts, the
Runs and Room tables' "live changes", run names, and the knobs a best val loss was reached under. Before, four
places spelled the same change four ways ("@1810 mask causal→none", "mask causal → none @1810",
"mask→none@1810", "@1810 mask→none") with two word lists ("LR" on charts, "lr" in tables), and the three charts
built their markers three times.

The words are the Train form's, shortened where a label must stay small: each entry under a chart is one line,
and at projector fonts a run name is split one part a line under the Room chart's 210 px panels. The widgets'
full labels stay in the form's field table (tinygpt/ui/train/settings.py), which cannot be imported here: it pulls in
Streamlit (the widget keys) and torch (the corpora), and the charts that need these words must import neither.

Pure and light (no Streamlit, no plotting library); tested in tests/ui/words/test_knob_words.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tinygpt.config import LIVE_KNOBS
from tinygpt.runs.knobs import knob_changes

KNOB_WORDS = {
    "learning_rate": "LR",
    "min_lr": "min LR",
    "warmup_steps": "warmup",
    "max_grad_norm": "clip",
    "weight_decay": "weight decay",
    "attn_scale": "scaling",
    "attn_scale_mult": "scale ×",
    "mask": "mask",
    "window": "window",
    "ablated_heads": "heads off",  # the Circuits page's "Heads to switch off"
}
assert set(KNOB_WORDS) == set(LIVE_KNOBS), "every live knob needs its word"


def knob_word(knob: Any) -> str:
    """The word a knob goes by in every label ("learning_rate" -> "LR"); an unknown knob (an older run's) by name."""
    return KNOB_WORDS.get(str(knob), str(knob))


def knob_value(value: Any) -> str:
    """A knob's value as labels write it: floats short (0.002, 2e-05), no heads switched off ("") as "none"."""
    if isinstance(value, float):
        return f"{value:g}"
    return "none" if value == "" else str(value)


def shown_changes(events: Iterable[dict]) -> list[dict]:
    """The knob changes a run is labelled with, in order: applied ones that changed a value, without the min_lr
    move that follows a learning-rate change (it is part of that change, not a second one)."""
    return [e for e in knob_changes(events) if not e.get("coupled_to")]


def change_label(event: dict, old: bool = True) -> str:
    """The one way a change is written: "mask causal→none @1810", or "mask→none @1810" without the `old` value
    (a run name lists every change and only needs where each went). The step comes last, so a list of changes
    reads as what changed first; on a chart each entry is tied to its rule by its number (style.numbered_markers)."""
    before = f" {knob_value(event.get('old'))}" if old else ""
    # A branch's own change is no live change of a knob: the Room's "changes" read a branch's "LR 0.002→0.005 @200"
    # as a learner turning it while the run trained (a review)
    how = " (branch)" if event.get("branch") else ""
    return f"{knob_word(event.get('knob'))}{before}→{knob_value(event.get('new'))} @{int(event.get('step') or 0)}{how}"


RUN_PREFIX = 24  # characters of a run's name before its change in a comparison's list of changes


def knob_marks(events: Iterable[dict] | None, run: str | None = None) -> list[dict]:
    """The marker rows of a run's knob changes, {"step", "label"}, for every chart that marks them (the curves,
    the comparison and the head roles; style.numbered_markers lays them out). With `run`, each row also carries
    "run" and its label starts with it ("A: mask causal→none @1810"), for a chart of several runs."""
    # The run's name cut to RUN_PREFIX characters: its colour and the runs' legend say it whole, and a name with
    # its text's hash ("… · text 150c6b · …") ran an entry past the chart's right edge at Large fonts. Cut in its
    # middle: names differ most at their ends ("… · LR 0.002", "… #2"); cut at its end, two runs' changes read
    # alike, "2L×4H×64 · sched.py · L…" (a review)
    half = (RUN_PREFIX - 1) // 2
    short = run if run is None or len(run) <= RUN_PREFIX else f"{run[:half]}…{run[-(RUN_PREFIX - 1 - half):]}"
    prefix = f"{short}: " if run is not None else ""
    rows = [{"step": int(e.get("step") or 0), "label": prefix + change_label(e)} for e in shown_changes(events or [])]
    return [{**row, "run": run} for row in rows] if run is not None else rows
