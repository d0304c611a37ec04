"""Configuration: one dataclass for the model, one for training, validated on construction.

Every field carries a comment saying why it has its default. The names are the ones the app teaches with
(`hidden_dim`, `num_heads`, ...), so a slider label, a CLI flag (`--num-heads`) and a field are the same word.

Validation happens in `__post_init__` and raises `ConfigError` with a message that says what to change,
because the app shows these messages to learners verbatim.

Deliberately left out: dropout schedules, bias switches, rotary embeddings. This is a teaching model."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from .errors import TinyGPTError

ATTN_SCALES = ("head_dim", "hidden_dim", "none")
MASKS = ("causal", "none", "off_by_one", "sliding_window")
LEAKING_MASKS = ("none", "off_by_one")  # a position sees the character it must predict: low loss is copying
SOFTMAXES = ("stable", "naive")
SHAPE_BUGS = ("none", "softmax_dim")  # deliberate silent shape bugs, for the pitfall lab's shape drift experiment
DEVICES = ("auto", "cpu", "cuda", "mps")
OPTIMIZERS = ("adamw", "muon")
PRECISIONS = ("auto", "fp32", "bf16")
# Knobs that may change between two training steps without rebuilding the model or the data.
# Everything else (heads, layers, width, context, corpus, ...) needs a new run.
LIVE_MODEL_KNOBS = ("attn_scale", "attn_scale_mult", "mask", "window", "ablated_heads")
LIVE_TRAIN_KNOBS = ("learning_rate", "warmup_steps", "max_grad_norm", "min_lr", "weight_decay")
LIVE_KNOBS = LIVE_MODEL_KNOBS + LIVE_TRAIN_KNOBS


def check_live_knob(name: object) -> None:
    """The one check of a live knob's name (the manager, the trainer and the app all call this one)."""
    if name not in LIVE_KNOBS:
        raise ConfigError(
            f"{name!r} cannot change while training; live knobs are {', '.join(LIVE_KNOBS)}. "
            "Other settings start a new run."
        )


MAX_TOKEN_SHIFT = 8  # positions back an MLP may read (token_shift): a short window, not a second attention


@dataclass(frozen=True)
class Limit:
    """The range one numeric setting may take, and why its ends are where they are. Every door (the Train form, the
    CLI's flags and --config file, workshop links, the lab, resume) checks against the same row: the config's own
    __post_init__ does, and the form's sliders and the CLI's flags take their bounds from it."""

    low: float
    high: float
    why: str  # said in the refusal: where the upper end comes from
    above_low: bool = False  # the range excludes `low` (a learning rate of 0 trains nothing)

    def contains(self, value: float) -> bool:
        return (self.low < value if self.above_low else self.low <= value) and value <= self.high

    def describe(self) -> str:
        """ "from 1 to 1,000" for whole numbers, "in (0, 100]" for the others."""
        if isinstance(self.low, int) and isinstance(self.high, int):
            return f"a whole number from {self.low:,} to {self.high:,}"
        return f"in {'(' if self.above_low else '['}{self.low:g}, {self.high:g}]"


