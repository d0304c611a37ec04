"""Time to quality: `python -m tinygpt.bench.speedrun [--seeds 1337 1338 1339] [--threads 2]` prints one JSON object.

The CPU speedrun race, side by side in one process, the same data and the same evaluation for every contestant:

- `nanogpt`: nanoGPT's README CPU recipe (4 layers, 4 heads, width 128, context 64, batch 12, AdamW lr 1e-3,
  warmup 100, cosine to 1e-4 over 2000 steps) trained by the nanoGPT-style yardstick loop of `tinygpt.bench`
  (a bare loop as nanoGPT's train.py writes it: no attention snapshots, no files), evaluating every 250 steps
  as nanoGPT does (its evals count on its clock, as they do in nanoGPT's own wall time);
- the app's presets (`fast` by default, and `nanogpt-cpu`, tinygpt's own copy of the yardstick's recipe) trained
  by the app's worker process with everything the app shows captured live: attention snapshots and head scores,
  per-layer gradient norms and update ratios, samples, checkpoints, evals (all on its clock).

Evaluation: every contestant is scored by `tinygpt.trainer.evaluate_model`: 20 batches of 12 x 64 windows of the
val split, the same windows for every run and every eval (one fixed seed). The target of a seed is the val loss the
nanoGPT recipe reaches at its last step; a contestant's time to target is the wall-clock seconds from the start of
its first training step to the end of its first eval at or below that target (a worker's process start and corpus
load are reported separately, as `start_s`). Runs are interleaved per seed, so a noisy neighbour hurts all alike.
`--runs-dir` keeps the worker runs' folders, so the app's Compare page can show them on a wall-clock axis.
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
    return {
        "recipe": name,
        "seed": seed,
        "run_id": run_id,
        "steps": config.train.max_steps,
        "seconds": round(seconds, 2),
        "start_s": round(clock - requested, 2),  # process start, corpus load, model build: before step 1
        "tokens_per_s": round(tokens / seconds),
        "final_val_loss": evals[-1]["val_loss"],
        "captured": {
            "attention_snapshots": len(list((run_dir / "attention").glob("step_*"))),
            "samples": len(reader.samples),
            "metrics_with_grad_norms": sum(1 for m in metrics if m.get("layer_grad_norms")),
        },
        "evals": evals,
    }


def _summary(runs: list[dict], recipes: list[str]) -> dict:
    out: dict = {}
    by_seed = {r["seed"]: r for r in runs if r["recipe"] == "nanogpt"}
    for recipe in ["nanogpt", *recipes]:
        rows = []
        for run in (r for r in runs if r["recipe"] == recipe):
            target = by_seed[run["seed"]]["final_val_loss"]
            reached = time_to_target(run["evals"], target)
            reached = round(reached, 1) if reached is not None else None
            rows.append({"seed": run["seed"], "target": round(target, 4), "seconds_to_target": reached})
        times = [row["seconds_to_target"] for row in rows]
        out[recipe] = {
            "per_seed": rows,
            "reached_all": all(t is not None for t in times),
            "median_seconds_to_target": round(statistics.median(times), 1) if all(times) else None,
        }
    base = out["nanogpt"]["median_seconds_to_target"]
    for recipe in recipes:
        pairs = [
            (mine["seconds_to_target"], theirs["seconds_to_target"])
            for mine, theirs in zip(out[recipe]["per_seed"], out["nanogpt"]["per_seed"], strict=True)
        ]
        out[recipe]["ratio_per_seed"] = [round(a / b, 3) if a is not None else None for a, b in pairs]
        median = out[recipe]["median_seconds_to_target"]
        out[recipe]["ratio_of_medians"] = round(median / base, 3) if median is not None else None
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.speedrun", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1337, 1338, 1339], help="one race per seed")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="torch threads, every run")
    parser.add_argument("--presets", nargs="+", default=["fast"], help="app presets to race against nanoGPT")
    parser.add_argument("--max-steps", type=int, default=None, help="override the presets' max_steps")
    parser.add_argument("--nanogpt-steps", type=int, default=None, help="override the yardstick's 2000 (smoke tests)")
    parser.add_argument("--runs-dir", default=None, help="keep the worker runs here (for the app's Compare page)")
    parser.add_argument("--out", default=None, help="also write the JSON to this file")
    args = parser.parse_args(argv)

    settings = {"max_steps": args.max_steps} if args.max_steps else {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(args.runs_dir or tmp))
        manager = RunManager(store, max_active=1, threads_per_run=args.threads)
        runs = []
        try:
            for seed in args.seeds:
                yardstick = {"max_steps": args.nanogpt_steps} if args.nanogpt_steps else {}
                runs.append(race_nanogpt(seed, args.threads, **yardstick))
                for name in args.presets:
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
        "summary": _summary(runs, args.presets),
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
