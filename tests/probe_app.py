"""The reliability probe's app-side families (tests/reliability_probe.py runs them; RELIABILITY.md counts them):

    tampered    every file of a finished run folder, in turn replaced by garbage bytes, by values of the wrong type
                (each JSON leaf retyped; a JSON document where a binary or text file belongs) and by markdown
                (every string a link, an image and HTML), then every page opened on the run: one message or the
                run, never an exception box, and never a link or an image that came from a file.
    admission   every route that starts or resumes training (Train, Resume on Train, Resume on Runs, each
                experiment's "Run side by side", the induction experiment on Circuits, the lesson's "Set up this
                step") for a learner who already has a run training, and for one over the room's budget: the route
                asks or refuses, and the learner never holds more than one slot; within the budget, every run it
                starts carries the room's time limit.
    stale       states that outlive their process: a CLI run killed with -9, an app worker killed with -9, a server
                killed with -9 while one run trains and one waits in the queue: no reader, listing, CLI `runs` or
                page says "running" or "queued" for a run nobody trains, and each run resumes.

Pages are driven with Streamlit's AppTest (the server's own script runs, no browser), each case in a fresh runs
folder so no case sees another's runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from helpers import app_as, cli_env, tiny_config, wait_for

REPO = Path(__file__).resolve().parents[1]
PAGES = ("pages/train.py", "pages/attention.py", "pages/circuits.py", "pages/gradients.py", "pages/sample.py",
         "pages/runs.py")  # fmt: skip
MARKDOWN = "[link](//evil.example/x) ![img](//evil.example/y.png) <b>bold</b>"
KINDS = ("garbage", "wrong types", "markdown")


# ---------------------------------------------------------------- the app, driven without a browser


@contextlib.contextmanager
def app_runs_dir(path: Path) -> Iterator[Path]:
    """TINYGPT_RUNS_DIR set to `path` for the app's modules; its run manager shut down (no worker left) after."""
    old = os.environ.get("TINYGPT_RUNS_DIR")
    os.environ["TINYGPT_RUNS_DIR"] = str(path)
    try:
        yield path
    finally:
        from tinygpt.ui.host import resources

        with contextlib.suppress(Exception):
            resources.manager_at(str(path.resolve())).shutdown()
        if old is None:
            os.environ.pop("TINYGPT_RUNS_DIR", None)
        else:
            os.environ["TINYGPT_RUNS_DIR"] = old


def open_app(actor=None, query: dict | None = None):
    """app.py run once as `actor` (None: a new learner) with `query` in the address; returns the AppTest, an
    exception box and all (what the probe looks for)."""
    return app_as(actor, query, timeout=90, clean=False)


def shown_text(at) -> str:
    """What the page handed to Streamlit's markdown renderer (markdown, captions and every message box)."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    for box in (at.error, at.warning, at.info, at.success):
        parts += [b.value for b in box]
    return "\n".join(str(p) for p in parts)


def check_page(at, page: str) -> str:
    """No exception box, nothing rendered from a file as a link, an image or HTML; returns the page's text."""
    assert not at.exception, f"{page}: {str(at.exception[0].value)[:200]}"
    text = shown_text(at)
    assert "](//evil.example" not in text, f"{page} renders a link or an image from a run file"
    assert "<b>bold</b>" not in text or "\\<b>" in text, f"{page} renders HTML from a run file"
    return text


def every_page(actor=None, query: dict | None = None) -> dict[str, str]:
    """Open every run page in turn (as one browser would); {page: its text}. Raises AssertionError on a problem."""
    at = open_app(actor, query)
    texts = {"app.py": check_page(at, "app.py")}
    for page in PAGES:
        at.switch_page(page).run()
        texts[page] = check_page(at, page)
    return texts


# ---------------------------------------------------------------- tampered


