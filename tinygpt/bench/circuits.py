"""python -m tinygpt.bench.circuits: what the Circuits page costs and whether its experiment reproduces.

    --overhead    the head-role scores' cost per snapshot against a training step (demo and nanoGPT CPU presets)
    --ablation    head_ablation of a 4 x 4 model on 20 validation batches (both modes), in seconds, with 1 and 2
                  threads, beside head_ablation_reference (the whole model once per head: the straightforward way)
    --page        what the Circuits page computes for the induction experiment's 2-layer model (its corpus, its 20
                  validation batches, every head ablated in one mode and in both, one head's probabilities), beside
                  head_ablation_reference, rounds interleaved, wall and CPU seconds with the load average beside each
    --induction   the induction experiment on --seeds seeds: each seed's 2-layer run and 1-layer control train side
                  by side (one process and one thread each, as the app's workers do), then the table of BENCHMARKS.md

Every measurement uses one torch thread per process. Prints JSON lines, then the markdown table.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from ..data import load_corpus
from ..inside import heads, lens
from ..inside.maps import attention_maps
from ..interventions import model_for_run
from ..lab import induction as induction_lab
from ..presets import preset
from ..trainer import Trainer


def _setup(config):
    corpus = load_corpus(config.data, config.model.max_seq_len)
    config.model.vocab_size = corpus.tokenizer.vocab_size
    torch.manual_seed(config.train.seed)
    model = model_for_run(config)
    return corpus, model, Trainer(model, config.train, corpus, "cpu")


def overhead(name: str, source: str, steps: int = 200, repeats: int = 50) -> dict:
    """Median ms of a training step and of snapshot_scores (the loop's extra work per snapshot), and the share of
    training time the scores take at the preset's snapshot cadence."""
    torch.set_num_threads(1)
    config = preset(name, source=source, device="cpu")
    corpus, model, trainer = _setup(config)
    step_ms = [trainer.step()["step_ms"] for _ in range(steps)][steps // 4 :]  # after warm-up
    T = config.model.max_seq_len
    probe = torch.tensor([corpus.tokenizer.encode(corpus.probe_text(T))])
    induction = heads.induction_probe(corpus.tokenizer.vocab, T)
    weights = attention_maps(model, probe)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        heads.snapshot_scores(model, weights, probe, induction)
        times.append((time.perf_counter() - started) * 1000)
    step, score = statistics.median(step_ms), statistics.median(times)
    share = score / (config.attention_every * step)
    return {"preset": name, "step_ms": step, "scores_ms": score, "attention_every": config.attention_every,
            "overhead": share}  # fmt: skip


def ablation_time(
    hidden_dim: int, max_seq_len: int, batch_size: int, threads: int, modes, repeats: int = 3, path: str = "fast"
) -> dict:
    """Seconds for lens.head_ablation (every head, `modes`) of a 4-layer, 4-head model on 20 validation batches
    and a probe, the best of `repeats` after one warm-up; path "reference" times lens.head_ablation_reference."""
    torch.set_num_threads(threads)
    config = preset("demo", source="synthetic:copy", num_layers=4, num_heads=4, hidden_dim=hidden_dim,
                    max_seq_len=max_seq_len, batch_size=batch_size, device="cpu")  # fmt: skip
    corpus, model, _ = _setup(config)
    g = torch.Generator().manual_seed(0)
    batches = [corpus.get_batch("val", batch_size, g) for _ in range(20)]
    x, y = torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches])
    probe = x[:1]
    ablate = lens.head_ablation if path == "fast" else lens.head_ablation_reference
    ablate(model, x, y, probe, modes=modes)  # warm-up: the first call pays for allocations and kernel choice
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        ablate(model, x, y, probe, modes=modes)
        seconds.append(time.perf_counter() - started)
    torch.set_num_threads(1)
    return {"model": f"4x4, width {hidden_dim}, T={max_seq_len}", "tokens": int(x.numel()), "threads": threads,
            "modes": list(modes), "path": path, "seconds": min(seconds)}  # fmt: skip


def page_ablation(rounds: int = 3, threads: int = 1) -> list[dict]:
    """Seconds of each piece of the Circuits page's ablation tab for the induction model (random weights: the
    cost does not depend on them), `rounds` rounds interleaved after a warm-up. The server runs torch on one
    thread (tinygpt/ui/frame.py), hence the default."""
    torch.set_num_threads(threads)
    config = induction_lab.induction_configs("synthetic:copyvar", 1337)["2 layers"]
    corpus = load_corpus(config.data, config.model.max_seq_len)
    config.model.vocab_size = corpus.tokenizer.vocab_size
    torch.manual_seed(0)
    model = model_for_run(config).eval()

    def batches():
        g = torch.Generator().manual_seed(0)
        got = [corpus.get_batch("val", config.train.batch_size, g) for _ in range(20)]  # the page's 20 batches
        return torch.cat([b[0] for b in got]), torch.cat([b[1] for b in got])

    x, y = batches()
    probe = x[:1]
    pieces = {
        "corpus and 20 validation batches": lambda: (load_corpus(config.data, config.model.max_seq_len), batches()),
        "head_ablation, zero (one click)": lambda: lens.head_ablation(model, x, y, probe, modes=("zero",)),
        "head_ablation, both modes": lambda: lens.head_ablation(model, x, y, probe, modes=("zero", "mean")),
        "head_ablation_reference, both modes": lambda: lens.head_ablation_reference(model, x, y, probe),
        "ablated_probs, one head": lambda: lens.ablated_probs(model, probe, 1, 0),
    }
    for fn in pieces.values():
        fn()
    rows = []
    for round_ in range(rounds):
        for name, fn in pieces.items():
            load = os.getloadavg()[0]
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            row = {"round": round_, "piece": name, "wall_s": round(time.perf_counter() - wall, 3),
                   "cpu_s": round(time.process_time() - cpu, 3), "load": round(load, 2), "threads": threads,
                   "tokens": int(x.numel())}  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
    torch.set_num_threads(1)
    return rows


