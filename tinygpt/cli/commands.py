"""Command line: `python -m tinygpt train|sample|runs`, the same training loop and run folders as the app.

    python -m tinygpt train --preset nanogpt-cpu --num-heads 8 --max-steps 500
    python -m tinygpt train --config bundle/config.json --runs-dir /shared/runs
    python -m tinygpt train --resume RUN_ID
    torchrun --nproc_per_node 2 -m tinygpt train --preset demo      # DistributedDataParallel, rank 0 writes
    python -m tinygpt sample --run RUN_ID --prompt "ROMEO:" --max-new-tokens 200

    python -m tinygpt train --resume RUN_ID --from-step 200                 # rewind to checkpoint 200
    python -m tinygpt train --branch RUN_ID --from-step 200 --learning-rate 0.01   # a new run from checkpoint 200

Flags are generated from the config dataclasses (`TransformerConfig`, `TrainConfig`, `DataConfig`, and the
publishing fields of `RunConfig`), in kebab case, with each field's comment as its help text, its choices from
tinygpt.config, and every preset's value: one name per setting across the app, the CLI and the code.
Precedence: preset < --config file < explicit flags.

Exit status: 0 for a run that finished, stopped or paused; 1 for one that failed or diverged (the last line says
why, from its status); 2 for an error a user can cause (a bad flag, an unknown run, a run another process is
training, a run too big for this machine, a runs folder that cannot be written), said in one line, before any run
folder is made where that can be known; 130 for Ctrl-C while starting. Never a traceback for any of these.
Ctrl-C (or SIGTERM) while training stops cleanly between two steps: the loop writes a final checkpoint and marks
the run "stopped" (resumable with --resume, on the same curve); a second Ctrl-C interrupts at once."""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path
from typing import Any

from ..config import (
    RunConfig,
    trains_until_stopped,
)
from ..errors import TinyGPTError
from .flags import config_from_args, config_overrides, parse_args

ETA_WINDOW = 200  # steps the CLI's ETA averages over
ETA_MIN_STEPS = 5  # steps after the first before the CLI gives an ETA


class Progress:
    """A one-line progress bar on a terminal; a log line every few seconds otherwise (CI logs, nohup)."""

    def __init__(self, max_steps: int, stream=sys.stderr, quiet: bool = False, eval_interval: int | None = None):
        self.max_steps = max_steps
        # The pace must include an evaluation (20 batches of forward passes every eval_interval steps), or the ETA
        # is the steps' alone: 326 s said at step 9 of a run that took 612 s. So the window spans at least one
        # interval, and no ETA is said before it does.
        self.min_steps = max(ETA_MIN_STEPS, min(eval_interval or 0, max_steps - 1))
        window = max(ETA_WINDOW, 2 * (eval_interval or 0) + 1)
        self.stream = stream
        self.quiet = quiet
        self.tty = stream.isatty()
        self.last = 0.0
        self.started = time.time()
        # (wall time, step, tokens trained so far) of the last ETA_WINDOW steps: the pace of the run itself
        self.recent: collections.deque[tuple[float, int, float]] = collections.deque(maxlen=window)
        self.tokens = 0.0

    def eta(self, now: float, step: int) -> str:
        """Seconds left at the pace of the last few steps. The first step carries the start-up (model build,
        first kernels), so the pace is measured from it on, once ETA_MIN_STEPS more steps have run."""
        self.recent.append((now, step, self.tokens))
        (t0, s0, _), (t1, s1, _) = self.recent[0], self.recent[-1]
        if s1 - s0 < self.min_steps or t1 <= t0:
            return "-"
        return f"{(t1 - t0) / (s1 - s0) * (self.max_steps - step):.0f}s"

    def tokens_per_s(self, record: dict) -> float:
        """Tokens a second of wall time over the last ETA_WINDOW steps (evaluations and checkpoints included), as
        the app's status shows it: one step's own figure jumped between 146 and 5,827 from line to line."""
        (t0, s0, k0), (t1, s1, k1) = self.recent[0], self.recent[-1]
        if s1 - s0 < ETA_MIN_STEPS or t1 <= t0:
            return float(record.get("tokens_per_s") or 0)
        return (k1 - k0) / (t1 - t0)

    def __call__(self, record: dict) -> None:
        if self.quiet:
            return
        now = time.time()
        step = record["step"]
        step_tps, step_ms = record.get("tokens_per_s") or 0, record.get("step_ms") or 0
        self.tokens += step_tps * step_ms / 1000.0  # the tokens of this step
        remaining = self.eta(now, step)
        if now - self.last < (0.2 if self.tty else 5.0) and step != self.max_steps:
            return
        self.last = now
        loss = record.get("loss")
        loss_text = f"{loss:.4f}" if isinstance(loss, float) else "nan"
        tps = self.tokens_per_s(record)
        if trains_until_stopped(self.max_steps):  # no end to count down to: say so instead of a 9-hour ETA
            line = f"step {step} loss {loss_text} {tps:,.0f} tok/s, until stopped (Ctrl-C stops it, resumable)"
            self.stream.write(f"\r{line} " if self.tty else f"{line}\n")
            self.stream.flush()
            return
        if self.tty:
            width = 28
            filled = int(width * step / max(self.max_steps, 1))
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(
                f"\r[{bar}] step {step}/{self.max_steps} loss {loss_text} {tps:,.0f} tok/s ETA {remaining} "
            )
            if step == self.max_steps:
                self.stream.write("\n")
        else:
            self.stream.write(f"step {step}/{self.max_steps} loss {loss_text} {tps:,.0f} tok/s ETA {remaining}\n")
        self.stream.flush()