# The one table of limits. Numbers that cost time or memory (steps, batches, sizes, examples) get an upper end a
# workshop machine can still serve; memory beyond what fits is refused later, with the estimate
# (tinygpt.runs.preflight.check_memory), since that bound depends on the machine.
# A run with max_steps at or above this trains until someone stops it (the Lecture preset): the pages say "until
# stopped" instead of a step count, an ETA or a progress bar, and a queue does not wait for it to end by itself.
# The Train form's Max steps goes up to exactly this, and no run is longer.
UNTIL_STOPPED = 1_000_000
MAX_TEXT_NAME = 120  # characters of an uploaded file's name kept as data.text_name
MAX_TEXT_CHARS = 20_000_000  # the Train page's upload limit (.streamlit/config.toml maxUploadSize = 20 MB)
LIMITS: dict[str, Limit] = {
    "vocab_size": Limit(1, 1_114_112, "every Unicode code point"),
    "hidden_dim": Limit(1, 16_384, "GPT-3's width is 12,288: wider is not a tiny GPT"),
    "num_layers": Limit(1, 256, "GPT-3 has 96 layers"),
    "num_heads": Limit(1, 1024, "a head needs at least one dimension of the width"),
    "max_seq_len": Limit(1, 65_536, "attention grows with the square of the context"),
    "dropout": Limit(0.0, 0.99, "dropout 1 drops everything"),
    "attn_scale_mult": Limit(0.0, 10_000.0, "beyond this every softmax is one-hot already", above_low=True),
    "window": Limit(1, 65_536, "the longest context"),
    "token_shift": Limit(0, MAX_TOKEN_SHIFT, "a short window, not a second attention"),
    "learning_rate": Limit(0.0, 100.0, "beyond 100 every run diverges at its first step", above_low=True),
    "min_lr": Limit(0.0, 100.0, "at most the learning rate"),
    "warmup_steps": Limit(0, UNTIL_STOPPED, "the longest run"),
    "weight_decay": Limit(0.0, 100.0, "decay above 100 erases the weights every step"),
    "beta1": Limit(0.0, 0.9999, "a momentum of 1 never forgets"),
    "beta2": Limit(0.0, 0.9999, "a second moment of 1 never forgets"),
    "weight_average": Limit(0.0, 0.9999, "an average with a decay of 1 never moves from the first weights"),
    "max_grad_norm": Limit(0.0, 1e6, "0 turns clipping off; no gradient of a tiny GPT is this large"),
    "batch_size": Limit(1, 8192, "sequences per step; memory is checked on top of this"),
    "max_steps": Limit(1, UNTIL_STOPPED, f"{UNTIL_STOPPED:,} steps is 'until stopped'"),
    "eval_interval": Limit(1, UNTIL_STOPPED, "the longest run"),
    "eval_batches": Limit(1, 1000, "each estimate runs this many forward passes (nanoGPT's GPU config: 200)"),
    "seed": Limit(0, 2**63 - 1, "torch seeds are 64-bit"),
    "synthetic_examples": Limit(1, 1_000_000, "a million problems is minutes of generation and ~500 MB"),
    "synthetic_digits": Limit(1, 30, "operands of 30 digits are already far beyond what a tiny GPT learns"),
    "repeat_passages": Limit(0.0, 1.0, "a share of the training windows"),
    "attention_every": Limit(1, UNTIL_STOPPED, "the longest run"),
    "sample_every": Limit(1, UNTIL_STOPPED, "the longest run"),
    "checkpoint_every": Limit(1, UNTIL_STOPPED, "the longest run"),
}
# Limits outside the run's config, for the same doors: sampling and the files a user hands over.
MAX_NEW_TOKENS = 100_000  # characters one sample may generate: minutes on a CPU, more is a hang
MAX_CONFIG_BYTES = 1 << 20  # a config.json is kilobytes (a text corpus lives in corpus.txt beside it)
# Text settings, and the sampling prompt (the model reads its last max_seq_len characters; more is only upload).
MAX_TEXT_FIELDS = {
    "text": MAX_TEXT_CHARS,
    "probe_text": 100_000,
    "zeroed_probes": 10_000,
    "ablated_heads": 10_000,
    "prompt": 100_000,
}


