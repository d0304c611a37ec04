"""The word each setting goes by where people read it (tinygpt/ui/words/setting_words.py): the Train form's labels,
and no config field's snake_case name in a banner, a flash, the Room's flags, the Train page's "changed since this
run started", a knob's note or a run's event line (the review found "learning_rate" on the projector)."""

from __future__ import annotations

import dataclasses
import re

from tinygpt import config as tinygpt_config
from tinygpt.config import LIVE_KNOBS
from tinygpt.ui.people.room_flags import OWN, run_flags
from tinygpt.ui.train import settings
from tinygpt.ui.words import runinfo
from tinygpt.ui.words.knob_words import knob_word
from tinygpt.ui.words.setting_words import in_words, setting_word

CONFIGS = [getattr(tinygpt_config, n) for n in dir(tinygpt_config) if n.endswith("Config")]
FIELD_NAMES = {f.name for c in CONFIGS if dataclasses.is_dataclass(c) for f in dataclasses.fields(c)}
SNAKE = re.compile(r"\b(" + "|".join(sorted((n for n in FIELD_NAMES if "_" in n), key=len, reverse=True)) + r")\b")


def no_field_names(text: str) -> None:
    assert not SNAKE.search(text), (SNAKE.search(text).group(0), text)


def test_the_words_are_the_train_forms_labels():
    for field in settings.MODEL_FIELDS:  # "Context (max_seq_len)" -> "context": the label, not the name in brackets
        assert setting_word(field.name) == re.sub(r"\s*\(.*\)$", "", field.label).lower(), field
    for knob in LIVE_KNOBS:  # a live knob by its chart word, as its marker names it
        assert setting_word(knob) == knob_word(knob)
    assert setting_word("learning_rate") == "LR" and setting_word("max_seq_len") == "context"
    assert setting_word("an_older_runs_knob") == "an_older_runs_knob"  # unknown: by name, never an error
    for name in FIELD_NAMES:
        no_field_names(setting_word(name)) if setting_word(name) != name else None


def test_in_words_rewrites_field_names_inside_an_engines_sentence():
    assert in_words("learning_rate must be > 0, got -1.0: try 1e-3.") == "LR must be > 0, got -1.0: try 1e-3."
    said = in_words("hidden_dim 60 is not divisible by num_heads 7: try 6 heads, or hidden_dim 56.")
    assert said == "width 60 is not divisible by heads 7: try 6 heads, or width 56."
    assert in_words("mask must be one of causal, sliding_window") == "mask must be one of causal, sliding_window"


def test_changed_since_start_and_the_ghost_label_use_the_words():
    run = {"num_heads": 4, "max_seq_len": 32, "hidden_dim": 64, "num_layers": 2, "batch_size": 16}
    form = {"num_heads": 8, "max_seq_len": 16, "hidden_dim": 128, "num_layers": 3, "batch_size": 32}
    changed = settings.changed_since_start(run, None, form, "Tiny Shakespeare")
    assert changed == ["layers 2 → 3", "width 64 → 128", "heads 4 → 8", "context 32 → 16", "batch size 16 → 32"]
    for text in changed:
        no_field_names(text)


def test_a_refused_knob_note_and_the_event_line_use_the_words():
    refused = [{"kind": "knob", "knob": "learning_rate", "request": "r", "ok": False,
                "error": "learning_rate must be > 0, got -1.0: try 1e-3.",
                "message": "knob learning_rate = -1.0 not applied: learning_rate must be > 0"}]  # fmt: skip
    kind, text = runinfo.knob_note(refused, "r", "learning_rate", -1.0)
    assert (kind, text) == ("error", "LR → -1: not applied: LR must be > 0, got -1.0: try 1e-3.")
    events = [{"kind": "knob", "knob": "warmup_steps", "ok": True, "old": 0, "new": 50, "step": 3},
              {"kind": "nonfinite", "step": 9, "message": "loss not finite at max_grad_norm 0"}]  # fmt: skip
    line = runinfo.event_notes(events)
    assert line == "warmup 0→50 @3 · loss not finite at clip 0"
    no_field_names(line)
    for knob in LIVE_KNOBS:
        no_field_names(runinfo.knob_note([], "r", knob, 1)[1])


def test_the_rooms_own_settings_flag_names_settings_by_their_words():
    def run(name, learner, **model):
        model = {"num_layers": 2, "num_heads": 4, "hidden_dim": 64, "max_seq_len": 32, **model}
        train = {"batch_size": 16, "learning_rate": 1e-3}
        config = {"learner": {"id": learner, "name": learner}, "model": model, "train": train, "data": {}}
        return {"run": name, "state": "running", "metrics": [], "events": [], "config": config}

    flags = run_flags(run("mine", "anna", num_heads=2, max_seq_len=16, hidden_dim=32), lecture=run("lecture", "t"))
    [flag] = [f for f in flags if f.word == OWN]
    assert "heads 2 (lecture run: 4)" in flag.reason and "context 16 (lecture run: 32)" in flag.reason, flag.reason
    no_field_names(flag.reason)
