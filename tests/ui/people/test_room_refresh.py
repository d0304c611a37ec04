"""The Room page refreshes every few seconds over every learner's runs. Each refresh read every run's config.json
three times (RunStore.list_runs, the readable names, read_owner per row), though the file is written when the run is
created and once more by its worker: now what is read from it is kept per file until the file changes
(tinygpt.runs.files.memo_by_file), so a refresh with nothing changed opens no config.json."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.presets import preset  # noqa: E402
from tinygpt.runs import files  # noqa: E402
from tinygpt.runs.owners import Actor, read_owner, run_learner  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui.host import runlist  # noqa: E402
from tinygpt.ui.people import people_keys  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
TEACHER = Actor("c" * 16, "teacher", instructor=True)


def _runs(store: RunStore, count: int) -> list[str]:
    ids = []
    for i in range(count):
        config = {**preset("demo", max_steps=100).to_dict(), "learner": {"id": f"{i:016d}", "name": f"learner {i}"}}
        with store.create(config, owner="app") as writer:
            ids.append(writer.run_dir.name)
    return ids


@pytest.fixture
def config_opens(monkeypatch) -> list[str]:
    """The config.json files read_json opens (every config.json read of the engine goes through it)."""
    opened: list[str] = []

    def counting_open(path, *args, **kwargs):
        if Path(path).name == files.CONFIG_FILE:
            opened.append(Path(path).parent.name)
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(files, "open", counting_open, raising=False)  # shadows the builtin in files.py only
    return opened


def _refresh(store: RunStore) -> dict[str, str]:
    """What the Room's dashboard reads per refresh that comes from config.json: the rows, each row's learner."""
    rows = runlist.room_rows(store)
    return {r["run"]: run_learner(read_owner(store.path(r["run"]))).get("name") for r in rows}


def test_a_second_refresh_with_nothing_changed_opens_no_config_json(runs_dir, config_opens):
    store = RunStore(runs_dir)
    ids = _runs(store, 5)
    config_opens.clear()
    first = _refresh(store)
    assert sorted(config_opens) == sorted(ids)  # once each (not three times: list_runs, names, owner)
    config_opens.clear()
    assert _refresh(store) == first
    assert config_opens == []  # nothing changed: nothing read again


def test_a_changed_config_json_is_read_again_and_only_that_one(runs_dir, config_opens):
    store = RunStore(runs_dir)
    ids = _runs(store, 3)
    _refresh(store)
    config = files.read_config_json(store.path(ids[1]))
    renamed = {**config, "learner": {"id": "x" * 16, "name": "renamed"}}
    files.write_json_atomic(store.path(ids[1]) / files.CONFIG_FILE, renamed)  # as RunWriter.write_config does
    config_opens.clear()
    assert _refresh(store)[ids[1]] == "renamed"
    assert config_opens == [ids[1]]


def test_a_caller_that_changes_what_it_read_does_not_change_the_memo(runs_dir):
    store = RunStore(runs_dir)
    [run] = _runs(store, 1)
    files.read_config_json(store.path(run))["learner"]["name"] = "scribbled"
    store.list_runs()[0].config["learner"]["name"] = "scribbled"
    assert files.read_config_json(store.path(run))["learner"]["name"] == "learner 0"
    assert store.list_runs()[0].config["learner"]["name"] == "learner 0"


def test_the_room_pages_refresh_opens_no_config_json_when_nothing_changed(runs_dir, config_opens):
    """The page itself, twice as the instructor: the second run reads no config.json at all."""
    store = RunStore(runs_dir)
    ids = _runs(store, 4)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.session_state[people_keys.LEARNER] = TEACHER
    at.run()
    at.switch_page("pages/room.py").run()
    assert not at.exception, at.exception
    assert any("(4 in all)" in str(m.value) for m in at.markdown)
    config_opens.clear()
    at.run()
    assert not at.exception, at.exception
    assert config_opens == [], f"re-read: {sorted(set(config_opens))} of {ids}"
