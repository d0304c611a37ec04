"""python -m tinygpt.bench.queue: seconds from a live run's start to its first step while prepared runs fill the queue.

The lesson's case (issue 35): *Prepare the long runs* queues a batch of runs, then the instructor's step 1 starts
the lecture run. Here: a RunManager with the machine's slots, `--prepared` prepared runs (a small model, `--steps`
steps each), then one live run; the seconds until its first step record. Then the same with the "live" run queued
as prepared too, the queue before priorities (FIFO): it waits for the batch ahead of it. Load beside each.

    --prepared 18 --steps 300
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from ..presets import preset
from ..runs.jobs import LIVE, PREPARED
from ..runs.scheduler import RunManager
from ..runs.store import RunStore


def _small(steps: int):
    return preset("demo", source="synthetic:copy", hidden_dim=32, num_layers=1, max_steps=steps, device="cpu")


def first_step_wait(prepared: int, steps: int, priority: str, timeout: float = 900.0) -> dict:
    """Seconds from start() of the watched run (at `priority`) to its first step, `prepared` prepared runs queued
    before it."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(tmp)
        manager = RunManager(store, lease_seconds=3600)
        try:
            for _ in range(prepared):
                manager.start(_small(steps), priority=PREPARED)
            time.sleep(2.0)  # the prepared runs take the slots and train, as after the Prepare click
            started = time.monotonic()
            watched = manager.start(preset("demo", source="synthetic:copy", device="cpu"), priority=priority)
            waited = None
            while time.monotonic() - started < timeout:
                if (store.reader(watched).status().get("step") or 0) >= 1:
                    waited = time.monotonic() - started
                    break
                time.sleep(0.05)
        finally:
            manager.shutdown()
    return {"watched run's class": priority, "prepared runs": prepared, "steps each": steps,
            "slots": manager.max_active, "seconds to its first step": waited, "load": round(load, 2)}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.queue", description=__doc__.splitlines()[0])
    parser.add_argument("--prepared", type=int, default=18)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    for priority in (LIVE, PREPARED):
        print(json.dumps(first_step_wait(args.prepared, args.steps, priority)), flush=True)


if __name__ == "__main__":
    main()