def check_limits(config: object) -> None:
    """ConfigError for the first field of a config dataclass outside its row of LIMITS (numbers) or longer than
    MAX_TEXT_FIELDS allows (text): the one check every door shares."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in LIMITS and isinstance(value, int | float) and not isinstance(value, bool):
            limit = LIMITS[f.name]
            if not (math.isfinite(value) and limit.contains(value)):
                raise ConfigError(f"{f.name} must be {limit.describe()}, got {value!r}: {limit.why}.")
        elif f.name in MAX_TEXT_FIELDS and isinstance(value, str) and len(value) > MAX_TEXT_FIELDS[f.name]:
            raise ConfigError(
                f"{f.name} is {len(value):,} characters long, more than the {MAX_TEXT_FIELDS[f.name]:,} allowed."
            )


class ConfigError(TinyGPTError):
    """A configuration a user asked for cannot work; the message says what to change."""


def parse_heads(text: str) -> set[tuple[int, int]]:
    """{(layer, head)} named by a comma-separated list like "L1H2,L0H0" (spaces and case ignored; "" is none)."""
    heads = set()
    for part in str(text).replace(" ", "").upper().split(","):
        if not part:
            continue
        layer, sep, head = part.removeprefix("L").partition("H")
        if not (part.startswith("L") and sep and layer.isdigit() and head.isdigit()):
            raise ConfigError(f"ablated_heads names heads like L1H2 (layer 1, head 2), comma-separated; got {part!r}.")
        heads.add((int(layer), int(head)))
    return heads


def format_heads(heads) -> str:
    """The canonical ablated_heads text of {(layer, head)}: sorted, "L0H1,L1H2"."""
    return ",".join(f"L{layer}H{head}" for layer, head in sorted(heads))


def _divisors_near(n: int, target: int) -> list[int]:
    """The nearest head counts below and above target that divide n: 2 and 4 for 3 heads at width 64."""
    below = [d for d in range(target - 1, 0, -1) if n % d == 0][:1]
    above = [d for d in range(target + 1, n + 1) if n % d == 0][:1]
    return below + above


def _multiples_near(n: int, k: int) -> list[int]:
    """The multiples of k just below and above n (widths that a head count divides)."""
    below = (n // k) * k
    return [m for m in (below, below + k) if m > 0 and m != n]


@dataclass
class TransformerConfig:
    """The shape of the network and the attention switches the app's sliders drive."""

    vocab_size: int = 65  # Tiny Shakespeare has 65 distinct characters; set from the tokenizer in practice
    hidden_dim: int = 128  # d_model: width of the residual stream (nanoGPT's CPU config)
    num_layers: int = 4  # decoder blocks stacked (nanoGPT's CPU config)
    num_heads: int = 4  # attention heads per block; d_head = hidden_dim / num_heads
    max_seq_len: int = 64  # context length T: position embeddings exist for 0..max_seq_len-1
    dropout: float = 0.0  # 0 for tiny models that underfit; 0.1-0.2 once a model starts to overfit
    # Biases in Linear and LayerNorm. GPT-2 had them; nanoGPT's default and most modern LLMs drop them:
    # no worse at this scale, and measurably faster on CPU.
    bias: bool = False

    # Attention scaling: softmax(q.k * scale). 1/sqrt(d_head) keeps the scores' variance ~1 at init
    # (Vaswani et al. 2017, section 3.2.1). "hidden_dim" is the common bug of dividing by sqrt(d_model);
    # "none" lets the scores grow with d_head and saturates the softmax.
    attn_scale: str = "head_dim"
    attn_scale_mult: float = 1.0  # continuous slider on top of attn_scale: 2.0 doubles every score
    # Which keys each query may see. "causal" is the language-model mask; "none" and "off_by_one"
    # let positions see the future (training loss falls "too well", samples are garbage).
    mask: str = "causal"
    # Keys visible per query under mask="sliding_window" (the query itself included). 8: a band visibly narrower
    # than the causal triangle in the mask panels, which draw the last 16 positions (16 looked exactly causal).
    window: int = 8
    softmax: str = "stable"  # "naive" skips the max subtraction so large scores overflow exp() to inf/NaN
    # Heads switched off, e.g. "L1H2,L0H0": their output is zeroed before the output projection (zero ablation,
    # tinygpt/inside/lens.py), live, so a learner can switch a head off mid-run and watch the model route around it.
    ablated_heads: str = ""  # "" keeps every head on
    # Token shift before the MLP (RWKV's token shift, Peng et al. 2023, reaching back further like the short causal
    # convolutions of Canon layers, Allen-Zhu 2025): each MLP reads its normalised input h_t plus, for each of the
    # `token_shift` positions before it, a learned per-channel share of the difference, h_t + sum_j mu_j (h_{t-j} -
    # h_t), every mu_j (C,) from zero. The MLP then sees the last few characters as well as its own, so it learns
    # which letters follow which from the first steps, before any attention head has learned to look back. 0 = off.
    # On nanoGPT's CPU model, 2 positions reach nanoGPT's val loss in ~40% fewer steps (BENCHMARKS.md, round two).
    token_shift: int = 0
    # Use torch's fused scaled_dot_product_attention on steps that need no attention weights.
    # Only taken where it computes exactly what the explicit path computes (stable softmax).
    fused_attention: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_dim", "num_layers", "num_heads", "max_seq_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive whole number, got {value!r}.")
        if self.hidden_dim % self.num_heads:
            heads = _divisors_near(self.hidden_dim, self.num_heads)
            widths = _multiples_near(self.hidden_dim, self.num_heads)
            raise ConfigError(
                f"hidden_dim {self.hidden_dim} is not divisible by num_heads {self.num_heads}: "
                f"try {' or '.join(map(str, heads))} heads, or hidden_dim {'/'.join(map(str, widths))}."
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}: try 0.0 for a tiny model, 0.2 at most.")
        if self.attn_scale not in ATTN_SCALES:
            raise ConfigError(f"attn_scale must be one of {', '.join(ATTN_SCALES)}; got {self.attn_scale!r}.")
        if not (math.isfinite(self.attn_scale_mult) and self.attn_scale_mult > 0):
            raise ConfigError(f"attn_scale_mult must be a positive number, got {self.attn_scale_mult}: 1.0 is neutral.")
        if self.mask not in MASKS:
            raise ConfigError(f"mask must be one of {', '.join(MASKS)}; got {self.mask!r}.")
        if not isinstance(self.window, int) or self.window < 1:
            raise ConfigError(f"window must be a positive whole number of positions, got {self.window!r}.")
        if self.mask == "sliding_window" and self.window > self.max_seq_len:
            raise ConfigError(
                f"the sliding window ({self.window}) is longer than the context ({self.max_seq_len}): "
                "it would be the causal mask. Pick a window smaller than the context."
            )
        if self.softmax not in SOFTMAXES:
            raise ConfigError(f"softmax must be one of {', '.join(SOFTMAXES)}; got {self.softmax!r}.")
        for layer, head in parse_heads(self.ablated_heads):
            if layer >= self.num_layers or head >= self.num_heads:
                raise ConfigError(
                    f"ablated_heads names L{layer}H{head}, but the model has layers 0-{self.num_layers - 1} and "
                    f"heads 0-{self.num_heads - 1}."
                )
        shift = self.token_shift
        if not isinstance(shift, int) or isinstance(shift, bool) or not 0 <= shift <= MAX_TOKEN_SHIFT:
            raise ConfigError(
                f"token_shift is how many positions back each MLP reads, 0 (off) to {MAX_TOKEN_SHIFT}; got {shift!r}."
            )
        if shift >= self.max_seq_len:
            raise ConfigError(f"token_shift {shift} reaches past the context ({self.max_seq_len}): try 2.")
        check_limits(self)  # the table's range for every number, after the specific hints above

    @property
    def head_dim(self) -> int:
        return self.hidden_dim // self.num_heads

    @property
    def scale(self) -> float:
        """The number every q.k score is multiplied by before the softmax."""
        base = {
            "head_dim": 1.0 / math.sqrt(self.head_dim),
            "hidden_dim": 1.0 / math.sqrt(self.hidden_dim),
            "none": 1.0,
        }[self.attn_scale]
        return base * self.attn_scale_mult

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TransformerConfig:
        return _from_dict(cls, data)


