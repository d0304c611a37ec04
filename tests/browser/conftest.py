"""Real-browser test harness: a headless Chromium (Playwright) against a live `streamlit run app.py`.

Every test in tests/browser gets the `browser` marker, so `pytest -m "not browser"` runs the rest alone.
Chromium: the system one (`chromium` / `chromium-browser` on PATH) if present, else Playwright's own build
(`python -m playwright install chromium`; tests/run.sh arranges one of the two).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OUTPUT = REPO / "test-output"

CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root in a container, where Chromium's sandbox can't start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_TIMEOUT_S = 60


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees every collected item, not just those under this folder.
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(headless=True, executable_path=executable, args=CHROMIUM_ARGS)
        except Exception as exc:  # make the fix obvious instead of a Playwright stack trace per test
            where = executable or "Playwright's own build"
            pytest.fail(
                f"could not launch Chromium ({where}): {exc}\n"
                "Install one: `apt-get install chromium`, or `python -m playwright install chromium`."
            )
        yield browser
        browser.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's whole process group (Streamlit plus any training workers it spawned), then SIGKILL."""
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


INSTRUCTOR_KEY = "test-instructor-key"  # the browser tests' server takes this key instead of a generated one


@pytest.fixture(scope="session")
def app_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs folder of the browser tests' server (tests read the run folders the app wrote)."""
    return tmp_path_factory.mktemp("app_runs")


@pytest.fixture(scope="session")
def app_server(app_runs: Path) -> Iterator[str]:
    """Start `streamlit run app.py` on a free port with a fresh runs dir; yield its base URL."""
    port = _free_port()
    runs = app_runs
    OUTPUT.mkdir(exist_ok=True)
    log_path = OUTPUT / "streamlit.log"
    env = {
        **os.environ,
        "TINYGPT_RUNS_DIR": str(runs),
        "PYTHONUNBUFFERED": "1",
        "TINYGPT_INSTRUCTOR_KEY": INSTRUCTOR_KEY,
    }
    cmd = [
        sys.executable, "-m", "streamlit", "run", "app.py",
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode} before answering:\n{_tail(log_path)}")
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as resp:
                    if resp.read().decode().strip() == "ok":
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit not healthy after {SERVER_START_TIMEOUT_S}s:\n{_tail(log_path)}")
            time.sleep(0.25)
        yield base
    finally:
        _stop(proc)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


@pytest.fixture(scope="session")
def shots() -> Path:
    """Folder for screenshots: test-output/screenshots under the repo (git-ignored)."""
    path = OUTPUT / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path
