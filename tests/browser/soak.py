"""Memory soak of a workshop server: does the server's (and the workers') memory level off? A script you rerun,
not a timed test (issue 22: "RSS 380 -> 487 MB in a 10-minute soak, rising at every sample; measure it").

    .venv/bin/python tests/browser/soak.py [--minutes 30] [--runs 3] [--pages 5] [--cycle-s 15] [--out FILE]

What it does, on a fresh `streamlit run app.py` (headless, free port, a temp TINYGPT_RUNS_DIR, TINYGPT_MAX_RUNS set
to --runs so every run trains at once, one thread per run):

1. `--runs` learners open the workshop link `/?preset=lecture` (the Lecture preset: Tiny Shakespeare, trains until
   stopped) and press Train. They stay on their Train page, watching live, for the whole soak (their open pages keep
   their leases, so no run is paused by the lease).
2. `--pages` more learners cycle through the pages a room uses, one page every `--cycle-s` seconds, each visit a new
   connection (a new Streamlit session, as a page load or refresh is): Train, Attention, Gradients, Runs and Sample,
   each on one of the training runs (`?run=<id>`, read-only), round robin.
3. Every `--sample-s` seconds (60 by default) it reads /proc: the RSS of the server process, of every training
   worker, and of the forkserver; the runs' steps; the cycling pages' exception boxes and closed sockets.

Learners are websocket clients speaking Streamlit's protocol (tests/browser/protocol_learner.py), not Chromium: on
a 2-core machine one Chromium drawing 8 pages would take the cores the server and workers need, and a learner's
browser runs on their own laptop. The server does all of its work for every page (every script and fragment run,
every chart built and sent).

Prints one JSON object (also written to test-output/soak/soak.json, or --out): the samples, and per process group
the RSS at the start, at the end and its least-squares slope in MB per minute over the whole soak and over its last
half (the issue's "last 15 minutes" of 30), with the verdict "levels off" when the last half's slope is under
0.5 MB/min (15 MB in the 30 minutes a lesson's hour would add), "still rising" otherwise, "not enough data" with
fewer than 5 samples in the last half.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from load_room import _cmdline, _proc_stat  # noqa: E402 - after the path set-up above
from protocol_learner import Loop, ProtocolLearner  # noqa: E402
from serving import AppServer  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "test-output" / "soak"
LINK = "/?preset=lecture"
CYCLE = ("", "attention", "gradients", "runs", "sample")  # the pages a room visits ("" is Train)
LEVEL_MB_PER_MIN = 0.5  # the last half's slope under this is "levels off" (15 MB over 30 minutes)
MIN_SAMPLES = 5  # fewer in the last half: "not enough data", never a verdict


def slope_mb_per_min(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, bytes) points, in MB per minute; None with fewer than two points."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    if var == 0:
        return None
    cov = sum((t - mx) * (v - my) for t, v in points)
    return cov / var * 60 / 2**20


def process_tree(root: int) -> dict[int, tuple[int, int]]:
    """{pid: (ppid, rss bytes)} of `root` and its descendants, read from /proc now."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _proc_stat(int(name))) is not None:
            table[int(name)] = (st[0], st[2])
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in table and pid not in out:
            out[pid] = table[pid]
            todo.extend(p for p, (ppid, _) in table.items() if ppid == pid)
    return out


def sample_memory(server_pid: int) -> dict:
    """RSS (MB) of the server, its forkserver and each training worker (a process forked by the forkserver)."""
    tree = process_tree(server_pid)
    forkservers = {p for p, (ppid, _) in tree.items() if ppid == server_pid and "forkserver" in _cmdline(p)}
    workers = {p: rss for p, (ppid, rss) in tree.items() if ppid in forkservers}
    mb = 1 / 2**20
    return {
        "server_mb": round(tree.get(server_pid, (0, 0))[1] * mb, 1),
        "forkserver_mb": round(sum(tree[p][1] for p in forkservers) * mb, 1),
        "workers_mb": {str(p): round(rss * mb, 1) for p, rss in sorted(workers.items())},
    }


def run_steps(runs_dir: Path, run_ids: list[str]) -> dict[str, int | None]:
    steps = {}
    for run in run_ids:
        try:
            steps[run] = json.loads((runs_dir / run / "status.json").read_text()).get("step")
        except (OSError, ValueError):
            steps[run] = None
    return steps


