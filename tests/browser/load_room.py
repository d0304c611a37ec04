"""Load test of a workshop room (N learners on one server): a script you rerun, not a timed test.

    .venv/bin/python tests/browser/load_room.py --sessions 5 10 20 [--watch-s 20] [--lease-s 60] [--out FILE]

For each N it starts a fresh `streamlit run app.py` (headless, free port, a temp TINYGPT_RUNS_DIR, a short
TINYGPT_LEASE_SECONDS so that "no watched run is paused by the lease" is really tested, stdout+stderr to
test-output/load_room/server_n<N>.log), opens one headless Chromium with N browser contexts (each context is its
own learner: its own cookie), and:

1. warm-up: one extra page opens the app (torch import, run manager and its forkserver) and closes; not counted.
2. opens the N learners at the workshop link `/?preset=demo&source=synthetic:copy` (Demo preset, 300 steps);
   `idle` window: server CPU with N pages open and nothing training.
3. clicks **Train** on the N pages one after another (learner 1 first, learner N last), then follows every
   page and every run until all runs finished: 2 of them train (TINYGPT_MAX_RUNS, 2 on 2 cores), the rest
   queue. `queue` window: server CPU while all N pages refresh (running and queued pages).
4. `watch` window: one more learner (the host) starts a long Demo run; host alone watching (`watch_1`), then
   all N learners open it read-only (`?run=<id>&view=1`) so N+1 pages show live charts of a training run
   (`watch_all`). The server's cost per watching session comes from these two windows.

Measured in the page (an init script; Date.now(), the same clock as the script's time.time()): the click on
Train (capture phase), every change of the status line's state (`step N / M · ... · <state>`), the first
`step N` with N > 0, and each websocket message the page sends (one per script or fragment rerun it asks for).
Measured on the server: every run's status.json, polled every 0.2 s (state, queue position, reason), and from
/proc every 0.5 s the CPU seconds and RSS of the server process, its forkserver, each training worker, the
browser (Playwright's driver and Chromium) and the whole machine.

Prints one JSON object (also written to test-output/load_room/load_room.json, or --out): per N, the sessions,
runs running vs queued (the most at once), p50/p95 of click -> first result on screen (`step N>0` or
`queued`), of click -> training on screen, of server leaves `queued` -> page shows it, of server `finished` ->
page shows it; the N-th (last) learner's wait from click to its run training on screen; server CPU seconds per
watching session per minute (measured, and per refresh extrapolated to the app's own refresh period for that
many watchers, tinygpt/ui/host/live.py); RSS of the server and
the workers; errors (page exceptions, stException boxes, console errors, server log tracebacks, runs not
finished, runs paused by the lease, pages left showing `queued` after their run started or finished).

The browser renders every page's charts on the same 2 cores as the server and the workers (each refreshing
page costs Chromium a large share of a core), so pages refresh slower than on learners' own laptops: the
refresh rate reached is reported next to the CPU figures, and the per-refresh cost is what extrapolates.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from playwright.sync_api import Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from serving import AppServer, launch_chromium, stop_group

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tinygpt.ui.host.live import period_for  # noqa: E402 - the app's refresh period for a room of N watchers

REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "test-output" / "load_room"
# N pages in one headless browser: none of them may be throttled as a background tab would be.
EXTRA_CHROMIUM_ARGS = (
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
)
LINK = "/?preset=demo&source=synthetic:copy"
HOST_LINK = "/?preset=demo&source=synthetic:copy&max_steps=100000"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
TRAINING = ("starting", "running")
ENDED = ("finished", "stopped", "failed", "error", "paused")

# ---------------------------------------------------------------- in-page tracker

TRACKER_JS = r"""(() => {
  if (window.__lt) return;
  const lt = window.__lt = {click: null, result: null, firstStep: null, key: null, text: null, trans: [],
                            sent: [], recvBytes: 0, recv: 0, run: null, frames: 0, lastFrame: null, lastRecv: null};
  const frame = () => { lt.frames++; lt.lastFrame = Date.now(); requestAnimationFrame(frame); };
  requestAnimationFrame(frame);  // does the browser still draw this page (a stalled page: no frames)
  const Orig = window.WebSocket;
  if (Orig) {
    window.WebSocket = class extends Orig {
      constructor(...args) {
        super(...args);
        this.addEventListener('message', (e) => {
          lt.recv++;
          lt.lastRecv = Date.now();
          const d = e.data;
          lt.recvBytes += (d && (d.byteLength ?? d.size ?? d.length)) || 0;
        });
      }
      send(data) { lt.sent.push(Date.now()); return super.send(data); }
    };
  }
  document.addEventListener('click', (e) => {
    const b = e.target && e.target.closest && e.target.closest('button');
    if (b && /Train\s*$/.test(b.textContent.trim()) && lt.click === null) lt.click = Date.now();
  }, true);
  const RE = /^step ([\d,]+)(?: \/ ([\d,]+))?/;
  const poll = () => {
    let line = null;
    for (const e of document.querySelectorAll('strong')) {
      const t = e.textContent;
      if (RE.test(t)) { line = t; break; }
    }
    const run = new URLSearchParams(location.search).get('run');
    if (run) lt.run = run;
    if (line === null) return;
    const now = Date.now();
    const step = +RE.exec(line)[1].replace(/,/g, '');
    const m = /^(\w+)(?: \(position (\d+))?/.exec(line.split(' · ').pop());
    const state = m ? m[1] : '?';
    const pos = m && m[2] ? +m[2] : null;
    if (lt.click !== null && lt.result === null && (step > 0 || state === 'queued')) lt.result = now;
    if (lt.click !== null && lt.firstStep === null && step > 0) lt.firstStep = now;
    const key = state + '#' + pos;
    if (key !== lt.key) { lt.key = key; lt.trans.push([now, state, step, pos]); }
    lt.state = state;
    lt.text = line;
  };
  setInterval(poll, 50);
})()"""

SUMMARY_JS = """() => { const lt = window.__lt || {};
  return {click: lt.click, result: lt.result, firstStep: lt.firstStep, state: lt.state || null,
  text: lt.text || null, trans: lt.trans || [], run: lt.run, nsent: (lt.sent || []).length,
  recv: lt.recv || 0, recvBytes: lt.recvBytes || 0, frames: lt.frames, visibility: document.visibilityState,
  loadedAt: performance.timeOrigin,
  sinceFrame: lt.lastFrame ? Date.now() - lt.lastFrame : null, sinceRecv: lt.lastRecv ? Date.now() - lt.lastRecv : null,
  sinceSend: lt.sent && lt.sent.length ? Date.now() - lt.sent[lt.sent.length - 1] : null,
  maxGap: (() => { const s = (lt.sent || []).filter(t => lt.click && t >= lt.click); let g = 0;
                   for (let i = 1; i < s.length; i++) g = Math.max(g, s[i] - s[i - 1]);
                   return s.length ? Math.max(g, Date.now() - s[s.length - 1]) : null; })()}; }"""
SENT_BETWEEN_JS = "([a, b]) => (window.__lt ? window.__lt.sent.filter(t => t >= a && t <= b).length : 0)"

# ---------------------------------------------------------------- /proc sampling


def _proc_stat(pid: int) -> tuple[int, float, int] | None:
    """(ppid, cpu seconds user+system, rss bytes) of one process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2 :].split()
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / CLK_TCK, int(rest[21]) * PAGE_BYTES


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    total = sum(fields[:8])
    return (total - idle) / CLK_TCK, total / CLK_TCK


