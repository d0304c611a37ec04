"""Issue 32, "widgets show the run, not the browser", on the Train form of a run opened through its link: the
preset, the data-and-model settings and the live knobs (Window included) are the run's, not what this browser's
form held before; what the viewer then edits is their draft for a new run, and only that is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import page_texts, rerun_until  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.host import resources  # noqa: E402
from tinygpt.ui.people import people_keys  # noqa: E402
from tinygpt.ui.train import knob_widgets, train_keys  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
ANNA = Actor("a" * 16, "anna")
TEACHER = Actor("c" * 16, "teacher", instructor=True)
LECTURE = "Lecture (until stopped)"  # context 16
DEMO = "Demo (CPU, seconds)"  # context 32


def knob_key(at: AppTest, value_key: str) -> str:
    generations = at.session_state[train_keys.KNOB_WIDGETS] if train_keys.KNOB_WIDGETS in at.session_state else {}
    return knob_widgets.widget_key(value_key, generations)


def texts(at: AppTest) -> str:
    return page_texts(at, expanders=True)


def training(runs_dir: Path, run_id: str) -> bool:
    status = runs_dir / run_id / "status.json"
    return status.exists() and json.loads(status.read_text()).get("state") == "running"


def test_a_watcher_sees_the_runs_preset_model_and_window_not_their_own_form(runs_dir):
    """Reproduces the review: a learner who had Demo in her form opened the instructor's Lecture run through its
    link and saw Preset "Demo", her own model settings, and a Window slider cut to her own form's context."""
    teacher = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    teacher.session_state[people_keys.LEARNER] = TEACHER
    teacher.run()
    teacher.selectbox(key=train_keys.W_PRESET).set_value(LECTURE).run()
    teacher.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
    teacher.radio(key=knob_key(teacher, train_keys.W_MASK)).set_value("sliding_window").run()
    teacher.slider(key=knob_key(teacher, train_keys.W_WINDOW)).set_value(12).run()
    next(b for b in teacher.button if b.label == "Train").click().run()
    assert not teacher.exception, teacher.exception
    run_id = teacher.session_state[state.RUN_ID]
    rerun_until(teacher, lambda: training(runs_dir, run_id))

    anna = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    anna.session_state[people_keys.LEARNER] = ANNA
    anna.run()  # her own form first: Demo, then a context of 8 of her own
    anna.selectbox(key=train_keys.W_PRESET).set_value(DEMO).run()
    anna.number_input(key=train_keys.W_CONTEXT).set_value(8).run()
    anna.query_params["run"], anna.query_params["view"] = run_id, "1"
    anna.run()
    assert not anna.exception, anna.exception
    assert anna.session_state[state.RUN_ID] == run_id
    assert anna.selectbox(key=train_keys.W_PRESET).value == LECTURE  # the run's preset, not her Demo
    assert anna.number_input(key=train_keys.W_CONTEXT).value == 16  # the run's context, not her 8
    assert anna.selectbox(key=train_keys.W_SOURCE).value == "Synthetic: copy"
    window = anna.slider(key=knob_key(anna, train_keys.W_WINDOW))
    assert window.value == 12 and window.disabled  # the run's window, not cut to her form's context
    assert "You changed" not in texts(anna)
    # greyed-out knobs are not said to change the running model (a review)
    assert "not yours to change" in texts(anna) and "change the running model" not in texts(anna)
    assert "change the running model" in texts(teacher)  # the owner's own

    # Her edit for a new run: named as hers, and the live Window still shows the run (not cut to her new context).
    anna.number_input(key=train_keys.W_CONTEXT).set_value(8).run()
    assert "You changed context 16 → 8 in the form" in texts(anna)
    assert anna.slider(key=knob_key(anna, train_keys.W_WINDOW)).value == 12
    assert "your next run" in texts(anna)  # the form for a new run says whose it is
    resources.get_manager().stop(run_id)


def test_the_runs_preset_is_named_only_when_the_run_is_that_preset_as_is():
    from tinygpt.presets import preset
    from tinygpt.ui.train import run_form, settings

    lecture = preset("lecture", source="synthetic:copy", mask="sliding_window", window=12).to_dict()
    assert run_form.preset_of(settings.values_from_config(lecture)[0]) == LECTURE  # live knobs turned: still Lecture
    reseeded = preset("lecture", seed=2468).to_dict()
    assert run_form.preset_of(settings.values_from_config(reseeded)[0]) == LECTURE  # another draw, the same recipe
    deeper = preset("lecture", num_layers=3).to_dict()
    assert run_form.preset_of(settings.values_from_config(deeper)[0]) is None  # a model of its own: no preset's
    form = run_form.form_of(lecture, [])
    assert form[train_keys.W_PRESET] == LECTURE and form[train_keys.W_WINDOW] == 12
    assert form[train_keys.W_SOURCE] == "Synthetic: copy" and form[train_keys.W_CONTEXT] == 16
    assert train_keys.W_PRESET not in run_form.form_of(deeper, [])  # the select keeps the viewer's choice
    # what the form says: the run's preset, or the viewer's for their next run
    assert "the run's, until you change them" in run_form.next_run_note(LECTURE, LECTURE)
    assert "Preset: **your next run**'s (the run matches no preset)" in run_form.next_run_note(None, DEMO)
    changed = run_form.next_run_note(LECTURE, DEMO)  # the viewer chose another preset since the run opened
    assert f"Preset: **your next run**'s (the run is {LECTURE})" in changed
    # the Window slider's top: the run's context while its knobs are drawn, else the form's
    assert run_form.window_top(16, 8) == 16 and run_form.window_top(None, 8) == 8
