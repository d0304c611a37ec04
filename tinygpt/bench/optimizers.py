"""The library where it serves: `python -m tinygpt.bench.optimizers [--steps 200] [--threads 2]` prints JSON.

Two questions, each answered by two trainers of the same model, seed and batches, stepped in alternating blocks
of 10 steps in one process (a noisy neighbour hurts both alike):

- `muon`: tinygpt.optim.Muon (same-shaped matrices orthogonalized as one float32 stack) against PyTorch's
  `torch.optim.Muon(adjust_lr_fn="match_rms_adamw")` (one matrix at a time, Newton-Schulz in bfloat16), both on
  the Fast preset's blocks' matrices with tinygpt's AdamW on the rest: the largest loss difference over the run,
  and the median step time of each.
- `adamw`: tinygpt.optim.AdamW (which calls the fused kernel `torch._fused_adamw_` directly) against
  `torch.optim.AdamW(fused=True)` on the nanoGPT CPU preset (AdamW everywhere): the same two numbers. Both
  print their first-step time too (a one-time cost, paid once per worker process).

And `cold_start_s`: seconds to construct each optimizer in a fresh process (three alternating rounds), which is
what every new worker, CLI run and torchrun rank pays before its first step: torch.optim's constructors import
torch._dynamo there.

The update-ratio bookkeeping is off in both, so the step times compare the optimizers and not the records.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

from ..interventions import model_for_run
from ..optim import AdamW, OptimizerPair
from ..presets import preset
from ..trainer import Trainer
from .throughput import shakespeare_corpus

BLOCK = 10  # steps each trainer takes before the other takes its turn


def _trainer(name: str, corpus) -> Trainer:
    config = preset(name)
    config.model.vocab_size = corpus.tokenizer.vocab_size
    torch.manual_seed(config.train.seed)
    trainer = Trainer(model_for_run(config), config.train, corpus)
    trainer.track_update_ratios = False
    return trainer


def with_torch_muon(trainer: Trainer) -> Trainer:
    """Replace the trainer's Muon by torch.optim.Muon on the same matrices, at the same rate, momentum and decay."""
    ours, adamw = trainer.optimizer.optimizers
    group = ours.param_groups[0]
    theirs = torch.optim.Muon(
        group["params"], lr=group["lr"], weight_decay=group["weight_decay"], momentum=group["momentum"],
        nesterov=True, adjust_lr_fn="match_rms_adamw",
    )  # fmt: skip
    trainer.optimizer = OptimizerPair(theirs, adamw)
    return trainer


def with_torch_adamw(trainer: Trainer) -> Trainer:
    ours: AdamW = trainer.optimizer
    groups = [{"params": g["params"], "weight_decay": g["weight_decay"]} for g in ours.param_groups]
    first = ours.param_groups[0]
    trainer.optimizer = torch.optim.AdamW(groups, lr=first["lr"], betas=first["betas"], eps=first["eps"], fused=True)
    return trainer


def race(a: Trainer, b: Trainer, steps: int) -> dict:
    times: dict[str, list[float]] = {"a": [], "b": []}
    losses: dict[str, list[float]] = {"a": [], "b": []}
    for _ in range(0, steps, BLOCK):
        for key, trainer in (("a", a), ("b", b)):
            for _ in range(BLOCK):
                started = time.perf_counter()
                record = trainer.step()
                times[key].append(time.perf_counter() - started)
                losses[key].append(record["loss"])
    gaps = [abs(x - y) for x, y in zip(losses["a"], losses["b"], strict=True)]
    return {
        "steps": len(gaps),
        "first_step_ms": {k: round(v[0] * 1000, 1) for k, v in times.items()},
        "median_step_ms": {k: round(statistics.median(v[1:]) * 1000, 2) for k, v in times.items()},
        "max_loss_difference": round(max(gaps), 6),
        "loss_difference_at_end": round(gaps[-1], 6),
        "final_loss": {k: round(v[-1], 4) for k, v in losses.items()},
    }


COLD_START = {
    "tinygpt.optim.AdamW": "from tinygpt.optim import AdamW; AdamW([{'params': p}], lr=1e-3)",
    "tinygpt.optim.Muon": "from tinygpt.optim import Muon; Muon(p, lr=1e-3)",
    "torch.optim.AdamW(fused=True)": "torch.optim.AdamW(p, fused=True)",
    "torch.optim.Muon": "torch.optim.Muon(p)",
}


def cold_start_s(rounds: int = 3) -> dict[str, list[float]]:
    """Per optimizer, the seconds its constructor takes in a fresh Python process (torch already imported)."""
    out: dict[str, list[float]] = {name: [] for name in COLD_START}
    for _ in range(rounds):
        for name, code in COLD_START.items():
            script = (
                "import time, torch\np = [torch.zeros(4, 4, requires_grad=True)]\nt = time.perf_counter()\n"
                f"{code}\nprint(time.perf_counter() - t)"
            )
            done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
            out[name].append(round(float(done.stdout), 3))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.optimizers", description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    corpus = shakespeare_corpus(64)
    load_before = os.getloadavg()[0]
    muon = race(_trainer("fast", corpus), with_torch_muon(_trainer("fast", corpus)), args.steps)
    muon["a"], muon["b"] = "tinygpt.optim.Muon (float32, stacked)", "torch.optim.Muon (bfloat16, one at a time)"
    adamw = race(_trainer("nanogpt-cpu", corpus), with_torch_adamw(_trainer("nanogpt-cpu", corpus)), args.steps)
    adamw["a"], adamw["b"] = "tinygpt.optim.AdamW (torch._fused_adamw_)", "torch.optim.AdamW(fused=True)"
    print(json.dumps({"threads": args.threads, "load_avg_1min": [round(load_before, 2),
                      round(os.getloadavg()[0], 2)], "muon": muon, "adamw": adamw,
                      "cold_start_s": cold_start_s()}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
