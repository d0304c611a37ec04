"""Command line: `python -m tinygpt train|sample|runs`, the same training loop and run folders as the app.

    python -m tinygpt train --preset nanogpt-cpu --num-heads 8 --max-steps 500
    python -m tinygpt train --config bundle/config.json --runs-dir /shared/runs
    python -m tinygpt train --resume RUN_ID
    torchrun --nproc_per_node 2 -m tinygpt train --preset demo      # DistributedDataParallel, rank 0 writes
    python -m tinygpt sample --run RUN_ID --prompt "ROMEO:" --max-new-tokens 200

    python -m tinygpt train --resume RUN_ID --from-step 200                 # rewind to checkpoint 200

Flags are generated from the config dataclasses (`TransformerConfig`, `TrainConfig`, `DataConfig`, and the
publishing fields of `RunConfig`), in kebab case, with each field's comment as its help text, its choices from
tinygpt.config, and every preset's value: one name per setting across the app, the CLI and the code.
Precedence: preset < --config file < explicit flags.

Exit status: 0 for a run that finished, stopped or paused; 1 for one that failed or diverged (the last line says
why, from its status); 2 for an error a user can cause (a bad flag, an unknown run, a run another process is
training, a run too big for this machine, a runs folder that cannot be written), said in one line, before any run
folder is made where that can be known; 130 for Ctrl-C while starting. Never a traceback for any of these.
Ctrl-C (or SIGTERM) while training stops cleanly between two steps: the loop writes a final checkpoint and marks
the run "stopped" (resumable with --resume, on the same curve); a second Ctrl-C interrupts at once.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import inspect
import io
import json
import math
import sys
import time
import tokenize
from pathlib import Path
from typing import Any

from . import config as config_module
from .config import (
    RUN_FIELDS,
    ConfigError,
    DataConfig,
    RunConfig,
    TrainConfig,
    TransformerConfig,
    trains_until_stopped,
)
from .errors import TinyGPTError
from .presets import MIN_LR_DIVISOR, PRESETS, SHORT_RUN_CHECKPOINTS, SHORT_RUN_EVALS, preset

SECTIONS = {"model": TransformerConfig, "train": TrainConfig, "data": DataConfig}
NOT_FLAGS = ("vocab_size", "text_sha256")  # set from the corpus, and a run folder's reference to its corpus.txt
# Values preset() derives when they are not set, said in the help instead of a number.
DERIVED = {
    "min_lr": f"learning_rate / {MIN_LR_DIVISOR} (the Lecture preset: learning_rate itself, a constant rate)",
    "eval_interval": f"the preset's, or max_steps / {SHORT_RUN_EVALS} for a short run",
    "checkpoint_every": f"the preset's, or max_steps / {SHORT_RUN_CHECKPOINTS} for a short run",
}
MAX_TEMPERATURE = 1000.0  # above this every character is equally likely anyway
MIN_TEMPERATURE = 1e-3  # below this (but above 0) logits / temperature overflow: 0 is the greedy choice


@functools.cache
def field_comments(cls) -> dict[str, str]:
    """Each dataclass field's comment: the trailing `# comment` on its line, else the comment block right above
    it (for fields whose why takes more than a line). The help text of its flag."""
    comments: dict[str, str] = {}
    source = inspect.getsource(cls)
    pending, block, above = None, [], {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        alone = token.line.strip().startswith("#")
        if token.type == tokenize.COMMENT and alone and token.start[1] == 4:
            block.append(token.string.lstrip("# ").strip())
        elif token.type == tokenize.NL and not token.line.strip():
            block = []  # a blank line ends a comment block
        elif token.type == tokenize.NAME and token.start[1] == 4 and pending is None:
            pending = (token.string, token.start[0])
            above[token.string], block = " ".join(block), []
        elif token.type == tokenize.COMMENT and pending and token.start[0] == pending[1]:
            comments[pending[0]] = token.string.lstrip("# ").strip()
        if token.type == tokenize.NEWLINE:
            if pending and pending[0] not in comments and above.get(pending[0]):
                comments[pending[0]] = above[pending[0]]
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


def _number(kind: type, low: float | None = None, high: float | None = None, above_low: bool = False) -> Any:
    """An argparse type: `kind` (int or float), finite, within [low, high] ((low, high] with `above_low`); the
    error says the range. The config's own checks (tinygpt.config) still apply to whatever passes here."""
    if low is None:
        bounds = "" if high is None else f" <= {high:g}"
    elif high is None:
        bounds = f" {'>' if above_low else '>='} {low:g}"
    else:
        bounds = f" in {'(' if above_low else '['}{low:g}, {high:g}]"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'a whole number' if kind is int else 'a number'}{bounds}, got {text!r}"
            ) from None
        too_low = low is not None and (value <= low if above_low else value < low)
        if not math.isfinite(value) or too_low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected a finite number{bounds}, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in "invalid int value" messages
    return parse


