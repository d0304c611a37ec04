"""A learner's pasted text is kept on the server (tinygpt/ui/train/drafts.py): a reload does not lose it."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from helpers import app_as  # noqa: E402

from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui.train import drafts, settings, train_keys  # noqa: E402

ANNA, BEN = Actor("anna-public-id", "Anna"), Actor("ben-public-id", "Ben")


def test_a_draft_is_kept_per_learner_and_an_empty_text_removes_it(tmp_path):
    drafts.save(tmp_path, ANNA, "to be or not to be\n" * 10)
    assert drafts.load(tmp_path, ANNA) == "to be or not to be\n" * 10
    assert drafts.load(tmp_path, BEN) == ""  # another learner's draft is not theirs
    drafts.save(tmp_path, ANNA, "")
    assert drafts.load(tmp_path, ANNA) == "" and not list((tmp_path / drafts.FOLDER).iterdir())


def test_a_damaged_draft_starts_the_box_empty_and_drafts_are_not_runs(tmp_path):
    drafts.save(tmp_path, ANNA, "some text")
    [path] = (tmp_path / drafts.FOLDER).iterdir()
    path.write_text("{not json")
    assert drafts.load(tmp_path, ANNA) == ""
    assert RunStore(tmp_path).list_runs() == []  # the folder is no run of the run list


def test_pasted_text_survives_a_reload_in_a_new_session(runs_dir):
    """Stop 42's leftover: a learner who pasted 30 kB and reloaded (a new session) found the box empty."""
    text = "def add(a, b):\n    return a + b\n" * 40
    at = app_as(ANNA)
    at.selectbox(key=train_keys.W_SOURCE).set_value(settings.SOURCE_PASTE).run()
    at.text_area(key=train_keys.W_PASTE).set_value(text).run()
    assert not at.exception
    reloaded = app_as(ANNA)  # the same learner (their cookie), a new session
    reloaded.selectbox(key=train_keys.W_SOURCE).set_value(settings.SOURCE_PASTE).run()
    assert reloaded.text_area(key=train_keys.W_PASTE).value == text
    other = app_as(BEN)
    other.selectbox(key=train_keys.W_SOURCE).set_value(settings.SOURCE_PASTE).run()
    assert not other.text_area(key=train_keys.W_PASTE).value
