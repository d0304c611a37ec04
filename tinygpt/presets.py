"""Presets: named configurations for the app's Train page and the CLI's --preset, each with a note on what it
is for, and `preset()`, the one place that turns settings by name into a RunConfig (with the policy for values
nobody set: min_lr follows the learning rate, a short run still gets evals and checkpoints).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .config import (
    RUN_FIELDS,
    SECTIONS,
    UNTIL_STOPPED,
    ConfigError,
    DataConfig,
    Interventions,
    RunConfig,
    TrainConfig,
    TransformerConfig,
)

# Presets shared by the app's Train page and the CLI's --preset flag.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    # A few seconds on a laptop CPU: enough to watch loss fall and heads start to form.
    "demo": {
        "model": dict(hidden_dim=64, num_layers=2, num_heads=4, max_seq_len=32),
        "train": dict(
            batch_size=16,
            max_steps=300,
            warmup_steps=30,
            eval_interval=50,
            eval_batches=5,
            learning_rate=2e-3,
        ),
        "run": dict(attention_every=10, sample_every=50, checkpoint_every=100),
    },
    # For teaching live: trains until stopped at a constant learning rate after its warmup (min_lr = the peak, so
    # "until stopped" has no cosine to run out of), sized so every live knob moves the loss within seconds on a
    # 2-core laptop (BENCHMARKS.md, "Live teaching: the Lecture preset"). Why each value: PRESET_NOTES["lecture"].
    "lecture": {
        "model": dict(hidden_dim=128, num_layers=2, num_heads=1, max_seq_len=16),
        "train": dict(
            batch_size=32,
            max_steps=UNTIL_STOPPED,
            warmup_steps=50,
            eval_interval=100,
            eval_batches=5,
            learning_rate=3e-3,
            min_lr=3e-3,
        ),
        "run": dict(attention_every=10, sample_every=100, checkpoint_every=500),
    },
    # nanoGPT's README CPU configuration for shakespeare_char: val loss ~1.88 after 2000 steps.
    "nanogpt-cpu": {
        "model": dict(hidden_dim=128, num_layers=4, num_heads=4, max_seq_len=64),
        "train": dict(
            batch_size=12,
            max_steps=2000,
            warmup_steps=100,
            learning_rate=1e-3,
            beta2=0.99,
            eval_interval=250,
            eval_batches=20,
        ),
        "run": dict(attention_every=50, sample_every=250, checkpoint_every=500),
    },
    # The CPU speedrun: nanoGPT's CPU model, data and batch, trained to nanoGPT's val loss in a quarter of its wall
    # time (BENCHMARKS.md, "Time to quality, round two"). The levers are in PRESET_NOTES["fast"].
    "fast": {
        "model": dict(hidden_dim=128, num_layers=4, num_heads=4, max_seq_len=64, token_shift=2),
        "train": dict(
            batch_size=12,
            max_steps=350,
            warmup_steps=25,
            learning_rate=1e-2,
            beta2=0.99,
            optimizer="muon",
            weight_average=0.95,
            eval_interval=50,
            eval_batches=20,
        ),
        "run": dict(attention_every=25, sample_every=100, checkpoint_every=200),
    },
    # The Fast recipe stretched to a 2000-step cosine: val <= 1.70 within three minutes of wall time on 2 CPU cores
    # (BENCHMARKS.md, "Time to quality, round two"). Fewer evals and snapshots a step than Fast: the run is longer.
    "fast-3min": {
        "model": dict(hidden_dim=128, num_layers=4, num_heads=4, max_seq_len=64, token_shift=2),
        "train": dict(
            batch_size=12,
            max_steps=2000,
            warmup_steps=50,
            learning_rate=6e-3,
            beta2=0.99,
            optimizer="muon",
            eval_interval=100,
            eval_batches=20,
        ),
        "run": dict(attention_every=50, sample_every=250, checkpoint_every=500),
    },
    # nanoGPT's shakespeare_char GPU configuration: val loss ~1.47 in minutes on one A100.
    "gpu": {
        "model": dict(hidden_dim=384, num_layers=6, num_heads=6, max_seq_len=256, dropout=0.2),
        "train": dict(
            batch_size=64,
            max_steps=5000,
            warmup_steps=100,
            learning_rate=1e-3,
            beta2=0.99,
            eval_interval=250,
            eval_batches=200,
        ),
        "run": dict(attention_every=100, sample_every=500, checkpoint_every=1000),
    },
}


# What each preset is for and why it has its values: the app shows it under the preset select, the CLI in --help.
PRESET_NOTES: dict[str, str] = {
    "demo": "A 2-layer, 64-wide model on short contexts: a few seconds on a laptop CPU, enough to watch the loss "
    "fall and heads start to form.",
    "lecture": "Trains until you press Stop, at a constant learning rate after a 50-step warmup, so a live knob can "
    "be turned at any time. Measured on a shared 2-core CPU (BENCHMARKS.md, Live teaching), knobs turned at step "
    "1500: mask none drops the loss from ~1.9 toward 0.2 (it copies the next character; visible after ~70 steps, "
    "a few seconds) and causal again sends it to 3-5 at once; learning rate x10 lifts it ~0.5 at once; a sliding "
    "window of 1 lifts it ~0.9 (one character of context); switching attention scaling off multiplies every score "
    "by sqrt(128) = 11 (one head of 128 dimensions) and lifts it ~0.4 at once, ~0.2 a hundred steps later. Lowering "
    "the rate 10x, or a warmup longer than the run so far (the rate drops to step/warmup of the peak), moves it only "
    "~0.1 down in 100 steps: watch the learning-rate chart. Context 16, batch 32: short steps. Demo is the quick "
    "first look.",
    "nanogpt-cpu": "nanoGPT's README CPU recipe (4 layers, 4 heads, width 128, context 64, batch 12, AdamW at "
    "lr 1e-3, 2000 steps): val loss ~1.9 on Tiny Shakespeare. The yardstick the Fast preset races.",
    "fast": "The same model, data and batch as nanoGPT CPU, built to reach the same val loss in a quarter of the "
    "wall time. Four levers: (1) Muon on the blocks' weight matrices: it orthogonalizes each update, so every "
    "direction of a matrix learns at the same rate instead of the few that dominate the gradient. (2) Token shift "
    "2: each MLP also reads the two characters before its own, so which letters follow which is learned from the "
    "first steps instead of waiting for an attention head to learn to look back. (3) A 10x higher peak learning "
    "rate (1e-2), a 25-step warmup and a 350-step cosine. (4) The evals score a running average of the weights (each "
    "step moves it 5% of the way to the new weights): at so high a rate the weights bounce across the valley, and "
    "their average sits nearer its floor. Embeddings, the tied head and the gains stay on AdamW. Measured on Tiny "
    "Shakespeare on a 2-core CPU, 5 seeds (BENCHMARKS.md, Time to quality, round three): nanoGPT CPU's step-2000 val "
    "loss in about 200-230 steps instead of 2000; not measured on other texts. Train both and compare them on Runs (wall-clock axis) to see it here.",
    "fast-3min": "The Fast recipe (Muon, token shift 2, lr 6e-3) on a 2000-step cosine instead of 350: it keeps "
    "learning where Fast stops, to val ~1.70 (the text starts to look like words in verse) well within three "
    "minutes on a 2-core CPU.",
    "gpu": "nanoGPT's baby GPT for a GPU (6 layers, 6 heads, width 384, context 256, batch 64, dropout 0.2): val "
    "loss ~1.47 in minutes on one A100. Far too slow for a CPU.",
}


assert set(PRESET_NOTES) == set(PRESETS)

MIN_LR_DIVISOR = 10  # the cosine floor follows the peak: min_lr = learning_rate / 10, as in nanoGPT and Chinchilla
SHORT_RUN_EVALS = 4  # a short run still gets at least this many eval points ...
SHORT_RUN_CHECKPOINTS = 3  # ... and this many checkpoints to look at, unless the interval was set explicitly


def setting_section(name: str) -> str:
    """Which part of a RunConfig a setting belongs to: "model", "train", "data", "interventions" or "run"
    (ConfigError if none)."""
    for section, cls in SECTIONS.items():
        if name in {f.name for f in dataclasses.fields(cls)}:
            return section
    if name in RUN_FIELDS:
        return "run"
    raise ConfigError(f"unknown setting {name!r}.")


def preset(name: str, **overrides: Any) -> RunConfig:
    """A RunConfig from a named preset and settings by field name (of any of the configs): the one place that
    turns settings into a config, for the app, the CLI and the experiments alike.

    The policy for values nobody set explicitly lives here too, so every caller gets the same config:
    `min_lr` follows `learning_rate` (at the preset's own ratio if it sets min_lr, e.g. 1 for the Lecture's constant
    rate, else MIN_LR_DIVISOR), and a short run's eval and checkpoint intervals shrink so it
    still gets SHORT_RUN_EVALS evals and SHORT_RUN_CHECKPOINTS checkpoints. An explicit value always wins.
    Cross-field checks (heads divide the width, a sliding window fits the context, ...) are the dataclasses'.
    """
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}.")
    spec = PRESETS[name]
    parts: dict[str, dict[str, Any]] = {
        "model": dict(spec["model"]),
        "train": dict(spec["train"]),
        "data": {},
        "interventions": {},
        "run": dict(spec["run"]),
    }
    for key, value in overrides.items():
        try:
            parts[setting_section(key)][key] = value
        except ConfigError:
            raise ConfigError(f"unknown setting {key!r} for preset {name!r}.") from None
    train, run = parts["train"], parts["run"]
    defaults = TrainConfig()
    if "min_lr" not in overrides:
        lr = train.get("learning_rate", defaults.learning_rate)
        own = spec["train"]
        peak = own.get("learning_rate", defaults.learning_rate)
        divisor = peak / own["min_lr"] if own.get("min_lr") else MIN_LR_DIVISOR
        if isinstance(lr, (int, float)) and not isinstance(lr, bool):
            train["min_lr"] = float(f"{lr / divisor:.12g}")  # 6e-4, not 0.0006000000000000001
    max_steps = train.get("max_steps", defaults.max_steps)
    if isinstance(max_steps, int) and not isinstance(max_steps, bool) and max_steps >= 1:
        if "eval_interval" not in overrides:
            interval = train.get("eval_interval", defaults.eval_interval)
            train["eval_interval"] = max(1, min(interval, max_steps // SHORT_RUN_EVALS))
        if "checkpoint_every" not in overrides:
            run["checkpoint_every"] = max(1, min(run["checkpoint_every"], max_steps // SHORT_RUN_CHECKPOINTS))
    return RunConfig(
        model=TransformerConfig(**parts["model"]),
        train=TrainConfig(**train),
        data=DataConfig(**parts["data"]),
        interventions=Interventions(**parts["interventions"]),
        **run,
    )