def _folder(text: str) -> Path:
    """A path argument: not blank (that would be the current folder, or one named " "), no NUL byte."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty name")
    if "\x00" in text:
        raise argparse.ArgumentTypeError(f"a path cannot contain a NUL byte, got {text!r}")
    return Path(text)


def _temperature(text: str) -> float:
    value = _number(float, 0.0, MAX_TEMPERATURE)(text)
    if 0 < value < MIN_TEMPERATURE:
        raise argparse.ArgumentTypeError(
            f"a temperature below {MIN_TEMPERATURE:g} overflows the scores; use 0 for greedy, got {text!r}"
        )
    return value


def _preset_values(section: str, name: str, default: Any) -> str:
    """ "(default: ...)": the value each preset gives the field, or the field's own default."""
    if name in DERIVED:
        return f"(default: {DERIVED[name]})"
    values = {p: spec.get(section, {}).get(name, default) for p, spec in PRESETS.items()}
    if len(set(map(repr, values.values()))) == 1:
        return f"(default: {_show(default)})"
    return "(default: the preset's: " + ", ".join(f"{p} {_show(v)}" for p, v in values.items()) + ")"


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return repr(value) if value else '""'
    return f"{value:g}" if isinstance(value, float) else str(value)


def _add_flags(group: argparse._ArgumentGroup, cls, section: str, sources: list[str]) -> None:
    """One flag per field of `cls`: its comment as help, choices where tinygpt.config names them, and every
    preset's value. `section` is "model", "train", "data" or "run" (PRESETS' keys, and the flag's dest prefix)."""
    comments = field_comments(cls)
    names = RUN_FIELDS if cls is RunConfig else [f.name for f in dataclasses.fields(cls)]
    for f in dataclasses.fields(cls):
        if f.name in NOT_FLAGS or f.name not in names:
            continue
        default = f.default if f.default is not dataclasses.MISSING else None
        kind = type(default) if default is not None else str
        choices = sources if f.name == "source" else config_choices(f.name)
        if kind is bool:
            parse, metavar = _parse_bool, "{true,false}"
        elif kind in (int, float):
            parse, metavar = _number(kind), ("STEPS" if section == "run" else kind.__name__.upper())
        else:
            parse, metavar = str, (None if choices else "TEXT")
        help_text = comments.get(f.name) or f.name.replace("_", " ")
        group.add_argument(
            _flag(f.name),
            dest=f"{section}.{f.name}",
            type=parse,
            choices=choices,
            default=None,
            metavar=metavar,
            help=f"{help_text} {_preset_values(section, f.name, default)}".replace("%", "%%"),
        )