def page_table(rows: list[dict]) -> str:
    lines = ["| piece | wall s (median) | CPU s (median) | load |", "|---|---|---|---|"]
    for name in dict.fromkeys(r["piece"] for r in rows):
        mine = [r for r in rows if r["piece"] == name]
        wall, cpu = (statistics.median(r[k] for r in mine) for k in ("wall_s", "cpu_s"))
        loads = [r["load"] for r in mine]
        lines.append(f"| {name} | {wall:.3f} | {cpu:.3f} | {min(loads):g}-{max(loads):g} |")
    return "\n".join(lines)


def _train(args) -> str:
    from ..runs.loop import run_training

    run_dir, config = args
    return run_training(run_dir, config, threads=1)


def induction(seed: int, source: str, root: Path, **overrides) -> dict:
    """One seed of the experiment: both runs in parallel processes, then the verdict and the ablation of the
    best head against the mean of the other heads (zero ablation, validation batches, final checkpoint)."""
    from ..lab.results import read_result
    from ..runs.files import read_scores
    from ..runs.reader import RunReader
    from ..runs.store import RunStore

    store = RunStore(root)
    configs = induction_lab.induction_configs(source, seed, **overrides)
    dirs = {}
    for label, config in configs.items():
        with store.create(config.to_dict(), owner="cli") as writer:
            dirs[label] = writer.run_dir
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(len(configs)) as pool:
        states = pool.map(_train, [(dirs[label], configs[label]) for label in configs])
    wall = time.perf_counter() - started
    records = {label: read_scores(d) for label, d in dirs.items()}
    final = {label: induction_lab.final_induction(d) for label, d in dirs.items()}  # 256 probe rows each
    readers = {label: RunReader(d) for label, d in dirs.items()}
    for reader in readers.values():
        reader.poll()
    runs = {label: read_result(reader) for label, reader in readers.items()}  # a run that stopped early: not judged
    verdict = induction_lab.induction_verdict(records, final=final, runs=runs)
    two = list(configs)[0]
    change = heads.phase_change(records[two])
    ablation = induction_lab.induction_ablation(dirs[two], change.head)
    return {"seed": seed, "states": states, "wall_s": wall, "reproduced": verdict.reproduced,
            **verdict.observed, **ablation, "sentence": verdict.sentence}  # fmt: skip


def table(rows: list[dict]) -> str:
    """The BENCHMARKS.md table of the induction experiment."""
    cols = ["seed", "reproduced", "phase change step (score)", "phase change step (in-context loss)", "best head",
            "best score before", "best score after", "best score after, std across rows", "probe rows",
            "second-copy loss before", "second-copy loss after", "control best score", "ablation best head",
            "ablation mean of others", "second copy: best head", "second copy: mean of others", "wall_s"]  # fmt: skip
    by_length = sorted({k for row in rows for k in row if k.startswith("best score at length")},
                       key=lambda k: int(k.split()[4].rstrip(",")))  # fmt: skip
    cols[-1:-1] = by_length  # the 2-layer model and the control at each probe length (lab.induction.probe_lengths)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        cells = [f"{row.get(c):.3g}" if isinstance(row.get(c), float) else str(row.get(c)) for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.circuits", description=__doc__.splitlines()[0])
    parser.add_argument("--overhead", action="store_true", help="scores per snapshot against a training step")
    parser.add_argument("--ablation", action="store_true", help="head ablation of a 4 x 4 model, seconds")
    parser.add_argument("--page", action="store_true", help="the Circuits page's ablation of the induction model")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for --page (the server's: 1)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds for --page")
    parser.add_argument("--induction", action="store_true", help="the induction experiment on --seeds seeds")
    parser.add_argument("--seeds", type=int, default=5, help="seeds for --induction (default 5)")
    parser.add_argument("--first-seed", type=int, default=1337, help="--induction's seeds count up from this")
    parser.add_argument("--source", default="synthetic:copyvar", help="corpus for --induction (lab.induction's)")
    parser.add_argument("--max-steps", type=int, help="override the experiment's max_steps")
    parser.add_argument("--runs-dir", help="keep the experiment's run folders here (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.overhead:
        for name in ("demo", "nanogpt-cpu"):
            print(json.dumps(overhead(name, "synthetic:copy")), flush=True)
    if args.ablation:
        for shape in ((64, 32, 16), (128, 64, 12)):
            for threads, modes in ((1, ("zero", "mean")), (2, ("zero", "mean")), (1, ("zero",)), (2, ("zero",))):
                for path in ("fast", "reference"):
                    print(json.dumps(ablation_time(*shape, threads, modes, path=path)), flush=True)
    if args.page:
        print(page_table(page_ablation(args.rounds, args.threads)))
    if args.induction:
        overrides = {"max_steps": args.max_steps} if args.max_steps else {}
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(args.runs_dir or tmp)
            for seed in range(args.seeds):
                row = induction(args.first_seed + seed, args.source, root, **overrides)
                print(json.dumps(row), flush=True)
                rows.append(row)
        print(table(rows))
        print(f"reproduced on {sum(bool(r['reproduced']) for r in rows)} of {len(rows)} seeds")


if __name__ == "__main__":
    main()