def retyped(value, rng: random.Random):
    """The same shape with every leaf of another type (a number becomes text, text a list, ...)."""
    if isinstance(value, dict):
        return {k: retyped(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [retyped(v, rng) for v in value] or [{"x": 1}]
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return rng.choice(["many", [value], {"value": value}, None, True])
    if isinstance(value, str):
        return rng.choice([[value], 12345, {"s": value}, None, -1e308])
    return rng.choice([0, "none", []])


def marked_down(value):
    """Every string of a JSON value replaced by MARKDOWN (keys kept: a page looks fields up by name)."""
    if isinstance(value, dict):
        return {k: marked_down(v) for k, v in value.items()}
    if isinstance(value, list):
        return [marked_down(v) for v in value]
    return MARKDOWN if isinstance(value, str) else value


def tampered_bytes(path: Path, kind: str, rng: random.Random) -> bytes:
    """`path`'s replacement for one kind of tampering."""
    if kind == "garbage":
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))
    raw = path.read_bytes()
    if path.suffix in (".json", ".jsonl", ".lock"):
        try:
            if path.suffix == ".jsonl":
                docs = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
            else:
                docs = [json.loads(raw)]
        except ValueError:
            docs = [{"step": 1}]
        change = (lambda d: retyped(d, rng)) if kind == "wrong types" else marked_down
        return "".join(json.dumps(change(d)) + "\n" for d in docs).encode()
    if kind == "wrong types":  # a JSON document where weights, a snapshot or text belong
        return json.dumps({"step": "x", "weights": [1, 2], "text": None}).encode()
    return (MARKDOWN + "\n").encode() * 8


def finished_run(root: Path, text: str) -> tuple[str, list[Path]]:
    """A finished tiny run written by the real training loop (every file a worker writes); (id, its files)."""
    from tinygpt.runs.loop import run_training
    from tinygpt.runs.store import RunStore

    config = tiny_config(text, max_steps=30)
    with RunStore(root).create(config.to_dict(), owner="app") as writer:
        run_id = writer.run_id
    assert run_training(writer.run_dir, config) == "finished"
    files = sorted(p.relative_to(writer.run_dir) for p in writer.run_dir.rglob("*") if p.is_file())
    return run_id, files


def probe_tampered(family, root: Path, rng: random.Random, text: str, quick: bool) -> None:
    pristine = root / "tampered-pristine"
    run_id, files = finished_run(pristine, text)
    if quick:  # one of each kind of file (the first and last snapshot and checkpoint), one kind of damage each
        keep = {f for f in files if "step_" not in f.name}
        keep |= {next(f for f in files if f.parent.name == "attention" and f.suffix == ".npy")}
        keep |= {next(f for f in reversed(files) if f.suffix == ".safetensors")}
        files = sorted(keep)
    for n, relative in enumerate(files):
        for kind in [rng.choice(KINDS)] if quick else KINDS:
            with family.case(f"{kind} {relative}"):
                work = root / f"tampered-{n}-{KINDS.index(kind)}"
                shutil.copytree(pristine, work)
                target = work / run_id / relative
                target.write_bytes(tampered_bytes(target, kind, rng))
                with app_runs_dir(work):
                    every_page(query={"run": run_id})
                shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- admission routes


def _click(at, label: str, key: str | None = None):
    matches = [b for b in at.button if b.label == label and (key is None or b.key == key)]
    assert matches, f"no button {label!r} on the page (buttons: {[b.label for b in at.button]})"
    matches[0].click().run()
    assert not at.exception, f"{label}: {str(at.exception[0].value)[:200]}"
    return at


def _warnings_and_errors(at) -> str:
    return "\n".join(str(m.value).replace("\\", "") for m in [*at.warning, *at.error])


def _route_train(actor, own_stopped: str | None):
    at = open_app(actor)
    return _click(at, "Train")


def _route_train_resume(actor, own_stopped: str | None):
    at = open_app(actor, {"run": own_stopped})
    return _click(at, "Resume")


def _route_runs_resume(actor, own_stopped: str | None):
    from tinygpt.ui.runs import runs_keys

    at = open_app(actor)
    at.switch_page("pages/runs.py").run()
    at.selectbox(key=runs_keys.W_RUNS_PICK).set_value(own_stopped).run()
    return _click(at, "Resume")


def _route_experiment(key: str) -> Callable:
    def route(actor, own_stopped: str | None):
        at = open_app(actor, {"experiment": key, "source": "synthetic:copy"})
        at.switch_page("pages/experiments.py").run()
        return _click(at, "Run side by side")

    route.__name__ = f"experiment {key}"
    return route


def _route_induction(actor, own_stopped: str | None):
    at = open_app(actor)
    at.switch_page("pages/circuits.py").run()
    return _click(at, "Start the experiment", key="circ_start")


def _route_lesson(step_key: str) -> Callable:
    def route(actor, own_stopped: str | None):
        from tinygpt.ui.teach import lesson

        index = [s.key for s in lesson.STEPS].index(step_key)
        at = open_app(actor)
        _click(at, "Teach the lesson") if any(b.label == "Teach the lesson" for b in at.button) else None
        lesson.write_room(Path(os.environ["TINYGPT_RUNS_DIR"]), step=index)
        at.run()
        return _click(at, "Set up this step", key="lesson_setup")

    route.__name__ = f"lesson step {step_key}"
    return route


