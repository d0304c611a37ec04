"""The load test's smallest room, so the script (tests/browser/load_room.py) keeps working: three learners at the
protocol level on one server (two train, one queues), then all of them watching a fourth run's live charts.

It checks what a room must never show, not how fast it is (speed is the script's output, BENCHMARKS.md): every run
finished, every page followed its run to `finished`, no page left showing `queued` after its run started, no run
paused by the lease, nothing wrong in the server log, no exception on any page.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_a_small_room_at_the_protocol_level_has_no_problems(tmp_path):
    out = tmp_path / "room.json"
    cmd = [sys.executable, str(HERE / "load_room.py"), "--sessions", "3", "--clients", "protocol",
           "--watch-s", "3", "--idle-s", "1", "--room-timeout-s", "240", "--out", str(out), "--brief"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=420)
    assert done.returncode == 0, done.stderr[-3000:]
    [room] = json.loads(out.read_text())["rooms"]
    summary = {k: room.get(k) for k in ("runs", "errors", "stale_pages", "runs_not_finished", "runs_paused_by_lease",
                                        "pages_not_showing_finished", "server_log_problems")}  # fmt: skip
    assert room["error_count"] == 0, summary
    assert room["runs"]["finished"] == 3 and room["runs"]["max_queued_at_once"] >= 1, summary
    assert not room["stale_pages"], summary
    assert room["cpu_watch_all"]["pages"] == 4 and room["cpu_watch_all"]["reruns"] > 0, room["cpu_watch_all"]
