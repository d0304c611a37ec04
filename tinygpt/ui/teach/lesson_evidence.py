"""The numbers a lesson step's check reads, gathered from its run folders (`evidence`): the runs' records and head
scores, the experiments' verdicts, the health checks, the head ablation and the logit lens at the last checkpoint.
The checks themselves are pure (lesson_checks.py); the pane that shows them is lesson_view.py."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from tinygpt.data import load_corpus
from tinygpt.errors import TinyGPTError
from tinygpt.inside import heads, roles
from tinygpt.lab import induction
from tinygpt.lab.registry import EXPERIMENTS
from tinygpt.lab.results import read_result
from tinygpt.lab.verdict import ENDED
from tinygpt.runs.models import run_data
from tinygpt.runs.owners import Actor
from tinygpt.runs.window import metrics_between
from tinygpt.ui.circuits import circuits_view
from tinygpt.ui.experiments import lab
from tinygpt.ui.host import resources
from tinygpt.ui.run import in_view
from tinygpt.ui.teach import heads_check, lesson
from tinygpt.ui.teach.lesson import HEADS, INDUCTION, LECTURE, Evidence, RunData, Step
from tinygpt.ui.words import run_words

TWO, ONE = list(induction.INDUCTION_VARIANTS)  # the induction experiment's 2-layer run and its control


def reader_of(run_id: str):
    """The server's shared reader of a run (in_view.ReaderPool: 20 learners follow the same runs), or None."""
    return in_view.reader(resources.get_store(), run_id)


def _run_data(run_id: str) -> RunData | None:
    rd = reader_of(run_id)
    if rd is None:
        return None
    config = rd.config()
    vocab = ((config.get("model") or {}).get("vocab_size")) or None
    run_dir = rd.run_dir  # the exact records of a window of steps, where the reader's series is thinned
    return RunData(run_id, rd.status().get("state", ""), rd.metrics, rd.events, circuits_view.scores(rd.run_dir),
                   vocab, rd.evals, (config.get("train") or {}).get("eval_interval"),
                   lambda lo, hi: metrics_between(run_dir, lo, hi))  # fmt: skip


def _verdict(verdict, about: str = "") -> dict:
    # "observed": the numbers it was judged on, from which the banner's headline names the verdict's point;
    # "about": whose runs, which corpus and seed (run_words.runs_about), which the check's text names
    return {"reproduced": verdict.reproduced, "sentence": verdict.sentence,
            "undecided": getattr(verdict, "undecided", ""),
            "observed": dict(getattr(verdict, "observed", None) or {}), "about": about}  # fmt: skip


def _halted(readers: dict) -> dict[str, dict]:
    """{label: {"state", "step"}} of the runs that ended before their last step (diverged or failed): what the
    pitfalls step's question, "how many crash?", is graded on."""
    out = {}
    for label, rd in readers.items():
        status = rd.status() if rd is not None else {}
        if status.get("state") in ("diverged", "failed"):
            out[label] = {"state": status["state"], "step": status.get("step")}
    return out


def _about(readers: dict, role: str, ids: dict[str, str], viewer: Actor | None, room_runs: dict | None) -> str:
    """ "the room's runs (Tiny Shakespeare, seed 1337)": whose runs a verdict judged, from their configs. The room's
    are the runs the room file names for `role`; a learner's own set-up runs are theirs."""
    configs = [rd.config() for rd in readers.values() if rd is not None]
    room = room_runs is not None and (room_runs.get(role) or {}) == ids
    return run_words.runs_about(configs, viewer, room=room)


def lens_hits(run_dir: str, step: int, text: str) -> dict:
    """How many positions of `text` the top guess gets right, read after each layer (the Circuits page's lens)."""
    from tinygpt.inside import lens as lens_lib

    loaded = resources.cached_model(run_dir, step)
    idx, tokens = circuits_view._probe(loaded, text)
    out = lens_lib.logit_lens(loaded.model, idx)
    guesses = np.array([[loaded.tokenizer.vocab[i] for i in row] for row in out["top_ids"][:, :-1, 0]])
    hits = guesses == np.array(tokens[1:])[None, :]  # (L+1, T-1): the top guess is the next character
    return {"names": list(out["names"]), "hits": [int(h) for h in hits.sum(axis=1)], "positions": int(hits.shape[1])}


