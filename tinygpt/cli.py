"""Command line: `python -m tinygpt train|sample|runs`, the same training loop and run folders as the app.

    python -m tinygpt train --preset nanogpt-cpu --num-heads 8 --max-steps 500
    python -m tinygpt train --config bundle/config.json --runs-dir /shared/runs
    python -m tinygpt train --resume RUN_ID
    torchrun --nproc_per_node 2 -m tinygpt train --preset demo      # DistributedDataParallel, rank 0 writes
    python -m tinygpt sample --run RUN_ID --prompt "ROMEO:" --max-new-tokens 200

Flags are generated from the config dataclasses (`TransformerConfig`, `TrainConfig`, `DataConfig`, and the
publishing fields of `RunConfig`), in kebab case, with each field's comment as its help text: one name per setting
across the app, the CLI and the code. Precedence: preset < --config file < explicit flags.

Ctrl-C stops cleanly: the loop writes a final checkpoint and marks the run "stopped" (resumable with --resume).
Errors a user can cause (a bad flag combination, an unknown run) print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import io
import json
import sys
import time
import tokenize
from pathlib import Path
from typing import Any

from .config import PRESETS, RUN_FIELDS, ConfigError, DataConfig, RunConfig, TrainConfig, TransformerConfig, preset
from .errors import TinyGPTError

SECTIONS = {"model": TransformerConfig, "train": TrainConfig, "data": DataConfig}


def field_comments(cls) -> dict[str, str]:
    """The trailing `# comment` of each dataclass field line: the help text of its flag."""
    comments: dict[str, str] = {}
    source = inspect.getsource(cls)
    pending = None
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.start[1] == 4 and pending is None:
            pending = (token.string, token.start[0])
        elif token.type == tokenize.COMMENT and pending and token.start[0] == pending[1]:
            comments[pending[0]] = token.string.lstrip("# ").strip()
        if token.type == tokenize.NEWLINE:
            pending = None
    return comments


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _add_dataclass_flags(group: argparse._ArgumentGroup, cls, dest_prefix: str, skip=()) -> None:
    comments = field_comments(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        default = f.default if f.default is not dataclasses.MISSING else None
        kind = type(default) if default is not None else str
        parse = _parse_bool if kind is bool else kind
        help_text = comments.get(f.name, f.name.replace("_", " "))
        group.add_argument(
            _flag(f.name),
            dest=f"{dest_prefix}.{f.name}",
            type=parse,
            default=None,
            metavar=kind.__name__.upper(),
            help=f"{help_text} (default: {default!r})",
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tinygpt", description="Train and sample tiny GPTs.")
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train a model into a run folder (also under torchrun)")
    train.add_argument("--preset", choices=list(PRESETS), default="demo", help="starting settings (default: demo)")
    train.add_argument("--config", type=Path, help="a config.json from a run folder or an app bundle")
    train.add_argument("--resume", metavar="RUN_ID", help="continue a stopped/paused run from its last checkpoint")
    train.add_argument("--runs-dir", type=Path, help="runs folder (default: $TINYGPT_RUNS_DIR or ./runs)")
    train.add_argument("--threads", type=int, help="torch threads for this process (default: torch's choice)")
    train.add_argument("--quiet", action="store_true", help="no progress output")
    _add_dataclass_flags(train.add_argument_group("model"), TransformerConfig, "model", skip=("vocab_size",))
    _add_dataclass_flags(train.add_argument_group("training"), TrainConfig, "train")
    _add_dataclass_flags(train.add_argument_group("data"), DataConfig, "data")
    publish = train.add_argument_group("publishing")
    publish.add_argument("--attention-every", dest="run.attention_every", type=int, help="steps between snapshots")
    publish.add_argument("--sample-every", dest="run.sample_every", type=int, help="steps between sample texts")
    publish.add_argument("--checkpoint-every", dest="run.checkpoint_every", type=int, help="steps between checkpoints")
    publish.add_argument("--probe-text", dest="run.probe_text", help="text whose attention is captured")

    sample = sub.add_parser("sample", help="generate text from a saved run")
    sample.add_argument("--run", required=True, metavar="RUN_ID", help="the run to load")
    sample.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    sample.add_argument("--max-new-tokens", type=int, default=300, help="characters to generate")
    sample.add_argument("--temperature", type=float, default=0.8, help="0 is greedy; higher is more random")
    sample.add_argument("--top-k", type=int, help="sample only among the k most likely characters")
    sample.add_argument("--top-p", type=float, help="sample only within this much probability mass")
    sample.add_argument("--seed", type=int, default=0, help="random seed")
    sample.add_argument("--step", type=int, help="checkpoint step (default: the latest)")
    sample.add_argument("--runs-dir", type=Path, help="runs folder (default: $TINYGPT_RUNS_DIR or ./runs)")

    runs = sub.add_parser("runs", help="list the runs in a runs folder")
    runs.add_argument("--runs-dir", type=Path, help="runs folder (default: $TINYGPT_RUNS_DIR or ./runs)")
    return parser


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """preset < --config file < explicit flags, through `config.preset`: the app builds its configs the same way,
    so identical settings give identical configs (min_lr following the learning rate, short-run intervals)."""
    return preset(args.preset, **{**config_file_settings(args.config), **config_overrides(args)})


def config_file_settings(path: Path | None) -> dict[str, Any]:
    """The settings in a --config file (a run's config.json or an app bundle's), by field name."""
    if path is None:
        return {}
    try:
        loaded = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read --config {path}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise ConfigError(f"--config {path} must hold a JSON object (a run's config.json), not a {type(loaded).__name__}.")
    settings: dict[str, Any] = {}
    for section in SECTIONS:
        part = loaded.get(section, {})
        if not isinstance(part, dict):
            raise ConfigError(f"--config {path}: {section!r} must be a JSON object, not a {type(part).__name__}.")
        settings.update(part)
    settings.update({k: loaded[k] for k in RUN_FIELDS if k in loaded})
    return settings


# ---------------------------------------------------------------- progress


class Progress:
    """A one-line progress bar on a terminal; a log line every few seconds otherwise (CI logs, nohup)."""

    def __init__(self, max_steps: int, stream=sys.stderr, quiet: bool = False):
        self.max_steps = max_steps
        self.stream = stream
        self.quiet = quiet
        self.tty = stream.isatty()
        self.last = 0.0
        self.started = time.time()

    def __call__(self, record: dict) -> None:
        if self.quiet:
            return
        now = time.time()
        step = record["step"]
        if now - self.last < (0.2 if self.tty else 5.0) and step != self.max_steps:
            return
        self.last = now
        loss = record.get("loss")
        loss_text = f"{loss:.4f}" if isinstance(loss, float) else "nan"
        tps = record.get("tokens_per_s") or 0
        remaining = (now - self.started) / max(step, 1) * (self.max_steps - step)
        if self.tty:
            width = 28
            filled = int(width * step / max(self.max_steps, 1))
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(
                f"\r[{bar}] step {step}/{self.max_steps} loss {loss_text} {tps:,.0f} tok/s ETA {remaining:.0f}s "
            )
            if step == self.max_steps:
                self.stream.write("\n")
        else:
            self.stream.write(f"step {step}/{self.max_steps} loss {loss_text} {tps:,.0f} tok/s ETA {remaining:.0f}s\n")
        self.stream.flush()


# ---------------------------------------------------------------- commands


def _store(runs_dir: Path | None):
    from .runstore import RunStore

    return RunStore(runs_dir)


def cmd_train(args: argparse.Namespace) -> int:
    from .distributed import run_training_maybe_distributed
    from .runstore import list_checkpoints

    store = _store(args.runs_dir)
    if args.resume:
        run_dir = store.path(args.resume)
        if not (run_dir / "config.json").exists():
            raise TinyGPTError(f"no run {args.resume!r} in {store.root}: see `python -m tinygpt runs`.")
        config = RunConfig.from_dict(_run_config(run_dir))
        overrides = config_overrides(args)
        if "max_steps" in overrides:
            config.train.max_steps = overrides["max_steps"]
        # The app's rule too (RunManager): continue from the newest checkpoint, or start over if there is none
        # (a run that failed while starting).
        run_id, resume_from = args.resume, "latest" if list_checkpoints(run_dir) else None
    else:
        config = config_from_args(args)
        run_id, resume_from = None, None
    return run_training_maybe_distributed(
        store,
        config,
        run_id=run_id,
        resume_from=resume_from,
        threads=args.threads,
        progress=lambda max_steps, rank: Progress(max_steps, quiet=args.quiet or rank != 0),
    )


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {dest.split(".", 1)[1]: v for dest, v in vars(args).items() if v is not None and "." in dest}


def _run_config(run_dir: Path) -> dict:
    data = json.loads((run_dir / "config.json").read_text())
    return {k: data[k] for k in ("model", "train", "data", *RUN_FIELDS) if k in data}


def cmd_sample(args: argparse.Namespace) -> int:
    import torch

    from .checkpoint import load_model

    loaded = load_model(_store(args.runs_dir).path(args.run), args.step)  # CheckpointError names the steps it has
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
    from .runstore import knobs_now, read_events

    store = _store(args.runs_dir)
    runs = store.list_runs()
    if not runs:
        print(f"no runs in {store.root}")
    for run in runs:
        best = f"{run.best_val_loss:.4f}" if isinstance(run.best_val_loss, float) else "-"
        line = f"{run.run_id}  {run.state:<10} step {run.step}/{run.max_steps}  best val {best}  {run.owner}"
        started, now = knobs_now(run.config, []), knobs_now(run.config, read_events(store.path(run.run_id)))
        changed = [f"{k}={v}" for k, v in now.items() if v != started[k]]
        print(line + (f"  knobs now: {' '.join(changed)}" if changed else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    commands = {"train": cmd_train, "sample": cmd_sample, "runs": cmd_runs}
    try:
        return commands[args.command](args)
    except TinyGPTError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