class Monitor(threading.Thread):
    """Polls the runs' status.json (every 0.2 s) and /proc (every 0.5 s) until stopped."""

    def __init__(self, server_pid: int, runs_dir: Path):
        super().__init__(daemon=True)
        self.server_pid = server_pid
        self.runs_dir = runs_dir
        self.me = os.getpid()
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.last_cpu: dict[int, float] = {}
        self.acc: dict[str, float] = defaultdict(float)
        self.rss_max: dict[int, tuple[str, int]] = {}
        self.roles: dict[int, str] = {}
        self.runs: dict[str, list] = {}  # run id -> [(t, state, queue_position, reason)] on every change
        self.counts: list[tuple[float, int, int]] = []  # (t, training, queued) on every change
        self.started = False
        self.sample()
        self.started = True

    def _role(self, pid: int, ppid: int, tree: set[int], forkservers: set[int], mine: set[int]) -> str | None:
        if pid == self.server_pid:
            return "server"
        if pid in tree:
            if ppid in forkservers:
                return "workers"
            if ppid == self.server_pid:
                cmd = self.roles.get(pid) or _cmdline(pid)
                return "forkserver" if "forkserver" in cmd else "server_helpers"
            return "workers"
        if pid in mine:
            return "browser"
        if pid == self.me:  # this script: with --clients protocol, the N learners' websocket clients
            return "clients"
        return None

    def sample(self) -> dict:
        """Read /proc now: accumulate each group's CPU; return the totals so far."""
        with self.lock:
            table = {}
            for name in os.listdir("/proc"):
                if name.isdigit():
                    st = _proc_stat(int(name))
                    if st:
                        table[int(name)] = st
            children = defaultdict(list)
            for pid, (ppid, _, _) in table.items():
                children[ppid].append(pid)

            def tree(root: int) -> set[int]:
                out, todo = set(), [root]
                while todo:
                    p = todo.pop()
                    if p in table and p not in out:
                        out.add(p)
                        todo.extend(children[p])
                return out

            server_tree = tree(self.server_pid)
            mine = tree(self.me) - server_tree - {self.me}
            forkservers = {p for p in children[self.server_pid] if "forkserver" in (self.roles.get(p) or _cmdline(p))}
            for pid, (ppid, cpu, rss) in table.items():
                role = self.roles.get(pid) or self._role(pid, ppid, server_tree, forkservers, mine)
                if role is None:
                    continue
                self.roles[pid] = role
                prev = self.last_cpu.get(pid)
                delta = (cpu - prev) if prev is not None else (cpu if self.started else 0.0)
                self.last_cpu[pid] = cpu
                self.acc[role] += max(delta, 0.0)
                old = self.rss_max.get(pid, (role, 0))[1]
                self.rss_max[pid] = (role, max(old, rss))
            busy, total = _machine_cpu()
            return {"t": time.time(), **self.acc, "machine_busy": busy, "machine_total": total}

    def poll_runs(self) -> None:
        training = queued = 0
        try:
            names = os.listdir(self.runs_dir)
        except OSError:
            return
        for name in names:
            if name.startswith("."):  # RunStore.create's folder before its rename: not a run yet
                continue
            try:
                status = json.loads((self.runs_dir / name / "status.json").read_text())
            except (OSError, ValueError):
                continue
            key = (status.get("state"), status.get("queue_position"), status.get("reason"))
            hist = self.runs.setdefault(name, [])
            if not hist or hist[-1][1:] != key:
                hist.append((time.time(), *key))
            training += key[0] in TRAINING
            queued += key[0] == "queued"
        if not self.counts or self.counts[-1][1:] != (training, queued):
            self.counts.append((time.time(), training, queued))

    def run(self) -> None:
        i = 0
        while not self.stop_event.wait(0.2):
            self.poll_runs()
            i += 1
            if i % 3 == 0:
                self.sample()

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=5)


