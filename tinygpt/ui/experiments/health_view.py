"""The Experiments page's Model health tab: pick a run (the experiment's broken one first) and read its checklist
(tinygpt/ui/experiments/lab.py's health_rows: the checkpoint's checks, the step checks, the held-out check)."""

from __future__ import annotations

import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.lab.experiment import Experiment
from tinygpt.runs.knobs import knobs_now, leak_spans
from tinygpt.ui.experiments import experiments_keys, lab
from tinygpt.ui.host import runlist
from tinygpt.ui.run import in_view
from tinygpt.ui.words.knob_words import change_label, shown_changes


def diverged_note(events: list[dict], step: int) -> str:
    """ "" or what the run's own record says of a divergence at or before the checkpoint `step`: a diverged naive
    softmax's checkpoint passed "attention rows sum to 1" on the few windows the check reads, while the run had
    recorded its first non-finite tensor in those very weights (a review)."""
    bad = [e for e in events if e.get("kind") in ("nonfinite", "diverged") and isinstance(e.get("step"), int)
           and e["step"] <= step]  # fmt: skip
    if not bad:
        return ""
    first = bad[0]
    tensor = f", its first non-finite tensor {first['tensor']}" if first.get("tensor") else ""
    return (f"This run diverged at step {first['step']:,} (its own record{tensor}). The checks below read the "
            f"checkpoint of step {step:,} on a few windows of text, which can miss the positions that overflowed: "
            "a pass there does not undo the divergence.")  # fmt: skip


def health_default(experiment: Experiment, labels: list[str]) -> str | None:
    """The run the health checklist opens on: the experiment's broken run that trained (its first variant after
    "correct" that no guard stopped: shape drift's "silent bug", the one the lesson's health step is about), not
    the lecture run in view, which a review's step 9 found preselected beside nothing shown."""
    broken = [v for v in list(experiment.variants)[1:] if v not in experiment.guards and v in labels]
    return broken[0] if broken else None


def health_choices(experiment: Experiment, runs: dict[str, str] | None, current: str | None, names: dict[str, str]):
    """({picker label: run id}, the label it opens on): the experiment's runs first, by variant and readable name
    ("silent bug · 2L×1H×128 · shakespeare · …", tinygpt.runs.names), then the run in view if it is another."""
    choices = {f"{label} · {names.get(rid) or rid}": rid for label, rid in (runs or {}).items()}
    if current and current not in choices.values():
        choices[f"current run · {names.get(current) or current}"] = current
    default = health_default(experiment, list(runs or {}))
    first = next((k for k, rid in choices.items() if runs and rid == runs.get(default)), None)
    return choices, first


def health_table(rows: list[dict]) -> list[dict]:
    """The checklist as shown: five columns, what each check read said first in its detail (a table, not a data
    frame, so every cell wraps: the threshold column was cut at 1280x720 with Large fonts)."""
    return [{"check": r["check"], "result": r["result"], "measured": r["measured"] or "—", "threshold": r["threshold"],
             "detail": f"On {r['measured on']}: {r['detail']}"} for r in rows]  # fmt: skip


def health_tab(store, experiment: Experiment, runs: dict[str, str] | None, key: str) -> None:
    """The Model health tab: pick a run (the experiment's broken one first) and read its checklist at once."""
    choices, first = health_choices(experiment, runs, in_view.run_id(), runlist.run_names(store))
    if not choices:
        st.info("Start a run (here or on **Train**) to check its health.")
        return
    options = list(choices)  # keyed per experiment: another experiment's pick is no run of this one's
    picked = st.selectbox("Run to check", options, index=options.index(first) if first else 0,
                          key=f"{experiments_keys.W_HEALTH_RUN}:{key}")  # fmt: skip
    rd = in_view.reader(store, choices[picked])
    steps = rd.checkpoints() if rd is not None else []
    if not steps:
        status = rd.status() if rd is not None else {}
        ended = status.get("state") in ("finished", "stopped", "diverged", "failed")
        # "no checkpoint yet" of a run that ended at step 0, refused by its guard: it never will have one (a review)
        st.info(f"This run ended ({status.get('state')} at step {status.get('step') or 0}) without a checkpoint: "
                "there is no model to check." if ended else "This run has no checkpoint yet.")  # fmt: skip
        return
    try:
        config = rd.config() or {}
        clip = knobs_now(config, rd.events).get("max_grad_norm")
        last = rd.metrics[-1].get("step") if rd.metrics else None
        leaks = leak_spans(config, rd.events, int(last or 0))  # evals under a leaking mask: copying, no evidence
        changes = tuple(
            (int(e["step"]), change_label(e)) for e in shown_changes(rd.events) if isinstance(e.get("step"), int)
        )
        rows = lab.health_rows(str(rd.run_dir), steps[-1], rd.metrics, clip, rd.evals, leaks, changes)
        if said := diverged_note(rd.events, steps[-1]):
            st.warning(said)
        st.table(health_table(rows), hide_index=True)
        reads = f"; the step checks read its steps to step {last:,}" if isinstance(last, int) else ""
        st.caption(f"Checked the checkpoint at step {steps[-1]:,}{reads}.")
    except TinyGPTError as exc:
        st.error(str(exc))