def verdict(points: list[tuple[float, float]], half_s: float) -> dict:
    """Start, end, slopes (whole soak, last half) and the verdict of one process's (seconds, bytes) series."""
    if not points:
        return {"verdict": "not enough data"}
    last = [(t, v) for t, v in points if t >= half_s]
    whole, tail = slope_mb_per_min(points), slope_mb_per_min(last)
    if len(last) < MIN_SAMPLES or tail is None:
        word = "not enough data"
    else:
        word = "levels off" if tail < LEVEL_MB_PER_MIN else "still rising"
    return {
        "start_mb": round(points[0][1] / 2**20, 1),
        "end_mb": round(points[-1][1] / 2**20, 1),
        "max_mb": round(max(v for _, v in points) / 2**20, 1),
        "slope_mb_per_min": None if whole is None else round(whole, 3),
        "last_half_slope_mb_per_min": None if tail is None else round(tail, 3),
        "last_half_samples": len(last),
        "verdict": word,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pages", type=int, default=5)
    parser.add_argument("--cycle-s", type=float, default=15.0, help="seconds each cycling page stays on a page")
    parser.add_argument("--sample-s", type=float, default=60.0, help="seconds between memory samples")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "soak.json")
    why = "server under tracemalloc (trace_launcher.py): where its Python allocations grow; slower, a diagnosis"
    parser.add_argument("--trace", action="store_true", help=why)
    args = parser.parse_args()

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    runs_dir = Path(tempfile.mkdtemp(prefix="tinygpt-soak-"))
    env = {"TINYGPT_MAX_RUNS": str(args.runs), "TINYGPT_THREADS_PER_RUN": "1", "TINYGPT_LEASE_SECONDS": "600"}
    trace_path = OUT_DIR / "trace.jsonl"
    launcher = None
    if args.trace:
        trace_path.unlink(missing_ok=True)
        launcher = [sys.executable, str(Path(__file__).resolve().parent / "trace_launcher.py"), str(trace_path), "--"]
    server = AppServer(runs_dir, OUT_DIR / "server.log", env=env, launcher=launcher)
    loop = Loop()
    learners: list[ProtocolLearner] = []
    samples: list[dict] = []
    problems: list[str] = []
    try:
        server.wait_healthy(120)
        for i in range(args.runs):
            learner = ProtocolLearner(loop, f"trainer{i + 1}")
            learner.goto(server.base + LINK)
            deadline = time.monotonic() + 120
            while not learner.ready():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{learner.label}: the Train page did not draw in 120 s")
                time.sleep(0.2)
            learner.click("Train")
            learners.append(learner)
        deadline = time.monotonic() + 180
        while not all(lr.lt["run"] for lr in learners) or any(
            (run_steps(runs_dir, [lr.lt["run"]])[lr.lt["run"]] or 0) < 1 for lr in learners
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("the runs did not all train a first step within 180 s")
            time.sleep(1)
        run_ids = [lr.lt["run"] for lr in learners]
        # Each visitor keeps one learner across its page loads, as a browser's cookie does (without it every
        # visit would be a new learner, which no room has).
        cyclers = [
            ProtocolLearner(loop, f"visitor{i + 1}", cookie=f"tinygpt_learner={secrets.token_urlsafe(18)}")
            for i in range(args.pages)
        ]

        started = time.monotonic()
        next_sample, visit = started, 0
        while (now := time.monotonic()) - started < args.minutes * 60:
            if now >= next_sample:
                mem = sample_memory(server.pid)
                if args.trace:
                    os.kill(server.pid, signal.SIGUSR2)  # trace_launcher.py appends where allocations grew
                sample = {
                    "t_s": round(now - started, 1),
                    "load": round(os.getloadavg()[0], 2),
                    **mem,
                    "steps": run_steps(runs_dir, run_ids),
                    "page_exceptions": sum(lr.exceptions for lr in [*learners, *cyclers]),
                    "visits": visit,
                }
                samples.append(sample)
                print(json.dumps(sample), file=sys.stderr, flush=True)
                next_sample += args.sample_s
            for i, cycler in enumerate(cyclers):
                page = CYCLE[(visit + i) % len(CYCLE)]
                run = run_ids[(visit + i) % len(run_ids)]
                try:
                    cycler.goto(f"{server.base}/{page}?run={run}&view=1")
                except Exception as exc:  # noqa: BLE001 - a visit that failed is a finding, the soak goes on
                    problems.append(f"t={now - started:.0f}s {cycler.label} /{page}: {type(exc).__name__}: {exc}")
            visit += 1
            time.sleep(max(0.0, args.cycle_s - (time.monotonic() - now)))
        for lr in learners:
            if lr.closed_with is not None:
                problems.append(f"{lr.label}: its connection closed ({lr.closed_with})")
        for cycler in cyclers:
            cycler.close()
    finally:
        for lr in learners:
            lr.close()
        loop.close()
        server.stop()

    half = args.minutes * 60 / 2
    by_worker: dict[str, list[tuple[float, float]]] = {}
    for s in samples:
        for pid, mb in s["workers_mb"].items():
            by_worker.setdefault(pid, []).append((s["t_s"], mb * 2**20))
    result = {
        "minutes": args.minutes,
        "runs": args.runs,
        "cycling_pages": args.pages,
        "cycle_s": args.cycle_s,
        "page_visits": visit * args.pages,
        "cpus": os.cpu_count(),
        "load_median": sorted(s["load"] for s in samples)[len(samples) // 2] if samples else None,
        "server": verdict([(s["t_s"], s["server_mb"] * 2**20) for s in samples], half),
        "forkserver": verdict([(s["t_s"], s["forkserver_mb"] * 2**20) for s in samples], half),
        "workers": {pid: verdict(points, half) for pid, points in by_worker.items()},
        "page_exceptions": samples[-1]["page_exceptions"] if samples else None,
        "problems": problems,
        "samples": samples,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))


if __name__ == "__main__":
    main()