def config_choices(name: str) -> tuple[str, ...] | None:
    """A text field's choices: tinygpt.config's tuple named after it in the plural (ATTN_SCALES for attn_scale,
    MASKS, SOFTMAXES, DEVICES, ...), so a new setting with a choice list gets its choices here without an edit."""
    for plural in (name.upper() + "S", name.upper() + "ES"):
        values = getattr(config_module, plural, None)
        if isinstance(values, tuple) and values and all(isinstance(v, str) for v in values):
            return values
    return None


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (argparse prints the whole usage first): what was wrong, and where to look."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from .data import data_sources

    runs_dir_help = "runs folder (default: $TINYGPT_RUNS_DIR or ./runs)"
    parser = _Parser(prog="python -m tinygpt", description="Train and sample tiny GPTs.")
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train a model into a run folder (also under torchrun)")
    train.add_argument("--preset", choices=list(PRESETS), default="demo", help="starting settings (default: demo)")
    train.add_argument("--config", type=_folder, help="a config.json from a run folder or an app bundle")
    train.add_argument(
        "--resume", metavar="RUN_ID", help="continue a run from its newest checkpoint that loads (see --from-step)"
    )
    train.add_argument(
        "--from-step", type=_number(int, 0), metavar="STEP",
        help="with --resume: continue from this checkpoint instead; later ones are dropped (`runs` lists them)",
    )  # fmt: skip
    train.add_argument("--runs-dir", type=_folder, help=runs_dir_help)
    train.add_argument(
        "--threads", type=_number(int, 1), metavar="N", help="torch threads for this process (default: torch's choice)"
    )
    train.add_argument("--quiet", action="store_true", help="no progress output")
    _add_flags(train.add_argument_group("model"), TransformerConfig, "model", [])
    _add_flags(train.add_argument_group("training"), TrainConfig, "train", [])
    _add_flags(train.add_argument_group("data"), DataConfig, "data", data_sources())
    _add_flags(train.add_argument_group("publishing"), RunConfig, "run", [])

    sample = sub.add_parser("sample", help="generate text from a saved run")
    sample.add_argument("--run", required=True, metavar="RUN_ID", help="the run to load")
    sample.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    sample.add_argument(
        "--max-new-tokens", type=_number(int, 0), default=300, metavar="N", help="characters to generate (default: 300)"
    )
    sample.add_argument(
        "--temperature", type=_temperature, default=0.8, metavar="T",
        help=f"0 is greedy; higher is more random, up to {MAX_TEMPERATURE:g} (default: 0.8)",
    )  # fmt: skip
    sample.add_argument(
        "--top-k", type=_number(int, 1), metavar="K", help="sample only among the k most likely characters"
    )
    sample.add_argument(
        "--top-p", type=_number(float, 0.0, 1.0, above_low=True), metavar="P",
        help="sample only within this much probability mass, in (0, 1]",
    )  # fmt: skip
    sample.add_argument(
        "--seed", type=_number(int, 0, 2**63 - 1), default=0, metavar="N", help="random seed (default: 0)"
    )
    sample.add_argument("--step", type=_number(int, 0), metavar="STEP", help="checkpoint step (default: the latest)")
    sample.add_argument("--runs-dir", type=_folder, help=runs_dir_help)

    runs = sub.add_parser("runs", help="list the runs in a runs folder")
    runs.add_argument("--runs-dir", type=_folder, help=runs_dir_help)
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
        kind = type(loaded).__name__
        raise ConfigError(f"--config {path} must hold a JSON object (a run's config.json), not a {kind}.")
    settings: dict[str, Any] = {}
    for section in SECTIONS:
        part = loaded.get(section, {})
        if not isinstance(part, dict):
            raise ConfigError(f"--config {path}: {section!r} must be a JSON object, not a {type(part).__name__}.")
        settings.update(part)
    settings.update({k: loaded[k] for k in RUN_FIELDS if k in loaded})
    sha = settings.pop("text_sha256", "")
    if settings.get("source") == "text" and not settings.get("text") and sha:
        settings["text"] = _corpus_beside(Path(path), sha)  # a run's config.json names its corpus.txt
    return settings


def _corpus_beside(path: Path, sha: Any) -> str:
    """The corpus.txt next to a run's config.json (or in a bundle), checked against the hash the config names."""
    from .runs.corpus import corpus_sha256
    from .runs.files import CORPUS_FILE

    corpus = path.parent / CORPUS_FILE
    try:
        text = corpus.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"--config {path} trains on a text stored in {CORPUS_FILE} beside it, which cannot be read ({exc}): copy "
            f"the run's {CORPUS_FILE} next to it, or pass the text with --text."
        ) from None
    if corpus_sha256(text) != sha:
        raise ConfigError(f"{corpus} is not the text {path} names (its sha256 differs): use that run's {CORPUS_FILE}.")
    return text


# ---------------------------------------------------------------- progress


