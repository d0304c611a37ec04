"""What the browser tests, the browser benchmark and the load tests share: `streamlit run app.py` on a free port in
its own process group, and a headless Chromium (the system one if there is one, else Playwright's own build)."""

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
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root in a container, where Chromium's sandbox can't start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
STREAMLIT_FLAGS = ["--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_executable() -> str | None:
    """Debian's chromium if it is on PATH; None: Playwright's own build."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch_chromium(playwright, extra_args: tuple[str, ...] = ()):
    """A headless Chromium with the flags every browser test uses (plus `extra_args`)."""
    return playwright.chromium.launch(
        headless=True, executable_path=chromium_executable(), args=[*CHROMIUM_ARGS, *extra_args]
    )


class AppServer:
    """`streamlit run app.py` (or `launcher` + app.py: a wrapper that runs Streamlit inside itself) in its own
    process group, so that stopping it stops its training workers too. Output goes to `log_path`."""

    def __init__(self, runs_dir: Path, log_path: Path, env: dict | None = None, launcher: list[str] | None = None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(log_path)
        full_env = {**os.environ, "TINYGPT_RUNS_DIR": str(runs_dir), "PYTHONUNBUFFERED": "1", **(env or {})}
        launcher = launcher or [sys.executable, "-m", "streamlit", "run"]
        cmd = [*launcher, "app.py", "--server.port", str(self.port), *STREAMLIT_FLAGS]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_healthy(self, timeout_s: float = 90) -> float:
        """Seconds until /_stcore/health said ok. Raises RuntimeError (with the log's tail) if the server exited
        or did not answer in time."""
        started = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base}/_stcore/health", timeout=2) as resp:
                    if resp.read().decode().strip() == "ok":
                        return time.monotonic() - started
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() - started > timeout_s:
                raise RuntimeError(f"streamlit not healthy after {timeout_s:g} s:\n{self.log_tail()}")
            time.sleep(0.1)

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        stop_group(self.proc)


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM a server's whole process group (the server checkpoints and releases its workers), then SIGKILL
    whatever is left: workers outlive the server by a moment while they checkpoint."""
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
