"""Every speedrun lever can be built and takes a training step: its settings make a valid config, its patch applies
to a Trainer and the step that follows is finite. (The levers' results are measurements, in BENCHMARKS.md; this
only keeps `python -m tinygpt.bench.levers` runnable as the code under it changes.)"""

import math

import pytest
import torch

from tinygpt.bench.levers import LEVERS
from tinygpt.data import Corpus
from tinygpt.model import TinyGPT
from tinygpt.presets import preset
from tinygpt.trainer import Trainer

CORPUS = Corpus.from_text("the quick brown fox jumps over the lazy dog. " * 40, 64, name="fox")


@pytest.mark.parametrize("name", [n for n in LEVERS if not LEVERS[n].compile])  # compile: tens of seconds
def test_every_lever_builds_and_steps(name):
    lever = LEVERS[name]
    config = preset("fast", **lever.settings)
    config.model.vocab_size = CORPUS.tokenizer.vocab_size
    torch.manual_seed(0)
    trainer = Trainer(TinyGPT(config.model), config.train, CORPUS)
    if lever.patch:
        lever.patch(trainer)
    record = trainer.step()
    assert record["applied"] and math.isfinite(record["loss"])
    assert set(record["layer_grad_norms"]) == set(trainer.groups)


def test_a_shift_lever_is_the_models_token_shift():
    assert LEVERS["shift2_350_lr0.008"].settings == {"token_shift": 2, "max_steps": 350, "learning_rate": 8e-3}
    fast = preset("fast")  # round three: at lr 1e-2 with a 25-step warmup, the evals scoring the weights' average
    assert (fast.model.token_shift, fast.train.max_steps, fast.train.learning_rate) == (2, 350, 1e-2)
    assert (fast.train.warmup_steps, fast.train.weight_average) == (25, 0.95)
    assert LEVERS["fast_ema0.95_lr0.01_warmup_steps25"].settings == {"learning_rate": 1e-2, "warmup_steps": 25}
