"""Measurements of the training worker, for `python -m tinygpt.bench --worker` only (nothing at run time uses them).

- `measure_start_latency`: seconds from RunManager.start() to the first step record in metrics.jsonl, cold (a new
  server process whose forkserver is still importing torch) or warm (forkserver up). Measured at the demo preset
  on a quiet 2-core machine: 1.1-1.3 s cold, 0.16-0.24 s warm (tinygpt/runs/worker.py explains why).
- `measure_worker_throughput` vs `bare_tokens_per_s`: tokens/s of a worker process publishing everything against
  a bare `Trainer.step()` loop doing the same steps and evals at the same thread count; the difference is the cost
  of publishing and of the process (2-3% on a busy 2-core CPU, medians of 6; see tinygpt/runs/loop.py).
- `benchmark_worker`: all of the above as one JSON-ready dict, with the run's whole time (start() to the worker's
  end: the seconds the Demo preset's name promises) and the machine's load beside them.

They live here, not in tinygpt.runs.worker or tinygpt.runs.loop, so the runtime modules hold only what a run needs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from ..config import RunConfig
from ..data import load_corpus
from ..device import resolve_device
from ..errors import TinyGPTError
from ..interventions import model_for_run
from ..presets import preset
from ..runs.scheduler import RunManager
from ..runs.store import RunStore
from ..trainer import Trainer


def bare_tokens_per_s(config: RunConfig, steps: int | None = None, same_work: bool = True) -> float:
    """Tokens/s of a bare Trainer loop at `config` (no files, no controls), timed like a run's metrics.jsonl:
    from the end of step 1 (one-off warm-up costs excluded) to the end of step N (N = `steps` or max_steps).
    With `same_work` it also runs the evals a run does in that span (evaluation is training work: nanoGPT's loop
    does it too), so the difference to `measure_worker_throughput` is the cost of publishing (files,
    attention snapshots, samples, checkpoints, status, controls) and of the process."""
    config = RunConfig.from_dict(config.to_dict())
    steps = steps or config.train.max_steps
    corpus = load_corpus(config.data, config.model.max_seq_len)
    config.model.vocab_size = corpus.tokenizer.vocab_size
    torch.manual_seed(config.train.seed)
    device = resolve_device(config.train.device)
    model = model_for_run(config)
    trainer = Trainer(model, config.train, corpus, device)
    trainer.step()
    started = time.perf_counter()
    for _ in range(steps - 1):
        step = trainer.step_count  # the work a run does after step `step`'s record, before the next step
        if same_work and step % config.train.eval_interval == 0:
            trainer.evaluate(splits=("val",))  # the loop's eval between steps (loop.evaluate)
        trainer.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (steps - 1) * config.train.batch_size * config.model.max_seq_len / (time.perf_counter() - started)


def _first_line(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return b"\n" in f.read(1 << 16)
    except FileNotFoundError:
        return False


def measure_start_latency(store: RunStore, config: RunConfig, manager: RunManager | None = None) -> float:
    """Seconds from start() to the first step record in metrics.jsonl. Pass a manager whose forkserver is up to
    measure warm; without one, a new manager is created (cold if this process never started a forkserver)."""
    own = manager is None
    manager = manager or RunManager(store)
    try:
        started = time.perf_counter()
        run_id = manager.start(config)
        metrics = store.path(run_id) / "metrics.jsonl"
        while not _first_line(metrics):
            if time.perf_counter() - started > 120:
                raise TimeoutError(f"no step record after 120 s; status: {store.reader(run_id).status()}")
            time.sleep(0.002)
        latency = time.perf_counter() - started
        manager.stop(run_id)
        return latency
    finally:
        if own:
            manager.shutdown()


def wait_for_runs(manager: RunManager, run_ids: list[str], cap_s: float = float("inf"), poll_s: float = 0.1) -> None:
    """Until every run's worker has ended (queued ones included), keeping their leases as a watching page would.
    After `cap_s` seconds the runs still live are stopped (with a checkpoint), and this waits for that."""
    started = time.monotonic()
    while any(manager.is_live(r) or r in manager.queued_runs() for r in run_ids):
        for run_id in run_ids:
            manager.touch(run_id)
        if time.monotonic() - started > cap_s:
            for run_id in run_ids:
                if manager.is_live(run_id):
                    manager.stop(run_id)
            cap_s = float("inf")  # stopping takes a moment; wait for it
        time.sleep(poll_s)


def training_started_at(metrics: list[dict]) -> float:
    """The wall-clock time (time.time()) at which a run's first recorded step began: its record's time less that
    step's own duration. Process start, corpus load and model build come before it and are not counted."""
    return metrics[0]["time"] - metrics[0]["step_ms"] / 1000


