"""Starting a run from the Train page: the form's config, then tinygpt.ui.people.admission (the room's budget, one
training slot per learner: a second Train asks before stopping the first) and the start itself."""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from tinygpt.config import RunConfig
from tinygpt.errors import TinyGPTError
from tinygpt.runs.owners import Actor
from tinygpt.ui import state
from tinygpt.ui.people import admission
from tinygpt.ui.run import in_view
from tinygpt.ui.train import form, knob_widgets, settings, train_keys
from tinygpt.ui.words import safe


def config_from_form(source: str, uploaded: Any, learner: Actor, messages) -> RunConfig:
    """The run the form describes (TinyGPTError says what to change); loads Tiny Shakespeare (the embedded copy,
    or a download when that copy is damaged) with a progress bar in `messages`, gone again whatever happens."""
    values = form.form_values()
    pasted, data_bytes = state.get(train_keys.W_PASTE, ""), uploaded.getvalue() if uploaded else None
    data = settings.data_config(source, pasted, data_bytes, values["max_seq_len"])
    config = settings.build_config(state.get(train_keys.W_PRESET), values, data)
    # Asked here as well as in admission.start (the authoritative check, which every start path asks, and asks again
    # when the slot question is answered later): ensure_corpus below loads Tiny Shakespeare, a download when the
    # embedded copy is damaged, under a progress bar, for a run the budget would refuse anyway. The check itself is
    # arithmetic on the config, so asking twice costs nothing.
    admission.check_budget(learner, {"run": config})
    if data.source == "shakespeare":
        bar = messages.progress(0.0, text="Loading Tiny Shakespeare ...")
        try:
            settings.ensure_corpus(data, lambda done, total: bar.progress(min(1.0, done / max(total, 1))))
        finally:  # a failure's message must not sit under a half-full bar
            bar.empty()
    return config


def start(config: RunConfig, learner: Actor, parent: str | None, check_slot: bool = True) -> None:
    """Queue a new run owned by `learner` (tinygpt.ui.people.admission: budget, slot, preflight), make it the page's
    run, and redraw."""
    (new_id,) = admission.start(learner, {"run": config}, parent=parent, check_slot=check_slot).values()
    in_view.set_run_id(new_id)
    knob_widgets.clear_knob_notes()
    st.rerun()


def train_clicked(source: str, uploaded: Any, learner: Actor, parent: str | None, messages) -> None:
    """The Train button: start the form's run, or, if this learner already trains one, ask first."""
    try:
        config = config_from_form(source, uploaded, learner, messages)
    except TinyGPTError as e:
        messages.error(safe.md(e))
        return
    admission.attempt(lambda check_slot: start(config, learner, parent, check_slot), "start the new run", messages)


def run_button_clicked(run, learner: Actor, messages) -> None:
    """Act on a Pause / Resume / Step / Stop click kept for the run in view (`train_keys.take_control_click`: in
    this script run or one cut short), through the page's run handle, then redraw with the worker's answer."""
    command = train_keys.take_control_click(run.id if run else None)
    if not command or run is None:
        return
    try:
        if command == "pause":
            run.pause()
        if command == "resume":  # another run of this learner's may hold their slot: admission asks first
            run_id = run.id
            admission.attempt(lambda check: admission.resume(learner, run_id, check), "resume this run", messages)
        if command == "step":
            run.step(int(state.get(train_keys.W_STEP_N)))
            train_keys.mark_step_requested()
        if command == "stop":
            run.stop()
    except TinyGPTError as e:
        messages.error(safe.md(e))
    else:
        time.sleep(0.2)  # let the worker answer, so the status below is the new one
        st.rerun()