def admission_routes() -> dict[str, Callable]:
    from tinygpt.lab.registry import EXPERIMENTS
    from tinygpt.ui.teach import lesson

    routes = {"Train": _route_train, "Resume on Train": _route_train_resume, "Resume on Runs": _route_runs_resume}
    # The memory experiment is measured in the page's own process: it starts no training, so it takes no slot.
    routes |= {f"experiment {key}": _route_experiment(key) for key, e in EXPERIMENTS.items() if e.measure is None}
    routes["induction experiment (Circuits)"] = _route_induction
    starting = [s.key for s in lesson.STEPS if s.setup.train or s.setup.heads or s.setup.experiment
                or s.setup.induction or s.setup.pitfalls]  # fmt: skip
    routes |= {f"lesson step {key}": _route_lesson(key) for key in starting}
    return routes


def _run_ids() -> set[str]:
    from tinygpt.ui.host import resources

    return {s.run_id for s in resources.get_store().list_runs()}


def probe_admission(family, root: Path, rng: random.Random, text: str, quick: bool) -> None:
    from tinygpt.runs.owners import Actor
    from tinygpt.ui.host import resources

    routes = admission_routes()
    if quick:
        routes = dict(rng.sample(sorted(routes.items()), 4))
    for n, (name, route) in enumerate(routes.items()):
        for condition in ("slot taken", "over the budget", "within the budget"):
            with family.case(f"{name}, {condition}"), app_runs_dir(root / f"admission-{n}-{condition[:4]}"):
                learner = Actor(f"{n:02d}".ljust(16, "a"), f"learner{n}")
                manager = resources.get_manager()
                budget = resources.room_budget()
                old_stopped = manager.start(tiny_config(text, max_steps=10**6), actor=learner)
                manager.stop(old_stopped, actor=learner)
                try:
                    if condition == "slot taken":
                        busy = manager.start(tiny_config(text, max_steps=10**6), actor=learner)
                        at = route(learner, old_stopped)
                        said = _warnings_and_errors(at)
                        assert "already have a run" in said, f"no question or refusal: {said[:200]!r}"
                        assert resources.my_active_runs(learner) == [busy], resources.my_active_runs(learner)
                    elif condition == "over the budget":
                        budget.update(max_params=1000, max_steps=5)
                        before = _run_ids()
                        at = route(learner, old_stopped)
                        said = _warnings_and_errors(at)
                        started = _run_ids() - before
                        resumed = resources.my_active_runs(learner)
                        assert not started or "budget" in said, f"started {started} over the budget: {said[:200]!r}"
                        assert not started, f"started {sorted(started)} over the room's budget"
                        assert name.startswith("Resume") or not resumed, f"{resumed} trains over the budget"
                    else:
                        budget.update(max_minutes=0.5)
                        route(learner, old_stopped)
                        mine = resources.my_active_runs(learner)
                        assert mine, "nothing started within the budget"
                        limits = {run: manager.time_limit(run) for run in mine}
                        assert all(limit == 30.0 for limit in limits.values()), f"time limits {limits}"
                finally:
                    budget.update(max_minutes=0.0, max_params=0, max_steps=0)
                    for run in [*manager.live_runs(), *manager.queued_runs()]:
                        with contextlib.suppress(Exception):
                            manager.stop(run)


# ---------------------------------------------------------------- stale states


