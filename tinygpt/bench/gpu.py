"""The GPU benchmark: `python -m tinygpt.bench.gpu --out DIR` (tests/gpu/check.sh runs it on a GPU machine).

Three measurements on one CUDA GPU, each written as JSON to DIR (and printed):

- `baby_gpt.json`: the app's `gpu` preset (nanoGPT's baby GPT: 6 layers, 6 heads, width 384, context 256, batch
  64, dropout 0.2, AdamW lr 1e-3) trained by the app's worker with live capture on (attention snapshots, head
  scores, grad norms, samples, checkpoints), bfloat16 autocast (precision "auto"); seconds from its first step to
  its first eval at or below val 1.47 (nanoGPT's README: 1.4697 after ~3 minutes on one A100), and its final val.
- `yardstick.json`: the same recipe in the nanoGPT-style loop (`tinygpt.bench.reference_stepper`, bf16 autocast
  as nanoGPT's train.py uses on a GPU, no capture), evaluated on the same fixed windows (`evaluate_model`).
- `concurrent.json`: 1, 4 and 16 learner runs (the nanoGPT CPU model) trained at once by one worker pool on the
  one GPU, as in a workshop on a GPU box: tokens/s of each run and in total, and each run's speed relative to one
  alone (the goal: at least half).

Every training is capped by `--seconds` (a run past its cap is stopped and reported as not reaching the target),
so the whole script fits the few minutes a borrowed GPU machine allows.
"""

from __future__ import annotations

import argparse
import json
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

TARGET = 1.47  # nanoGPT's README: val 1.4697 for this recipe


def _timed_evals(store: RunStore, run_id: str) -> tuple[list[dict], list[dict]]:
    reader = store.reader(run_id)
    metrics = reader.metrics
    clock = training_started_at(metrics)
    evals = [{"step": e["step"], "seconds": round(e["time"] - clock, 2), "val_loss": round(e["val_loss"], 4)}
             for e in reader.evals]  # fmt: skip
    return metrics, evals


def baby_gpt(store: RunStore, cap_s: float) -> dict:
    config = preset("gpu", device="cuda")
    config.data = DataConfig(source="shakespeare")
    manager = RunManager(store, max_active=1)
    try:
        run_id = manager.start(config)
        wait_for_runs(manager, [run_id], cap_s)
    finally:
        manager.shutdown()
    metrics, evals = _timed_evals(store, run_id)
    reached = next((e for e in evals if e["val_loss"] <= TARGET), None)
    steps = metrics[-1]["step"]
    seconds = metrics[-1]["time"] - training_started_at(metrics)
    return {
        "recipe": "gpu preset, worker, live capture on, precision auto (bf16)",
        "state": store.reader(run_id).status().get("state"),
        "steps": steps,
        "seconds": round(seconds, 1),
        "tokens_per_s": round(steps * 64 * 256 / seconds),
        "target": TARGET,
        "seconds_to_target": reached["seconds"] if reached else None,
        "step_at_target": reached["step"] if reached else None,
        "best_val_loss": min(e["val_loss"] for e in evals) if evals else None,
        "evals": evals,
        "goal": "val <= 1.47 in <= 60 s",
    }


def yardstick(cap_s: float) -> dict:
    config = preset("gpu")
    corpus = shakespeare_corpus(config.model.max_seq_len)
    config.model.vocab_size = corpus.tokenizer.vocab_size
    step = reference_stepper(corpus, config.model, config.train, device="cuda", autocast=torch.bfloat16)
    evals, started, done = [], time.perf_counter(), 0
    while done < config.train.max_steps and time.perf_counter() - started < cap_s:
        step()
        done += 1
        if done % config.train.eval_interval == 0:
            with torch.autocast("cuda", torch.bfloat16):
                val = evaluate_model(step.model, corpus, 64, config.train.eval_batches, "cuda")["val_loss"]
            evals.append({"step": done, "seconds": round(time.perf_counter() - started, 2), "val_loss": round(val, 4)})
    reached = next((e for e in evals if e["val_loss"] <= TARGET), None)
    return {
        "recipe": "gpu preset in the nanoGPT-style loop, bf16 autocast, no capture",
        "steps": done,
        "seconds": round(time.perf_counter() - started, 1),
        "seconds_to_target": reached["seconds"] if reached else None,
        "best_val_loss": min(e["val_loss"] for e in evals) if evals else None,
        "evals": evals,
    }


def concurrent(store: RunStore, counts: list[int], steps: int) -> dict:
    out = {}
    for count in counts:
        manager = RunManager(store, max_active=count, threads_per_run=1)
        try:
            configs = [preset("nanogpt-cpu", device="cuda", max_steps=steps, seed=i) for i in range(count)]
            for c in configs:
                c.data = DataConfig(source="shakespeare")
            run_ids = [manager.start(c) for c in configs]
            wait_for_runs(manager, run_ids, 300)
        finally:
            manager.shutdown()
        speeds = []
        for run_id in run_ids:
            metrics = store.reader(run_id).metrics[10:]  # past start-up
            span = metrics[-1]["time"] - metrics[0]["time"]
            speeds.append((metrics[-1]["step"] - metrics[0]["step"]) * 12 * 64 / span)
        out[str(count)] = {
            "tokens_per_s_per_run_median": round(statistics.median(speeds)),
            "tokens_per_s_per_run_min": round(min(speeds)),
            "tokens_per_s_total": round(sum(speeds)),
        }
    alone = out[str(counts[0])]["tokens_per_s_per_run_median"]
    for count in counts:
        out[str(count)]["slowest_run_vs_alone"] = round(out[str(count)]["tokens_per_s_per_run_min"] / alone, 3)
    out["goal"] = "16 concurrent runs each at least half the speed of one alone"
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.gpu", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder for the JSON files")
    parser.add_argument("--seconds", type=float, default=100, help="cap per training (baby GPT and yardstick)")
    parser.add_argument("--concurrent", type=int, nargs="+", default=[1, 4, 16], help="runs at once")
    parser.add_argument("--concurrent-steps", type=int, default=400, help="steps of each concurrent run")
    parser.add_argument("--only", nargs="+", default=["baby_gpt", "yardstick", "concurrent"])
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("bench_gpu needs a CUDA GPU; this machine has none.")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda}
    (out / "device.json").write_text(json.dumps(info))
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp))
        jobs = {
            "baby_gpt": lambda: baby_gpt(store, args.seconds),
            "yardstick": lambda: yardstick(args.seconds),
            "concurrent": lambda: concurrent(store, args.concurrent, args.concurrent_steps),
        }
        for name in args.only:
            result = {**info, **jobs[name]()}
            (out / f"{name}.json").write_text(json.dumps(result, indent=1))
            print(json.dumps({name: {k: v for k, v in result.items() if k != "evals"}}), flush=True)


if __name__ == "__main__":
    main()
