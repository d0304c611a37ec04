"""Where the server's CPU goes while pages watch a live run: a CPU-weighted sampling profile of the Streamlit server.

    .venv/bin/python tests/browser/profile_refresh.py [--pages 1] [--seconds 20] [--top 40]

Starts `streamlit run app.py` inside this script's own launcher (`--serve`), which samples every thread's Python
stack every 5 ms and charges each stack the CPU its thread used since the last sample (nanoseconds from
/proc/self/task/<tid>/schedstat), so waiting threads cost nothing. One page (the host) starts a long Demo run; once
it trains, `--pages` pages watch it (`?run=...&view=1` for the others) and the profile covers `--seconds` of
that. Prints the server's CPU per page refresh, the functions with the most CPU (inclusive and own), and writes
the collapsed stacks to test-output/profile_refresh/stacks.txt (flame-graph input) and the host page's screenshots
(host.png, host_below.png: the charts below the fold) next to them. Run it under the bench lock for timings.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

OUT = HERE.parents[1] / "test-output" / "profile_refresh"
INTERVAL_S = 0.005


# ---------------------------------------------------------------- the launcher, inside the server process


def _thread_ns(tid: int) -> int | None:
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _sampler(out: Path) -> None:
    active = threading.Event()
    stacks: collections.Counter = collections.Counter()
    last: dict[int, int] = {}
    totals = {"ns": 0, "started": 0.0}

    def start(*_):
        stacks.clear()
        last.clear()
        totals.update(ns=0, started=time.time())
        active.set()

    def stop(*_):
        active.clear()
        out.write_text(json.dumps({"seconds": time.time() - totals["started"], "cpu_ns": totals["ns"],
                                   "stacks": [[k, v] for k, v in stacks.most_common()]}))  # fmt: skip

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)

    def loop():
        me = threading.get_native_id()
        while True:
            time.sleep(INTERVAL_S)
            if not active.is_set():
                continue
            frames = sys._current_frames()
            natives = {t.ident: t.native_id for t in threading.enumerate()}
            for ident, frame in frames.items():
                tid = natives.get(ident)
                if tid is None or tid == me:
                    continue
                ns = _thread_ns(tid)
                if ns is None:
                    continue
                delta = ns - last.get(tid, ns)
                last[tid] = ns
                if delta <= 0:
                    continue
                names = []
                f = frame
                while f is not None:
                    code = f.f_code
                    names.append(f"{Path(code.co_filename).name}:{code.co_name}")
                    f = f.f_back
                stacks[";".join(reversed(names))] += delta
                totals["ns"] += delta

    threading.Thread(target=loop, name="sampler", daemon=True).start()


def serve(out: Path, argv: list[str]) -> None:
    _sampler(out)
    from streamlit.web import cli

    sys.argv = ["streamlit", *argv]
    cli.main()


# ---------------------------------------------------------------- the driver


def report(data: dict, reruns: int, top: int) -> dict:
    inclusive: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    for stack, ns in data["stacks"]:
        names = stack.split(";")
        own[names[-1]] += ns
        for name in set(names):
            inclusive[name] += ns
    total = data["cpu_ns"] or 1
    ms = lambda ns: round(ns / 1e6 / max(reruns, 1), 2)  # noqa: E731 - per rerun
    return {
        "seconds": round(data["seconds"], 1),
        "server_cpu_s": round(data["cpu_ns"] / 1e9, 2),
        "reruns": reruns,
        "server_ms_per_rerun": ms(data["cpu_ns"]),
        "inclusive_ms_per_rerun": [[k, ms(v), round(100 * v / total, 1)] for k, v in inclusive.most_common(top)],
        "own_ms_per_rerun": [[k, ms(v), round(100 * v / total, 1)] for k, v in own.most_common(top)],
    }


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve(Path(sys.argv[2]), sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()

    import shutil
    import tempfile

    import load_room as lr
    from playwright.sync_api import sync_playwright
    from serving import AppServer, launch_chromium, stop_group

    OUT.mkdir(parents=True, exist_ok=True)
    prof = OUT / "profile.json"
    runs = Path(tempfile.mkdtemp(prefix="profile_refresh_"))
    launcher = [sys.executable, str(Path(__file__).resolve()), "--serve", str(prof), "run"]
    server = AppServer(runs, OUT / "server.log", launcher=launcher)
    proc, base = server.proc, server.base
    errors: dict = {"page_errors": [], "console_errors": [], "script": [], "clock": time.time()}
    try:
        server.wait_healthy(90)
        with sync_playwright() as pw:
            browser = launch_chromium(pw, lr.EXTRA_CHROMIUM_ARGS)
            _, host = lr.open_learner(browser, base + lr.HOST_LINK, errors, "host")
            lr.wait_ready(host, 120)
            lr.train_button(host).click()
            host.wait_for_function("() => window.__lt && window.__lt.firstStep", timeout=120_000)
            run_id = host.evaluate("() => window.__lt.run")
            pages = [host]
            for i in range(args.pages - 1):
                _, page = lr.open_learner(browser, f"{base}/?run={run_id}&view=1", errors, f"watcher{i + 1}")
                page.wait_for_function("() => window.__lt && window.__lt.state === 'running'", timeout=120_000)
                pages.append(page)
            time.sleep(3)
            t0 = time.time()
            os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(args.seconds)
            os.kill(proc.pid, signal.SIGUSR2)
            t1 = time.time()
            reruns = sum(lr.sent_between(pages, t0, t1))
            time.sleep(1)
            data = json.loads(prof.read_text())
            host.screenshot(path=str(OUT / "host.png"))
            charts = host.locator("[data-testid='stVegaLiteChart']")
            if charts.count() >= 3:  # the learning-rate and gradient-norm charts, below the fold
                charts.nth(2).scroll_into_view_if_needed()
                host.screenshot(path=str(OUT / "host_below.png"))
            browser.close()
    finally:
        stop_group(proc)
        shutil.rmtree(runs, ignore_errors=True)
    (OUT / "stacks.txt").write_text("".join(f"{k} {v // 1000}\n" for k, v in data["stacks"]))
    result = {"pages": args.pages, "load": lr.loadavg(), **report(data, reruns, args.top), "errors": errors}
    result["errors"].pop("clock")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
