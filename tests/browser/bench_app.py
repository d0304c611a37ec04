"""Browser performance benchmark of the app (issue 4, "Performance"): a script, not a test.

    .venv/bin/python tests/browser/bench_app.py [--out FILE]

Starts `streamlit run app.py` on a free port (headless, a fresh TINYGPT_RUNS_DIR in a temp folder,
TINYGPT_SHAKESPEARE pointing at a local Tiny Shakespeare), drives headless Chromium with Playwright, and prints
one JSON object:

- click_to_first_point_s: Train page, Demo preset, click Train -> the status line shows `step N / M` with N >= 1
  and the loss chart's SVG has drawn a line (3 runs, stopped in between; a fresh page each time). Target < 2 s.
  The first click after the server started is reported apart (`_warmup_s`): it may find the worker
  forkserver still importing torch.
- refresh_hz: a Demo run with more steps trains while the page samples its status line every 50 ms for 10 s;
  distinct texts per second. Target >= 2 Hz. Websocket traffic in the same window is reported too.
- worker_tokens_per_s_watched / _unwatched, slowdown_pct: the same nanoGPT CPU run (400 steps) started from the
  page, either left open on the Train page (refreshing) or with the tab sent to about:blank right after the
  start; per-step tokens/s from metrics.jsonl, median over the middle half of the steps. Rounds alternate
  watched/unwatched in ABBA order so a drifting machine load hurts both alike. Target <= 10 %.
- page_switch_s: sidebar link click -> the page's title `tinygpt · <Page>` visible, for every page, while a run
  trains. Target < 1 s each.
- attention_grid_render_s: a finished nanoGPT CPU run (4 layers x 4 heads, context 64), Train page -> click
  Attention -> all 16 heatmaps of the layers x heads figure drawn (plotly draws each heatmap as an <image> in
  a `g.hm` group). Target < 1 s.

Timings are taken inside the page (performance.now() at the click event, a requestAnimationFrame poll for the
end condition), so Playwright's round trips are not counted. The page is not polled while the worker's speed
is measured: the script waits on the run's status.json on disk in both cases.

To explain a miss, the JSON also holds intermediate marks (status line shown, chart drawn, plotly.js fetched),
the browser's main-thread long tasks, the page's script-run state during the refresh window, websocket traffic,
and CPU cores used per group (worker, server, browser, everything else on the machine) from /proc. A run whose
worker fails is retried (up to 3 times) and listed under `failed_runs`. On an error the script saves a screenshot
and the page text to test-output/bench_failure.*; in every case it stops the server's whole process group
(training workers included) and removes its temp folder. Not collected by pytest (no test_ prefix).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from serving import AppServer, chromium_executable, launch_chromium
from test_app_browser import choose, set_number  # the browser test's widget helpers (same folder)

REPO = Path(__file__).resolve().parents[2]
SHAKESPEARE_DEFAULT = Path("/work/shared/data/tinyshakespeare.txt")
LIVE_STATES = ("queued", "starting", "running", "paused")
TARGETS = {"click_to_first_point_s": 2.0, "refresh_hz": 2.0, "slowdown_pct": 10.0, "page_switch_s": 1.0,
           "attention_grid_render_s": 1.0}  # fmt: skip
PAGES = ["Attention", "Gradients", "Sample", "Runs", "Experiments", "Train"]

# ---------------------------------------------------------------- in-page JavaScript

# Records when the user's click reached the page (capture phase, before Streamlit's own handlers), and from then
# on the page's long tasks (main-thread work over 50 ms: script, style, layout, chart drawing).
ARM_CLICK_JS = """() => {
  window.__benchClick = null;
  window.__benchMarks = {};
  if (!window.__benchArmed) {
    window.__benchLong = [];
    window.addEventListener('click', () => { window.__benchClick = performance.now(); }, true);
    new PerformanceObserver(list => window.__benchLong.push(...list.getEntries().map(e => [e.startTime, e.duration])))
      .observe({type: 'longtask'});
    window.__benchArmed = true;
  }
}"""

# Seconds of long tasks that began between the click and `seconds` after it.
LONG_TASKS_JS = """(seconds) => {
  const t0 = window.__benchClick, t1 = t0 + seconds * 1000;
  return window.__benchLong.filter(([start]) => start >= t0 && start < t1).reduce((sum, [, d]) => sum + d, 0) / 1000;
}"""

# Click -> `step N / M` with N >= 1 and the loss chart (the first Vega-Lite chart) has an SVG line with a path.
# On the way it notes when the status line first showed (any step) and when the chart first had a line.
FIRST_POINT_JS = """() => {
  const t0 = window.__benchClick;
  if (t0 === null) return false;
  const now = performance.now() - t0, marks = window.__benchMarks;
  const st = [...document.querySelectorAll('strong')].map(e => e.innerText.match(/^step ([\\d,]+) \\//))
    .find(m => m);
  if (st && marks.status_s === undefined) marks.status_s = now / 1000;
  const chart = document.querySelector('[data-testid="stVegaLiteChart"] svg');
  const line = !!chart && [...chart.querySelectorAll('[aria-roledescription="line mark"]')]
    .some(p => (p.getAttribute('d') || '').length > 2);
  if (line && marks.line_s === undefined) marks.line_s = now / 1000;
  const stepped = !!st && +st[1].replace(/,/g, '') >= 1;
  if (stepped && marks.step_s === undefined) marks.step_s = now / 1000;
  return stepped && line ? {s: now / 1000, ...marks} : false;
}"""

# Click -> the status line reads `step M / M` (the Demo run's last step on screen): the whole run as its viewer
# sees it, the worker's start, every step, eval and snapshot, and the page catching up.
WHOLE_RUN_JS = """() => {
  const t0 = window.__benchClick;
  if (t0 === null) return false;
  const st = [...document.querySelectorAll('strong')].map(e => e.innerText.match(/^step ([\\d,]+) \\/ ([\\d,]+)/))
    .find(m => m);
  return st && st[1] === st[2] ? (performance.now() - t0) / 1000 : false;
}"""

TITLE_JS = """(title) => {
  if (window.__benchClick === null) return false;
  const h = [...document.querySelectorAll('h1')].find(e => e.innerText.trim() === title);
  if (!h) return false;
  const r = h.getBoundingClientRect();
  return r.width > 0 && r.height > 0 ? performance.now() - window.__benchClick : false;
}"""

# The layers x heads grid is the first plotly chart of the Attention page; plotly.js draws every heatmap trace
# as an <image> (its pixels as a data URL) inside a `g.hm` group of the `heatmaplayer`. Also noted: when the
# "All heads" caption showed (the server has built the figure: the page writes it right after), when the chart's
# element appeared (Streamlit creates it once plotly.js has loaded), and when its first heatmap was drawn.
GRID_JS = """([n, title]) => {
  const t0 = window.__benchClick;
  if (t0 === null) return false;
  const now = performance.now() - t0, marks = window.__benchMarks;
  if (marks.title_s === undefined && [...document.querySelectorAll('h1')].some(e => e.innerText.trim() === title))
    marks.title_s = now / 1000;
  const caption = [...document.querySelectorAll('strong')].some(e => e.innerText.startsWith('All heads'));
  if (caption && marks.caption_s === undefined) marks.caption_s = now / 1000;
  const element = document.querySelector('[data-testid="stPlotlyChart"]');
  if (element && marks.element_s === undefined) marks.element_s = now / 1000;
  const fig = element && element.querySelector('.js-plotly-plot');
  if (!fig) return false;
  const drawn = [...fig.querySelectorAll('.heatmaplayer g.hm image')]
    .filter(i => (i.getAttribute('href') || i.getAttribute('xlink:href') || '').length > 100).length;
  if (drawn && marks.first_heatmap_s === undefined) marks.first_heatmap_s = now / 1000;
  if (drawn < n) return false;
  // Streamlit loads plotly.js (a 4.7 MB chunk) the first time a page shows a plotly chart.
  const lib = performance.getEntriesByType('resource').find(e => /PlotlyChart[^/]*\\.js/.test(e.name));
  const fetched = lib && lib.responseEnd >= t0 ? {plotly_js_fetched_s: (lib.responseEnd - t0) / 1000} : {};
  return {s: now / 1000, heatmaps: drawn, ...marks, ...fetched};
}"""

# Samples the status line every `period` ms for `duration` ms; returns [ms, text] for each change. A
# MutationObserver also records the page's script-run state ([ms, state] at each change): fragment reruns that
# follow each other back to back leave it "running" throughout.
SAMPLE_STATUS_JS = """async ([period, duration]) => {
  const read = () => {
    const el = [...document.querySelectorAll('strong')].find(e => /^step [\\d,]+/.test(e.innerText));
    return el ? el.innerText : null;
  };
  const app = document.querySelector('[data-testid="stApp"]');
  const stateNow = () => app.getAttribute('data-test-script-state');
  const t0 = performance.now();
  const states = [[0, stateNow()]];
  let longMs = 0;
  const longObserver = new PerformanceObserver(list => list.getEntries().forEach(e => { longMs += e.duration; }));
  longObserver.observe({type: 'longtask'});
  const observer = new MutationObserver(() => states.push([performance.now() - t0, stateNow()]));
  observer.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  const out = [];
  let last, samples = 0;
  while (performance.now() - t0 < duration) {
    const text = read();
    samples++;
    if (text !== last) { out.push([performance.now() - t0, text]); last = text; }
    await new Promise(r => setTimeout(r, period));
  }
  observer.disconnect();
  longObserver.disconnect();
  return {changes: out, samples, elapsed: performance.now() - t0, states, longMs};
}"""

SCRIPT_STATE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return app ? app.getAttribute('data-test-script-state') : null;
}"""


# ---------------------------------------------------------------- server


def start_server(runs_dir: Path, log_path: Path, shakespeare: Path | None) -> AppServer:
    return AppServer(runs_dir, log_path, env={"TINYGPT_SHAKESPEARE": str(shakespeare)} if shakespeare else None)


# ---------------------------------------------------------------- the run folder


class Runs:
    def __init__(self, root: Path):
        self.root = root

    def ids(self) -> set[str]:
        if not self.root.is_dir():
            return set()
        return {p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")}

    def status(self, run_id: str) -> dict:
        try:
            return json.loads((self.root / run_id / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def metrics(self, run_id: str) -> list[dict]:
        out = []
        try:
            lines = (self.root / run_id / "metrics.jsonl").read_text().splitlines()
        except OSError:
            return out
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def new_run(self, before: set[str], timeout_s: float = 30) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            new = self.ids() - before
            ready = [r for r in new if (self.root / r / "config.json").exists()]
            if ready:
                return ready[0]
            time.sleep(0.05)
        raise TimeoutError(f"no new run appeared in {self.root} within {timeout_s}s")

    def wait_state(self, run_id: str, done, timeout_s: float, poll_s: float = 0.25) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status = self.status(run_id)
            if done(status):
                return status
            time.sleep(poll_s)
        raise TimeoutError(f"run {run_id}: still {self.status(run_id)} after {timeout_s}s")


# ---------------------------------------------------------------- page helpers


def settle(page: Page, timeout_s: float = 10) -> None:
    """Wait until no script run is in progress (a live page reruns its fragment, so this is brief), then let
    the browser paint."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if page.evaluate(SCRIPT_STATE_JS) not in ("running", "rerunRequested"):
            break
        time.sleep(0.05)
    page.wait_for_timeout(300)


def open_train(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.get_by_role("heading", name="tinygpt · Train")).to_be_visible(timeout=60_000)
    expect(page.get_by_role("button", name="Train")).to_be_enabled(timeout=30_000)
    settle(page)


class RunFailed(RuntimeError):
    """A run the benchmark started ended before it could be measured (e.g. its worker died at start-up)."""


def wait_js(page: Page, until_js: str, arg=None, timeout_s: float = 60, abort=None):
    """Wait until `until_js` returns a truthy value (polled on every animation frame) and return it. Every 2 s
    `abort()` may name a reason to give up (a failed run) instead of waiting out the timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return page.wait_for_function(until_js, arg=arg, polling="raf", timeout=2000).json_value()
        except PlaywrightTimeoutError:
            reason = abort() if abort else None
            if reason:
                raise RunFailed(reason) from None
            if time.monotonic() > deadline:
                raise


def timed_click(page: Page, locator, until_js: str, arg=None, timeout_s: float = 60, abort=None):
    """Click, then the in-page time from the click event until `until_js` returns a truthy value. Returns that
    value (milliseconds, or whatever the JS returns)."""
    page.evaluate(ARM_CLICK_JS)
    locator.click()
    return wait_js(page, until_js, arg, timeout_s, abort)


def long_tasks(page: Page, seconds: float) -> float:
    """Main-thread long tasks between the last click and `seconds` after it (their reports arrive late: wait)."""
    page.wait_for_timeout(300)
    return round(page.evaluate(LONG_TASKS_JS, seconds), 3)


def sidebar_link(page: Page, name: str):
    # The link's text also holds its Material icon's ligature name (e.g. "grid_on"): match the label alone.
    return page.locator('[data-testid="stSidebarNav"] a').filter(has=page.get_by_text(name, exact=True)).first


def stop_live(page: Page, runs: Runs, run_id: str) -> None:
    """Stop a live run from the Train page it is shown on, and wait until its worker said so."""
    if runs.status(run_id).get("state") in LIVE_STATES:
        stop = page.get_by_role("button", name="Stop")
        try:
            expect(stop).to_be_enabled(timeout=10_000)
            stop.click()
        except (PlaywrightTimeoutError, AssertionError):
            pass
    runs.wait_state(run_id, lambda s: s.get("state") not in LIVE_STATES, timeout_s=30)


# ---------------------------------------------------------------- CPU accounting from /proc

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (all cores, idle and iowait excluded)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / CLOCK_TICKS


def cpu_snapshot(server_pid: int, worker_pid: int | None) -> dict[str, float]:
    """CPU seconds used so far by this benchmark's processes, grouped: the training worker, the Streamlit server
    (with its forkserver), the browser (Playwright's driver and Chromium), this script; plus the whole machine."""
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        rest = text[text.rfind(")") + 2 :].split()
        parent[int(entry)] = int(rest[1])
        cpu[int(entry)] = (int(rest[11]) + int(rest[12])) / CLOCK_TICKS
    me = os.getpid()
    groups = {"worker": 0.0, "server": 0.0, "browser": 0.0, "bench": 0.0}
    for pid, used in cpu.items():
        chain, p = [], pid
        while p and p in parent and len(chain) < 64:
            chain.append(p)
            p = parent[p]
        if me not in chain:
            continue
        if worker_pid in chain:
            groups["worker"] += used
        elif server_pid in chain:
            groups["server"] += used
        elif pid == me:
            groups["bench"] += used
        else:
            groups["browser"] += used
    groups["machine"] = machine_busy_s()
    groups["wall"] = time.monotonic()
    return groups


def cpu_cores(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Cores used by each group between two snapshots; `other` is everything else on the machine."""
    wall = after["wall"] - before["wall"]
    used = {k: (after[k] - before[k]) / wall for k in before if k != "wall"}
    used["other"] = used["machine"] - sum(used[k] for k in ("worker", "server", "browser", "bench"))
    return {k: round(v, 2) for k, v in used.items()}


# ---------------------------------------------------------------- measurements


def failed_new_run(runs: Runs, before: set[str]):
    """An abort check for wait_js: the reason if a run started after `before` has failed."""

    def check() -> str | None:
        for run_id in runs.ids() - before:
            status = runs.status(run_id)
            if status.get("state") == "failed":
                return f"run {run_id} failed: {status.get('reason')}"
        return None

    return check


def start_measured(page: Page, base: str, runs: Runs, max_steps: int | None = None) -> tuple[dict, str]:
    """A fresh session on Train (Demo preset), optionally more steps; click Train and time the first point."""
    open_train(page, base)
    if max_steps:
        set_number(page, "Max steps", max_steps)
        settle(page)
    before = runs.ids()
    train = page.get_by_role("button", name="Train")
    marks = timed_click(page, train, FIRST_POINT_JS, timeout_s=60, abort=failed_new_run(runs, before))
    marks["long_tasks_s"] = long_tasks(page, marks["s"])
    return {k: round(v, 3) for k, v in marks.items()}, runs.new_run(before)


def retrying(what: str, attempts: int, failures: list[str], measure):
    """measure() until it returns without RunFailed, at most `attempts` times; failures are noted, not hidden."""
    for attempt in range(attempts):
        try:
            return measure()
        except RunFailed as e:
            failures.append(f"{what}: {e}")
            log(f"{what}: {e}")
            if attempt == attempts - 1:
                raise


def whole_demo_run(page: Page, base: str, runs: Runs) -> dict:
    """Click Train on the Demo preset: seconds to the first point (as first_point) and to its last step on screen."""
    marks, run_id = start_measured(page, base, runs)
    marks["whole_run_s"] = round(wait_js(page, WHOLE_RUN_JS, timeout_s=120, abort=failed_new_run(runs, set())), 3)
    runs.wait_state(run_id, lambda s: s.get("state") not in LIVE_STATES, timeout_s=30)
    return marks


def first_point(page: Page, base: str, runs: Runs) -> dict:
    marks, run_id = start_measured(page, base, runs)
    stop_live(page, runs, run_id)
    return marks


def refresh_rate(
    page: Page, base: str, runs: Runs, server: AppServer, max_steps: int, window_s: float
) -> tuple[dict, str]:
    """Returns the refresh numbers and the id of the run, still training (the page switches come next)."""
    _, run_id = start_measured(page, base, runs, max_steps)
    page.wait_for_timeout(1000)  # past the first refreshes after the start
    ws_bytes = [0]

    def count(event) -> None:
        ws_bytes[0] += len(event["response"]["payloadData"])

    # The Streamlit socket is already open, so its traffic is counted from CDP's network events.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.on("Network.webSocketFrameReceived", count)
    step_before = runs.status(run_id).get("step") or 0
    cpu_before = cpu_snapshot(server.proc.pid, runs.status(run_id).get("pid"))
    result = page.evaluate(SAMPLE_STATUS_JS, [50, int(window_s * 1000)])
    cpu_after = cpu_snapshot(server.proc.pid, runs.status(run_id).get("pid"))
    step_after = runs.status(run_id).get("step") or 0
    cdp.detach()
    state_after = runs.status(run_id).get("state")
    changes = result["changes"]
    times = [c[0] / 1000 for c in changes]
    gaps = [b - a for a, b in zip(times[1:], times[2:], strict=False)]  # between updates after the first seen
    elapsed = result["elapsed"] / 1000
    busy, starts, since = 0.0, 0, None  # time the page had a script run in flight, and how many began
    for at, state in result["states"] + [[result["elapsed"], "end"]]:
        if since is not None:
            busy += at - since
        running = state in ("running", "rerunRequested")
        if running and since is None and at > 0:
            starts += 1
        since = at if running else None
    return (
        {
            "refresh_hz": round((len(changes) - 1) / elapsed, 2),
            "refresh_detail": {
                "updates": len(changes) - 1,
                "window_s": round(elapsed, 2),
                "samples": result["samples"],
                "update_interval_median_s": round(statistics.median(gaps), 3) if gaps else None,
                "update_interval_max_s": round(max(gaps), 3) if gaps else None,
                "script_running_frac": round(busy / result["elapsed"], 2),  # 1.0: reruns back to back
                "script_run_starts_from_idle": starts,
                "steps_trained": step_after - step_before,
                "run_state_after": state_after,
                "websocket_kB_per_s": round(ws_bytes[0] / 1000 / elapsed, 1),
                "browser_long_tasks_frac": round(result["longMs"] / result["elapsed"], 2),  # main thread busy
                "cpu_cores": cpu_cores(cpu_before, cpu_after),
                "example": changes[1][1] if len(changes) > 1 else None,
            },
        },
        run_id,
    )


def page_switches(page: Page) -> dict[str, float]:
    out = {}
    for name in PAGES:
        settle(page)
        ms = timed_click(page, sidebar_link(page, name), TITLE_JS, arg=f"tinygpt · {name}", timeout_s=30)
        out[name] = round(ms / 1000, 3)
    settle(page)
    return out


def throughput_run(page: Page, base: str, runs: Runs, server: AppServer, watched: bool, max_steps: int) -> dict:
    open_train(page, base)
    choose(page, "Preset", "nanoGPT CPU")
    set_number(page, "Max steps", max_steps)
    settle(page)
    before = runs.ids()
    page.get_by_role("button", name="Train").click()
    run_id = runs.new_run(before)
    if not watched:
        # Once the worker trains (or failed at start-up: the loop below reports it), the tab leaves the app.
        runs.wait_state(run_id, lambda s: s.get("state") not in ("queued", "starting"), timeout_s=60, poll_s=0.05)
        page.goto("about:blank")
    lo, hi = max_steps // 4, max_steps * 3 // 4  # the middle half: past warm-up, before the end
    cpu = {}
    deadline = time.monotonic() + 600
    while True:  # waits on the run folder, never on the page (polling the page would cost CPU)
        status = runs.status(run_id)
        step = status.get("step") or 0
        for name, at in (("lo", lo), ("hi", hi)):
            if name not in cpu and step >= at and status.get("state") == "running":
                cpu[name] = cpu_snapshot(server.proc.pid, status.get("pid"))
        if status.get("state") not in LIVE_STATES:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"throughput run {run_id} still {status} after 600 s")
        time.sleep(0.2)
    if status.get("state") != "finished":
        raise RunFailed(f"throughput run {run_id} ended {status.get('state')}: {status.get('reason')}")
    metrics = [m for m in runs.metrics(run_id) if m.get("tokens_per_s")]
    window = [m for m in metrics if lo <= m["step"] <= hi]
    config = json.loads((runs.root / run_id / "config.json").read_text())
    tokens_per_step = config["train"]["batch_size"] * config["model"]["max_seq_len"]
    wall = None
    if len(window) > 1 and "time" in window[0]:
        dt = window[-1]["time"] - window[0]["time"]
        wall = (window[-1]["step"] - window[0]["step"]) * tokens_per_step / dt if dt > 0 else None
    return {
        "run": run_id,
        "watched": watched,
        "tokens_per_s": round(statistics.median(m["tokens_per_s"] for m in window)),
        "step_ms": round(statistics.median(m["step_ms"] for m in window), 1),
        "wall_tokens_per_s": round(wall) if wall else None,  # evals, checkpoints and publishing included
        "steps_in_window": len(window),
        "cpu_cores": cpu_cores(cpu["lo"], cpu["hi"]) if "lo" in cpu and "hi" in cpu else None,
    }


def attention_render(page: Page, base: str, run_id: str, heatmaps: int) -> dict:
    """A fresh session on the run's Train page, then Attention (nothing cached in the session, plotly.js not yet
    loaded by this page); then Train and Attention again in the same session (figure cached, plotly.js loaded)."""
    open_train(page, f"{base}/?run={run_id}")
    out = {}
    for visit in ("first", "again"):
        page.evaluate(ARM_CLICK_JS)
        sidebar_link(page, "Attention").click()
        grid = wait_js(page, GRID_JS, [heatmaps, "tinygpt · Attention"], timeout_s=30)
        grid["long_tasks_s"] = long_tasks(page, grid["s"])
        out[visit] = {k: round(v, 3) for k, v in grid.items()}
        if visit == "first":
            settle(page)
            page.evaluate(ARM_CLICK_JS)
            sidebar_link(page, "Train").click()
            wait_js(page, TITLE_JS, "tinygpt · Train", timeout_s=30)
            settle(page)
    return out


# ---------------------------------------------------------------- main


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def median(values) -> float:
    return round(statistics.median(values), 3)


def failure_report(page: Page, server: AppServer) -> None:
    """On a failure: a screenshot and the page's text under test-output/, and the server log's tail on stderr."""
    folder = REPO / "test-output"
    try:
        folder.mkdir(exist_ok=True)
        page.screenshot(path=folder / "bench_failure.png", full_page=True)
        (folder / "bench_failure.txt").write_text(f"{page.url}\n\n{page.inner_text('body')}")
        log(f"failed at {page.url}; screenshot and page text in {folder}/bench_failure.*")
    except Exception as e:  # the page itself may be gone
        log(f"failed; no screenshot ({e})")
    log(f"server log tail:\n{server.log_tail()}")


def app_version() -> dict:
    """The commit measured, and any uncommitted changes to the app's code in the working tree."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    changed = git("status", "--porcelain", "--", "app.py", "pages", "tinygpt", ".streamlit").splitlines()
    return {"commit": git("rev-parse", "--short", "HEAD").strip(), "uncommitted_app_changes": [c[3:] for c in changed]}


def run(args: argparse.Namespace) -> dict:
    out: dict = {
        "machine": {
            "cpu_count": os.cpu_count(),
            "load_avg_start": load(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "app": app_version(),
    }
    shakespeare = Path(os.environ.get("TINYGPT_SHAKESPEARE") or SHAKESPEARE_DEFAULT)
    if not shakespeare.is_file():
        raise SystemExit(f"no Tiny Shakespeare at {shakespeare}: set TINYGPT_SHAKESPEARE to a local copy")
    tmp = Path(tempfile.mkdtemp(prefix="tinygpt-bench-"))
    runs = Runs(tmp / "runs")
    server = start_server(runs.root, tmp / "streamlit.log", shakespeare)
    started = time.monotonic()
    try:
        out["server_start_s"] = round(server.wait_healthy(), 2)
        with sync_playwright() as pw:
            executable = chromium_executable()
            browser = launch_chromium(pw)
            out["machine"]["chromium"] = f"{executable or 'playwright'} {browser.version}"
            page = None
            failures: list[str] = []
            out["failed_runs"] = failures
            try:
                context = browser.new_context(viewport={"width": 1400, "height": 900})
                context.set_default_timeout(30_000)
                page = context.new_page()

                # 1. Click Train -> first point. The first click after start-up is reported apart. A run that
                # fails (its worker died) is tried again, and the failure is reported under failed_runs.
                def click() -> dict:
                    return retrying("click to first point", 3, failures, lambda: first_point(page, server.base, runs))

                if args.demo_only:  # click -> first point and -> the whole Demo run on screen, nothing else
                    demo = [retrying("Demo run", 3, failures, lambda: whole_demo_run(page, server.base, runs))
                            for _ in range(args.repeats + 1)]  # fmt: skip
                    out["demo_first_click"] = demo[0]  # may find the forkserver still importing torch
                    out["demo_runs"] = demo[1:]
                    out["click_to_first_point_s"] = {"median": median(d["s"] for d in demo[1:])}
                    out["demo_whole_run_s"] = {"median": median(d["whole_run_s"] for d in demo[1:])}
                    log(f"Demo: {demo}")
                    out["machine"]["load_avg_end"] = load()
                    return out
                out["click_to_first_point_warmup_s"] = click()["s"]
                clicks = [click() for _ in range(args.repeats)]
                out["click_to_first_point_s"] = {
                    "runs": [c["s"] for c in clicks],
                    "median": median(c["s"] for c in clicks),
                    "status_line_s": [c.get("status_s") for c in clicks],  # the status line first showed
                    "step_ge_1_s": [c.get("step_s") for c in clicks],
                    "chart_line_s": [c.get("line_s") for c in clicks],
                    "long_tasks_s": [c.get("long_tasks_s") for c in clicks],
                }
                log(f"first point: {out['click_to_first_point_s']}")

                # 2. Refresh rate while a Demo run trains; 4. page switches while it still trains.
                refresh, live_id = retrying(
                    "refresh rate",
                    3,
                    failures,
                    lambda: refresh_rate(page, server.base, runs, server, args.refresh_steps, args.refresh_window),
                )
                out.update(refresh)
                log(f"refresh: {refresh}")
                switches = page_switches(page)
                out["page_switch_s"] = {**switches, "median": median(switches.values()), "max": max(switches.values())}
                log(f"page switches: {switches}")
                stop_live(page, runs, live_id)

                # 3. Worker speed, watched vs unwatched, in ABBA order.
                rounds = []
                for i in range(2 * args.rounds):
                    watched = i % 4 in (0, 3)
                    rounds.append(
                        retrying(
                            "throughput",
                            3,
                            failures,
                            lambda w=watched: throughput_run(page, server.base, runs, server, w, args.throughput_steps),
                        )
                    )
                    log(f"throughput: {rounds[-1]}")
                w = [r["tokens_per_s"] for r in rounds if r["watched"]]
                u = [r["tokens_per_s"] for r in rounds if not r["watched"]]
                ww = [r["wall_tokens_per_s"] for r in rounds if r["watched"] and r["wall_tokens_per_s"]]
                uw = [r["wall_tokens_per_s"] for r in rounds if not r["watched"] and r["wall_tokens_per_s"]]
                out["worker_tokens_per_s_watched"] = round(statistics.mean(w))
                out["worker_tokens_per_s_unwatched"] = round(statistics.mean(u))
                out["slowdown_pct"] = round(100 * (1 - statistics.mean(w) / statistics.mean(u)), 1)
                if ww and uw:
                    out["slowdown_wall_pct"] = round(100 * (1 - statistics.mean(ww) / statistics.mean(uw)), 1)
                out["throughput_config"] = (
                    f"nanoGPT CPU preset (4 layers, width 128, 4 heads, context 64, batch 12), "
                    f"max steps {args.throughput_steps}; per-step tokens/s, median over steps "
                    f"{args.throughput_steps // 4}..{args.throughput_steps * 3 // 4}"
                )
                out["throughput_rounds"] = rounds

                # 5. The attention grid of a finished nanoGPT CPU run.
                attention_run = next(r["run"] for r in reversed(rounds) if r["watched"])
                grid = [attention_render(page, server.base, attention_run, 16) for _ in range(args.repeats)]
                out["attention_grid_render_s"] = {
                    "runs": [g["first"]["s"] for g in grid],
                    "median": median(g["first"]["s"] for g in grid),
                    "title_s": [g["first"].get("title_s") for g in grid],
                    "caption_s": [g["first"].get("caption_s") for g in grid],
                    "chart_element_s": [g["first"].get("element_s") for g in grid],
                    "first_heatmap_s": [g["first"].get("first_heatmap_s") for g in grid],
                    "plotly_js_fetched_s": [g["first"].get("plotly_js_fetched_s") for g in grid],
                    "heatmaps": grid[0]["first"]["heatmaps"],
                    "long_tasks_s": [g["first"].get("long_tasks_s") for g in grid],  # browser main thread
                    "again_same_session_s": [g["again"]["s"] for g in grid],
                    "again_caption_s": [g["again"].get("caption_s") for g in grid],
                    "again_long_tasks_s": [g["again"].get("long_tasks_s") for g in grid],
                }
                log(f"attention grid: {grid}")
            except BaseException:
                if page is not None:
                    failure_report(page, server)
                raise
            finally:
                browser.close()
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    out["machine"]["load_avg_end"] = load()
    out["failed_runs"] = out.pop("failed_runs")  # last in the JSON, next to the verdicts
    out["bench_wall_s"] = round(time.monotonic() - started, 1)
    out["targets_met"] = {
        "click_to_first_point_s < 2": out["click_to_first_point_s"]["median"] < TARGETS["click_to_first_point_s"],
        "refresh_hz >= 2": out["refresh_hz"] >= TARGETS["refresh_hz"],
        "slowdown_pct <= 10": out["slowdown_pct"] <= TARGETS["slowdown_pct"],
        "page_switch_s < 1 (each)": out["page_switch_s"]["max"] < TARGETS["page_switch_s"],
        "attention_grid_render_s < 1": out["attention_grid_render_s"]["median"] < TARGETS["attention_grid_render_s"],
    }
    return out


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the click and attention timings")
    parser.add_argument("--rounds", type=int, default=2, help="watched and unwatched runs each (ABBA order)")
    parser.add_argument("--throughput-steps", type=int, default=400, help="max steps of each throughput run")
    parser.add_argument("--refresh-steps", type=int, default=3000, help="max steps of the refresh-rate run")
    parser.add_argument("--refresh-window", type=float, default=10.0, help="seconds of status-line sampling")
    parser.add_argument(
        "--demo-only",
        action="store_true",
        help="only the Demo preset: click -> first loss point and -> its last step on screen",
    )
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()

    def terminate(signum, frame):  # SIGTERM -> the finally blocks run: runs stopped, server group killed
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    result = run(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
