"""What **Train** would start, in words, from the Train form's values (tinygpt/ui/train/form.py: `form_values`, and
`next_run_values`, by which a watcher's new run takes the form's preset's live knobs, not the watched run's): the line
that says them (`next_run_words`, with the knobs a new run would start broken with, `broken_knobs`), and the settings
this viewer changed that only a new run takes (`edits_for_a_new_run`, another text included). Pure reads of the
session's values, no widgets; pages/train.py says them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tinygpt.config import trains_until_stopped
from tinygpt.data import text_from_user
from tinygpt.errors import TinyGPTError
from tinygpt.runs.corpus import corpus_sha256
from tinygpt.ui import state
from tinygpt.ui.train import settings, train_keys
from tinygpt.ui.train.form import form_values, next_run_values


def next_run_words(source: str, uploaded: Any = None, watching: str = "") -> str:
    """What **Train** would start from the form as it is: its length, learning rate, seed and corpus ("trains until
    you press Stop · LR 0.1 · seed 1337 · Paste text"). A watcher's form holds the watched run's settings, live
    changes included: a review's learner pressed Train beside the instructor's run and got its Lecture preset at LR
    0.1, training until stopped, and nothing had said so. No preset name: the form's values need not match one."""
    values = next_run_values(watching)
    steps, lr, seed = values.get("max_steps"), values.get("learning_rate"), values.get("seed")
    length = ("trains until you press Stop" if trains_until_stopped(steps) else
              f"{steps:,} steps" if isinstance(steps, int) else "")  # fmt: skip
    if source == settings.SOURCE_UPLOAD:  # the file, not the menu's words ("Upload a text file")
        source = f"the file {uploaded.name}" if getattr(uploaded, "name", None) else "a text file (none chosen yet)"
    elif source == settings.SOURCE_PASTE:  # the box may hold a run's own uploaded text: "Paste text" read wrong
        source = f"the text in the box ({len(state.get(train_keys.W_PASTE) or ''):,} characters)"
    parts = [length, f"LR {lr:g}" if isinstance(lr, (int, float)) else "",
             f"seed {seed}" if isinstance(seed, int) else "", source, *broken_knobs(values)]  # fmt: skip
    return " · ".join(p for p in parts if p)


def broken_knobs(values: Mapping[str, Any]) -> list[str]:
    """The live knobs in the form that a new run would start broken with, in words: ["mask none (sees the
    future)"]. The form keeps the live changes made on the run before, so a review's second run started with mask
    off_by_one from the first, said only in its name."""
    said = []
    if values.get("mask") not in (None, "causal", "sliding_window"):
        said.append(f"mask {settings.MASK_LABELS.get(values['mask'], values['mask'])}")
    if values.get("attn_scale") not in (None, "head_dim"):
        said.append(f"attention scaling {settings.SCALE_LABELS.get(values['attn_scale'], values['attn_scale'])}")
    if isinstance(values.get("attn_scale_mult"), (int, float)) and values["attn_scale_mult"] != 1:
        said.append(f"scale multiplier {values['attn_scale_mult']:g}")
    return said


def edits_for_a_new_run(run: str, run_config: dict, source: str, uploaded: Any = None) -> list[str]:
    """The settings this viewer changed in the form since `run` came into view that only a new run can take, as
    ["heads 1 → 4"] (the run's value → the form's). The form as it was when the run came into view is the
    base: a watcher whose form simply differs from the run they watch did not change anything, and is told
    nothing (the rehearsal's learner was invited to start a run with settings they never chose). Another text of
    the same kind (an upload after an upload, a paste after an upload) is "another text": a review's switch from an
    uploaded file to pasted text was said as "seed 2468 → 9001" alone."""
    text = form_text_sha(source, uploaded)
    form = {**form_values(), train_keys.W_SOURCE: source, "text": text}
    base = state.get(train_keys.FORM_BASE)
    if not base or base[0] != run:
        state.put(train_keys.FORM_BASE, (run, form))
        return []
    edited = {name: value for name, value in form.items() if base[1].get(name) != value}
    run_values, run_source = settings.values_from_config(run_config)
    edits = settings.changed_since_start(run_values, run_source if train_keys.W_SOURCE in edited else None,
                                         {k: v for k, v in edited.items() if k != "text"}, source)  # fmt: skip
    ran = (run_config.get("data") or {}).get("text_sha256")
    if {"text", train_keys.W_SOURCE} & edited.keys() and text and ran and text != ran:
        edits.insert(0, f"another text (sha256 {ran[:8]}… → {text[:8]}…)")
    return edits


def form_text_sha(source: str, uploaded: Any = None) -> str | None:
    """The sha256 of the text the form would train on (an upload or a paste, as a run's corpus.txt names it), or
    None: another corpus, or no text a run would take."""
    raw = (uploaded.getvalue() if uploaded else None) if source == settings.SOURCE_UPLOAD else (
        state.get(train_keys.W_PASTE) or "" if source == settings.SOURCE_PASTE else None)  # fmt: skip
    try:
        return corpus_sha256(text_from_user(raw)) if raw else None
    except TinyGPTError:  # not text a run would take: the Train click says why
        return None