@dataclass
class TrainConfig:
    """How to optimise: AdamW with linear warmup, cosine decay and clipping by global norm."""

    learning_rate: float = 1e-3  # peak LR after warmup; 1e-3 is nanoGPT's for tiny char models
    min_lr: float = 1e-4  # cosine floor, learning_rate / 10 as in Chinchilla and nanoGPT
    warmup_steps: int = 100  # linear ramp from ~0: Adam's second-moment estimates are noisy at first
    weight_decay: float = 0.1  # applied to >= 2-D weights only (not biases, LayerNorm gains)
    beta1: float = 0.9  # momentum: how much of the previous update each step keeps (Adam's default)
    beta2: float = 0.95  # 0.95 (GPT-3) forgets noisy early gradients faster; nanoGPT uses 0.99 for Shakespeare
    max_grad_norm: float = 1.0  # clip the global gradient norm to this; 0 disables clipping
    batch_size: int = 12  # sequences per step (nanoGPT's CPU config)
    max_steps: int = 2000  # optimisation steps in the run; the cosine decay reaches min_lr here
    eval_interval: int = 250  # steps between validation-loss estimates
    eval_batches: int = 20  # batches averaged per estimate (nanoGPT's eval_iters for CPU)
    seed: int = 1337  # weight init, dropout and batch order: the same seed gives the same run
    device: str = "auto"  # auto picks CUDA, then Apple MPS, then CPU
    # "muon": Muon (tinygpt/optim.py) on the blocks' weight matrices, AdamW on embeddings and gains; it reaches a
    # given loss in fewer steps at this scale (BENCHMARKS.md, "Time to quality"). "adamw" everywhere is the classic.
    optimizer: str = "adamw"
    # The training step's matmul precision. "auto": bfloat16 autocast on a CUDA GPU that has it (2-3x the speed,
    # the loss and gradients still in float32), float32 elsewhere (a CPU without bf16 units gains nothing).
    precision: str = "auto"
    # What an eval scores: 0, the trained weights; d in (0, 1), a running average of them, each step moving it
    # (1 - d) of the way to the new weights (Polyak averaging: the average sits nearer the valley's floor).
    weight_average: float = 0.0

    def __post_init__(self) -> None:
        for name in ("learning_rate", "min_lr", "weight_decay", "beta1", "beta2", "max_grad_norm", "weight_average"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value!r}.")
        if self.learning_rate <= 0:
            raise ConfigError(f"learning_rate must be > 0, got {self.learning_rate}: try 1e-3.")
        if self.min_lr < 0 or self.min_lr > self.learning_rate:
            raise ConfigError(
                f"min_lr {self.min_lr} must be between 0 and learning_rate {self.learning_rate}: "
                f"try {self.learning_rate / 10:g}."
            )
        if self.weight_decay < 0:
            raise ConfigError(f"weight_decay must be >= 0, got {self.weight_decay}: try 0.1.")
        for name in ("beta1", "beta2"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {getattr(self, name)}: try 0.9 and 0.95.")
        if self.max_grad_norm < 0:
            raise ConfigError(f"max_grad_norm must be >= 0 (0 disables clipping), got {self.max_grad_norm}.")
        for name in ("batch_size", "max_steps", "eval_interval", "eval_batches"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive whole number, got {value!r}.")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ConfigError(
                f"warmup_steps must be a whole number >= 0 (0 means no warmup), got {self.warmup_steps!r}."
            )
        # torch seeds are 64-bit; a torchrun rank takes seed + rank.
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed < 2**63:
            raise ConfigError(f"seed must be a whole number from 0 to 2**63 - 1, got {self.seed!r}.")
        if self.device not in DEVICES:
            raise ConfigError(f"device must be one of {', '.join(DEVICES)}; got {self.device!r}.")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}; got {self.precision!r}.")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {self.optimizer!r}.")
        check_limits(self)  # the table's range for every number, after the specific hints above

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        return _from_dict(cls, data)


