"""The CLI's flags, built from the config's own field table: every RunConfig field is a flag whose help is its
field's comment, whose choices are the config's (ATTN_SCALES, MASKS, ...), and whose default is each preset's.
A value the config would refuse is refused here, before any run folder exists (exit 2, one line).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import inspect
import io
import json
import math
import tokenize
from pathlib import Path
from typing import Any

from .. import config as config_module
from ..config import (
    LIMITS,
    MAX_CONFIG_BYTES,
    MAX_NEW_TOKENS,
    MAX_TEXT_FIELDS,
    RUN_FIELDS,
    SECTIONS,
    ConfigError,
    DataConfig,
    Interventions,
    RunConfig,
    TrainConfig,
    TransformerConfig,
)
from ..presets import MIN_LR_DIVISOR, PRESETS, SHORT_RUN_CHECKPOINTS, SHORT_RUN_EVALS, preset

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
    elif high is not None and kind is int:
        bounds = f" from {int(low):,} to {int(high):,}"
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
            expected = "a whole number" if kind is int else "a finite number"
            raise argparse.ArgumentTypeError(f"expected {expected}{bounds}, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in "invalid int value" messages
    return parse


def _text(name: str) -> Any:
    """An argparse type for a text setting: bytes that are not UTF-8 (which Python hands over as lone surrogates,
    and which no file can store) and text beyond the field's length limit are refused here, in one line."""

    def parse(text: str) -> str:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            # The byte the shell handed over (a lone surrogate stands for it) and its offset in bytes, not characters
            offset = len(text[: exc.start].encode("utf-8", "surrogateescape"))
            raw = text[exc.start].encode("utf-8", "surrogateescape")
            raise argparse.ArgumentTypeError(
                f"is not UTF-8 text: byte 0x{raw.hex()} at offset {offset:,} cannot be decoded; "
                "save the text as UTF-8 (or set a UTF-8 locale, e.g. LANG=C.UTF-8)"
            ) from None
        cap = MAX_TEXT_FIELDS.get(name)
        if cap is not None and len(text) > cap:
            raise argparse.ArgumentTypeError(f"is {len(text):,} characters long, more than the {cap:,} allowed")
        return text

    parse.__name__ = "text"
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
    preset's value. `section` is "model", "train", "data", "interventions" or "run" (RunConfig's parts, and the
    flag's dest prefix)."""
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
            limit = LIMITS.get(f.name)  # the config's table of limits: refused here with the range, exit 2
            bounds = (limit.low, limit.high, limit.above_low) if limit else (None, None, False)
            parse, metavar = _number(kind, *bounds), ("STEPS" if section == "run" else kind.__name__.upper())
        else:
            parse, metavar = _text(f.name), (None if choices else "TEXT")
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
    from ..data import data_sources

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
        help="with --resume: continue from this checkpoint instead; later ones are dropped (`runs` lists them); "
        "with --branch: the checkpoint the branch starts from",
    )  # fmt: skip
    train.add_argument(
        "--branch", metavar="RUN_ID",
        help="a new run continuing RUN_ID from its checkpoint at --from-step (default: its newest) on the same "
        "batches, with the settings given here changed (--learning-rate 0.01); RUN_ID is only read",
    )  # fmt: skip
    train.add_argument("--runs-dir", type=_folder, help=runs_dir_help)
    train.add_argument(
        "--threads", type=_number(int, 1), metavar="N", help="torch threads for this process (default: torch's choice)"
    )
    train.add_argument("--quiet", action="store_true", help="no progress output")
    _add_flags(train.add_argument_group("model"), TransformerConfig, "model", [])
    _add_flags(train.add_argument_group("training"), TrainConfig, "train", [])
    _add_flags(train.add_argument_group("data"), DataConfig, "data", data_sources())
    _add_flags(train.add_argument_group("pitfall lab"), Interventions, "interventions", [])
    _add_flags(train.add_argument_group("publishing"), RunConfig, "run", [])

    sample = sub.add_parser("sample", help="generate text from a saved run")
    sample.add_argument("--run", required=True, metavar="RUN_ID", help="the run to load")
    sample.add_argument("--prompt", type=_text("prompt"), default="\n", help="text to continue (default: a newline)")
    sample.add_argument(
        "--max-new-tokens", type=_number(int, 0, MAX_NEW_TOKENS), default=300, metavar="N",
        help=f"characters to generate, up to {MAX_NEW_TOKENS:,} (default: 300)",
    )  # fmt: skip
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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, parsed; a flag the command does not know is refused by that command's parser, so the
    hint points at `train --help` (not the top-level help, which lists no flags) and names the nearest flag."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
        known = [o for action in command._actions for o in action.option_strings if o not in ("-h", "--help")]
        flag = next((u.split("=", 1)[0] for u in unknown if u.startswith("--")), "")
        # A flag that is part of a known one ("--heads" of "--num-heads") before one that is spelled alike
        near = [o for o in known if flag and f"-{flag[2:]}" in o] or difflib.get_close_matches(flag, known, n=1)
        command.error(f"unrecognized arguments: {' '.join(unknown)}" + (f"; did you mean {near[0]}?" if near else ""))
    return args


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """preset < --config file < explicit flags, through `config.preset`: the app builds its configs the same way,
    so identical settings give identical configs (min_lr following the learning rate, short-run intervals)."""
    return preset(args.preset, **{**config_file_settings(args.config), **config_overrides(args)})


def config_file_settings(path: Path | None) -> dict[str, Any]:
    """The settings in a --config file (a run's config.json or an app bundle's), by field name."""
    if path is None:
        return {}
    loaded = _read_json_capped(Path(path), "--config", MAX_CONFIG_BYTES)
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


def read_capped(path: Path, what: str, cap: int) -> bytes:
    """At most `cap` bytes of a file a user named, or ConfigError: a larger file (or /dev/zero, a pipe that never
    ends) is refused after reading cap + 1 bytes, in milliseconds and with memory flat, never read whole."""
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}.") from None
    if len(data) > cap:
        raise ConfigError(f"{what} {path} is larger than {cap:,} bytes: {_too_big_hint(what)}")
    return data


def _too_big_hint(what: str) -> str:
    if what == "--config":
        return "a config.json is a few kilobytes (a run's text corpus lives in corpus.txt beside it); is this the file?"
    return "use a shorter text."


def _read_json_capped(path: Path, what: str, cap: int) -> Any:
    data = read_capped(path, what, cap)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{what} {path} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start:,} cannot be decoded."
        ) from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ConfigError(f"{what} {path} is not JSON: {exc}.") from None


def _corpus_beside(path: Path, sha: Any) -> str:
    """The corpus.txt next to a run's config.json (or in a bundle), checked against the hash the config names."""
    from ..runs.corpus import corpus_sha256
    from ..runs.files import CORPUS_FILE

    corpus = path.parent / CORPUS_FILE
    try:
        text = read_capped(corpus, CORPUS_FILE, 4 * MAX_TEXT_FIELDS["text"]).decode("utf-8")  # 4 bytes a character
    except (ConfigError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"--config {path} trains on a text stored in {CORPUS_FILE} beside it, which cannot be read ({exc}): copy "
            f"the run's {CORPUS_FILE} next to it, or pass the text with --text."
        ) from None
    if corpus_sha256(text) != sha:
        raise ConfigError(f"{corpus} is not the text {path} names (its sha256 differs): use that run's {CORPUS_FILE}.")
    return text


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {dest.split(".", 1)[1]: v for dest, v in vars(args).items() if v is not None and "." in dest}
