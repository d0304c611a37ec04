"""The Train form (tinygpt/ui/train/form.py): the config it builds is the CLI's for the same settings, and against the
browser's stale copies of its values, a preset picked and Train pressed before the browser drew the preset's values
must start the preset's run, not a mix of two presets."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")
from helpers import app_as  # noqa: E402

from tinygpt.cli import flags as cli_flags  # noqa: E402
from tinygpt.config import ConfigError, DataConfig  # noqa: E402
from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.host import resources  # noqa: E402
from tinygpt.ui.train import form, next_run, settings, train_keys  # noqa: E402

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


# ---------------------------------------------------------------- the config it builds: the CLI's


def cli_config(preset: str, values: dict, source: str):
    flags = ["train", "--preset", preset, "--source", source]
    for name, value in values.items():
        flags += ["--" + name.replace("_", "-"), str(value)]
    return cli_flags.config_from_args(cli_flags.build_parser().parse_args(flags))


SAMPLES = [
    {},
    {"learning_rate": 1e-4, "max_steps": 5},  # the CLI used to refuse this (min_lr 2e-4 > lr)
    {"num_heads": 2, "hidden_dim": 48, "max_steps": 40, "warmup_steps": 0},
    {"mask": "sliding_window", "window": 8, "max_seq_len": 16, "attn_scale": "none", "attn_scale_mult": 2.5},
    {"max_grad_norm": 0.0, "dropout": 0.1, "seed": 7, "batch_size": 3, "num_layers": 1},
]


@pytest.mark.parametrize("label", list(settings.PRESET_LABELS))
@pytest.mark.parametrize("changes", SAMPLES)
def test_app_and_cli_build_the_same_config_from_the_same_settings(label, changes):
    values = {**settings.preset_values(label), **changes}
    app = form.run_config(label, values, settings.data_config("Synthetic: copy"))
    flags = {k: v for k, v in values.items() if k != "device"}
    assert app == cli_config(settings.PRESET_LABELS[label], flags, "synthetic:copy")


def test_min_lr_follows_the_learning_rate_and_short_runs_get_evals_and_checkpoints():
    config = form.run_config("Demo (CPU, seconds)", {"learning_rate": 1e-4, "max_steps": 8}, DataConfig())
    assert config.train.min_lr == pytest.approx(1e-5)
    assert config.train.eval_interval == 2 and config.checkpoint_every == 2


def test_a_window_longer_than_the_context_is_refused_with_the_same_message_everywhere():
    values = {"mask": "sliding_window", "window": 500}
    with pytest.raises(ConfigError) as app:
        form.run_config("Demo (CPU, seconds)", values, DataConfig(source="synthetic:copy"))
    with pytest.raises(ConfigError) as via_cli:
        cli_config("demo", values, "synthetic:copy")
    assert str(app.value) == str(via_cli.value)
    assert "sliding window (500) is longer than the context (32)" in str(app.value)


def test_what_train_would_start_is_said_from_the_form_until_stopped_included():
    """A review's learner pressed Train beside the instructor's lecture run and got its Lecture preset at LR 0.1,
    training until stopped: the watcher's line now says what the form would start."""
    for field, value in settings.preset_values("Lecture (until stopped)").items():
        state.put(settings.FIELD_BY_NAME[field].key, value)
    state.put(train_keys.W_PRESET, "Lecture (until stopped)")
    state.put(settings.FIELD_BY_NAME["learning_rate"].key, 0.1)  # a live change the form shows, as the run has it
    words = next_run.next_run_words("Paste text")
    state.put(settings.FIELD_BY_NAME["seed"].key, 6060)
    assert words.startswith("trains until you press Stop · LR 0.1 · seed ") and words.endswith(
        " · the text in the box (0 characters)"), words  # the box's text, not "Paste text" (a review: uploaded)
    state.put(train_keys.W_PASTE, "x" * 7072)
    assert next_run.next_run_words("Paste text").endswith(" · the text in the box (7,072 characters)")
    assert "seed 6060" in next_run.next_run_words("Paste text")
    state.put(settings.FIELD_BY_NAME["max_steps"].key, 300)
    assert next_run.next_run_words("Tiny Shakespeare").startswith("300 steps ·")
    upload = settings.SOURCE_UPLOAD
    assert next_run.next_run_words(upload).endswith("· a text file (none chosen yet)")  # not the menu's words
    assert next_run.next_run_words(upload, type("Upload", (), {"name": "enum.txt"})()).endswith("· the file enum.txt")


