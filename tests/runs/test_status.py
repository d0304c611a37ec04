"""tinygpt.runs.status: what a run says about itself, as readers may show it. Here: a queued run whose app server
is gone reads as waiting for the server, in the app's readers and `python -m tinygpt runs` (issue 34, finding 8)."""

from __future__ import annotations

import os
import subprocess
import sys

from tinygpt.cli.commands import main
from tinygpt.presets import preset
from tinygpt.runs.reader import RunReader
from tinygpt.runs.status import update_status
from tinygpt.runs.store import RunStore


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def queued_run(tmp_path, server_pid: int) -> tuple[RunStore, str]:
    store = RunStore(tmp_path)
    with store.create(preset("demo").to_dict(), owner="app") as writer:
        run_id = writer.run_id
    update_status(store.path(run_id), state="queued", reason="waiting for a free training slot", server_pid=server_pid)
    return store, run_id


def test_a_run_queued_by_a_server_that_is_gone_waits_for_the_server(tmp_path, capsys):
    store, run_id = queued_run(tmp_path, dead_pid())
    (summary,) = store.list_runs()
    assert summary.state == "paused" and summary.reason.startswith("waiting for the server")
    assert RunReader(store.path(run_id)).status()["reason"].startswith("waiting for the server")
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    row = out.splitlines()[0].split()
    assert "paused" in row and "queued" not in row and "waiting for the server" in out


def test_a_run_queued_by_a_live_server_stays_queued(tmp_path):
    store, _ = queued_run(tmp_path, os.getpid())
    (summary,) = store.list_runs()
    assert summary.state == "queued" and summary.reason == "waiting for a free training slot"
