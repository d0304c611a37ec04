"""The long reliability checks, rerunnable: `python tests/reliability_probe.py [--quick] [--seed N]`.

Families (RELIABILITY.md's table names them):
    kills     SIGKILL of app workers at random steps (mid-step, mid-checkpoint, whatever the moment is), then a
              resume; SIGKILL and SIGINT of `python -m tinygpt train`, then `--resume`. Each resumed loss curve
              must equal an uninterrupted run's, step by step, bit for bit.
    churn     many runs started, paused, stepped, resumed, stopped and knob-turned at random through one
              RunManager: every run ends in a known state with a reason, the steps of each are 1..n without a gap
              or repeat, and no process or thread is left behind.
    corrupt   random damage (truncation, garbage, a pickle, deletion) to each file of a finished run folder: listing,
              reading, loading attention and models, sampling and resuming either work or raise TinyGPTError;
              never another exception.
    disk      (root only: real tmpfs mounts) a disk that fills up mid-run and a runs folder remounted read-only:
              a message that says so, never an OSError.
    limits, files, ownership
              round four (tests/probe_doors.py): every row of the config's table of limits at every door; the
              files a user hands over (/dev/zero, huge, not UTF-8, not JSON); runs no learner owns against learners.
    tampered, admission, stale
              the app's side (tests/probe_app.py): every file of a run folder replaced by garbage, wrong types or
              markdown on every page; every route that starts or resumes training against the slot and the room's
              budget; states that outlive their process (CLI, worker and server killed with -9).

Prints one line per family (cases, held, failures) and exits 1 if anything did not hold. Uses a tiny model on a
tiny text: a few minutes on 2 busy cores (`--quick`: well under one).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from helpers import cli_env, mounted_tmpfs, tiny_config, wait_for  # noqa: E402

from tinygpt.errors import TinyGPTError  # noqa: E402
from tinygpt.runs.corpus import read_corpus  # noqa: E402
from tinygpt.runs.files import list_checkpoints  # noqa: E402
from tinygpt.runs.loop import run_training  # noqa: E402
from tinygpt.runs.models import load_model  # noqa: E402
from tinygpt.runs.resume import LATEST  # noqa: E402
from tinygpt.runs.scheduler import RunManager  # noqa: E402
from tinygpt.runs.status import read_status  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "to", "hat"]


def corpus(seed: int = 1234) -> str:
    rng = random.Random(seed)
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < 3000:
        lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) + ".")
    return "\n".join(lines) + "\n"


def curve(store: RunStore, run_id: str) -> list[tuple]:
    return [(m["step"], m["loss"], m["grad_norm"]) for m in store.reader(run_id).metrics]


class Family:
    """Counts the cases of one family and keeps the first lines of each failure."""

    def __init__(self, name: str):
        self.name, self.cases, self.failures = name, 0, []

    @contextlib.contextmanager
    def case(self, label: str):
        self.cases += 1
        try:
            yield
        except Exception as exc:  # a failed case is reported, and the probe goes on
            self.failures.append(f"{label}: {type(exc).__name__}: {exc}".splitlines()[0][:300])
            if os.environ.get("PROBE_TRACEBACKS"):
                traceback.print_exc()

    def line(self) -> str:
        held = self.cases - len(self.failures)
        return f"{self.name:<9} {self.cases:>4} cases  {held:>4} held  {len(self.failures):>3} failed"


# ---------------------------------------------------------------- kills


def probe_kills(root: Path, rng: random.Random, trials: int) -> Family:
    family = Family("kills")
    text = corpus()
    config = tiny_config(text, max_steps=150, checkpoint_every=20, eval_interval=25, dropout=0.1)
    store = RunStore(root / "kills")
    manager = RunManager(store, max_active=2, threads_per_run=1, lease_seconds=600)
    try:
        reference = manager.start(config)
        wait_for(lambda: store.reader(reference).status().get("state") == "finished", 300, "the reference run")
        want = curve(store, reference)
        for trial in range(trials):
            with family.case(f"worker SIGKILL #{trial}"):
                run_id = manager.start(config)
                at = rng.randint(1, 140)
                wait_for(lambda run_id=run_id, at=at: (store.reader(run_id).status().get("step") or 0) >= at, 120)
                pid = manager.worker_pid(run_id)
                time.sleep(rng.random() * 0.05)  # anywhere in a step, a checkpoint or a snapshot
                with contextlib.suppress(ProcessLookupError):  # it may just have finished on its own
                    if pid:
                        os.kill(pid, signal.SIGKILL)
                wait_for(lambda run_id=run_id: not manager.is_live(run_id), 60, "the kill noticed")
                if store.reader(run_id).status()["state"] != "finished":
                    manager.resume(run_id)
                wait_for(lambda run_id=run_id: store.reader(run_id).status().get("state") == "finished", 300, "end")
                got = curve(store, run_id)
                assert got == want, f"killed near step {at}: first difference at {next_difference(got, want)}"
    finally:
        manager.shutdown()
    for how in (signal.SIGKILL, signal.SIGINT) * max(1, trials // 4):
        with family.case(f"CLI {how.name}"):
            probe_cli_kill(root / f"cli-{how.name}", text, how, rng, want)
    return family


def next_difference(got: list[tuple], want: list[tuple]):
    return next((g[0] for g, w in zip(got, want, strict=False) if g != w), min(len(got), len(want)))


def probe_cli_kill(root: Path, text: str, how: signal.Signals, rng: random.Random, want: list[tuple]) -> None:
    text_file = root / "text.txt"
    root.mkdir(parents=True, exist_ok=True)
    text_file.write_text(text)
    config = tiny_config(text, max_steps=150, checkpoint_every=20, eval_interval=25, dropout=0.1)
    store = RunStore(root / "runs")
    with store.create(config.to_dict(), owner="cli") as writer:
        run_id = writer.run_id
    script = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
        "from helpers import tiny_config; from tinygpt.runs.loop import run_training, LATEST\n"
        "from tinygpt.runs.distributed import run_training_maybe_distributed\n"
        "from tinygpt.runs.store import RunStore\n"
        "text = open(sys.argv[3]).read()\n"
        "config = tiny_config(text, max_steps=150, checkpoint_every=20, eval_interval=25, dropout=0.1)\n"
        "sys.exit(run_training_maybe_distributed(RunStore(sys.argv[4]), config, run_id=sys.argv[5],\n"
        "         resume_from=sys.argv[6] if sys.argv[6] != 'none' else None, threads=1))\n"
    )
    args = [sys.executable, "-c", script, str(HERE), str(HERE.parent), str(text_file), str(store.root), run_id]
    proc = subprocess.Popen([*args, "none"], env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    at = rng.randint(5, 140)
    wait_for(lambda: (read_status(store.path(run_id)).get("step") or 0) >= at or proc.poll() is not None, 120)
    proc.send_signal(how)
    proc.wait(60)
    again = subprocess.run([*args, "latest" if list_checkpoints(store.path(run_id)) else "none"], env=cli_env(),
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert again.returncode == 0, again.stderr[-500:]
    assert "Traceback" not in again.stderr, again.stderr[-500:]
    got = curve(store, run_id)
    assert got == want, f"{how.name} near step {at}: first difference at {next_difference(got, want)}"


# ---------------------------------------------------------------- churn


def probe_churn(root: Path, rng: random.Random, actions: int) -> Family:
    family = Family("churn")
    text = corpus()
    store = RunStore(root / "churn")
    manager = RunManager(store, max_active=2, threads_per_run=1, lease_seconds=600)
    manager.stop_grace = 2.0
    runs: list[str] = []
    try:
        for i in range(actions):
            verb = rng.choice(["start", "start", "pause", "resume", "step", "stop", "knob", "sleep"])
            with family.case(f"{verb} #{i}"):
                if verb == "start" or not runs:
                    runs.append(manager.start(tiny_config(text, max_steps=rng.choice([20, 60, 10**6]))))
                    continue
                run_id = rng.choice(runs)
                try:
                    if verb == "pause":
                        manager.pause(run_id)
                    elif verb == "resume":
                        manager.resume(run_id, max_steps=rng.choice([None, 80]))
                    elif verb == "step":
                        manager.step(run_id, rng.randint(1, 5))
                    elif verb == "stop":
                        manager.stop(run_id, wait=rng.random() < 0.5)
                    elif verb == "knob":
                        manager.set_knob(run_id, "learning_rate", rng.choice([1e-3, 2e-3, -1.0]))
                    else:
                        time.sleep(rng.random() * 0.3)
                except TinyGPTError:
                    pass  # a refusal with a message is an answer (e.g. a knob for a run without a worker)
        for run_id in runs:
            with family.case(f"stop {run_id}"):
                manager.stop(run_id)
    finally:
        manager.shutdown()
    for run_id in runs:
        with family.case(f"ended {run_id}"):
            status = store.reader(run_id).status()
            assert status.get("state") in ("finished", "stopped", "paused", "failed", "diverged"), status
            assert status.get("reason"), status
            steps = [m["step"] for m in store.reader(run_id).metrics]
            assert steps == list(range(1, len(steps) + 1)), f"steps not 1..n: {steps[:5]}...{steps[-5:]}"
    with family.case("nothing left behind"):
        import multiprocessing

        assert multiprocessing.active_children() == []
    return family


# ---------------------------------------------------------------- corrupt folders


def damages(rng: random.Random):
    def truncate(p: Path):
        p.write_bytes(p.read_bytes()[: rng.randint(0, max(0, p.stat().st_size - 1))])

    def garbage(p: Path):
        p.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))))

    def pickled(p: Path):
        p.write_bytes(pickle.dumps({"weights": [1.0, 2.0], "evil": "os.system"}))

    def delete(p: Path):
        p.unlink()

    def flip(p: Path):
        data = bytearray(p.read_bytes())
        if data:
            data[rng.randrange(len(data))] ^= 0xFF
        p.write_bytes(bytes(data))

    return [truncate, garbage, pickled, delete, flip]


def probe_corrupt(root: Path, rng: random.Random, rounds: int) -> Family:
    family = Family("corrupt")
    text = corpus()
    config = tiny_config(text, max_steps=20, checkpoint_every=5)
    pristine = root / "pristine"
    store = RunStore(pristine)
    with store.create(config.to_dict(), owner="app") as writer:
        run_id = writer.run_id
    run_training(writer.run_dir, config)
    files = sorted(p.relative_to(writer.run_dir) for p in writer.run_dir.rglob("*") if p.is_file())
    for round_ in range(rounds):
        for relative in files:
            damage = rng.choice(damages(rng))
            with family.case(f"{damage.__name__} {relative} #{round_}"):
                work = root / f"work-{round_}"
                shutil.rmtree(work, ignore_errors=True)
                shutil.copytree(pristine, work)
                damage(work / run_id / relative)
                exercise(RunStore(work), run_id, config)
    return family


def exercise(store: RunStore, run_id: str, config) -> None:
    """Everything a page or the CLI does with a run: each either works or raises TinyGPTError."""
    store.list_runs()
    attempts = [
        lambda: store.reader(run_id).poll(),
        lambda: [
            store.reader(run_id).load_attention(s["step"])
            for s in store.reader(run_id).attention_index().get("snapshots", [])
        ],  # fmt: skip
        lambda: load_model(store.path(run_id)),
        lambda: read_corpus(store.path(run_id)),
        lambda: run_training(store.path(run_id), config, resume_from=LATEST),
    ]
    for attempt in attempts:
        try:
            attempt()
        except TinyGPTError:
            pass
    state = read_status(store.path(run_id)).get("state")
    assert state in ("finished", "failed", "stopped", None), state


# ---------------------------------------------------------------- a full disk and a read-only folder


def probe_disk(root: Path) -> Family:
    family = Family("disk")
    text = corpus()
    try:
        with mounted_tmpfs(root / "full", "3m"):
            with family.case("a disk that fills up mid-run"):
                big = tiny_config(text, hidden_dim=64, max_steps=10**6, checkpoint_every=1)
                store = RunStore(root / "full" / "runs")
                with store.create(big.to_dict(), owner="app") as writer:
                    pass
                assert run_training(writer.run_dir, big) == "failed"
                assert "is full" in read_status(writer.run_dir)["reason"]
            with family.case("starting on a full disk"):
                manager = RunManager(store, max_active=1, threads_per_run=1)
                try:
                    manager.start(big)
                    raise AssertionError("a start on a full disk was accepted")
                except TinyGPTError as exc:
                    assert "is full" in str(exc)
                finally:
                    manager.shutdown()
        with mounted_tmpfs(root / "ro", "8m") as remount:
            store = RunStore(root / "ro" / "runs")
            config = tiny_config(text, max_steps=5)
            with store.create(config.to_dict(), owner="app") as writer:
                pass
            run_training(writer.run_dir, config)
            remount(True)
            manager = RunManager(store, max_active=1, threads_per_run=1)
            try:
                for label, action in (("start", lambda: manager.start(config)),
                                      ("resume", lambda: manager.resume(writer.run_id, max_steps=9))):  # fmt: skip
                    with family.case(f"read-only {label}"):
                        try:
                            action()
                            raise AssertionError(f"{label} on a read-only folder was accepted")
                        except TinyGPTError as exc:
                            assert "not writable" in str(exc), exc
            finally:
                manager.shutdown()
    except OSError as exc:
        print(f"disk: skipped ({exc})")
    return family


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cases: a smoke run")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    families = "kills,churn,corrupt,disk,tampered,admission,stale,limits,files,ownership"
    parser.add_argument("--families", default=families, help="comma-separated families to run")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    rng = random.Random(args.seed)
    wanted = args.families.split(",")
    root = Path(tempfile.mkdtemp(prefix="tinygpt-probe-"))
    families = []
    try:
        if "kills" in wanted:
            families.append(probe_kills(root, rng, 2 if args.quick else 8))
        if "churn" in wanted:
            families.append(probe_churn(root, rng, 20 if args.quick else 120))
        if "corrupt" in wanted:
            families.append(probe_corrupt(root, rng, 1 if args.quick else 3))
        if "disk" in wanted:
            families.append(probe_disk(root))
        for name in ("tampered", "admission", "stale"):  # the app's side: AppTest pages, no browser
            if name in wanted:
                import probe_app

                family = Family(name)
                getattr(probe_app, f"probe_{name}")(family, root, rng, corpus(), args.quick)
                families.append(family)
        for name in ("limits", "files", "ownership"):  # round four: every door, the files a user hands over, owners
            if name in wanted:
                import probe_doors

                family = Family(name)
                extra = (corpus(),) if name == "ownership" else ()
                getattr(probe_doors, f"probe_{name}")(family, root, *extra)
                families.append(family)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for family in families:
        print(family.line())
        for failure in family.failures[:10]:
            print(f"    {failure}")
    return 1 if any(f.failures for f in families) else 0


if __name__ == "__main__":
    sys.exit(main())