def measure_worker_throughput(
    store: RunStore, config: RunConfig, manager: RunManager | None = None, whole: list[float] | None = None
) -> float:
    """Tokens/s of a worker process training `config` to the end, publishing everything, between its first and
    its last step record (start-up excluded). Compare with `bare_tokens_per_s` at the same threads. `whole`, if
    given, gets the run's whole time: start() to its worker's end (what "Demo: seconds" promises a learner)."""
    own = manager is None
    manager = manager or RunManager(store)
    try:
        started = time.perf_counter()
        run_id = manager.start(config)
        wait_for_runs(manager, [run_id], poll_s=0.05)
        if whole is not None:
            whole.append(time.perf_counter() - started)
        reader = store.reader(run_id)
        if reader.status().get("state") != "finished":
            raise TinyGPTError(f"the measured run ended {reader.status().get('state')}: {reader.status()}")
        metrics = reader.metrics
        steps = metrics[-1]["step"] - metrics[0]["step"]
        tokens = steps * config.train.batch_size * config.model.max_seq_len
        return tokens / (metrics[-1]["time"] - metrics[0]["time"])
    finally:
        if own:
            manager.shutdown()


_COLD_START = """
import json, sys
from tinygpt.config import RunConfig
from tinygpt.runs.store import RunStore
from tinygpt.bench.worker import measure_start_latency
from tinygpt.runs.scheduler import RunManager
store = RunStore(sys.argv[1])
manager = RunManager(store)  # starts the forkserver now: start() below finds it still importing torch
print(json.dumps(measure_start_latency(store, RunConfig.from_dict(json.loads(sys.argv[2])), manager)))
manager.shutdown()
"""


def benchmark_worker(config: RunConfig | None = None, rounds: int = 3) -> dict:
    """For `python -m tinygpt.bench --worker`: time to the first step record (cold: a new server process whose
    forkserver is still importing torch; warm: forkserver up), and tokens/s of a worker publishing everything
    against a bare Trainer loop doing the same steps and evals at the same thread count."""
    config = config or preset("demo")
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH")])
            ),
        }
        args = [sys.executable, "-c", _COLD_START, str(Path(tmp) / "cold"), json.dumps(config.to_dict())]
        cold = json.loads(subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout)
        store = RunStore(Path(tmp) / "warm")
        manager = RunManager(store)
        threads = torch.get_num_threads()
        try:
            measure_start_latency(store, config, manager)  # waits out the forkserver's own start-up
            warm = [measure_start_latency(store, config, manager) for _ in range(rounds)]
            torch.set_num_threads(manager.threads_per_run)  # the bare loop gets the worker's thread budget
            worker, bare, whole = [], [], []
            load_before = os.getloadavg()[0]
            for _ in range(rounds):  # interleaved, so a noisy neighbour hurts both alike
                worker.append(measure_worker_throughput(store, config, manager, whole))
                bare.append(bare_tokens_per_s(config))
        finally:
            torch.set_num_threads(threads)
            manager.shutdown()
    worker_tps, bare_tps = statistics.median(worker), statistics.median(bare)
    return {
        "config": "demo" if config == preset("demo") else "custom",
        "threads_per_run": manager.threads_per_run,
        "max_active": manager.max_active,
        "start_latency_cold_s": round(cold, 3),
        "start_latency_warm_s": [round(w, 3) for w in warm],
        "worker_tokens_per_s": round(worker_tps),
        "bare_tokens_per_s": round(bare_tps),
        "worker_slowdown": round(1 - worker_tps / bare_tps, 4),  # must be <= 0.05
        "max_steps": config.train.max_steps,
        "whole_run_s": [round(w, 2) for w in whole],  # start() to the worker's end, evals and samples included
        "load_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "rounds": rounds,
    }
