"""How fast does each live knob show on the Lecture preset? Seconds and steps from the change until the loss moves.

    .venv/bin/python -m tinygpt.bench.lecture                       # Tiny Shakespeare, seeds 1337, 7, 1
    ... --seeds 1337 --text-file /path/to/english.txt --at 600 --after 120 --json out.json

For each seed: train the Lecture preset (`config.preset("lecture")`) for `--at` steps on one thread (one worker's
share of a laptop), keep its weights, optimiser state and batch order, and then, for each knob change below, go on
for `--after` steps from that same state with the change applied at once, as a live knob applies between two
steps. The same continuation without any change is the control: same batches, same weights, so the difference is the
knob's doing and nothing else. A change is "visible" at the first step where the mean of 5 consecutive losses is
VISIBLE nats (or 3 standard deviations of the control's step-to-step noise, if that is more) away from the control's
mean over the same steps, in the direction the change should move it. Seconds are those steps at the run's own
measured time per step (the page shows a change at its next refresh, ~1 s later). The load average is printed:
the machine is shared, and seconds move with it; steps do not.

The held-out loss (the run's own eval: eval_batches batches of its fixed held-out windows) is read at the change
and `--after` steps later, with and without it: the lesson's checks (steps 4 and 7) say "seen" only when it moves as
far as the training loss (tinygpt/ui/teach/lecture_checks.py), and the Lecture preset evaluates every 100 steps.
"learning rate → 0.1" is the lesson's step 7 itself.

"mask none, then causal" is two changes: no mask for `--after` steps (it collapses), then causal again, measured
against the control at the same step: the jump back up and the steps until it is within VISIBLE of the control.

Left out: the worker process and the page (tinygpt/bench/worker.py and the browser benchmark measure those).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from ..data import load_corpus
from ..interventions import model_for_run
from ..presets import preset
from ..trainer import Trainer

SEEDS = (1337, 7, 1)
VISIBLE = 0.3  # nats: a move of the loss curve a class sees on the projector (the curve's own wiggle is ~0.05)
WINDOW = 5  # consecutive steps averaged before comparing with the control


def changes(at: int, lr: float) -> dict[str, tuple[dict[str, Any], int]]:
    """Each measured change: label -> (knob settings applied at once, the direction the loss should move)."""
    return {
        "mask → none": ({"mask": "none"}, -1),
        f"learning rate ×10 ({lr * 10:g})": ({"learning_rate": lr * 10}, +1),
        "learning rate → 0.1 (the lesson's)": ({"learning_rate": 0.1}, +1),
        f"learning rate ÷10 ({lr / 10:g})": ({"learning_rate": lr / 10}, -1),
        f"warmup → {10 * at} (rate ÷10 now, ramping)": ({"warmup_steps": 10 * at}, -1),
        "sliding window 1": ({"mask": "sliding_window", "window": 1}, +1),
        "scaling off (none)": ({"attn_scale": "none"}, +1),
        "scale multiplier ×10": ({"attn_scale_mult": 10.0}, +1),
    }


def _build(config) -> Trainer:
    corpus = load_corpus(config.data, config.model.max_seq_len)
    config.model.vocab_size = corpus.tokenizer.vocab_size
    torch.manual_seed(config.train.seed)  # as the loop seeds it: weight init
    return Trainer(model_for_run(config), config.train, corpus)


def _snapshot(trainer: Trainer) -> tuple:
    return (
        copy.deepcopy(trainer.model.state_dict()),
        copy.deepcopy(trainer.state()),
        copy.deepcopy(vars(trainer.config)),
        copy.deepcopy(vars(trainer.model.config)),
    )


def _restore(trainer: Trainer, snap: tuple) -> None:
    trainer.model.load_state_dict(snap[0])
    trainer.load_state(copy.deepcopy(snap[1]))
    vars(trainer.config).update(copy.deepcopy(snap[2]))
    vars(trainer.model.config).update(copy.deepcopy(snap[3]))


def _losses(trainer: Trainer, steps: int) -> tuple[list[float], float]:
    started = time.perf_counter()
    losses = [trainer.step()["loss"] for _ in range(steps)]
    return losses, (time.perf_counter() - started) / max(1, steps)


def _held_out(trainer: Trainer) -> float:
    """The run's own eval: its eval_batches batches of the fixed held-out windows, under its knobs as they are."""
    return trainer.evaluate(splits=("val",))["val_loss"]


def _mean(values: list[float]) -> float:
    finite = [v for v in values if v == v and abs(v) != float("inf")]
    return sum(finite) / len(finite) if finite else float("nan")


