"""A learner's record of the lesson: one self-contained HTML file (inline CSS, inline SVG, no script, no link to
anything) with every step's title and question, their prediction, what the check saw and how that grades it, and
their runs' names with final train and validation losses and a small loss curve drawn here.

Nothing leaves the machine: the learner downloads it from their lesson pane (tinygpt/ui/teach/prediction_view.py) and it
opens offline. Every text a person typed (names, answers, run names) is HTML-escaped. Left out: the Train page's
charts themselves (a sparkline of the training loss stands in for them; no browser is needed to draw it).

`record_html` is pure (plain dicts in, a string out); `step_entries` and `learner_runs` read the prediction book and
the run folders. No Streamlit. Tested in tests/ui/teach/test_record.py.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tinygpt.errors import RunStoreError
from tinygpt.runs.owners import run_learner
from tinygpt.runs.store import RunStore
from tinygpt.ui.host.runlist import run_names
from tinygpt.ui.teach import predictions
from tinygpt.ui.teach.predictions import NOT_DECIDED, NOT_SURE, RIGHT, WRONG, PredictionBook

GRADE_WORDS = {RIGHT: "right", WRONG: "wrong", NOT_DECIDED: "not decided: the check did not say",
               NOT_SURE: "you were not sure"}  # fmt: skip
OUTCOME_WORDS = {predictions.SEEN: "the check saw it", predictions.NOT_SEEN: "the check did not see it",
                 predictions.UNDECIDED: "the check ended with not enough data"}  # fmt: skip


def outcome_words(outcome: str, answers: predictions.Answers | None) -> str:
    """What the check found, beside a learner's graded answer, named by the answer it confirms: a review's learner
    read "Your prediction: over 10 · the check saw it · wrong" (saw what: their answer?). Now "… · the check
    found "between 3 and 5" · wrong". Without the step's answers (None), the outcome's plain words."""
    if answers is None or outcome == predictions.UNDECIDED:
        return OUTCOME_WORDS.get(outcome, outcome)
    if outcome == predictions.SEEN:
        return f'the check found "{answers.seen}"'
    confirmed = [a for a in answers.choices if a in answers.confirmed(outcome)]
    if len(confirmed) == 1:
        return f'the check found "{confirmed[0]}"'
    return f'the check did not find "{answers.seen}"'
# What the check found, said to a learner who chose no answer before it appeared (the step's question was about
# an effect: the check found it, did not, or could not tell).
FOUND_WORDS = {
    predictions.SEEN: "the check found the effect",
    predictions.NOT_SEEN: "the check did not find the effect",
    predictions.UNDECIDED: "the check ended without enough data to tell",
}
SPARK_W, SPARK_H, SPARK_POINTS = 160, 36, 120  # a curve the size of a line of text; more points add nothing
CSS = """
body { font: 16px/1.45 system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.meta { color: #666; } .step { border: 1px solid #ddd; border-radius: 6px; padding: .6rem .9rem; margin: .7rem 0; }
.step h3 { font-size: 1.05rem; margin: 0 0 .3rem; } .q { font-style: italic; }
.right { color: #1a7f37; font-weight: 600; } .wrong { color: #b42318; font-weight: 600; }
.open { color: #666; font-weight: 600; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3rem .5rem; }
tr + tr td { border-top: 1px solid #eee; } td.num { font-variant-numeric: tabular-nums; }
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def step_entries(steps: Iterable[Any], book: PredictionBook, learner_id: str) -> list[dict]:
    """One entry per lesson step (objects with .key, .section, .predict, .answers): the learner's answer, the
    outcome that grades it (their pane's, else the room's) and the grade; None where there is none yet."""
    out = []
    for number, step in enumerate(steps, start=1):
        records, room_outcome = book.step(step.key)
        record = records.get(learner_id) or {}
        outcome = predictions.learner_outcome(record, room_outcome)
        answer = record.get("answer")
        grade = predictions.grade(step.answers, answer, outcome) if step.answers is not None else None
        asked = step.answers is not None
        out.append({"number": number, "title": step.section, "question": step.predict, "asked": asked,
                    "answer": answer, "outcome": outcome, "grade": grade, "answers": step.answers})  # fmt: skip
    return out


def _final(records: Sequence[Mapping], field: str) -> float | None:
    values = [r.get(field) for r in records]
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return float(finite[-1]) if finite else None


def learner_runs(store: RunStore, learner_id: str) -> list[dict]:
    """The learner's runs, oldest first: name, state, step, final train and val loss, the (step, loss) curve."""
    names, out = run_names(store), []
    for s in reversed(store.list_runs()):
        if run_learner(s.config or {}).get("id") != learner_id:
            continue
        try:
            reader = store.reader(s.run_id)
            metrics, evals = reader.metrics, reader.evals
        except (RunStoreError, OSError):  # deleted or unreadable meanwhile: listed without numbers
            metrics, evals = [], []
        curve = [(m["step"], m["loss"]) for m in metrics
                 if isinstance(m.get("loss"), (int, float)) and math.isfinite(m["loss"]) and "step" in m]  # fmt: skip
        out.append({"name": names.get(s.run_id) or s.run_id, "state": s.state, "step": s.step,
                    "train": _final(metrics, "loss"), "val": _final(evals, "val_loss"), "curve": curve})  # fmt: skip
    return out


