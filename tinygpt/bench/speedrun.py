"""Time to quality: `python -m tinygpt.bench.speedrun [--seeds 1337 1338 1339] [--threads 2]` prints one JSON object.

Two CPU speedrun races, side by side in one process, the same data and the same evaluation for every contestant:

- **four_times**: the Fast preset against nanoGPT's README CPU recipe (4 layers, 4 heads, width 128, context 64,
  batch 12, AdamW lr 1e-3, warmup 100, cosine to 1e-4 over 2000 steps), trained by the nanoGPT-style yardstick
  loop of `tinygpt.bench` (a bare loop as nanoGPT's train.py writes it: no attention snapshots, no files),
  evaluating every 250 steps as nanoGPT does (its evals count on its clock, as they do in nanoGPT's own wall time).
  The target of a seed is the val loss the yardstick reaches at its last step; the goal is at most
  FOUR_TIMES_GOAL of its time to that target.
- **three_minutes**: the Fast 3-minute preset to val THREE_MINUTES_TARGET, goal THREE_MINUTES_GOAL_S seconds of wall
  time counted from the click (the worker's start and corpus load included).

The app's presets are trained by the app's worker process with everything the app shows captured live: attention
snapshots and head scores, per-layer gradient norms and update ratios, samples, checkpoints, evals (all on its
clock). Each worker run also reports its model FLOP/s (`tinygpt.flops`, forward + backward from the shapes) and
the fraction of this machine's dense-matmul peak of the same GEMM sizes (`tinygpt.runs.peak`) that it reached.

Evaluation: every contestant is scored by `tinygpt.trainer.evaluate_model`: 20 batches of 12 x 64 windows of the
val split, the same windows for every run and every eval (one fixed seed). A contestant's time to target is the
wall-clock seconds from the start of its first training step to the end of its first eval at or below the target;
a worker's process start and corpus load before step 1 are reported as `start_s`. Runs are interleaved per seed,
so a noisy neighbour hurts all alike. `--runs-dir` keeps the worker runs' folders, so the app's Compare page can
show them on a wall-clock axis.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from ..config import DataConfig
from ..presets import preset
from ..runs.scheduler import RunManager
from ..runs.store import RunStore
from ..trainer import evaluate_model
from .throughput import reference_stepper, shakespeare_corpus
from .worker import training_started_at, wait_for_runs

EVAL_BATCHES = 20  # nanoGPT's eval_iters for its CPU recipe
EVAL_BATCH_SIZE = 12  # nanoGPT's CPU batch: the eval windows are the same for every contestant
FOUR_TIMES_PRESET, FOUR_TIMES_GOAL = "fast", 0.25  # at most a quarter of the yardstick's time to its own loss
THREE_MINUTES_PRESET, THREE_MINUTES_TARGET, THREE_MINUTES_GOAL_S = "fast-3min", 1.70, 180.0
RACES = ("four_times", "three_minutes")


def time_to_target(evals: list[dict], target: float) -> float | None:
    """Seconds at the first eval whose val loss is at or below target (None if none reached it)."""
    return next((e["seconds"] for e in evals if e["val_loss"] <= target), None)


def race_nanogpt(seed: int, threads: int, **settings) -> dict:
    """The yardstick: nanoGPT's CPU recipe in a nanoGPT-style loop, evaluated as nanoGPT does (steps 0, 250, ...)."""
    config = preset("nanogpt-cpu", seed=seed, **settings)
    corpus = shakespeare_corpus(config.model.max_seq_len)
    config.model.vocab_size = corpus.tokenizer.vocab_size
    torch.set_num_threads(threads)
    step = reference_stepper(corpus, config.model, config.train)
    evals = []
    started = time.perf_counter()
    for done in range(config.train.max_steps + 1):
        if done % config.train.eval_interval == 0 or done == config.train.max_steps:
            val = evaluate_model(step.model, corpus, EVAL_BATCH_SIZE, EVAL_BATCHES)["val_loss"]
            evals.append({"step": done, "seconds": time.perf_counter() - started, "val_loss": val})
        if done < config.train.max_steps:
            step()
    seconds = time.perf_counter() - started
    tokens = config.train.max_steps * config.train.batch_size * config.model.max_seq_len
    return {
        "recipe": "nanogpt",
        "seed": seed,
        "steps": config.train.max_steps,
        "seconds": round(seconds, 2),
        "tokens_per_s": round(tokens / seconds),
        "final_val_loss": evals[-1]["val_loss"],
        "load_avg_1min": round(os.getloadavg()[0], 2),
        "evals": evals,
    }


