"""tinygpt/ui/people/room_table.py: the Room table reads whole at 1280x720 with Large fonts (a review read
"tidy-womba…", "2L×4H×64 · syntheti…" and "diverged: div…" in its fixed-height data frame cells)."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from helpers import app_as  # noqa: E402

from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui.people import room_table  # noqa: E402
from tinygpt.ui.people.room_flags import DIVERGED, Flag, with_flags  # noqa: E402

TEACHER = Actor("c" * 16, "teacher", instructor=True)
NAME = "2L×4H×64 · shakespeare · LR 0.002 · scaling none · softmax naive"
REASON = "diverged at step 50: loss nan, grad norm nan; first non-finite tensor blocks.1.attn.hook_weights"


def test_the_cells_are_whole_and_a_flag_is_its_words_with_its_reasons_under_the_table():
    rows = [{"learner": "tidy-wombat", "name": NAME, "lesson step": "", "in view": "", "state": "diverged",
             "steps": "50 / 200", "live changes": "", "run": "r1"}]  # fmt: skip
    rows = with_flags(rows, {"r1": [Flag(DIVERGED, REASON)]})
    [shown] = room_table.table(rows)
    assert shown == {"learner": "tidy-wombat", "name": NAME, "state": "diverged", "steps": "50 / 200",
                     "flag": "diverged"}  # fmt: skip
    [note] = room_table.flag_notes(rows)
    assert note.startswith(r"**tidy\-wombat · 2L×4H×64") and r"diverged\: diverged at step 50\: loss nan" in note


def test_the_queue_note_says_each_fact_once():
    """A review read "waiting for a free training slot (2 run(s) train at once); waiting for a free training slot
    (2 run(s) train at once)" under the Room table: the queued runs' reasons, each whole, share their first fact."""
    slot = "waiting for a free training slot (2 run(s) train at once)"
    rows = [{"state": "queued", "queue": slot}, {"state": "queued", "queue": f"{slot}; live runs go first"},
            {"state": "queued", "queue": slot}, {"state": "running", "queue": ""}]  # fmt: skip
    assert room_table.queue_note(rows) == f"3 queued run(s): {slot}; live runs go first."
    assert room_table.queue_note(rows[:1]) == f"1 queued run(s): {slot}."


def test_the_room_page_draws_a_table_whose_cells_wrap(runs_dir):
    from tinygpt.config import RunConfig

    store = RunStore(runs_dir)
    learner = {"learner": {"id": "a" * 16, "name": "tidy-wombat"}}
    with store.create(RunConfig().to_dict() | learner, owner="app") as writer:
        writer.write_status(state="paused", step=0)
    teacher = app_as(TEACHER)
    teacher.switch_page("pages/room.py").run()
    assert not teacher.exception, teacher.exception
    assert not teacher.dataframe  # a data frame's cells cut long text at the projector's width; a table wraps
    [table] = teacher.table
    assert list(table.value["learner"]) == ["tidy-wombat"] and "LR" in table.value["name"].iloc[0]


def test_a_paused_run_says_under_the_table_who_paused_it_and_why_it_has_no_worker():
    """A review: the lecture run, paused by step 8 and then its worker freed for a queued run, read only "paused"
    on the Room page; the Train page said who paused it."""
    rows = [
        {"learner": "tidy-wombat", "name": "2L×1H×128", "state": "paused",
         "paused": "paused by you at step 9228; its worker was freed for a queued run; resume it to continue"},
        {"learner": "anna", "name": "2L×4H×64", "state": "running", "paused": ""},
    ]  # fmt: skip
    notes = [n.replace("\\", "") for n in room_table.paused_notes(rows)]  # markdown-escaped: names are typed
    assert notes == [
        "**tidy-wombat · 2L×1H×128**: paused by you at step 9228; its worker was freed for a queued run; resume it "
        "to continue"
    ]