def sparkline(curve: Sequence[tuple[float, float]], width: int = SPARK_W, height: int = SPARK_H) -> str:
    """An inline SVG polyline of a loss curve (step on x, loss on y, lower is better), "" for fewer than 2
    points. No xmlns: inline SVG in HTML needs none (and the record names no URL)."""
    points = [(float(s), float(v)) for s, v in curve if math.isfinite(s) and math.isfinite(v)]
    if len(points) < 2:
        return ""
    stride = max(1, math.ceil(len(points) / SPARK_POINTS))
    points = points[::stride] + ([points[-1]] if (len(points) - 1) % stride else [])
    xs, ys = [x for x, _ in points], [y for _, y in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    dx, dy, pad = (x1 - x0) or 1.0, (y1 - y0) or 1.0, 2
    xy = " ".join(
        f"{pad + (x - x0) / dx * (width - 2 * pad):.1f},{pad + (y1 - y) / dy * (height - 2 * pad):.1f}"
        for x, y in points
    )
    label = f"training loss from {points[0][1]:.2f} to {points[-1][1]:.2f}"
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{_e(label)}"><polyline fill="none" stroke="#1f77b4" stroke-width="1.5" '
            f'points="{xy}"/></svg>')  # fmt: skip


def _what_happened(entry: Mapping) -> tuple[str, str]:
    """(css class, words) for a step: the learner's answer beside what the check saw, graded."""
    if not entry["asked"]:
        return "open", "No question to answer at this step."
    outcome, answer, grade = entry["outcome"], entry["answer"], entry["grade"]
    if outcome is None:
        return "open", "The check had not appeared yet." if answer else "No answer yet; the check had not appeared."
    seen = outcome_words(outcome, entry.get("answers"))
    if answer is None:
        return "open", no_prediction(outcome)
    css = {RIGHT: "right", WRONG: "wrong"}.get(grade, "open")
    return css, f"{seen[0].upper()}{seen[1:]}: {GRADE_WORDS.get(grade, grade)}."


def no_prediction(outcome: str) -> str:
    """A step whose check appeared before this learner chose an answer: no grade, and what the check found."""
    found = FOUND_WORDS.get(outcome, f"the check's outcome: {outcome}")
    return (f"No prediction: you chose no answer before the check appeared, so this step is not graded. "
            f"{found[0].upper()}{found[1:]}.")  # fmt: skip


def _loss(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def record_html(learner: str, steps: Sequence[Mapping], runs: Sequence[Mapping], made: float | None = None) -> str:
    """The whole record as one HTML document: `steps` from `step_entries`, `runs` from `learner_runs`."""
    # Made, not downloaded: it is as of then (a review's file, made seconds before her pane graded step 8, said the
    # check had not appeared yet, under "Downloaded" and a time to the minute)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(made if made is not None else time.time()))
    asked = [s for s in steps if s["asked"] and s["answer"] is not None]
    right = sum(s["grade"] == RIGHT for s in asked)
    unsure = sum(s["grade"] == NOT_SURE for s in asked)
    graded = sum(s["grade"] in (RIGHT, WRONG, NOT_SURE) for s in asked)
    # "Not sure" is counted among the decided (the room's share counts it too: it is no right answer) and said
    # so: a review's "1 of 12 right, among those the checks graded" read as 12 graded where one was "not sure".
    unsure_said = f", {unsure} answered “not sure”" if unsure else ""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>tinygpt lesson · {_e(learner)}</title><style>{CSS}</style></head><body>",
        f"<h1>My tinygpt lesson: {_e(learner)}</h1>",
        f'<p class="meta">Made {when}: as of then. {len(asked)} prediction(s) made; of the {graded} whose check '
        f"decided, {right} right{_e(unsure_said)}.</p>",
        "<h2>The steps</h2>",
    ]
    for s in steps:
        css, happened = _what_happened(s)
        answer = "" if not s["asked"] else f"<p>Your prediction: <b>{_e(s['answer'] or '(none)')}</b></p>"
        parts.append(
            f'<section class="step"><h3>Step {int(s["number"])}: {_e(s["title"])}</h3>'
            f'<p class="q">{_e(s["question"])}</p>{answer}<p class="{css}">{_e(happened)}</p></section>'
        )
    parts.append("<h2>My runs</h2>")
    if not runs:
        parts.append("<p>No runs of your own.</p>")
    else:
        parts.append("<table><tr><th>run</th><th>state</th><th>step</th><th>final train loss</th>"
                     "<th>final val loss</th><th>training loss</th></tr>")  # fmt: skip
        for r in runs:
            parts.append(
                f"<tr><td>{_e(r['name'])}</td><td>{_e(r['state'])}</td><td class=num>{int(r.get('step') or 0)}</td>"
                f"<td class=num>{_loss(r.get('train'))}</td><td class=num>{_loss(r.get('val'))}</td>"
                f"<td>{sparkline(r.get('curve') or [])}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def learner_record(store: RunStore, steps: Sequence[Any], learner_id: str, learner_name: str) -> str:
    """The record of one learner from the room's files: the prediction book and their run folders."""
    entries = step_entries(steps, PredictionBook(store.root), learner_id)
    return record_html(learner_name or "learner", entries, learner_runs(store, learner_id))
