"""tinygpt.runs.owners: who owns a run and what an actor may do with it (control it, open a link to it), as plain
rules of the run's owner part and an Actor: no app, no browser."""

from __future__ import annotations

import json

import pytest

from tinygpt.runs.owners import Actor, may_control, may_open_link, read_owner

ANNA = Actor("a" * 16, "anna")
BEN = Actor("b" * 16, "ben")
TEACHER = Actor("c" * 16, "teacher", instructor=True)
ANNAS = {"owner": "app", "learner": {"id": ANNA.id, "name": "anna"}}


def test_may_control_is_the_owner_or_the_instructor():
    config = {"learner": {"id": ANNA.id, "name": "anna"}}
    assert may_control(config, ANNA) and may_control(config, TEACHER) and not may_control(config, BEN)
    assert may_control(config, None)  # the server or the CLI itself
    # A run no learner owns (CLI-trained, prepared, damaged config) is the instructor's: read-only to learners.
    assert not may_control({}, BEN) and not may_control({"owner": "cli"}, ANNA) and may_control({}, TEACHER)


def test_a_link_opens_a_run_its_owner_or_nobody_owns_and_any_run_read_only_with_view():
    assert may_open_link(ANNAS, ANNA) and may_open_link(ANNAS, TEACHER)
    assert not may_open_link(ANNAS, BEN)  # Anna's address bar, copied: Ben's own session instead
    assert may_open_link(ANNAS, BEN, view=True)  # a share: read-only (may_control still says no)
    assert not may_control(ANNAS, BEN)
    for nobodys in ({"owner": "cli"}, {}):  # CLI-trained or prepared (or a damaged config): the instructor's
        assert may_open_link(nobodys, BEN) and not may_control(nobodys, BEN)
    # The instructor's own run (the lecture run) opens read-only too: a learner read "another learner's run" of it
    lecture = {"owner": "app", "learner": {"id": TEACHER.id, "name": "teacher", "instructor": True}}
    assert may_open_link(lecture, BEN) and not may_control(lecture, BEN)


@pytest.mark.parametrize("text", [None, "not json", json.dumps({**ANNAS, "model": {"num_layers": 2}})])
def test_read_owner_reads_the_owner_part_alone_and_nothing_from_a_missing_or_damaged_file(tmp_path, text):
    if text is not None:
        (tmp_path / "config.json").write_text(text)
    assert read_owner(tmp_path) == (ANNAS if text and text.startswith("{") else {})