def window(a: dict, b: dict) -> dict:
    """CPU cores used per group between two Monitor.sample() results."""
    dt = b["t"] - a["t"]
    out = {"seconds": round(dt, 1)}
    for key in ("server", "forkserver", "workers", "browser", "clients"):
        out[f"{key}_cores"] = round((b.get(key, 0) - a.get(key, 0)) / dt, 3)
    out["server_cpu_s"] = round(b.get("server", 0) - a.get("server", 0), 2)
    machine = (b["machine_busy"] - a["machine_busy"]) / dt
    out["machine_cores"] = round(machine, 2)
    known = sum(out[f"{k}_cores"] for k in ("server", "forkserver", "workers", "browser", "clients"))
    out["others_cores"] = round(max(0.0, machine - known), 2)
    return out


# ---------------------------------------------------------------- server


def start_server(
    runs: Path, log_path: Path, lease_s: float | None, probe: Path | None = None
) -> tuple[subprocess.Popen, str]:
    """A fresh server for one room (with `probe`: inside tests/browser/server_probe.py). Returns (process, URL)."""
    launcher = None
    if probe is not None:
        probe.unlink(missing_ok=True)
        launcher = [sys.executable, str(Path(__file__).with_name("server_probe.py")), str(probe), "--"]
    server = AppServer(runs, log_path, env={"TINYGPT_LEASE_SECONDS": str(lease_s)} if lease_s else None,
                       launcher=launcher)  # fmt: skip
    try:
        server.wait_healthy(90)
    except RuntimeError:
        server.stop()
        raise RuntimeError(f"streamlit did not start; see {log_path}") from None
    return server.proc, server.base


# ---------------------------------------------------------------- helpers


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return round(values[lo] + (values[hi] - values[lo]) * (k - lo), 2)


def dist(values: list[float]) -> dict:
    return {"n": len(values), "p50": pct(values, 0.5), "p95": pct(values, 0.95),
            "max": round(max(values), 2) if values else None}  # fmt: skip


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[0:3].__str__()


def train_button(page: Page):
    return page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Train", exact=True)


def _note(errors: dict, kind: str, label: str, text: str) -> None:
    """An error seen by a page, with its time in seconds since the first click on Train (negative: before)."""
    t = round(time.time() - errors["clock"], 1)
    errors[kind].append(f"t={t}s {label}: {text[:300]}")


def open_learner(browser, url: str, errors: dict, label: str):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(120_000)
    context.add_init_script(TRACKER_JS)
    page = context.new_page()
    page.on("pageerror", lambda exc: _note(errors, "page_errors", label, str(exc)))
    page.on("console", lambda msg: _note(errors, "console_errors", label, msg.text) if msg.type == "error" else None)
    page.goto(url)
    return context, page


def wait_ready(page: Page, timeout_s: float) -> None:
    page.get_by_role("heading", name="tinygpt · Train").wait_for(timeout=timeout_s * 1000)
    train_button(page).wait_for(timeout=timeout_s * 1000)
    page.get_by_test_id("stStatusWidgetRunningIcon").wait_for(state="detached", timeout=timeout_s * 1000)