@dataclass
class DataConfig:
    """Which text to train on. `source` is "shakespeare", "synthetic:<task>", or "text" (inline text)."""

    source: str = "shakespeare"  # Tiny Shakespeare, a generated task with exact answers, or your own text
    text: str = ""  # the corpus itself when source == "text" (uploaded or pasted by the user)
    text_sha256: str = ""  # a run folder keeps its text once, in corpus.txt; configs name it by this (store_corpus)
    text_name: str = ""  # an uploaded file's name, a label for the run's name only (the text is its sha256's)
    synthetic_examples: int = 4000  # problems generated for a synthetic task
    synthetic_digits: int = 6  # length of each problem's operand(s)
    # Share of training windows (0-1) in which a random passage of 4 to T/2 characters is said twice in a row: an
    # induction head forms on real text in minutes (issue 23 finding 8; tinygpt/lab/induction.py). Not validation's.
    repeat_passages: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise ConfigError(f"text must be text, got {type(self.text).__name__}.")
        sha = self.text_sha256
        if not isinstance(sha, str) or (sha and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha))):
            raise ConfigError(f"text_sha256 must be a sha256 in hex (64 characters) or empty, got {sha!r}.")
        if not isinstance(self.text_name, str) or len(self.text_name) > MAX_TEXT_NAME or "/" in self.text_name:
            raise ConfigError(f"text_name must be a file name (no '/'), {MAX_TEXT_NAME} characters at most: "
                              f"{self.text_name!r}.")  # fmt: skip
        rp = self.repeat_passages
        if isinstance(rp, bool) or not isinstance(rp, int | float) or not 0.0 <= rp <= 1.0:
            raise ConfigError(f"repeat_passages must be a share between 0 and 1, got {rp!r}: try 0 (off) or 1.")
        for name, value in ((n, getattr(self, n)) for n in ("synthetic_examples", "synthetic_digits")):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a whole number of at least 1, got {value!r}.")
        check_limits(self)  # the table's range for every number, after the specific hints above

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataConfig:
        return _from_dict(cls, data)


# The pitfall lab's switches: not the network's shape or a knob of it, but what the lab does to a built model
# (tinygpt/interventions.py attaches them at its probe points). Until issue 32 they were fields of TransformerConfig,
# so a config.json or checkpoint written before keeps them under "model": `upgrade_config_dict` moves them on read.
INTERVENTION_FIELDS = ("detach_residual", "zeroed_probes", "shape_bug", "shape_contracts")


