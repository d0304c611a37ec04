"""The Train page's run buttons (pages/train.py; their clicks kept by train_keys.click_control): fixed keys, outside
the live view's fragment, and a click kept in session state by on_click until the page acts on it, so a Stop click
whose script run is cut short (another request from the browser arrived first) still stops the run."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")
import streamlit as st  # noqa: E402
from helpers import app_as, page_texts, rerun_until  # noqa: E402

from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.host import resources  # noqa: E402
from tinygpt.ui.people import admission  # noqa: E402
from tinygpt.ui.train import train_keys  # noqa: E402

ANNA = Actor("a" * 16, "anna")


def run_state(runs_dir, run_id: str) -> str | None:
    status = runs_dir / run_id / "status.json"
    return json.loads(status.read_text()).get("state") if status.exists() else None


def control_keys(at) -> dict[str, bool]:
    """The run buttons drawn, by key: disabled or not."""
    return {b.key: b.disabled for b in at.button if b.key in train_keys.CONTROLS.values()}


def test_a_stop_click_whose_script_run_was_cut_short_still_stops_the_run(runs_dir, monkeypatch):
    at = app_as(ANNA)
    assert control_keys(at) == dict.fromkeys(train_keys.CONTROLS.values(), True)  # no run: there, all off
    at.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
    at.number_input(key=train_keys.W_MAX_STEPS).set_value(100_000).run()
    next(b for b in at.button if b.label == "Train").click().run()
    run_id = at.session_state[state.RUN_ID]
    rerun_until(at, lambda: run_state(runs_dir, run_id) == "running")
    assert not control_keys(at)[train_keys.CONTROLS["stop"]]  # the same keys while it trains
    try:
        # Stop, in a script run that ends before the page reaches its buttons' code: what a request from the
        # browser arriving meanwhile (a widget's value, a timer) does to the run in progress.
        slot_question = admission.slot_question
        monkeypatch.setattr(admission, "slot_question", lambda *a: st.stop())
        at.button(key=train_keys.CONTROLS["stop"]).click().run()
        assert not at.exception, at.exception
        assert run_state(runs_dir, run_id) == "running"
        monkeypatch.setattr(admission, "slot_question", slot_question)
        at.run()  # the next script run, with no click in it, acts on the kept one
        rerun_until(at, lambda: run_state(runs_dir, run_id) == "stopped", timeout=30)
        assert "stopped" in page_texts(at)
        assert train_keys.CONTROL_CLICK not in at.session_state  # acted on once, then forgotten
    finally:
        resources.get_manager().stop(run_id)



def test_a_train_click_whose_script_run_was_cut_short_still_starts_the_run(runs_dir, monkeypatch):
    """The Train button keeps its click the same way (train_keys.click_train): a click whose script run ended
    before the page reached its Train code starts the run on the next script run, once."""
    from tinygpt.ui.train import guard

    at = app_as(ANNA)
    at.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
    checked = guard.checked  # the page calls it between the buttons and the Train code: stop the run there
    monkeypatch.setattr(guard, "checked", lambda *a: st.stop())
    at.button(key=train_keys.W_TRAIN).click().run()
    assert not at.exception, at.exception
    assert at.session_state[train_keys.TRAIN_CLICK] is True and not at.session_state.get(state.RUN_ID)
    monkeypatch.setattr(guard, "checked", checked)
    at.run()  # the next script run, with no click in it, acts on the kept one
    run_id = at.session_state[state.RUN_ID]
    try:
        assert run_id and (runs_dir / run_id).is_dir()
        assert train_keys.TRAIN_CLICK not in at.session_state
        at.run()
        assert at.session_state[state.RUN_ID] == run_id and len([p for p in runs_dir.iterdir() if p.is_dir()]) == 1
    finally:
        resources.get_manager().stop(run_id)
