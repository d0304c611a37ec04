"""Names instead of ids wherever a person reads a run (issue 36 item 3), through the app (Streamlit AppTest): the
sidebar, the Runs table and pickers, Compare's "Settings that differ", the Sample picker and the Room."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import write_run  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui.host import runlist
from tinygpt.ui.people import people_keys
from tinygpt.ui.runs import runs_keys
from tinygpt.ui.sample import sample_keys

REPO = Path(__file__).resolve().parents[2]
TEACHER = Actor("c" * 16, "teacher", instructor=True)


def app_on(run_id: str, actor: Actor | None = None) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    if actor:
        at.session_state[people_keys.LEARNER] = actor
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception, at.exception
    return at


def test_every_page_names_runs_and_twins_apart(runs_dir):
    first, twin, wider = write_run(runs_dir), write_run(runs_dir), write_run(runs_dir, hidden_dim=48)
    names = runlist.run_names(RunStore(runs_dir))
    assert len(set(names.values())) == 3 and names[twin] == names[first] + " #2"

    at = app_on(twin)
    sidebar = [c for c in at.sidebar.caption if c.value.startswith("Run:")]
    # not `Run: <id>`; the knobs that moved since the name was made are said after it (write_run: mask none at 5)
    assert [c.value.replace("\\", "") for c in sidebar] == [
        f"Run: **{names[twin]}** · now mask none (changed at step 5)"
    ]

    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    # Runs draws other runs: the line says where this one is drawn (a review read "Run: …" over other runs)
    shown = [c.value.replace("\\", "") for c in at.sidebar.caption]
    assert any(c.startswith(f"Run on Train and the run pages: **{names[twin]}**") for c in shown), shown
    table = next(d for d in at.dataframe if "name" in d.value.columns)  # the table; then all its columns
    assert list(table.proto.column_order)[0] == "name" and list(table.value.columns)[-1] == "run"
    assert sorted(table.value["name"]) == sorted(names.values())
    picker = at.selectbox(key=runs_keys.W_RUNS_PICK)
    assert all(run not in picker.format_func(run) for run in names)  # names, not ids
    compare = at.multiselect(key=runs_keys.W_COMPARE)
    assert [compare.format_func(run) for run in (first, twin)] == [names[first], names[twin]]  # whole chips
    compare.set_value([first, wider]).run()
    assert not at.exception, at.exception
    [diff] = [d for d in at.table if "setting" in d.value.columns]  # a table: it wraps, every run shown at 1280 px
    assert list(diff.value.columns) == ["setting", names[first], names[wider]]  # headed by names, not ids
    assert not any(str(s).startswith("learner.") for s in diff.value["setting"])

    at.switch_page("pages/sample.py").run()
    assert not at.exception, at.exception
    sample = at.selectbox(key=sample_keys.W_SAMPLE_RUN)
    labels = [sample.format_func(run) for run in names]
    assert len(set(labels)) == 3 and all(run not in label for run, label in zip(names, labels, strict=True))


def test_the_room_names_runs_in_its_table_and_picker(runs_dir):
    first, twin = write_run(runs_dir), write_run(runs_dir)
    names = runlist.run_names(RunStore(runs_dir))
    at = app_on(first, TEACHER)
    at.switch_page("pages/room.py").run()
    assert not at.exception, at.exception
    [table] = [d for d in at.table if "learner" in d.value.columns]  # cells that wrap (room_table); no run id
    assert list(table.value.columns)[:2] == ["learner", "name"] and "run" not in table.value.columns
    assert sorted(table.value["name"]) == sorted(names.values())
    picker = at.selectbox(key=people_keys.W_ROOM_PICK)
    assert {picker.format_func(run).split(" · ", 1)[1].rsplit(" · ", 1)[0] for run in (first, twin)} == set(
        names.values()
    )