@dataclass(frozen=True)
class Interventions:
    """The lab's switches a run is defined with: permanent, saved with the run, attached to every model built for it
    (training, resume, branch, sampling, a checkpoint loaded), never live."""

    detach_residual: bool = False  # cut gradients along the residual stream: lower layers stop learning
    # Probe points whose output is replaced by zeros, comma-separated, e.g. "hook_pos": the model without its
    # positional embedding (the pitfall lab's "no positional embedding"). Set when the model is built, not live.
    zeroed_probes: str = ""
    # Shape drift (the pitfall lab): "softmax_dim" sums the softmax's exponentials over the queries, a (B, H, 1, S)
    # tensor where (B, H, T, 1) belongs; T == S in training, so it broadcasts silently. shape_contracts names it.
    shape_bug: str = "none"  # "none", or "softmax_dim": a deliberate silent broadcasting bug in attention
    shape_contracts: bool = False  # check the attention tensors' shapes every forward: a drifted one stops the run

    def __post_init__(self) -> None:
        if not isinstance(self.zeroed_probes, str):
            raise ConfigError(f"zeroed_probes names probe points, comma-separated; got {self.zeroed_probes!r}.")
        if self.shape_bug not in SHAPE_BUGS:
            raise ConfigError(f"shape_bug must be one of {', '.join(SHAPE_BUGS)}; got {self.shape_bug!r}.")
        check_limits(self)  # the table's length for the text, as every config

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Interventions:
        return _from_dict(cls, data)


def upgrade_config_dict(data: Any) -> Any:
    """A run's config dict (config.json, a checkpoint's "config") in today's layout: the lab's switches an older file
    keeps under "model" move to "interventions" (a value already there wins). The one migration, applied where a
    config is read (RunConfig.from_dict, tinygpt.runs.files.read_config_json); a new dict, the input left alone.
    Anything else (not a dict, a "model" that is no object) comes back as it is, for the readers to refuse."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        return data
    section = data.get("interventions", {})
    moved = {name: data["model"][name] for name in INTERVENTION_FIELDS if name in data["model"]}
    if not moved or not isinstance(section, dict):
        return data
    model = {name: value for name, value in data["model"].items() if name not in moved}
    return {**data, "model": model, "interventions": {**moved, **section}}


@dataclass
class RunConfig:
    """Everything one run needs: the model, the optimiser, the data, and how much to publish."""

    model: TransformerConfig = field(default_factory=TransformerConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    data: DataConfig = field(default_factory=DataConfig)
    interventions: Interventions = field(default_factory=Interventions)  # the lab's switches, attached when built
    attention_every: int = 50  # steps between attention snapshots of the probe text
    sample_every: int = 250  # steps between published sample texts
    checkpoint_every: int = 500  # steps between safetensors checkpoints (also at pause/stop/finish)
    probe_text: str = ""  # fixed text whose attention is captured; "" means the start of the val split

    def __post_init__(self) -> None:
        for name in ("attention_every", "sample_every", "checkpoint_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive whole number of steps, got {value!r}.")
        if not isinstance(self.probe_text, str):
            raise ConfigError(f"probe_text must be text, got {self.probe_text!r}.")
        check_limits(self)  # the table's range for every number, after the specific hints above

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.to_dict(),
            "train": self.train.to_dict(),
            "data": self.data.to_dict(),
            "interventions": self.interventions.to_dict(),
            "attention_every": self.attention_every,
            "sample_every": self.sample_every,
            "checkpoint_every": self.checkpoint_every,
            "probe_text": self.probe_text,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        data = upgrade_config_dict(data)
        rest = {k: v for k, v in data.items() if k not in SECTIONS} if isinstance(data, dict) else data
        base = _from_dict(cls, rest)
        for name, section in SECTIONS.items():
            setattr(base, name, section.from_dict(data.get(name, {})))
        return base


def _from_dict(cls, data: dict[str, Any]):
    """Build a config dataclass from a dict, naming unknown keys instead of failing with a TypeError."""
    if not isinstance(data, dict):
        raise ConfigError(f"{cls.__name__} expects a JSON object, got {type(data).__name__}.")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} field(s): {', '.join(unknown)}. Known: {', '.join(sorted(names))}.")
    return cls(**data)


def trains_until_stopped(max_steps: Any) -> bool:
    """True for a run that has no planned end (max_steps >= UNTIL_STOPPED)."""
    return isinstance(max_steps, (int, float)) and not isinstance(max_steps, bool) and max_steps >= UNTIL_STOPPED


RUN_FIELDS = ("attention_every", "sample_every", "checkpoint_every", "probe_text")
# RunConfig's parts, by their key in config.json: where each setting of a run lives (presets.setting_section).
SECTIONS = {"model": TransformerConfig, "train": TrainConfig, "data": DataConfig, "interventions": Interventions}