def visible_at(changed: list[float], control: list[float], direction: int, threshold: float) -> int | None:
    """The first step (1-based, counted from the change) at which the WINDOW-step mean of `changed` is `threshold`
    away from the control's over the same steps, in `direction` (+1 up, -1 down); None if it never is."""
    for end in range(WINDOW, min(len(changed), len(control)) + 1):
        gap = _mean(changed[end - WINDOW : end]) - _mean(control[end - WINDOW : end])
        if direction * gap >= threshold:
            return end
    return None


def measure_seed(seed: int, at: int, after: int, source: str, text: str) -> dict[str, Any]:
    config = preset("lecture", seed=seed, source=source, **({"text": text} if text else {}))
    trainer = _build(config)
    before, step_s = _losses(trainer, at)
    snap = _snapshot(trainer)
    held_at = _held_out(trainer)
    control, control_s = _losses(trainer, after)
    held_control = _held_out(trainer)
    more, more_s = _losses(trainer, after)
    control, control_s = control + more, (control_s + more_s) / 2
    step_s = (step_s * at + control_s * 2 * after) / (at + 2 * after)
    noise = statistics.stdev(b - a for a, b in zip(control, control[1:], strict=False)) / 2**0.5
    threshold = max(VISIBLE, 3 * noise * (2 / WINDOW) ** 0.5)  # the noise of a difference of two 5-step means
    rows = []

    def row(label: str, changed: list[float], base: list[float], direction: int, held: float | None = None) -> None:
        steps = visible_at(changed, base, direction, threshold)
        rows.append(
            {
                "change": label,
                "first 5 steps: loss vs control": f"{_mean(changed[:5]):.2f} vs {_mean(base[:5]):.2f}",
                "visible after (steps)": steps,
                "visible after (s)": None if steps is None else round(steps * step_s, 2),
                f"after {len(changed)} steps: loss vs control": (
                    f"{_mean(changed[-20:]):.2f} vs {_mean(base[-20:]):.2f}"
                ),
                f"held-out: at the change → {len(changed)} steps later (control)": (
                    None if held is None else f"{held_at:.2f} → {held:.2f} ({held_control:.2f})"
                ),
            }
        )

    lr = config.train.learning_rate
    for label, (knobs, direction) in changes(at, lr).items():
        _restore(trainer, snap)
        for name, value in knobs.items():
            trainer.set_knob(name, value)
        changed = _losses(trainer, after)[0]
        row(label, changed, control[:after], direction, _held_out(trainer))
    # No mask for `after` steps, then causal again: the jump back and the way down to the control.
    _restore(trainer, snap)
    trainer.set_knob("mask", "none")
    collapsed, _ = _losses(trainer, after)
    trainer.set_knob("mask", "causal")
    back, _ = _losses(trainer, after)
    row("… then mask → causal", back, control[after:], +1)
    recovered = next(
        (end for end in range(WINDOW, after + 1)
         if _mean(back[end - WINDOW : end]) - _mean(control[after + end - WINDOW : after + end]) < threshold),
        None,
    )  # fmt: skip
    rows[-1]["back within the threshold of the control after (steps)"] = recovered
    rows[-1]["loss just before the switch back"] = f"{_mean(collapsed[-5:]):.2f}"
    return {
        "seed": seed,
        "loss at the change": round(_mean(before[-20:]), 3),
        "ms per step": round(step_s * 1000, 1),
        "threshold (nats)": round(threshold, 3),
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.lecture", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated seeds")
    parser.add_argument("--source", default="shakespeare", help="corpus (default: shakespeare)")
    parser.add_argument("--text-file", help="train on this UTF-8 text file instead of --source")
    parser.add_argument("--at", type=int, default=1500, help="steps trained before the change (default 1500)")
    parser.add_argument("--after", type=int, default=100, help="steps measured after it (default 100)")
    parser.add_argument("--json", help="write the results here as JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # one worker's share; the machine is shared with others
    source, text = args.source, ""
    if args.text_file:
        try:
            text = Path(args.text_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            parser.error(f"cannot read --text-file {args.text_file}: {exc}")
        source = "text"
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}", flush=True)
    results = []
    for seed in [int(s) for s in args.seeds.split(",") if s]:
        result = measure_seed(seed, args.at, args.after, source, text)
        results.append(result)
        head = {k: v for k, v in result.items() if k != "rows"}
        print(f"\n### seed {seed}: {head}\n")
        names = list(dict.fromkeys(k for r in result["rows"] for k in r))
        print("| " + " | ".join(names) + " |\n" + "|---" * len(names) + "|")
        for r in result["rows"]:
            print("| " + " | ".join("n/a" if r.get(n) is None else str(r.get(n)) for n in names) + " |", flush=True)
    load_after = os.getloadavg()
    print(f"\nload average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_before": load_before, "load_after": load_after, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
