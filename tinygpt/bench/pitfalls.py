"""Does every pitfall reproduce? Each experiment of the pitfall lab, on several seeds, to the end, with its verdict.

    TINYGPT_SHAKESPEARE=../shared/data/tinyshakespeare.txt .venv/bin/python -m tinygpt.bench.pitfalls
    ... --seeds 1337,7 --experiments softmax,warmup --contrast --json out.json
    ... --experiments mask --text-file /path/to/english.txt     # any text of your own instead of a named corpus

Runs every variant of every experiment in this process, one after another, on one thread (what one worker of the
app gets), through the same `run_training` loop the app's workers run, and judges it with the experiment's own
`verdict`. Prints one table per experiment: seed, reproduced, the numbers the verdict was judged on, and the seconds
all its runs took. `--contrast` adds the unscaled-logits experiment at the demo's width 128 (d_head 64, 2 layers,
300 steps), where the physics differs (see tinygpt/experiments.py). The load average is printed before and after:
the machine is shared, and the seconds move with it; the verdicts do not depend on time.

Left out: the app's worker processes and their parallelism (tinygpt/bench/worker.py measures those).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from ..lab.experiment import Experiment
from ..lab.registry import EXPERIMENTS
from ..lab.results import run_experiment
from ..lab.verdict import CPU_COUNTS_ONLY

SEEDS = (1337, 7, 1, 2, 3)


def contrast_experiment() -> Experiment:
    """The unscaled-logits experiment at the demo preset's width: 128, 2 heads (d_head 64), 2 layers, 300 steps."""
    scaling = EXPERIMENTS["scaling"]
    return dataclasses.replace(
        scaling, key="scaling@128", base=dict(hidden_dim=128, num_heads=2, num_layers=2, max_steps=300)
    )


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e-2 and value != 0 else f"{value:.3f}"
    return "n/a" if value is None else str(value)


def measure(experiment: Experiment, seeds, source: str, text: str = "") -> list[dict[str, Any]]:
    rows = []
    for seed in seeds:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as root:
            _, verdict = run_experiment(experiment, seed, root, source=source, threads=1, text=text)
        rows.append(
            {
                "experiment": experiment.key,
                "seed": seed,
                "reproduced": verdict.reproduced,
                "status": verdict.status,
                "seconds": round(time.perf_counter() - started, 1),
                "observed": verdict.observed,
                "sentence": verdict.sentence,
            }
        )
        print(f"  {experiment.key} seed {seed}: reproduced={verdict.reproduced} ({rows[-1]['seconds']} s)", flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """A markdown table: seed, reproduced, seconds, then every observed number."""
    # Every row's numbers: a "not enough data" verdict records fewer (a KeyError broke the grid's licence table).
    names = list(dict.fromkeys(n for r in rows for n in r["observed"]))
    lines = [
        "| seed | reproduced | s | " + " | ".join(names) + " |",
        "|---" * (3 + len(names)) + "|",
    ]
    for r in rows:
        said = {True: "**yes**", False: "NO"}.get(r["reproduced"], r.get("status") or "undecided")
        cells = [str(r["seed"]), said, str(r["seconds"])]
        lines.append("| " + " | ".join(cells + [_cell(r["observed"].get(n, "-")) for n in names]) + " |")
    return "\n".join(lines)


def read_text_file(path: str, experiments: list[Experiment]) -> tuple[str, str]:
    """(the text, "") of a UTF-8 file every experiment can train on, or ("", one line saying why not): missing,
    unreadable, not UTF-8, or too short for an experiment's context (the corpus's own DataError)."""
    from ..data import load_corpus
    from ..errors import TinyGPTError

    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return "", f"--text-file {path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    except OSError as exc:
        return "", f"cannot read --text-file {path}: {exc.strerror or exc}"
    for experiment in experiments:
        if experiment.measure is not None:
            continue
        config = next(iter(experiment.configs(source="text", text=text).values()))
        try:
            load_corpus(config.data, config.model.max_seq_len)
        except TinyGPTError as exc:
            return "", f"--text-file {path} cannot train the {experiment.key} experiment: {exc}"
    return text, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.pitfalls", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated seeds")
    parser.add_argument("--experiments", default=",".join(EXPERIMENTS), help="comma-separated experiment keys")
    parser.add_argument("--source", default="shakespeare", help="corpus (default: shakespeare)")
    parser.add_argument("--text-file", help="train on this UTF-8 text file instead of --source")
    parser.add_argument("--contrast", action="store_true", help="also unscaled logits at the demo's width 128")
    parser.add_argument("--json", help="write every row here as JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # one worker's share; the machine is shared with others
    seeds = [int(s) for s in args.seeds.split(",") if s]
    unknown = [k for k in args.experiments.split(",") if k and k not in EXPERIMENTS]
    if unknown:
        parser.error(f"unknown experiment(s) {', '.join(unknown)}; choose from {', '.join(EXPERIMENTS)}")
    experiments = [EXPERIMENTS[k] for k in args.experiments.split(",") if k]
    source, text = args.source, ""
    if args.text_file:
        text, problem = read_text_file(args.text_file, experiments)
        if problem:  # one line and exit 2, as a usage error: no traceback, no usage block
            print(f"{parser.prog}: error: {problem}", file=sys.stderr)
            return 2
        source = "text"
    if args.contrast:
        experiments.append(contrast_experiment())
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}", flush=True)
    started, all_rows, tables = time.perf_counter(), [], []
    for experiment in experiments:
        rows = measure(experiment, seeds, source, text)
        all_rows += rows
        tables.append(f"### {experiment.key}: {experiment.title}\n\n{table(rows)}\n")
    load_after = os.getloadavg()
    print()
    print("\n".join(tables))
    total = sum(1 for r in all_rows if r["reproduced"])
    # Memory on CPU is allocation counts by design (fragmentation needs CUDA): honestly not judged, not a failure.
    counts_only = sum(1 for r in all_rows if r.get("status") == CPU_COUNTS_ONLY)
    judged = len(all_rows) - counts_only
    print(
        f"reproduced: {total} of {judged} judged"
        + (f" ({counts_only} memory cells on CPU: {CPU_COUNTS_ONLY}, not judged)" if counts_only else "")
        + f"; {time.perf_counter() - started:.0f} s in all"
    )
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_before": load_before, "load_after": load_after, "rows": all_rows}, f, indent=1)
    return 0 if total == judged else 1


if __name__ == "__main__":
    sys.exit(main())
