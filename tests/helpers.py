"""Plain helpers shared by test modules (fixtures live in conftest.py): tiny run configs and a subprocess env."""

from __future__ import annotations

import os
from pathlib import Path

from tinygpt.config import RunConfig, preset

REPO = Path(__file__).resolve().parent.parent


def tiny_config(text: str, **overrides) -> RunConfig:
    """The demo preset shrunk to seconds on CPU, training on `text`: 20 steps that publish everything."""
    settings = dict(
        source="text",
        text=text,
        hidden_dim=32,
        num_layers=2,
        num_heads=2,
        max_seq_len=16,
        batch_size=4,
        max_steps=20,
        warmup_steps=2,
        eval_interval=10,
        eval_batches=2,
        attention_every=5,
        sample_every=10,
        checkpoint_every=10,
        device="cpu",
    )
    settings.update(overrides)
    return preset("demo", **settings)


def cli_env() -> dict[str, str]:
    """The environment for `python -m tinygpt ...` in a subprocess: this checkout importable, one torch thread."""
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
