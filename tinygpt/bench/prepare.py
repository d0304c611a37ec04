"""python -m tinygpt.bench.prepare: the wall time of the lesson's *Prepare the long runs*, run by run, and whether
each experiment's verdict reproduced on them (issue 35: everything the lesson needs in at most 4 minutes).

A RunManager over a fresh runs folder with the machine's default slots starts exactly the runs the app's button
starts (tinygpt.lab.prepare.prepared_runs, as PREPARED, in the lesson's order), watching them as a page would
(their leases touched). `--with-lecture` first starts a live Lecture-preset run that holds a slot the whole time,
as in class. Printed as one JSON object: per run its role, label, max_steps, steps done, final state, seconds from
start() to its end and seconds training (its first step's start to its last record); the wall time until all have
ended; each experiment's verdict judged by the lab's own functions on the run folders (the induction pair by
tinygpt.lab.induction, on 256 fresh probe rows as the Circuits page does); the 1-minute load before and after.

    .venv/bin/python -m tinygpt.bench.prepare                    # default slots, seed 1337
    ... --with-lecture --keep /tmp/prepared                      # as in class; keep the run folders to study
    ... --max-steps 3                                            # every run cut to 3 steps (a smoke test)
    ... --with-lecture --with-learner                            # the forecasts a class reads, against the truth
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import RunConfig
from ..lab import induction
from ..lab.prepare import INDUCTION, PREPARE_ORDER, SEED, SOURCE, PreparedRun, prepared_runs
from ..lab.registry import EXPERIMENTS
from ..lab.results import checkpoint_probe, read_result
from ..lab.verdict import ENDED
from ..presets import preset
from ..runs.files import read_scores
from ..runs.jobs import LIVE
from ..runs.owners import Actor
from ..runs.reader import RunReader
from ..runs.scheduler import RunManager
from ..runs.store import RunStore
from .worker import training_started_at

DONE = (*ENDED, "stopped")  # a run in one of these has nothing left to train (a diverged one waits, paused)
SAMPLE_S = 10.0  # seconds between two reads of the forecasts (--with-learner)


def _cut(config: RunConfig, max_steps: int | None) -> RunConfig:
    """A copy of `config`, with `max_steps` (and no warmup longer than it) where given."""
    config = RunConfig.from_dict(config.to_dict())
    if max_steps:
        config.train.max_steps = max_steps
        config.train.warmup_steps = min(config.train.warmup_steps, max_steps)
    return config


def _state(store: RunStore, run_id: str) -> str:
    return store.reader(run_id).status().get("state") or ""


def wait_until_done(
    manager: RunManager,
    started: dict[str, float],
    watch: list[str],
    cap_s: float,
    sample: Callable[[], None] | None = None,
) -> dict:
    """{run_id: time.time() when it ended} for every run in `started` ({run_id: time.time() at start()}), touching
    the leases of those still going and of `watch` (the lecture run) as a page would. A run ends when it is not
    queued and its state is DONE (a diverged run's worker may sit paused: its verdict is in). After `cap_s`, the
    runs still going are stopped. `sample`: called every SAMPLE_S while they go (the forecasts' record)."""
    ended: dict[str, float] = {}
    began = time.monotonic()
    sampled = -SAMPLE_S
    while len(ended) < len(started):
        if sample is not None and time.monotonic() - sampled >= SAMPLE_S:
            sampled = time.monotonic()
            sample()
        queued = set(manager.queued_runs())
        for run_id in started:
            if run_id not in ended and run_id not in queued and _state(manager.store, run_id) in DONE:
                ended[run_id] = time.time()
        for run_id in [r for r in started if r not in ended] + watch:
            manager.touch(run_id)
        if time.monotonic() - began > cap_s:
            for run_id in (r for r in started if r not in ended):
                manager.stop(run_id)
            cap_s = float("inf")
        time.sleep(0.2)
    return ended


def run_row(store: RunStore, prepared: PreparedRun, run_id: str, started: float, ended: float) -> dict[str, Any]:
    reader = store.reader(run_id)
    reader.poll()
    metrics, status = reader.metrics, reader.status()
    training = metrics[-1]["time"] - training_started_at(metrics) if metrics else None
    return {"role": prepared.role, "label": prepared.label, "run_id": run_id,
            "max_steps": prepared.config.train.max_steps, "steps": metrics[-1]["step"] if metrics else 0,
            "state": status.get("state"),
            "seconds_start_to_end": round(ended - started, 1),
            "seconds_waiting": round(training_started_at(metrics) - started, 1) if metrics else None,
            "seconds_training": None if training is None else round(training, 1)}  # fmt: skip


def verdicts(store: RunStore, ids: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    """{role: reproduced, sentence and numbers} for every experiment role in `ids` ({role: {label: run_id}})."""
    out = {}
    for role, runs in ids.items():
        dirs = {label: store.path(rid) for label, rid in runs.items()}
        readers = {label: RunReader(d) for label, d in dirs.items()}
        for reader in readers.values():
            reader.poll()
        if role == INDUCTION:
            records = {label: read_scores(d) for label, d in dirs.items()}
            final = {label: _final(d) for label, d in dirs.items()}
            results = {label: read_result(rd) for label, rd in readers.items()}
            verdict = induction.induction_verdict(records, final=final, runs=results)
        elif role.startswith("exp:"):
            experiment = EXPERIMENTS[role.removeprefix("exp:")]
            probe = checkpoint_probe if experiment.probes else None
            verdict = experiment.verdict({label: read_result(rd, probe) for label, rd in readers.items()})
        else:
            continue  # the heads run shows heads; it has no verdict
        out[role] = {"reproduced": verdict.reproduced, "undecided": verdict.undecided or None,
                     "sentence": verdict.sentence, "observed": verdict.observed}  # fmt: skip
    return out


def _forecasts(store: RunStore, samples: list[dict], learner: list[str], t0: float, ready_at: float) -> dict:
    """The forecasts against what happened: the prepared runs all ended at `ready_at` (seconds after the first
    start); the learner's run began its first step at `learner_at`. Each sample gets the error of each forecast
    (forecast minus what remained, seconds; positive: it said later than it came)."""
    reader = store.reader(learner[0])
    reader.poll()
    learner_at = training_started_at(reader.metrics) - t0 if reader.metrics else None
    for row in samples:
        if row["ready_in_s"] is not None:
            row["ready_error_s"] = round(row["ready_in_s"] - (ready_at - row["t"]), 1)
        if row["learner_starts_in_s"] is not None and learner_at is not None:
            row["learner_error_s"] = round(row["learner_starts_in_s"] - (learner_at - row["t"]), 1)
    return {"ready_at_s": round(ready_at, 1), "learner_started_at_s": learner_at and round(learner_at, 1),
            "samples": samples}  # fmt: skip


def _final(run_dir: Path) -> dict | None:
    try:
        return induction.final_induction(run_dir)
    except Exception:  # noqa: BLE001 - no checkpoint (a cut run): the verdict says "not enough data"
        return None


def bench_prepare(
    seed: int = SEED,
    with_lecture: bool = False,
    max_steps: int | None = None,
    keep: str | None = None,
    max_active: int | None = None,
    cap_s: float = 3600.0,
    roles: tuple[str, ...] = PREPARE_ORDER,
    with_learner: bool = False,
) -> dict[str, Any]:
    """Start Prepare's runs on a fresh RunManager, wait for all of them, and return the JSON-ready measurement.
    `with_learner`: a learner's Demo run queued live after them, and every SAMPLE_S what the instructor's pane
    ("long runs ready in about N min", RunManager.prepared_eta) and that learner's Train page ("starts in about
    N", RunManager.queue_forecast) would say, beside when it happened."""
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(keep or tmp)
        store = RunStore(root)
        manager = RunManager(store, max_active=max_active)
        try:
            lecture = []
            if with_lecture:  # the instructor's live run, training through the whole wait (as at step 1)
                config = _cut(preset("lecture", source=SOURCE, seed=seed), None)
                lecture.append(manager.start(config, priority=LIVE))
            runs = [replace(p, config=_cut(p.config, max_steps)) for p in prepared_runs(seed, roles)]
            started, ids = {}, {}
            for prepared in runs:
                run_id = manager.start(prepared.config, priority=prepared.priority)
                started[run_id] = time.time()
                ids.setdefault(prepared.role, {})[prepared.label] = run_id
            learner, samples = [], []
            if with_learner:  # a learner's Train click while the batch waits (the review's 28m48s beside "10 min")
                demo = _cut(preset("demo", source=SOURCE, seed=seed), max_steps)
                learner.append(manager.start(demo, actor=Actor("bench-learner", "a learner"), priority=LIVE))
            t0 = min(started.values())

            def sample() -> None:
                ready = manager.prepared_eta()
                waits = manager.queue_forecast().get(learner[0]) if learner else None
                starts = waits["seconds"] if waits else None
                samples.append({"t": round(time.time() - t0, 1), "runs_left": ready["runs"],
                                "ready_in_s": ready["seconds"] and round(ready["seconds"], 1),
                                "learner_starts_in_s": starts and round(starts, 1)})  # fmt: skip

            ended = wait_until_done(manager, started, lecture + learner, cap_s, sample if learner else None)
            wall = max(ended.values()) - min(started.values())
            load_after = os.getloadavg()[0]
            by_id = {ids[p.role][p.label]: p for p in runs}
            rows = [run_row(store, by_id[rid], rid, started[rid], ended[rid]) for rid in started]
            judged = verdicts(store, ids)  # before shutdown: it would mark a diverged run's waiting worker paused
            forecasts = _forecasts(store, samples, learner, t0, max(ended.values()) - t0) if learner else None
        finally:
            manager.shutdown()
    return {"seed": seed, "cpus": os.cpu_count(), "slots": manager.max_active,
            "threads_per_run": manager.threads_per_run, "with_lecture": with_lecture, "max_steps_override": max_steps,
            "runs": rows, "total_wall_s": round(wall, 1), "verdicts": judged, "forecasts": forecasts,
            "load_1min_before": round(load_before, 2), "load_1min_after": round(load_after, 2)}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.prepare", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED, help="the seed of every prepared run (the lesson's: 1337)")
    parser.add_argument(
        "--with-lecture", action="store_true", help="a live Lecture-preset run holds a slot the whole time"
    )
    parser.add_argument("--max-steps", type=int, default=None, help="cut every run to this many steps (smoke test)")
    parser.add_argument("--keep", default=None, help="a runs folder to keep the run folders in (default: a temp one)")
    parser.add_argument("--slots", type=int, default=None, help="runs at once (default: the machine's, as the app)")
    parser.add_argument("--cap-s", type=float, default=3600.0, help="stop the runs still going after this long")
    parser.add_argument(
        "--with-learner", action="store_true", help="a learner's Demo run queued after them; record the forecasts"
    )
    args = parser.parse_args(argv)
    result = bench_prepare(args.seed, args.with_lecture, args.max_steps, args.keep, args.slots, args.cap_s,
                           with_learner=args.with_learner)  # fmt: skip
    print(json.dumps(result, indent=1, default=str), flush=True)


if __name__ == "__main__":
    main()