def race_worker(name: str, seed: int, manager: RunManager, store: RunStore, **settings) -> dict:
    """One of the app's presets, trained by the app's worker process with live capture on, timed from its records."""
    config = preset(name, seed=seed, eval_batches=EVAL_BATCHES, **settings)
    config.data = DataConfig(source="shakespeare")
    if config.train.batch_size != EVAL_BATCH_SIZE or config.model.max_seq_len != 64:
        raise SystemExit(f"preset {name!r} must keep batch 12 and context 64 to be scored on the same windows")
    requested = time.time()
    run_id = manager.start(config)
    wait_for_runs(manager, [run_id])
    reader = store.reader(run_id)
    status = reader.status()
    if status.get("state") != "finished":
        raise SystemExit(f"the {name} run (seed {seed}) ended {status.get('state')}: {status.get('reason')}")
    metrics = reader.metrics
    clock = training_started_at(metrics)
    evals = [{"step": e["step"], "seconds": e["time"] - clock, "val_loss": e["val_loss"]} for e in reader.evals]
    seconds = metrics[-1]["time"] - clock
    tokens = config.train.max_steps * config.train.batch_size * config.model.max_seq_len
    run_dir = store.path(run_id)
    flops_per_token, peak = status.get("train_flops_per_token"), status.get("matmul_peak_gflops")
    gflops = flops_per_token * tokens / seconds / 1e9 if flops_per_token else None  # evals, capture included
    step_s = statistics.median(m["step_ms"] for m in metrics) / 1000  # one training step alone
    tokens_per_step = config.train.batch_size * config.model.max_seq_len
    step_gflops = flops_per_token * tokens_per_step / step_s / 1e9 if flops_per_token else None
    return {
        "recipe": name,
        "seed": seed,
        "run_id": run_id,
        "steps": config.train.max_steps,
        "seconds": round(seconds, 2),
        "start_s": round(clock - requested, 2),  # process start, corpus load, model build: before step 1
        "tokens_per_s": round(tokens / seconds),
        "model_gflops_per_s": round(gflops, 1) if gflops else None,  # evals and capture on the clock
        "matmul_peak_gflops": peak,
        "fraction_of_peak": round(gflops / peak, 3) if gflops and peak else None,
        "median_step_ms": round(step_s * 1000, 1),
        "step_gflops_per_s": round(step_gflops, 1) if step_gflops else None,
        "step_fraction_of_peak": round(step_gflops / peak, 3) if step_gflops and peak else None,
        "final_val_loss": evals[-1]["val_loss"],
        "load_avg_1min": round(os.getloadavg()[0], 2),
        "captured": {
            "attention_snapshots": len(list((run_dir / "attention").glob("step_*"))),
            "samples": len(reader.samples),
            "metrics_with_grad_norms": sum(1 for m in metrics if m.get("layer_grad_norms")),
        },
        "evals": evals,
    }


def _seconds(run: dict, target: float, with_start: bool = False) -> float | None:
    reached = time_to_target(run["evals"], target)
    if reached is None:
        return None
    return round(reached + (run.get("start_s") or 0.0 if with_start else 0.0), 1)


def four_times_summary(runs: list[dict]) -> dict:
    """Per seed: the yardstick's time to its own final val loss, Fast's time to the same loss, and their ratio."""
    yardstick = {r["seed"]: r for r in runs if r["recipe"] == "nanogpt"}
    rows = []
    for run in (r for r in runs if r["recipe"] == FOUR_TIMES_PRESET):
        theirs = yardstick[run["seed"]]
        target = theirs["final_val_loss"]
        mine, base = _seconds(run, target), _seconds(theirs, target)
        ratio = round(mine / base, 3) if mine is not None and base else None
        rows.append({"seed": run["seed"], "target": round(target, 4), "nanogpt_s": base, "fast_s": mine,
                     "fast_steps": run["steps"], "ratio": ratio})  # fmt: skip
    ratios = [row["ratio"] for row in rows]
    return {
        "goal": f"Fast's time to the nanoGPT recipe's final val loss <= {FOUR_TIMES_GOAL} of the recipe's",
        "per_seed": rows,
        "worst_ratio": max(ratios) if ratios and None not in ratios else None,
        "met": bool(ratios) and None not in ratios and max(ratios) <= FOUR_TIMES_GOAL,
    }