def test_a_new_run_is_said_with_the_broken_knobs_and_the_other_text_it_would_take():
    """A review: after an upload run whose mask was switched to off_by_one live, pasted text and a new seed read only
    "You changed seed 2468 → 9001 in the form", and the new run started with mask off_by_one, said in its name alone."""
    from tinygpt.runs.corpus import corpus_sha256

    for field, value in settings.preset_values("Lecture (until stopped)").items():
        state.put(settings.FIELD_BY_NAME[field].key, value)
    state.put(settings.FIELD_BY_NAME["mask"].key, "off_by_one")  # a live change the form keeps from the run
    state.put(settings.FIELD_BY_NAME["attn_scale"].key, "none")
    words = next_run.next_run_words("Paste text")
    assert words.endswith(" characters) · mask off by one (sees the next token) · attention scaling none (scores "
                          "grow with d_head)"), words  # fmt: skip
    state.put(settings.FIELD_BY_NAME["mask"].key, "causal")
    state.put(settings.FIELD_BY_NAME["attn_scale"].key, "head_dim")
    words = next_run.next_run_words("Paste text")
    assert "mask" not in words and "scaling" not in words

    uploaded = "def f():\n    return 1\n" * 40
    run_config = {"data": {"source": "text", "text_sha256": corpus_sha256(uploaded)}}
    upload = type("Upload", (), {"name": "calendar.txt", "getvalue": lambda self: uploaded.encode()})()
    assert next_run.edits_for_a_new_run("run1", run_config, settings.SOURCE_UPLOAD, upload) == []  # the base
    state.put(train_keys.W_PASTE, "GNU GENERAL PUBLIC LICENSE\n" * 40)
    edits = next_run.edits_for_a_new_run("run1", run_config, settings.SOURCE_PASTE, None)
    pasted = corpus_sha256("GNU GENERAL PUBLIC LICENSE\n" * 40)
    assert edits == [f"another text (sha256 {corpus_sha256(uploaded)[:8]}… → {pasted[:8]}…)"], edits
    state.put(train_keys.W_PASTE, uploaded)  # the same text pasted: no other text
    assert next_run.edits_for_a_new_run("run1", run_config, settings.SOURCE_PASTE, None) == []


def test_a_watchers_new_run_takes_the_presets_live_knobs_not_the_watched_runs():
    """A review: a learner watching the lecture run picked Demo, pressed Train, and got the lecture run's LR 0.1 and
    warmup 50 from the greyed knobs she could not change."""
    for field, value in settings.preset_values(DEMO).items():
        state.put(settings.FIELD_BY_NAME[field].key, value)
    state.put(train_keys.W_PRESET, DEMO)
    state.put(settings.FIELD_BY_NAME["learning_rate"].key, 0.1)  # the watched run's, drawn in the greyed knobs
    state.put(settings.FIELD_BY_NAME["warmup_steps"].key, 50)
    state.put(settings.FIELD_BY_NAME["seed"].key, 7)
    watched = form.next_run_values(watching="live")
    assert (watched["learning_rate"], watched["warmup_steps"], watched["seed"]) == (0.002, 30, 7)  # her seed kept
    assert "LR 0.002" in next_run.next_run_words("Tiny Shakespeare", watching="live")
    assert form.next_run_values()["learning_rate"] == 0.1  # her own run's form: the knobs as set
    # Once the watched run has ended its knobs are hers to set: the preset's stand where the form still holds the
    # run's value (a review: Train took the ended run's LR 0.005 beside Demo), hers where she changed one
    state.put(train_keys.FORM_BASE, ("run1", {"learning_rate": 0.1, "warmup_steps": 50}))
    state.put(settings.FIELD_BY_NAME["warmup_steps"].key, 80)  # she set the warmup herself
    ended = form.next_run_values(watching="ended")
    assert (ended["learning_rate"], ended["warmup_steps"]) == (0.002, 80)


def test_an_ended_run_draws_no_learning_rate_plan(tmp_path, monkeypatch):
    """A review: a run stopped at step 609 drew a faint "planned" schedule on to its max_steps, 800."""
    from helpers import write_run

    from tinygpt.runs.store import RunStore
    from tinygpt.ui.train import train_view
    from tinygpt.ui.words import runinfo

    rd = RunStore(tmp_path).reader(write_run(tmp_path, steps=20))
    planned = []
    real = runinfo.lr_schedule
    monkeypatch.setattr(runinfo, "lr_schedule", lambda *a, **k: planned.append(1) or real(*a, **k))
    options = (False, None, 0.0, "steps")
    for state_now, drawn in (("stopped", 0), ("finished", 0), ("paused", 1), ("running", 2)):
        train_view._figures(rd, None, rd.config(), {"state": state_now, "step": 20}, options)
        assert len(planned) == drawn, state_now