HEAD_WINDOWS = 32  # held-out windows the multiple-heads step's roles are scored on (heads_check.heads_differ)


@st.cache_data(max_entries=8, show_spinner=False)
def lens_windows(run_dir: str, step: int) -> dict:
    """The logit lens on HEAD_WINDOWS held-out windows at checkpoint `step` (seeded, as head_windows'): {"right":
    (L+1, W) each window's share of top guesses right after each layer, "context" T, "val_tokens"}. The lens step
    judged "the prediction forms in the layers" on one 32-character probe, 3 positions' gain, no noise (a review)."""
    from tinygpt.inside import lens as lens_lib

    model, x, y, val_tokens = _held_out_windows(run_dir, step)
    right = lens_lib.lens_right(model, x, y)  # (L+1, W)
    return {"right": right.tolist(), "context": int(x.shape[1]), "val_tokens": val_tokens}


def _held_out_windows(run_dir: str, step: int) -> tuple:
    """(the checkpoint's model, x, y (W, T) each: HEAD_WINDOWS windows of the run's held-out text, seeded, so every
    viewer's pane reads the same ones, the held-out split's length): what the heads and lens steps judge on."""
    loaded = resources.cached_model(run_dir, step)
    config = loaded.config
    corpus = load_corpus(run_data(run_dir, config), config.model.max_seq_len)
    x, y = corpus.get_batch("val", HEAD_WINDOWS, torch.Generator().manual_seed(heads.PROBE_SEED))  # (W, T) each
    return loaded.model, x, y, int(corpus.val_data.numel())


@st.cache_data(max_entries=8, show_spinner=False)
def head_windows(run_dir: str, step: int) -> dict:
    """Every head's role scores at checkpoint `step` on HEAD_WINDOWS windows drawn from the run's held-out text
    (seeded: every viewer's pane reads the same ones), one score per window: the spread that says whether a head
    clears the 2x bar beyond chance (a review: the step called two heads at 2.06x and 2.07x on one probe window
    "specialised", one at 1.89x not). Cached: a checkpoint never changes, and every learner's pane asks."""
    model, x, _, val_tokens = _held_out_windows(run_dir, step)  # x (W, T)
    scores, baselines = roles.window_role_scores(model, x)
    return {"step": int(step), "windows": int(x.shape[0]), "context": int(x.shape[1]), "val_tokens": val_tokens,
            "scores": {r: v.tolist() for r, v in scores.items()}, "baselines": baselines}  # fmt: skip