def three_minutes_summary(runs: list[dict]) -> dict:
    """Per seed: seconds from the click (worker start included) to the first eval at or below the fixed target."""
    rows = []
    for run in (r for r in runs if r["recipe"] == THREE_MINUTES_PRESET):
        rows.append({"seed": run["seed"], "target": THREE_MINUTES_TARGET,
                     "seconds_from_first_step": _seconds(run, THREE_MINUTES_TARGET),
                     "seconds_from_click": _seconds(run, THREE_MINUTES_TARGET, with_start=True),
                     "final_val_loss": round(run["final_val_loss"], 4)})  # fmt: skip
    times = [row["seconds_from_click"] for row in rows]
    return {
        "goal": f"val <= {THREE_MINUTES_TARGET} within {THREE_MINUTES_GOAL_S:g} s of wall time",
        "per_seed": rows,
        "worst_seconds": max(times) if times and None not in times else None,
        "met": bool(times) and None not in times and max(times) <= THREE_MINUTES_GOAL_S,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.speedrun", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1337, 1338, 1339], help="one race per seed")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="torch threads, every run")
    parser.add_argument("--races", nargs="+", default=list(RACES), choices=RACES, help="which races to run")
    parser.add_argument("--also", nargs="*", default=[], metavar="PRESET",
                        help="also train these presets in the app's worker (e.g. nanogpt-cpu, the yardstick's recipe "
                        "with live capture), for the Compare page; not scored")  # fmt: skip
    parser.add_argument("--max-steps", type=int, default=None, help="override the presets' max_steps (smoke tests)")
    parser.add_argument("--nanogpt-steps", type=int, default=None, help="override the yardstick's 2000 (smoke tests)")
    parser.add_argument("--runs-dir", default=None, help="keep the worker runs here (for the app's Compare page)")
    parser.add_argument("--out", default=None, help="also write the JSON to this file")
    args = parser.parse_args(argv)

    settings = {"max_steps": args.max_steps} if args.max_steps else {}
    presets = [FOUR_TIMES_PRESET] * ("four_times" in args.races) + [THREE_MINUTES_PRESET] * (
        "three_minutes" in args.races
    )
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(args.runs_dir or tmp))
        manager = RunManager(store, max_active=1, threads_per_run=args.threads)
        runs = []
        try:
            for seed in args.seeds:
                if "four_times" in args.races:
                    yardstick = {"max_steps": args.nanogpt_steps} if args.nanogpt_steps else {}
                    runs.append(race_nanogpt(seed, args.threads, **yardstick))
                for name in [*presets, *args.also]:
                    runs.append(race_worker(name, seed, manager, store, **settings))
                print(json.dumps({r["recipe"]: round(r["final_val_loss"], 4) for r in runs if r["seed"] == seed}))
        finally:
            manager.shutdown()
    result = {
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "torch": torch.__version__,
        "threads": args.threads,
        "load_avg_1_5_15_before": [round(x, 2) for x in load_before],
        "load_avg_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
        "eval": f"evaluate_model: {EVAL_BATCHES} batches of {EVAL_BATCH_SIZE} x 64 val windows, one fixed seed",
        "four_times": four_times_summary(runs) if "four_times" in args.races else None,
        "three_minutes": three_minutes_summary(runs) if "three_minutes" in args.races else None,
        "runs": [
            {
                **r,
                "final_val_loss": round(r["final_val_loss"], 4),
                "evals": [{k: round(v, 4) for k, v in e.items()} for e in r["evals"]],
            }
            for r in runs
        ],  # fmt: skip
    }
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