def _store(runs_dir: Path | None):
    from ..runs.store import RunStore

    return RunStore(runs_dir)


def cmd_train(args: argparse.Namespace) -> int:
    from ..runs.distributed import run_training_maybe_distributed
    from ..runs.preflight import preflight

    store = _store(args.runs_dir)
    if args.from_step is not None and args.resume is None and args.branch is None:
        raise TinyGPTError(
            "--from-step needs --resume RUN_ID or --branch RUN_ID: it picks the checkpoint a run continues from."
        )
    if args.branch is not None:
        return _train_branch(store, args)
    if args.resume is not None:  # `--resume ""` is a mistake to report, not a request for a new run
        config, resume_from = _resume_config(store, args)
        run_id = args.resume
    else:
        config = config_from_args(args)
        _check_new_run(args, config)
        run_id, resume_from = None, None
    # Everything that can be known before a run folder exists: threads, device, source, memory, disk.
    preflight(config, runs_root=None if args.resume else store.root, threads=args.threads)
    return run_training_maybe_distributed(
        store,
        config,
        run_id=run_id,
        resume_from=resume_from,
        threads=args.threads,
        progress=lambda max_steps, rank: Progress(
            max_steps, quiet=args.quiet or rank != 0, eval_interval=config.train.eval_interval
        ),
    )


def _train_branch(store, args: argparse.Namespace) -> int:
    """`train --branch RUN [--from-step N] --setting value ...`: a new run from RUN's checkpoint N with those
    settings changed (tinygpt.runs.branch), trained here. Refused before any folder exists when a setting cannot
    change in a branch (the shape, the corpus, the seed, ...), with why."""
    from ..runs.branch import create_branch, plan_branch
    from ..runs.distributed import run_training_maybe_distributed, world
    from ..runs.files import read_config
    from ..runs.preflight import preflight

    if args.resume is not None or args.config is not None:
        raise TinyGPTError("--branch takes its settings from the run it branches: drop --resume and --config.")
    if not args.branch.strip():
        raise TinyGPTError("--branch needs a run id: see `python -m tinygpt runs` for the runs there are.")
    if world()[1] > 1:  # each rank would make a folder of its own, and draws batches of its own (seed + rank)
        raise TinyGPTError("--branch trains in one process, on its parent's batches: run it without torchrun.")
    plan = plan_branch(store, args.branch, args.from_step, config_overrides(args))
    preflight(plan.config, runs_root=store.root, threads=args.threads)
    run_id = create_branch(store, plan, owner="cli")
    config = read_config(store.path(run_id))
    return run_training_maybe_distributed(
        store, config, run_id=run_id, resume_from=plan.step, threads=args.threads,
        progress=lambda max_steps, rank: Progress(
            max_steps, quiet=args.quiet or rank != 0, eval_interval=config.train.eval_interval
        ),
    )  # fmt: skip


def _check_new_run(args: argparse.Namespace, config: RunConfig) -> None:
    """What a new run's flags say that its config cannot show: a --text that the chosen source would ignore, and a
    --probe-text with characters outside the corpus (the loop would fail on it after making the run folder)."""
    if "text" in config_overrides(args) and config.data.source != "text":
        raise TinyGPTError(
            f"--text is only read with --source text (the source is {config.data.source!r}): add --source text, "
            "or drop --text."
        )
    if config.probe_text:  # rare, so the corpus is loaded twice only when a probe text was asked for
        from ..data import load_corpus

        corpus = load_corpus(config.data, config.model.max_seq_len)
        corpus.tokenizer.encode(config.probe_text, what="probe text")  # TokenizerError names the characters


