"""A run's model back from its folder: the newest (or a given) complete checkpoint with its tokenizer and config
(`load_model`), and the run's data config with its corpus text restored from corpus.txt (`run_data`). The one way
pages, the CLI and the lab get a run's model for sampling or probing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from ..checkpoint import Checkpoint, load_checkpoint
from ..config import DataConfig, RunConfig
from ..errors import CheckpointError
from ..model import TinyGPT
from ..tokenizer import CharTokenizer
from .corpus import read_corpus
from .files import checkpoint_stem, list_checkpoints
from .resume import LATEST


@dataclass
class LoadedModel:
    """A run's model at one checkpoint, ready to sample or probe."""

    model: TinyGPT  # in eval mode (no dropout), on the device asked for
    tokenizer: CharTokenizer  # of the checkpoint's vocabulary, which is what the model was trained on
    config: RunConfig  # as saved with the checkpoint: live knob changes up to that step included
    step: int


def load_model(run_dir: str | Path, step: int | None = None, device: torch.device | str = "cpu") -> LoadedModel:
    """The model of a run's checkpoint at `step` (None: the newest complete one), weights only.

    Raises CheckpointError when the run has no complete checkpoint, or none at `step` (the message lists those
    it has: older ones are thinned out as a run goes on), or when the files are damaged.
    """
    run_dir = Path(run_dir)
    steps = list_checkpoints(run_dir)
    if not steps:
        raise CheckpointError(f"run {run_dir.name} has no checkpoint yet: train it longer or pick another run.")
    if step is None:
        step = steps[-1]
    elif step not in steps:
        raise CheckpointError(f"run {run_dir.name} has no checkpoint at step {step}; it has {steps}.")
    ckpt = load_checkpoint(checkpoint_stem(run_dir, step))  # on the CPU: the optimizer moments stay there
    if ckpt.config.model.vocab_size != len(ckpt.vocab):  # a config saved before the tokenizer set vocab_size
        ckpt.config.model = dataclasses.replace(ckpt.config.model, vocab_size=len(ckpt.vocab))
    model = ckpt.build_model(device).eval()
    return LoadedModel(model=model, tokenizer=CharTokenizer(ckpt.vocab), config=ckpt.config, step=ckpt.step)


def run_data(run_dir: str | Path, config: RunConfig) -> DataConfig:
    """The data config a run trains on, its text back in place: a "text" run's config (config.json and every
    checkpoint's) names its corpus by sha256 only, the text being the run folder's corpus.txt (runs.corpus.read_corpus,
    which checks the hash; RunStoreError if the file is missing or was edited). Every path that reloads a run to
    build its corpus (the lab's probes and health checks, the circuits' ablations) goes through here: a bare
    load_corpus(loaded.config.data) failed on any such run with "the text is empty"."""
    data = config.data
    if data.source == "text" and not data.text:
        data = dataclasses.replace(data, text=read_corpus(run_dir, data.text_sha256 or None))
    return data


def pick_checkpoint(run_dir: Path, resume_from: int | None) -> tuple[Checkpoint | None, list[tuple[int, str]]]:
    """The checkpoint a run continues from, and the newer ones skipped as damaged [(step, why)].

    LATEST takes the newest checkpoint that loads: a truncated or replaced newest one (a kill mid-copy, a full
    disk) leaves the run resumable from the one before. An explicit step must load, or CheckpointError says
    which steps there are."""
    if resume_from is None:
        return None, []
    name = run_dir.name
    steps = list_checkpoints(run_dir)
    if not steps:
        raise CheckpointError(f"run {name} has no checkpoint to resume from: start a new run.")
    if resume_from != LATEST:
        if resume_from not in steps:
            raise CheckpointError(f"run {name} has no checkpoint at step {resume_from}; it has {steps}.")
        return load_checkpoint(checkpoint_stem(run_dir, resume_from)), []
    damaged: list[tuple[int, str]] = []
    for step in reversed(steps):
        try:
            return load_checkpoint(checkpoint_stem(run_dir, step)), damaged
        except CheckpointError as exc:
            damaged.append((step, str(exc)))
    raise CheckpointError(f"none of run {name}'s checkpoints {steps} can be loaded ({damaged[0][1]}): start a new run.")
