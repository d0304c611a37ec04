"""The app as a dashboard for a run the CLI is still training: listed, charted, tailed, never written to."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import cli_env, tiny_train_args

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def status_of(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def test_app_lists_and_charts_a_run_the_cli_is_still_writing(tmp_path, tiny_text, monkeypatch):
    runs = tmp_path / "runs"
    monkeypatch.setenv("TINYGPT_RUNS_DIR", str(runs))
    env = cli_env()
    cli = subprocess.Popen(
        [sys.executable, "-m", "tinygpt", *tiny_train_args(runs, tiny_text, 100_000, "--quiet")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        run_id = cli.stdout.readline().split()[1]  # "run <id> in <folder>"
        run_dir = runs / run_id
        deadline = time.monotonic() + 60
        while status_of(run_dir).get("step", 0) < 20 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status_of(run_dir).get("state") == "running"

        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
        at.query_params["run"] = run_id
        at.run()
        at.switch_page("pages/runs.py").run()
        assert not at.exception, at.exception
        listing = at.dataframe[0].value
        row = listing[listing.apply(lambda r: run_id in " ".join(map(str, r.values)), axis=1)]
        assert len(row) == 1 and "running" in " ".join(map(str, row.iloc[0].values))
        # Read-only for everyone (issue 22, finding 4): Delete removed the folder under the CLI, which then died.
        buttons = {b.label: b for b in at.button}
        assert buttons["Resume"].disabled and buttons["Delete…"].disabled
        assert any(f"--resume {run_id}" in str(c.value) for c in at.code)

        at.switch_page("pages/gradients.py").run()
        assert not at.exception, at.exception
        first = status_of(run_dir)["step"]
        time.sleep(1.0)
        at.run()  # the page tails the growing metrics file
        assert not at.exception, at.exception
        shown = [
            int(str(m.value)[7:].split(" ", 1)[0].replace("\\", "").replace(",", ""))
            for m in at.markdown
            if str(m.value).startswith("**step ")
        ]
        assert shown and shown[0] > first  # the status line moved on with the CLI's progress
        assert json.loads((run_dir / "config.json").read_text())["owner"] == "cli"  # the app did not take it over
    finally:
        cli.send_signal(signal.SIGINT)  # Ctrl-C: a clean stop with a final checkpoint
        try:
            cli.wait(timeout=60)
        except subprocess.TimeoutExpired:
            cli.kill()
    assert status_of(run_dir)["state"] == "stopped"
    assert any((run_dir / "checkpoints").glob("*.safetensors"))
