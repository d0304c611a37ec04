"""The run in view (tinygpt/ui/run/in_view.py), issue 32: a run id goes from the URL to the page's reader with one
look-up of the run's folder a script run (sync_run_id finds it, run_handle.open_run's reader takes it), and a run
deleted elsewhere still loses its shared reader."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import write_run  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.host import resources  # noqa: E402
from tinygpt.ui.run import in_view  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def counting_lookups(monkeypatch) -> list[str]:
    """Every RunStore.existing and RunStore.exists from now on, by run id."""
    seen: list[str] = []
    existing, exists = RunStore.existing, RunStore.exists

    def counted_existing(self, run_id):
        seen.append(run_id)
        return existing(self, run_id)

    def counted_exists(self, run_id):
        seen.append(run_id)
        return exists(self, run_id)

    monkeypatch.setattr(RunStore, "existing", counted_existing)
    monkeypatch.setattr(RunStore, "exists", counted_exists)
    return seen


@pytest.mark.parametrize("page", ["pages/train.py", "pages/attention.py", "pages/gradients.py"])
def test_a_script_run_looks_the_run_in_view_up_once(runs_dir, monkeypatch, page):
    run = write_run(runs_dir)
    seen = counting_lookups(monkeypatch)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["run"] = run  # a link's first script run
    at.run()
    assert not at.exception, at.exception
    assert at.session_state[state.RUN_ID] == run
    assert seen.count(run) == 1
    at.switch_page(page).run()  # the session's run, on the next script run
    assert not at.exception, at.exception
    assert seen.count(run) == 2
    assert in_view.CHECKED not in at.session_state  # the look-up is that script run's: a fragment's rerun looks again


def test_a_run_deleted_elsewhere_leaves_the_page_and_drops_its_shared_reader(runs_dir):
    run = write_run(runs_dir)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["run"] = run
    at.run()
    run_dir = RunStore(runs_dir).path(run)
    assert str(run_dir) in resources.reader_pool()._entries
    shutil.rmtree(run_dir)
    at.run()
    assert not at.exception, at.exception
    assert state.RUN_ID not in at.session_state
    assert str(run_dir) not in resources.reader_pool()._entries
