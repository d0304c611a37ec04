"""The Train form (tinygpt/ui/train/form.py) against the browser's stale copies of its values: a preset picked and
Train pressed before the browser drew the preset's values must start the preset's run, not a mix of two presets."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")
from helpers import app_as  # noqa: E402

from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.host import resources  # noqa: E402
from tinygpt.ui.train import settings, train_keys  # noqa: E402

ANNA = Actor("a" * 16, "anna")
DEMO, LECTURE = "Demo (CPU, seconds)", "Lecture (until stopped)"
# The Demo values the Lecture preset replaces in the data-and-model box, by widget kind (AppTest looks them up so).
STALE = {"selectbox": {train_keys.W_WIDTH: 64}, "number_input": {train_keys.W_MAX_STEPS: 300, train_keys.W_CONTEXT: 32,
                                                                  train_keys.W_BATCH: 16}}  # fmt: skip


def send_stale_demo_values(at) -> None:
    """What a browser that has not yet drawn the Lecture preset's values sends with its next request: Demo's."""
    for kind, values in STALE.items():
        for key, value in values.items():
            getattr(at, kind)(key=key).set_value(value)


def test_train_pressed_before_the_browser_drew_the_preset_starts_the_presets_run(runs_dir):
    """The reported mix: Lecture picked, Train pressed within a second; the click came with the browser's Demo
    width and steps, which the page took for edits: Lecture's learning rate and heads with Demo's width and steps."""
    at = app_as(ANNA)
    at.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
    assert at.selectbox(key=train_keys.W_PRESET).value == DEMO
    at.selectbox(key=train_keys.W_PRESET).set_value(LECTURE).run()  # the preset's run: its values are put
    send_stale_demo_values(at)  # ... and the Train click comes with the values the browser still shows
    next(b for b in at.button if b.label == "Train").click().run()
    assert not at.exception, at.exception
    run_id = at.session_state[state.RUN_ID]
    config = json.loads((runs_dir / run_id / "config.json").read_text())
    resources.get_manager().stop(run_id)
    lecture = settings.preset_values(LECTURE)
    got = {**config["model"], **config["train"]}
    names = ("hidden_dim", "num_heads", "max_seq_len", "batch_size", "max_steps", "learning_rate", "warmup_steps")
    assert {n: got[n] for n in names} == {n: lecture[n] for n in names}
    assert at.selectbox(key=train_keys.W_WIDTH).value == 128  # and the form shows the preset's values again


def test_edits_after_the_preset_are_kept_even_back_to_the_replaced_values(runs_dir):
    """The other side: one widget moves per request, so one replaced value coming back is the learner's edit,
    kept, also when it is the value the preset replaced; and so is the next, one request later."""
    at = app_as(ANNA)
    at.selectbox(key=train_keys.W_PRESET).set_value(LECTURE).run()
    at.selectbox(key=train_keys.W_WIDTH).set_value(64).run()
    at.number_input(key=train_keys.W_MAX_STEPS).set_value(300).run()
    assert not at.exception, at.exception
    assert at.session_state[train_keys.W_WIDTH] == 64 and at.session_state[train_keys.W_MAX_STEPS] == 300
    assert at.session_state[train_keys.W_CONTEXT] == 16 and at.session_state[train_keys.W_PRESET] == LECTURE