def _no_lie(root: Path, run_id: str, nobody: str) -> None:
    """Nobody trains `run_id`: the reader, the listing, the CLI's `runs` and every page say so."""
    from tinygpt.runs.store import RunStore

    store = RunStore(root)
    status = store.reader(run_id).status()
    assert status.get("state") not in ("running", "queued", "starting"), f"reader: {status.get('state')} ({nobody})"
    listed = {s.run_id: s.state for s in store.list_runs()}
    assert listed[run_id] not in ("running", "queued", "starting"), f"list_runs: {listed[run_id]} ({nobody})"
    out = subprocess.run([sys.executable, "-m", "tinygpt", "runs", "--runs-dir", str(root)], env=cli_env(),
                         capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    line = next((ln for ln in out.splitlines() if run_id in ln), "")
    assert line and not any(w in line for w in (" running", " queued", " starting")), f"CLI runs: {line!r}"
    with app_runs_dir(root):
        for page, text in every_page(query={"run": run_id}).items():
            assert "· running" not in text and "· queued" not in text, f"{page} says it trains ({nobody})"


def _resumes(root: Path, run_id: str, cli: bool = False) -> None:
    """The run continues to 5 steps past where it was and finishes: in the app's run manager, or with the CLI's
    `train --resume` for a run the CLI wrote (the app leaves those to it)."""
    from tinygpt.runs.scheduler import RunManager
    from tinygpt.runs.store import RunStore

    store = RunStore(root)
    reader = store.reader(run_id)
    step = max([reader.status().get("step") or 0, *(m["step"] for m in reader.metrics[-1:])])  # the file may lag
    if cli:
        cmd = [sys.executable, "-m", "tinygpt", "train", "--resume", run_id, "--runs-dir", str(root), "--max-steps",
               str(step + 5), "--quiet", "--threads", "1"]  # fmt: skip
        done = subprocess.run(cmd, env=cli_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"train --resume exited {done.returncode}: {done.stderr.strip()[-300:]}"
        assert store.reader(run_id).status().get("state") == "finished", store.reader(run_id).status()
        return
    manager = RunManager(store, max_active=1, threads_per_run=1, lease_seconds=600)
    try:
        manager.resume(run_id, max_steps=step + 5)
        wait_for(lambda: store.reader(run_id).status().get("state") == "finished", 120, f"{run_id} resumed to the end")
    finally:
        manager.shutdown()


SERVER = """
import sys, time
sys.path[:0] = [{tests!r}, {repo!r}]
import torch; torch.set_num_threads(1)
from helpers import tiny_config
from tinygpt.runs.store import RunStore
from tinygpt.runs.scheduler import RunManager
text = open({text!r}).read()
manager = RunManager(RunStore({root!r}), max_active=1, threads_per_run=1, lease_seconds=600)
ids = [manager.start(tiny_config(text, max_steps=10**6, checkpoint_every=5)) for _ in range(2)]
print(" ".join(ids), flush=True)
time.sleep(600)
"""


def probe_stale(family, root: Path, rng: random.Random, text: str, quick: bool) -> None:
    from tinygpt.runs.scheduler import RunManager
    from tinygpt.runs.store import RunStore

    corpus_file = root / "stale-corpus.txt"
    corpus_file.write_text(text)
    with family.case("CLI killed with -9 mid-run"):
        where = root / "stale-cli"
        cmd = [sys.executable, "-m", "tinygpt", "train", "--text", text, "--source", "text", "--threads", "1",
               "--runs-dir", str(where), "--max-steps", "100000", "--hidden-dim", "32", "--num-layers", "1",
               "--max-seq-len", "16", "--batch-size", "4", "--checkpoint-every", "5", "--device", "cpu"]  # fmt: skip
        proc = subprocess.Popen(cmd, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            store = RunStore(where)
            run_id = wait_for(lambda: next((s.run_id for s in store.list_runs() if (s.step or 0) >= 12), None), 120,
                           "the CLI run at step 12")  # fmt: skip
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        _no_lie(where, run_id, "its CLI was killed")
        _resumes(where, run_id, cli=True)
    with family.case("app worker killed with -9"):
        where = root / "stale-worker"
        store = RunStore(where)
        manager = RunManager(store, max_active=1, threads_per_run=1, lease_seconds=600)
        try:
            run_id = manager.start(tiny_config(text, max_steps=10**6, checkpoint_every=5))
            wait_for(lambda: (store.reader(run_id).status().get("step") or 0) >= 12, 120, "the worker at step 12")
            os.kill(manager.worker_pid(run_id), signal.SIGKILL)
            wait_for(lambda: not manager.is_live(run_id), 60, "the kill noticed")
        finally:
            manager.shutdown()
        _no_lie(where, run_id, "its worker was killed")
        _resumes(where, run_id)
    with family.case("server killed with -9: one run training, one queued"):
        where = root / "stale-server"
        script = SERVER.format(tests=str(REPO / "tests"), repo=str(REPO), text=str(corpus_file), root=str(where))
        proc = subprocess.Popen([sys.executable, "-c", script], env=cli_env(), stdout=subprocess.PIPE, text=True,
                                start_new_session=True)  # fmt: skip
        try:
            ids = proc.stdout.readline().split()
            store = RunStore(where)
            wait_for(lambda: (store.reader(ids[0]).status().get("step") or 0) >= 12, 120, "the first run at step 12")
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        wait_for(lambda: store.reader(ids[0]).status().get("state") != "running", 60, "the orphaned worker's exit")
        with app_runs_dir(where):  # a new server on the same folder
            from tinygpt.ui.host import resources

            resources.get_manager()
        for run_id in ids:
            _no_lie(where, run_id, "its server was killed")
        _resumes(where, ids[1])