class BrowserPages:
    """Learners as Chromium pages of one headless browser (`--clients browser`): the whole frontend runs, charts
    drawn, on the server's own cores."""

    name = "browser"

    def __init__(self, browser, errors: dict):
        self.browser, self.errors, self.contexts = browser, errors, []

    def open(self, url: str, label: str):
        ctx, page = open_learner(self.browser, url, self.errors, label)
        self.contexts.append(ctx)
        return page

    def ready(self, page, timeout_s: float) -> None:
        wait_ready(page, timeout_s)

    def click_train(self, page) -> None:
        train_button(page).click(timeout=60_000)

    def summaries(self, pages) -> list[dict]:
        return summaries(pages)

    def sent_between(self, pages, a: float, b: float) -> list[int]:
        return sent_between(pages, a, b)

    def exception_boxes(self, page) -> int:
        return page.locator('[data-testid="stException"]').count()

    def keep(self, page, shot: Path) -> str:
        """The page's text (and a screenshot next to `shot`), for whoever looks into a stuck page."""
        text = page.inner_text("body")  # the text first: a screenshot makes a stalled page draw (and possibly fail)
        Path(str(shot) + ".txt").write_text(text)
        page.screenshot(path=str(shot) + ".png", full_page=True)
        return text

    def goto(self, page, url: str) -> None:
        page.goto(url)

    def wait_first_step(self, page, timeout_s: float) -> None:
        page.wait_for_function("() => window.__lt && window.__lt.firstStep", timeout=timeout_s * 1000)

    def wait_running(self, page, timeout_s: float) -> None:
        page.wait_for_function("() => window.__lt && window.__lt.state === 'running'", timeout=timeout_s * 1000)

    def run_id(self, page) -> str:
        return page.evaluate("() => window.__lt.run")

    def close(self) -> None:
        for ctx in self.contexts:
            try:
                ctx.close()
            except Exception:
                pass


