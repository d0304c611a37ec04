"""Starting a run from the Train page: the form's config (checked against the room's budget), one training slot
per learner (a second Train asks before stopping the first), and the start itself."""

from __future__ import annotations

from typing import Any

import streamlit as st

from tinygpt.config import RunConfig
from tinygpt.errors import TinyGPTError
from tinygpt.runstore import Actor
from tinygpt.ui import form, resources, safe, settings, state


def config_from_form(source: str, uploaded: Any, learner: Actor, messages) -> RunConfig:
    """The run the form describes (TinyGPTError says what to change); loads Tiny Shakespeare (the embedded copy,
    or a download when that copy is damaged) with a progress bar in `messages`, gone again whatever happens."""
    values = form.form_values()
    pasted, data_bytes = state.get(state.W_PASTE, ""), uploaded.getvalue() if uploaded else None
    data = settings.data_config(source, pasted, data_bytes, values["max_seq_len"])
    config = settings.build_config(state.get(state.W_PRESET), values, data)
    if not learner.instructor:
        settings.check_budget(config, resources.room_budget())
    if data.source == "shakespeare":
        bar = messages.progress(0.0, text="Loading Tiny Shakespeare ...")
        try:
            settings.ensure_corpus(data, lambda done, total: bar.progress(min(1.0, done / max(total, 1))))
        finally:  # a failure's message must not sit under a half-full bar
            bar.empty()
    return config


def start(config: RunConfig, learner: Actor, parent: str | None) -> None:
    """Queue a new run owned by `learner`, make it the page's run, and redraw."""
    try:
        limit = resources.time_limit_s(learner)
        new_id = resources.get_manager().start(config, parent=parent, actor=learner, time_limit_s=limit)
    except TinyGPTError as e:
        st.error(safe.md(e))
        return
    state.set_run_id(new_id)
    state.clear_knob_notes()
    st.rerun()


def train_clicked(source: str, uploaded: Any, learner: Actor, parent: str | None, messages) -> None:
    """The Train button: start the form's run, or, if this learner already trains one, ask first."""
    try:
        config = config_from_form(source, uploaded, learner, messages)
    except TinyGPTError as e:
        messages.error(safe.md(e))
        return
    if resources.my_active_runs(learner):  # one training slot per learner: ask before taking a second
        state.put(state.PENDING_TRAIN, config.to_dict())
    else:
        start(config, learner, parent)


def one_slot_question(learner: Actor, parent: str | None, messages) -> None:
    """While a new run waits for the answer: stop the learner's other run and start it, or cancel it."""
    pending = state.get(state.PENDING_TRAIN)
    if not pending:
        return
    busy = resources.my_active_runs(learner)
    messages.warning(
        f"You already have a run training or queued ({', '.join(busy) or 'just ended'}). Each learner trains one "
        "run at a time, so the room's few training slots go round."
    )
    s1, s2 = messages.columns(2)
    if s1.button("Stop it and start the new run", type="primary", width="stretch"):
        for other in busy:
            resources.get_manager().stop(other, actor=learner)
        state.pop(state.PENDING_TRAIN)
        start(RunConfig.from_dict(pending), learner, parent)
    if s2.button("Keep it; cancel the new run", width="stretch"):
        state.pop(state.PENDING_TRAIN)
        st.rerun()