def _resume_config(store, args: argparse.Namespace) -> tuple[RunConfig, Any]:
    """The config and the resume point of `train --resume RUN [--from-step N]` by the one resume rule
    (tinygpt.runs.resume), or the TinyGPTError that says why the run cannot be resumed, with a resume to fewer
    steps than the run has refused too. Nothing in the run folder is changed, so a refused resume leaves it as it
    was."""
    from ..runs.files import CONFIG_FILE
    from ..runs.resume import LATEST, plan_resume

    if not args.resume.strip():
        raise TinyGPTError("--resume needs a run id: see `python -m tinygpt runs` for the runs there are.")
    run_dir = store.path(args.resume)
    if not (run_dir / CONFIG_FILE).exists():
        raise TinyGPTError(f"no run {args.resume!r} in {store.root}: see `python -m tinygpt runs`.")
    plan = plan_resume(run_dir, config_overrides(args).get("max_steps"), args.from_step)
    if args.from_step is not None:
        _check_steps_ahead(args.resume, plan.config.train.max_steps, args.from_step, "continues from checkpoint")
    else:
        _check_steps_ahead(args.resume, plan.config.train.max_steps, plan.trained, "is at")
    return plan.config, "latest" if plan.resume_from == LATEST else plan.resume_from


def _check_steps_ahead(run_id: str, max_steps: int, step: int, where: str) -> None:
    """A resume must have steps left to train: --max-steps at or below where the run is would "finish" at once
    and leave a status that says step 2150 of 400."""
    if max_steps <= step:
        raise TinyGPTError(
            f"run {run_id} {where} step {step}, so --max-steps {max_steps} leaves nothing to train: pass "
            f"--max-steps above {step} to train it longer, or --from-step to go back to an earlier checkpoint."
        )


def cmd_sample(args: argparse.Namespace) -> int:
    import torch

    from ..runs.models import load_model

    # A character is a few dozen small ops: a second thread only waits for the first, and beside training runs
    # it waits for a core (2 threads: 40-130 ms a character on a busy 2-core machine, 1: ~3; BENCHMARKS.md).
    torch.set_num_threads(1)
    run_dir = _store(args.runs_dir).existing(args.run)  # RunStoreError: no such run (not "no checkpoint yet")
    loaded = load_model(run_dir, args.step)  # CheckpointError names the steps it has
    model, tokenizer = loaded.model, loaded.tokenizer
    idx = torch.tensor([tokenizer.encode(args.prompt)], dtype=torch.long)
    generator = torch.Generator().manual_seed(args.seed)
    sys.stdout.write(args.prompt)
    for next_ids, _ in model.stream(
        idx, args.max_new_tokens, args.temperature, args.top_k, args.top_p, generator, details=False
    ):
        sys.stdout.write(tokenizer.decode(next_ids[0]))
        sys.stdout.flush()
    sys.stdout.write("\n")
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from ..runs.files import read_events
    from ..runs.knobs import knobs_now
    from ..runs.names import store_names

    store = _store(args.runs_dir)
    runs = store.list_runs()
    if not runs:
        print(f"no runs in {store.root}")
    names = store_names(store.root)  # the names the app shows, beside the ids that --resume and sample take
    width = max((len(names.get(run.run_id, "")) for run in runs), default=0)
    for run in runs:
        best = f"{run.best_val_loss:.4f}" if isinstance(run.best_val_loss, float) else "-"
        name = f"{names.get(run.run_id) or '-':<{width}}"
        line = f"{run.run_id}  {name}  {run.state:<10} step {run.step}/{run.max_steps}  best val {best}  {run.owner}"
        started, now = knobs_now(run.config, []), knobs_now(run.config, read_events(store.path(run.run_id)))
        changed = [f"{k}={v}" for k, v in now.items() if v != started[k]]
        print(line + (f"  knobs now: {' '.join(changed)}" if changed else ""))
        if run.reason.startswith("waiting for the server"):  # queued by an app server that is gone: say so
            print(f"    {run.reason}")
    return 0


def main(argv: list[str] | None = None) -> int:
    commands = {"train": cmd_train, "sample": cmd_sample, "runs": cmd_runs}
    try:
        args = parse_args(argv)  # usage errors exit 2 from argparse, in one line (_Parser)
        return commands[args.command](args)
    except TinyGPTError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before training began (a run that trained says "stopped" itself)
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `sample ... | head`: the reader is gone, nothing left to say
        sys.stderr.close()
        return 0
    except OSError as exc:  # the file system said no somewhere we did not expect: say it, no traceback
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2


def one_line(text: str) -> str:
    """A message as one line: torch's and the OS's errors sometimes span several."""
    return " ".join(text.split())
