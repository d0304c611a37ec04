"""The instructor's long runs line (tinygpt/ui/teach/long_runs.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from tinygpt.ui.teach import long_runs, teach_keys  # noqa: E402


def test_the_long_runs_line_says_which_slots_its_minutes_count(monkeypatch):
    """A review read "ready in about 15 min" for runs done in 3: step 8's Set up paused the lecture run, whose slot
    (and the cores it shared) the forecast had counted out. The line says so."""
    from types import SimpleNamespace

    eta = {"runs": 11, "seconds": 900.0, "slots": 1, "of": 2}
    monkeypatch.setattr(long_runs.resources, "get_manager", lambda: SimpleNamespace(prepared_eta=lambda: eta))
    said = "Long runs: 11 training or waiting for a slot, ready in about 15 min"
    assert long_runs.line() == said + " on 1 of the 2 slots."
    eta.update(slots=2)
    assert long_runs.line() == said + "."
    eta.update(seconds=None, slots=1)
    assert long_runs.line().endswith("ready once their pace is measured.")
    eta.update(runs=0)
    assert long_runs.line() is None


def test_the_line_is_redrawn_with_the_check_not_with_the_page(monkeypatch):
    """Drawn with the page, the line kept its count while the check above it moved on every 3 s (a review): it is a
    fragment of its own, on the check's refresh."""
    from types import SimpleNamespace

    made, said = [], []
    monkeypatch.setattr(long_runs.st, "fragment", lambda run_every: made.append(run_every) or (lambda f: f))
    monkeypatch.setattr(long_runs.st, "caption", said.append)
    eta = {"runs": 2, "seconds": 120.0, "slots": 2, "of": 2}
    monkeypatch.setattr(long_runs.resources, "get_manager", lambda: SimpleNamespace(prepared_eta=lambda: eta))
    long_runs.draw()
    assert made == [teach_keys.REFRESH_S]
    assert said == ["Long runs: 2 training or waiting for a slot, ready in about 2 min."]


def test_the_started_runs_line_says_their_states_now(tmp_path, monkeypatch):
    """The banner read "Long runs: started (21)" all class, every run long ended and one failed (a review): it says
    their states as the Room counts them, read from the run folders, refreshed with the check."""
    import json
    from types import SimpleNamespace

    assert long_runs.states_line(["running", "starting", "queued", "finished", "finished", "diverged", None]) == (
        "Long runs: 7 started: 2 training · 1 queued · 2 finished · 1 diverged · 1 not started"
    )
    for run_id, state in {"a": "finished", "b": "failed", "c": "finished"}.items():
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "status.json").write_text(json.dumps({"state": state, "step": 3}))
    store = SimpleNamespace(path=lambda run_id: tmp_path / run_id)
    monkeypatch.setattr(long_runs.resources, "get_manager", lambda: SimpleNamespace(store=store))
    assert long_runs.started_line(["a", "b", "c"]) == "Long runs: 3 started: 2 finished · 1 failed"
    made, said = [], []
    monkeypatch.setattr(long_runs.st, "fragment", lambda run_every: made.append(run_every) or (lambda f: f))
    monkeypatch.setattr(long_runs.st, "caption", said.append)
    long_runs.draw_started(iter(["a", "b"]), "{} (kept)")
    assert made == [teach_keys.REFRESH_S] and said == ["Long runs: 2 started: 1 finished · 1 failed (kept)"]