class ProtocolPages(BrowserPages):
    """Learners as websocket clients speaking Streamlit's protocol (`--clients protocol`,
    tests/browser/protocol_learner.py): the server does all its work, nothing is drawn on its machine."""

    name = "protocol"

    def __init__(self, errors: dict):
        from protocol_learner import Loop

        self.loop, self.errors, self.learners = Loop(), errors, []

    def open(self, url: str, label: str):
        from protocol_learner import ProtocolLearner

        learner = ProtocolLearner(self.loop, label)
        learner.goto(url)
        self.learners.append(learner)
        return learner

    def _until(self, predicate, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise PlaywrightTimeoutError(f"{what} not seen within {timeout_s:g} s")
            time.sleep(0.1)

    def ready(self, learner, timeout_s: float) -> None:
        self._until(learner.ready, timeout_s, f"{learner.label}: the Train page")

    def click_train(self, learner) -> None:
        learner.click("Train")

    def summaries(self, learners) -> list[dict]:
        return [learner.summary() for learner in learners]

    def sent_between(self, learners, a: float, b: float) -> list[int]:
        return [learner.sent_between(a * 1000, b * 1000) for learner in learners]

    def exception_boxes(self, learner) -> int:
        return learner.exceptions

    def keep(self, learner, shot: Path) -> str:
        text = learner.page_text()
        Path(str(shot) + ".txt").write_text(text)
        return text

    def goto(self, learner, url: str) -> None:
        learner.goto(url)

    def wait_first_step(self, learner, timeout_s: float) -> None:
        self._until(lambda: learner.lt["firstStep"], timeout_s, f"{learner.label}: a first step")

    def wait_running(self, learner, timeout_s: float) -> None:
        self._until(lambda: learner.lt["state"] == "running", timeout_s, f"{learner.label}: `running`")

    def run_id(self, learner) -> str:
        return learner.lt["run"]

    def close(self) -> None:
        for learner in self.learners:
            learner.close()
        self.loop.close()


def summaries(pages: list[Page]) -> list[dict]:
    out = []
    for page in pages:
        try:
            out.append(page.evaluate(SUMMARY_JS))
        except Exception as exc:  # a crashed or closed page
            out.append({"error": str(exc)[:200], "trans": []})
    return out


def sent_between(pages: list[Page], a: float, b: float) -> list[int]:
    counts = []
    for page in pages:
        try:
            counts.append(page.evaluate(SENT_BETWEEN_JS, [a * 1000, b * 1000]))
        except Exception:
            counts.append(0)
    return counts


PROBLEM = r"Traceback|Error|Exception|WARNING|CRITICAL"


def _log_blocks(lines: list[str]) -> list[list[str]]:
    """The log cut into blocks: a line that does not start with whitespace begins a block (a traceback's frames
    and its "During handling ..." part stay with it)."""
    blocks: list[list[str]] = []
    for ln in lines:
        raised = re.match(r"[\w.]+(Error|Exception|Disconnected|Interrupt)\b", ln) is not None  # its last line
        chained = ln.startswith(("Traceback", "During handling")) or not ln.strip() or raised
        if blocks and (ln[:1].isspace() or chained or blocks[-1][-1].startswith("During handling")):
            blocks[-1].append(ln)
        else:
            blocks.append([ln])
    return blocks


def server_log_problems(log_path: Path) -> list[str]:
    """Problems the server logged while the room ran. Apart: the shutdown (once "Stopping..." is logged: uvicorn
    reports the websockets the script's browser still held then) and Streamlit's own websocket endpoint failing to
    close a connection the browser had already dropped (`WebSocketDisconnected`, `websocket_disconnects`)."""
    lines = log_path.read_text(errors="replace").splitlines()
    end = next((i for i, ln in enumerate(lines) if "Stopping..." in ln), len(lines))
    out = []
    for block in _log_blocks(lines[:end]):
        if any("WebSocketDisconnected" in ln for ln in block):
            continue
        out.extend(ln for ln in block if re.search(PROBLEM, ln))
    return out[:20]


def websocket_disconnects(log_path: Path) -> int:
    lines = log_path.read_text(errors="replace").splitlines()
    return sum(1 for b in _log_blocks(lines) if any("WebSocketDisconnected" in ln for ln in b))


def server_log_at_shutdown(log_path: Path) -> list[str]:
    lines = log_path.read_text(errors="replace").splitlines()
    end = next((i for i, ln in enumerate(lines) if "Stopping..." in ln), len(lines))
    return sorted({ln for ln in lines[end:] if re.search(r"^\w*(Error|Exception)|^Exception in", ln)})[:5]


def first_time(hist: list, states: tuple[str, ...]) -> float | None:
    return next((t for t, state, *_ in hist if state in states), None)


def cpu_block(cpu: dict, pages: int, reruns: int, label: str) -> dict:
    """A CPU window with its refresh count, as cost per watching session."""
    minutes = cpu["seconds"] / 60
    out = {**cpu, "pages": pages, "reruns": reruns,
           "refresh_hz_per_page": round(reruns / pages / cpu["seconds"], 2) if pages else None}  # fmt: skip
    if pages:
        out["server_cpu_s_per_session_per_min"] = round(cpu["server_cpu_s"] / pages / minutes, 2)
    if reruns:
        per = cpu["server_cpu_s"] / reruns
        out["server_ms_per_rerun"] = round(per * 1000, 1)
        # at the app's own refresh period for this many watching pages (a browser on the server's 2 cores may
        # not keep up with it): what learners on their own laptops would cost
        out["app_period_s"] = period_for(pages)
        out["server_cpu_s_per_session_per_min_at_app_period"] = round(per / period_for(pages) * 60, 2)
    out["label"] = label
    return out


# ---------------------------------------------------------------- one N


def run_room(browser, n: int, args) -> dict:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    runs = Path(tempfile.mkdtemp(prefix=f"load_room_n{n}_"))
    log_path = OUT_DIR / f"server_n{n}.log"
    errors: dict = {"page_errors": [], "console_errors": [], "script": [], "clock": time.time()}
    result: dict = {"sessions": n, "load_before": loadavg(), "server_log": str(log_path.relative_to(REPO))}
    t_start = time.time()
    probe = OUT_DIR / f"probe_n{n}.jsonl" if args.probe else None
    proc, base = start_server(runs, log_path, args.lease_s, probe)
    mon = Monitor(proc.pid, runs)
    mon.start()
    clients = ProtocolPages(errors) if args.clients == "protocol" else BrowserPages(browser, errors)
    result["clients"] = clients.name
    try:
        # 1. warm-up: torch import, manager and forkserver (a workshop's learners arrive at a started server)
        warmup = BrowserPages(browser, errors) if browser is not None else clients
        page = warmup.open(base + LINK, "warmup")
        warmup.ready(page, 120)
        time.sleep(1)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:  # until the forkserver exists and stopped importing (CPU flat)
            a = mon.sample()
            time.sleep(1.0)
            b = mon.sample()
            if b.get("forkserver", 0) > 0 and b.get("forkserver", 0) - a.get("forkserver", 0) < 0.05:
                break
        if warmup is clients:
            page.close()
        else:
            warmup.close()

        # 2. N learners open the workshop link
        pages = []
        t_open = time.time()
        for i in range(n):
            pages.append(clients.open(base + LINK, f"learner{i + 1}"))
        for page in pages:
            clients.ready(page, 180)
        result["open_all_s"] = round(time.time() - t_open, 1)
        a = mon.sample()
        time.sleep(args.idle_s)
        b = mon.sample()
        idle_reruns = sum(clients.sent_between(pages, a["t"], b["t"]))
        result["cpu_idle_pages"] = cpu_block(window(a, b), n, idle_reruns, "N pages open, nothing training")

        # 3. everyone presses Train
        t_click0 = errors["clock"] = time.time()
        for i, page in enumerate(pages):
            try:
                clients.click_train(page)
            except (PlaywrightTimeoutError, KeyError) as exc:
                errors["script"].append(f"learner{i + 1}: Train click failed: {exc}"[:300])
        result["click_spread_s"] = round(time.time() - t_click0, 1)
        deadline = time.time() + args.first_result_timeout_s
        while time.time() < deadline:
            sums = clients.summaries(pages)
            if all(s.get("result") for s in sums):
                break
            time.sleep(1)
        else:
            errors["script"].append(
                "not every page showed `step N>0` or `queued` within "
                f"{args.first_result_timeout_s} s of the clicks: "
                + ", ".join(f"learner{i + 1}: {s.get('text')!r}" for i, s in enumerate(sums) if not s.get("result"))
            )
        if args.watch_s > 0:  # --watch-s 0: no CPU windows at all
            a = mon.sample()
            time.sleep(args.watch_s)
            b = mon.sample()
            reruns = sum(clients.sent_between(pages, a["t"], b["t"]))
            result["cpu_queue"] = cpu_block(
                window(a, b), n, reruns, "all N pages refreshing: 2 runs training, the rest queued"
            )

        # until every run ended on the server and every page shows `finished`
        deadline = time.time() + args.room_timeout_s
        ended_at = None
        while time.time() < deadline:
            with mon.lock:
                hists = {k: list(v) for k, v in mon.runs.items()}
            server_done = len(hists) >= n and all(h[-1][1] in ENDED for h in hists.values())
            if server_done:
                ended_at = ended_at or time.time()
                sums = clients.summaries(pages)
                if all(s.get("state") in ENDED for s in sums) or time.time() - ended_at > args.grace_s:
                    break
            time.sleep(1)
        else:
            errors["script"].append(f"the room did not finish within {args.room_timeout_s} s")
        sums = clients.summaries(pages)
        with mon.lock:
            hists = {k: list(v) for k, v in mon.runs.items()}
            counts = list(mon.counts)
        result["room_s"] = round(time.time() - t_click0, 1)
        result.update(analyse(n, sums, hists, counts, t_click0, errors))
        result["pages_with_exception_box"] = sum(1 for p in pages if clients.exception_boxes(p) > 0)
        stuck = []
        for i, (page, s) in enumerate(zip(pages, sums, strict=True)):
            if s.get("state") != "finished":  # keep what the page showed, for whoever fixes it
                shot = OUT_DIR / f"n{n}_learner{i + 1}"
                ages = {k: round(s[k] / 1000, 1) if s.get(k) is not None else None
                        for k in ("sinceFrame", "sinceRecv", "sinceSend")}  # fmt: skip
                t_seen = round(time.time() - t_click0, 1)
                try:
                    text = clients.keep(page, shot)
                except Exception as exc:
                    text = f"(could not read the page: {exc})"
                stuck.append({"learner": i + 1, "seen_at_s": t_seen, "status_line": s.get("text"),
                              "visibility": s.get("visibility"), "seconds_since": ages, "page_text": text[:400],
                              "files": str(shot.relative_to(REPO)) + ".{png,txt}"})  # fmt: skip
        result["pages_not_showing_finished"] = stuck

        # 4. the watch windows: a long run, its host alone, then all N learners watching it read-only
        if args.watch_s > 0:
            host = clients.open(base + HOST_LINK, "host")
            clients.ready(host, 120)
            clients.click_train(host)
            clients.wait_first_step(host, 120)
            run_id = clients.run_id(host)
            time.sleep(2)
            a = mon.sample()
            time.sleep(args.watch_s)
            b = mon.sample()
            reruns = sum(clients.sent_between([host], a["t"], b["t"]))
            result["cpu_watch_1"] = cpu_block(window(a, b), 1, reruns, "1 page watching a training run")
            for page in pages:
                clients.goto(page, f"{base}/?run={run_id}&view=1")
            deadline = time.monotonic() + 120  # for all of them together (a slow browser: not 120 s per page)
            for i, page in enumerate(pages):
                try:
                    clients.wait_running(page, max(1.0, deadline - time.monotonic()))
                except PlaywrightTimeoutError:
                    errors["script"].append(f"learner{i + 1}: the shared run never showed `running`")
            time.sleep(3)
            a = mon.sample()
            time.sleep(args.watch_s)
            b = mon.sample()
            everyone = [host, *pages]
            reruns = sum(clients.sent_between(everyone, a["t"], b["t"]))
            watch = cpu_block(window(a, b), n + 1, reruns, f"{n + 1} pages watching one training run's live charts")
            one = result["cpu_watch_1"]
            watch["marginal_server_cpu_s_per_session_per_min"] = round(
                (watch["server_cpu_s"] / watch["seconds"] - one["server_cpu_s"] / one["seconds"]) * 60 / n, 2
            )
            result["cpu_watch_all"] = watch
            with mon.lock:
                paused = [k for k, h in mon.runs.items() if any("nobody watched" in str(x[3]) for x in h)]
            result["runs_paused_by_lease"] = sorted(set(result.get("runs_paused_by_lease", [])) | set(paused))
    except Exception as exc:
        errors["script"].append(f"{type(exc).__name__}: {str(exc)[:500]}")
    finally:
        final = mon.sample()
        mon.stop()
        clients.close()
        stop_group(proc)
        shutil.rmtree(runs, ignore_errors=True)
    rss = defaultdict(list)
    for role, value in mon.rss_max.values():
        rss[role].append(value / 2**20)
    result["rss_mb"] = {
        "server_max": round(max(rss["server"], default=0), 1),
        "forkserver_max": round(max(rss["forkserver"], default=0), 1),
        "worker_max": round(max(rss["workers"], default=0), 1),
        "worker_median": round(statistics.median(rss["workers"]), 1) if rss["workers"] else None,
        "workers_seen": len(rss["workers"]),
        "note": "RSS counts pages shared with the forkserver (fork) in each worker",
    }
    result["server_cpu_s_total"] = round(final.get("server", 0), 1)
    result["wall_s"] = round(time.time() - t_start, 1)
    result["load_after"] = loadavg()
    result["server_log_problems"] = server_log_problems(log_path)
    result["server_log_at_shutdown"] = server_log_at_shutdown(log_path)
    result["websocket_disconnect_tracebacks"] = websocket_disconnects(log_path)
    errors.pop("clock")
    for kind in ("page_errors", "console_errors"):  # the same message over and over: once, with a count
        seen: dict[str, int] = {}
        for line in errors[kind]:
            key = re.sub(r"^t=[-\d.]+s ", "", line)
            seen[key] = seen.get(key, 0) + 1
        firsts = {}
        for line in errors[kind]:
            firsts.setdefault(re.sub(r"^t=[-\d.]+s ", "", line), line)
        errors[kind] = [f"{firsts[k]}" + (f" (x{c})" if c > 1 else "") for k, c in seen.items()]
    result["errors"] = errors
    result["error_count"] = (
        len(errors["page_errors"]) + len(errors["script"]) + len(result["server_log_problems"])
        + len(result.get("runs_not_finished", [])) + len(result.get("runs_paused_by_lease", []))
        + len(result.get("pages_not_showing_finished", [])) + result.get("pages_with_exception_box", 0)
    )  # fmt: skip
    return result


def analyse(n: int, sums: list[dict], hists: dict, counts: list, t_click0: float, errors: dict) -> dict:
    """Per learner: what the page showed against what the server did."""
    click_to_result, click_to_training, queue_lag, finish_lag, queued_for, run_lag = [], [], [], [], [], []
    run_length = [
        first_time(h, ("finished",)) - first_time(h, TRAINING)
        for h in hists.values()
        if first_time(h, ("finished",)) and first_time(h, TRAINING)
    ]
    stale, learners = [], []
    for i, s in enumerate(sums):
        label = f"learner{i + 1}"
        run = s.get("run")
        hist = hists.get(run, [])
        click = (s.get("click") or 0) / 1000 or None
        trans = [(t / 1000, state, step, pos) for t, state, step, pos in s.get("trans", [])]
        info = {
            "learner": i + 1,
            "run": run,
            "page_loaded_at_s": round(s["loadedAt"] / 1000 - t_click0, 1) if s.get("loadedAt") else None,
            "final_page": s.get("text"),
            "final_server": hist[-1][1] if hist else None,
            "max_rerun_gap_s": round(s["maxGap"] / 1000, 1) if s.get("maxGap") is not None else None,
        }
        if click and s.get("result"):
            click_to_result.append(s["result"] / 1000 - click)
        if click and s.get("firstStep"):
            info["click_to_training_s"] = round(s["firstStep"] / 1000 - click, 2)
            click_to_training.append(s["firstStep"] / 1000 - click)
        if not click:
            errors["script"].append(f"{label}: the click on Train was not seen by the page")
        server_queued = first_time(hist, ("queued",))
        server_training = first_time(hist, TRAINING + ("finished",))
        server_finished = first_time(hist, ("finished",))
        page_queued = [t for t, state, *_ in trans if state == "queued"]
        page_left_queue = next(
            (t for t, state, step, _ in trans if state != "queued" and page_queued and t > page_queued[0]), None
        )
        if page_queued and server_training:
            queued_for.append(server_training - (server_queued or page_queued[0]))
            if page_left_queue is not None:
                queue_lag.append(page_left_queue - server_training)
                if page_left_queue - server_training > 5:
                    stale.append(
                        f"{label}: page showed `queued` {page_left_queue - server_training:.1f} s after its run started"
                    )
            else:
                stale.append(f"{label}: page still shows {s.get('text')!r} although its run started")
        server_running = first_time(hist, ("running", "finished"))
        page_running = next((t for t, state, step, _ in trans if state in ("running", "finished") or step > 0), None)
        if server_running and page_running:
            run_lag.append(page_running - server_running)
        page_finished = next((t for t, state, *_ in trans if state == "finished"), None)
        if server_finished:
            if page_finished:
                finish_lag.append(page_finished - server_finished)
                if page_finished - server_finished > 5:
                    stale.append(
                        f"{label}: page showed `finished` {page_finished - server_finished:.1f} s after the run ended"
                    )
            else:
                stale.append(f"{label}: run finished, page still shows {s.get('text')!r}")
        info["server_states"] = [[round(t - t_click0, 1), state, pos] for t, state, pos, _ in hist]
        info["page_states"] = [[round(t - t_click0, 1), state, step, pos] for t, state, step, pos in trans]
        learners.append(info)
    last = learners[-1] if learners else {}
    jumps = []  # a queued run's published position should only ever go down
    for run, hist in hists.items():
        positions = [pos for _, state, pos, _ in hist if state == "queued" and pos]
        if any(b > a for a, b in zip(positions, positions[1:], strict=False)):
            jumps.append(f"{run}: {positions}")
    max_training = max((c[1] for c in counts), default=0)
    max_queued = max((c[2] for c in counts), default=0)
    not_finished = [f"{k}: {h[-1][1]} ({h[-1][3]})" for k, h in hists.items() if h[-1][1] != "finished"]
    paused = [k for k, h in hists.items() if any("nobody watched" in str(x[3]) for x in h)]
    return {
        "runs": {"started": len(hists), "max_training_at_once": max_training, "max_queued_at_once": max_queued,
                 "finished": sum(1 for h in hists.values() if h[-1][1] == "finished")},
        "click_to_first_result_s": dist(click_to_result),
        "click_to_training_on_screen_s": dist(click_to_training),
        "server_queued_s": dist(queued_for),
        "run_length_s": dist(run_length),
        "server_left_queue_to_page_s": dist(queue_lag),
        "server_running_to_page_s": dist(run_lag),
        "server_finished_to_page_s": dist(finish_lag),
        "last_learner_wait_s": last.get("click_to_training_s"),
        "runs_not_finished": not_finished,
        "runs_paused_by_lease": paused,
        "stale_pages": stale,
        "queue_position_went_up": jumps,
        "max_rerun_gap_s": max((x["max_rerun_gap_s"] or 0 for x in learners), default=None),
        "learners": learners,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[5, 10, 20])
    parser.add_argument("--watch-s", type=float, default=20.0, help="length of each CPU window (0: no watch phase)")
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--lease-s", type=float, default=60.0, help="TINYGPT_LEASE_SECONDS (0: the app's default)")
    parser.add_argument("--first-result-timeout-s", type=float, default=120.0)
    parser.add_argument("--room-timeout-s", type=float, default=600.0)
    parser.add_argument("--grace-s", type=float, default=15.0, help="how long pages may lag the server at the end")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "load_room.json")
    parser.add_argument("--clients", choices=["browser", "protocol"], default="browser",
                        help="learners as Chromium pages, or as websocket clients of Streamlit's protocol (nothing "
                        "drawn on the server's machine; tests/browser/protocol_learner.py)")  # fmt: skip
    parser.add_argument("--probe", action="store_true", help="run the server inside tests/browser/server_probe.py")
    parser.add_argument("--brief", action="store_true", help="leave the per-learner timelines out of stdout")
    args = parser.parse_args()
    report = {"machine": {"cpus": os.cpu_count(), "load_at_start": loadavg()},
              "settings": {"link": LINK, "lease_s": args.lease_s or "app default (600)", "watch_s": args.watch_s,
                           "clients": args.clients},
              "rooms": []}  # fmt: skip
    with sync_playwright() as pw:
        browser = None
        if args.clients == "browser":
            browser = launch_chromium(pw, EXTRA_CHROMIUM_ARGS)
        try:
            for n in args.sessions:
                print(f"# N={n}: starting (load {loadavg()})", file=sys.stderr, flush=True)
                room = run_room(browser, n, args)
                report["rooms"].append(room)
                print(
                    f"# N={n}: done in {room['wall_s']} s, {room['error_count']} error(s)", file=sys.stderr, flush=True
                )
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(report, indent=1))
        finally:
            if browser is not None:
                browser.close()
    shown = report
    if args.brief:
        shown = {**report, "rooms": [{k: v for k, v in r.items() if k != "learners"} for r in report["rooms"]]}
    print(json.dumps(shown, indent=1))


if __name__ == "__main__":
    main()