def evidence(
    step: Step,
    runs: dict[str, dict[str, str]],
    measured: dict,
    viewer: Actor | None = None,
    room_runs: dict | None = None,
) -> Evidence:
    """Read what `step`'s check needs from its runs (missing runs stay missing: the check says so). `viewer` and
    `room_runs` (the room file's {role: {label: run_id}}) name whose runs each verdict judged."""
    ev = Evidence()
    for role in lesson.roles_checked(step):
        ids = runs.get(role)
        if not ids:
            continue
        if role in (LECTURE, HEADS):
            data = _run_data(ids["run"])
            if data is not None:
                ev.runs[role] = data
            ended = data is not None and data.state in heads_check.ENDED  # stopped too: the check's own ENDED
            rd = reader_of(ids["run"]) if role == HEADS and ended else None
            if rd is not None and rd.checkpoints():  # judged on held-out windows, not the one probe (heads_check)
                try:
                    ev.head_windows = head_windows(str(rd.run_dir), rd.checkpoints()[-1])
                except TinyGPTError:  # a checkpoint or text that cannot be read now: the snapshots' rule says it
                    ev.head_windows = None
        elif role.startswith("exp:"):
            key = role.removeprefix("exp:")
            readers = {label: reader_of(rid) for label, rid in ids.items()}
            ev.verdicts[key] = _verdict(EXPERIMENTS[key].verdict(lab.results(readers, EXPERIMENTS[key])),
                                        _about(readers, role, ids, viewer, room_runs))  # fmt: skip
            ev.verdicts[key]["halted"] = _halted(readers)
            if step.key == "health" and key == "shape_drift":
                for label in ("correct", "silent bug"):
                    rd = readers.get(label)
                    if rd is not None and rd.status().get("state") in ENDED and rd.checkpoints():
                        last = rd.checkpoints()[-1]
                        ev.health[label] = lab.health_rows(str(rd.run_dir), last, rd.metrics)  # Experiments' cache
        elif role == INDUCTION:
            readers, records, ended = circuits_view.experiment_state(resources.get_store(), ids)
            final = circuits_view.final_scores(readers, ended)
            results = {label: read_result(rd) for label, rd in readers.items()} if ended else None
            ev.verdicts[INDUCTION] = _verdict(induction.induction_verdict(records, ended, final, runs=results),
                                              _about(readers, role, ids, viewer, room_runs))  # fmt: skip
            two = reader_of(ids[TWO])
            if ended and two is not None and two.checkpoints() and step.key in ("ablation", "lens"):
                last, text = two.checkpoints()[-1], two.attention_index().get("probe_text", "")
                if step.key == "ablation":
                    ev.ablation = _ablation(str(two.run_dir), last, final.get(TWO), records.get(TWO) or [])
                else:
                    ev.lens = lens_hits(str(two.run_dir), last, text)
                    try:  # the check's evidence: held-out windows, with their noise (lesson_checks.lens_sharpens)
                        ev.lens["windows"] = lens_windows(str(two.run_dir), last)
                    except TinyGPTError:  # a text that cannot be read now: the probe's counts, said as one text
                        pass
    if step.setup.pitfalls or step.key == "pitfalls":
        for key, results in measured.items():
            ev.verdicts[key] = _verdict(EXPERIMENTS[key].verdict(results))
    return ev


def _ablation(run_dir: str, step: int, final: dict | None, records: list[dict]) -> dict | None:
    """Every head switched off in turn at the final checkpoint, on the second copy of the repeated probe (where
    only copying predicts the next character): circuits_view.second_copy, the very numbers the Circuits heatmap
    draws in its second-copy panel at that checkpoint. The head the check names is the induction verdict's (chosen on
    its final probe rows), the live scores' best head only where that measurement is missing. On the run's own
    probe text, which repeats nothing, the same head changed the loss by -0.04 nats in the browser test: the wrong
    text to judge copying on."""
    head = (final or {}).get("head") or heads.phase_change(records).head
    measured = circuits_view.second_copy_measured(run_dir, step) if head else None
    if measured is None:
        return None
    deltas = measured["deltas"]
    # its noise over the probe rows: the head's change, and its change minus the others' mean, row by row (a review:
    # "the copying depends on L1H1" with no ±)
    rows = np.asarray(measured["row_deltas"])  # (L, H, B)
    layer, index = induction.head_index(head)
    mine = rows[layer, index]  # (B,)
    others = (rows.sum(axis=(0, 1)) - mine) / (rows.shape[0] * rows.shape[1] - 1)  # (B,) the others' mean, per row
    noise = {"se": float(measured["se"][layer][index]), "rows": int(rows.shape[-1]),
             "gap_se": float((mine - others).std(ddof=1) / rows.shape[-1] ** 0.5)} if rows.shape[-1] > 1 else {}
    loaded = resources.cached_model(run_dir, step)
    first = induction.first_copy_change(loaded.model, loaded.tokenizer.vocab, layer, index)
    jobs = heads_check.roles_at(records, step)  # what each head does, for the check to say of the one that matters
    return {"head": head, "deltas": deltas, "step": step, "first": first, "jobs": jobs, **noise,
            "where": f"the second copy of {induction.ABLATION_ROWS} repeated random probes (the Circuits heatmap's "
            f"'{circuits_view.SECOND_COPY}' panel)"}  # fmt: skip