ETA_WINDOW = 200  # steps the CLI's ETA averages over
ETA_MIN_STEPS = 5  # steps after the first before the CLI gives an ETA


class Progress:
    """A one-line progress bar on a terminal; a log line every few seconds otherwise (CI logs, nohup)."""

    def __init__(self, max_steps: int, stream=sys.stderr, quiet: bool = False):
        self.max_steps = max_steps
        self.stream = stream
        self.quiet = quiet
        self.tty = stream.isatty()
        self.last = 0.0
        self.started = time.time()
        self.recent: collections.deque[tuple[float, int]] = collections.deque(maxlen=ETA_WINDOW)  # (time, step)

    def eta(self, now: float, step: int) -> str:
        """Seconds left at the pace of the last few steps. The first step carries the start-up (model build,
        first kernels), so the pace is measured from it on, once ETA_MIN_STEPS more steps have run."""
        self.recent.append((now, step))
        (t0, s0), (t1, s1) = self.recent[0], self.recent[-1]
        if s1 - s0 < ETA_MIN_STEPS or t1 <= t0:
            return "-"
        return f"{(t1 - t0) / (s1 - s0) * (self.max_steps - step):.0f}s"

    def __call__(self, record: dict) -> None:
        if self.quiet:
            return
        now = time.time()
        step = record["step"]
        remaining = self.eta(now, step)
        if now - self.last < (0.2 if self.tty else 5.0) and step != self.max_steps:
            return
        self.last = now
        loss = record.get("loss")
        loss_text = f"{loss:.4f}" if isinstance(loss, float) else "nan"
        tps = record.get("tokens_per_s") or 0
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


# ---------------------------------------------------------------- commands


def _store(runs_dir: Path | None):
    from .runs.store import RunStore

    return RunStore(runs_dir)


def cmd_train(args: argparse.Namespace) -> int:
    from .runs.distributed import run_training_maybe_distributed
    from .runs.preflight import preflight

    store = _store(args.runs_dir)
    if args.from_step is not None and args.resume is None:
        raise TinyGPTError("--from-step needs --resume RUN_ID: it picks the checkpoint a run continues from.")
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
        progress=lambda max_steps, rank: Progress(max_steps, quiet=args.quiet or rank != 0),
    )


def _check_new_run(args: argparse.Namespace, config: RunConfig) -> None:
    """What a new run's flags say that its config cannot show: a --text that the chosen source would ignore, and a
    --probe-text with characters outside the corpus (the loop would fail on it after making the run folder)."""
    if "text" in config_overrides(args) and config.data.source != "text":
        raise TinyGPTError(
            f"--text is only read with --source text (the source is {config.data.source!r}): add --source text, "
            "or drop --text."
        )
    if config.probe_text:  # rare, so the corpus is loaded twice only when a probe text was asked for
        from .data import load_corpus

        corpus = load_corpus(config.data, config.model.max_seq_len)
        corpus.tokenizer.encode(config.probe_text, what="probe text")  # TokenizerError names the characters


def _resume_config(store, args: argparse.Namespace) -> tuple[RunConfig, Any]:
    """The config and the resume point of `train --resume RUN [--from-step N]` by the one resume rule
    (tinygpt.runs.resume), or the TinyGPTError that says why the run cannot be resumed, with a resume to fewer
    steps than the run has refused too. Nothing in the run folder is changed, so a refused resume leaves it as it
    was."""
    from .runs.resume import LATEST, plan_resume

    if not args.resume.strip():
        raise TinyGPTError("--resume needs a run id: see `python -m tinygpt runs` for the runs there are.")
    run_dir = store.path(args.resume)
    if not (run_dir / "config.json").exists():
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


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {dest.split(".", 1)[1]: v for dest, v in vars(args).items() if v is not None and "." in dest}


def cmd_sample(args: argparse.Namespace) -> int:
    import torch

    from .runs.models import load_model

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
    from .runs.files import read_events
    from .runs.knobs import knobs_now

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
    commands = {"train": cmd_train, "sample": cmd_sample, "runs": cmd_runs}
    try:
        args = build_parser().parse_args(argv)  # usage errors exit 2 from argparse, in one line (_Parser)
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
