"""Real-browser test harness: a headless Chromium (Playwright) against a live `streamlit run app.py`.

Every test in tests/browser gets the `browser` marker, so `pytest -m "not browser"` runs the rest alone.
Chromium: the system one (`chromium` / `chromium-browser` on PATH) if present, else Playwright's own build
(`python -m playwright install chromium`; tests/run.sh arranges one of the two).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from serving import AppServer, chromium_executable, launch_chromium

from tinygpt.runs.lock import writer_lock_holder

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: readme_contract
import readme_contract  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OUTPUT = REPO / "test-output"

SERVER_START_TIMEOUT_S = 60


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees every collected item, not just those under this folder.
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.browser)


STALE_COPY_WAIT_S = 60


def _waiting_out_stale_copies(action):
    """Wrap a Locator action so that a strict-mode refusal (the locator matched two elements) is retried until one
    is left. While a script run redraws a page, Streamlit keeps the previous run's element beside the new one until
    the run ends (greyed out), so a label can match twice for a moment under load: CI stops 56 and 58 each lost a
    full run to it ("Corpus" then "Max steps" resolved to 2 elements). A genuine duplicate still fails after a
    minute."""

    def act(self, *args, **kwargs):
        from playwright.sync_api import Error

        deadline = time.monotonic() + STALE_COPY_WAIT_S
        while True:
            try:
                return action(self, *args, **kwargs)
            except Error as refused:
                if "strict mode violation" not in str(refused) or time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    act.__wrapped__ = action
    return act


def _patch_locator_actions() -> None:
    from playwright.sync_api import Locator

    for name in ("click", "fill", "press", "check", "focus", "is_checked", "inner_text", "get_attribute"):
        action = getattr(Locator, name)
        if not hasattr(action, "__wrapped__"):
            setattr(Locator, name, _waiting_out_stale_copies(action))


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    _patch_locator_actions()
    with sync_playwright() as pw:
        try:
            browser = launch_chromium(pw)
        except Exception as exc:  # make the fix obvious instead of a Playwright stack trace per test
            where = chromium_executable() or "Playwright's own build"
            pytest.fail(
                f"could not launch Chromium ({where}): {exc}\n"
                "Install one: `apt-get install chromium`, or `python -m playwright install chromium`."
            )
        yield browser
        browser.close()


INSTRUCTOR_KEY = "test-instructor-key"  # the browser tests' server takes this key instead of a generated one


def become_instructor(page) -> None:
    """Enter the instructor key in the sidebar's "You: ..." box, as an instructor does, and wait for the answer."""
    from playwright.sync_api import expect

    page.get_by_text(re.compile("^You: ")).first.click()
    box = page.get_by_label("Instructor key")
    box.fill(INSTRUCTOR_KEY)
    box.press("Enter")
    expect(page.get_by_text(re.compile("Instructor mode"))).to_be_visible()


@contextlib.contextmanager
def own_server(tmp_path_factory: pytest.TempPathFactory, name: str, **env: str) -> Iterator[tuple[str, Path]]:
    """(base URL, runs folder) of a server of its own, for a test whose lesson or room must not be the shared
    server's (its room file is in its own runs folder); stopped on exit."""
    runs = tmp_path_factory.mktemp(f"{name}_runs")
    server = AppServer(runs, OUTPUT / f"streamlit-{name}.log", env={"TINYGPT_INSTRUCTOR_KEY": INSTRUCTOR_KEY, **env})
    try:
        server.wait_healthy(SERVER_START_TIMEOUT_S)
        yield server.base, runs
    finally:
        server.stop()


@pytest.fixture(scope="session")
def app_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs folder of the browser tests' server (tests read the run folders the app wrote)."""
    return tmp_path_factory.mktemp("app_runs")


@pytest.fixture(scope="session")
def app_server(app_runs: Path) -> Iterator[str]:
    """Start `streamlit run app.py` on a free port with a fresh runs dir; yield its base URL."""
    OUTPUT.mkdir(exist_ok=True)
    server = AppServer(app_runs, OUTPUT / "streamlit.log", env={"TINYGPT_INSTRUCTOR_KEY": INSTRUCTOR_KEY})
    try:
        try:
            server.wait_healthy(SERVER_START_TIMEOUT_S)
        except RuntimeError as exc:
            pytest.fail(str(exc))
        yield server.base
    finally:
        server.stop()


FAILED = pytest.StashKey[bool]()  # set on a test whose call phase failed


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture(autouse=True)
def nothing_left_training(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test on the shared server fails, end what it left behind: its browser contexts (their pages keep
    the runs' leases alive) and the workers of its runs still training. CI, stop 52: the knobs test failed before
    its Stop, its 100,000-step run held one of the two training slots for the rest of the session with both its
    pages open, and five later tests waited in the queue until they timed out."""
    yield
    if not request.node.stash.get(FAILED, False) or "app_server" not in request.fixturenames:
        return
    browser = request.getfixturevalue("browser")
    for context in list(browser.contexts):
        with contextlib.suppress(Exception):
            context.close()
    runs: Path = request.getfixturevalue("app_runs")
    for run_dir in [d for d in runs.iterdir() if (d / "status.json").exists()] if runs.is_dir() else []:
        holder = writer_lock_holder(run_dir)  # a worker that still writes the run holds a slot (paused ones too)
        if holder and holder.get("pid"):
            with contextlib.suppress(OSError):
                os.kill(int(holder["pid"]), signal.SIGKILL)  # the server's monitor reaps it: its slot frees


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


_SESSION_START = time.time()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With TINYGPT_README_SHOTS=1, the README screenshots this session retook replace docs/screenshots/ and
    the manifest records the page version each shows (tests/readme_contract.py; tests/test_readme.py checks it)."""
    if os.environ.get(readme_contract.ENV) == "1" and exitstatus == 0:
        published = readme_contract.publish(OUTPUT / "screenshots", _SESSION_START)
        if published:
            print(f"\nREADME screenshots retaken: {', '.join(published)}")
