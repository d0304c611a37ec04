"""Each pitfall experiment's measurable claim, on tiny models and a few hundred CPU steps at most."""

import random

import pytest
import torch

from tinygpt.config import TrainConfig, TransformerConfig
from tinygpt.data import Corpus
from tinygpt.experiments import EXPERIMENTS, RunResult, attention_stats, memory_rows, shape_drift_cases
from tinygpt.health import leak_score, loss_trend_check, run_health_checks
from tinygpt.model import TinyGPT
from tinygpt.trainer import Trainer


@pytest.fixture(scope="module")
def random_text() -> str:
    """Characters drawn at random: nothing to learn from the past, everything to gain from peeking ahead."""
    rng = random.Random(7)
    return "".join(rng.choice("abcdefghij") for _ in range(4000))


def train(text, steps, seed=0, train_kw=None, **model_kw):
    corpus = Corpus.from_text(text, block_size=32)
    torch.manual_seed(seed)
    base = dict(vocab_size=corpus.tokenizer.vocab_size, hidden_dim=32, num_layers=2, num_heads=2, max_seq_len=32)
    model = TinyGPT(TransformerConfig(**{**base, **model_kw}))
    config = TrainConfig(
        **{
            "batch_size": 8,
            "max_steps": steps,
            "warmup_steps": 10,
            "learning_rate": 3e-3,
            "min_lr": 3e-4,
            **(train_kw or {}),
        }
    )
    trainer = Trainer(model, config, corpus)
    records = [trainer.step() for _ in range(steps)]
    return trainer, records


def probe_attention(trainer):
    idx = torch.tensor([trainer.corpus.tokenizer.encode(trainer.corpus.probe_text(32))])
    with torch.no_grad():
        _, maps = trainer.model(idx, return_attention=True)
    return torch.stack(maps)[:, 0]  # (L, H, T, T)


def test_no_scaling_gives_lower_attention_entropy(tiny_text):
    entropy = {}
    for scale in ("head_dim", "none"):
        trainer, _ = train(tiny_text, 100, hidden_dim=64, num_layers=1, num_heads=1, attn_scale=scale)
        entropy[scale], _ = attention_stats(probe_attention(trainer))
    assert entropy["none"] < entropy["head_dim"]


def test_off_by_one_cheats_and_only_leaky_masks_leak(random_text):
    final, leaks = {}, {}
    for mask in ("causal", "off_by_one", "none"):
        trainer, records = train(random_text, 120, num_layers=1, mask=mask)
        final[mask] = sum(r["loss"] for r in records[-20:]) / 20
        x, _ = trainer.corpus.get_batch("val", 2, torch.Generator().manual_seed(0))
        leaks[mask] = leak_score(trainer.model, x)
    assert final["off_by_one"] < final["causal"] - 0.3  # it reads the answer; causal cannot beat ln(10) here
    assert leaks["causal"] == 0.0
    assert leaks["off_by_one"] > 1e-3 and leaks["none"] > 1e-3


def test_naive_softmax_run_is_paused_as_diverged_with_the_step_recorded(tmp_runs, tiny_text):
    from tinygpt.config import DataConfig, RunConfig
    from tinygpt.loop import run_training
    from tinygpt.runstore import RunReader, RunStore

    config = RunConfig(
        model=TransformerConfig(
            hidden_dim=32,
            num_layers=1,
            num_heads=1,
            max_seq_len=16,
            attn_scale="none",
            attn_scale_mult=50.0,
            softmax="naive",
        ),
        train=TrainConfig(batch_size=4, max_steps=100, warmup_steps=0, learning_rate=1e-2, eval_interval=50),
        data=DataConfig(source="text", text=tiny_text),
        attention_every=10,
        sample_every=1000,
        checkpoint_every=1000,
    )
    store = RunStore(tmp_runs)
    with store.create(config.to_dict(), owner="app") as writer:
        run_dir = writer.run_dir
    state = run_training(run_dir, config)
    assert state == "diverged"
    reader = RunReader(run_dir)
    reader.poll()
    status = reader.status()
    assert status["state"] == "diverged" and status["step"] >= 1
    nonfinite = [e for e in reader.events if e["kind"] == "nonfinite"]
    assert nonfinite and "step" in nonfinite[0] and "hook_weights" in nonfinite[0]["message"]


def test_detached_residual_first_layer_gradient_is_near_zero(tiny_text):
    norms = {}
    for detach in (False, True):
        _, records = train(tiny_text, 20, num_layers=4, detach_residual=detach)
        norms[detach] = sum(r["layer_grad_norms"]["L0.attn"] for r in records[-5:]) / 5
    assert norms[True] < 1e-2 * norms[False]


def test_every_experiment_builds_its_configs_and_a_verdict():
    for experiment in EXPERIMENTS.values():
        configs = experiment.configs(source="synthetic:copy")
        assert len(configs) >= 2
        labels = list(configs)
        changed = {
            k for k, v in configs[labels[0]].to_dict()["model"].items() if v != configs[labels[1]].to_dict()["model"][k]
        }
        changed |= {
            k for k, v in configs[labels[0]].to_dict()["train"].items() if v != configs[labels[1]].to_dict()["train"][k]
        }
        assert len(changed) == 1, (experiment.key, changed)  # one setting apart
        fake = {
            label: RunResult(
                "finished",
                300,
                2.0 - i * 0.1,
                2.1,
                3.0,
                i,
                1.5 - i * 0.5,
                0.5 + i * 0.1,
                {"L0.attn": 0.1 / (i + 1), "L1.attn": 0.2},
                leak=0.0 if i == 0 else 0.4,
                diverged_step=12 if i else None,
                sample="abc",
            )
            for i, label in enumerate(configs)
        }
        text = experiment.verdict(fake)
        assert isinstance(text, str) and len(text) > 20


def test_shape_drift_shows_both_messages():
    model = TinyGPT(TransformerConfig(vocab_size=10, hidden_dim=16, num_layers=1, num_heads=2, max_seq_len=8))
    rows = shape_drift_cases(model)
    assert len(rows) == 4
    assert all(row["with contract"].startswith("ShapeError: idx") for row in rows)
    assert "max_seq_len=8" in rows[1]["with contract"]
    assert not any(row["without contract"].startswith("ShapeError") for row in rows)


def test_memory_rows_grow_with_the_square_of_the_context():
    small = {r["category"]: r["bytes"] for r in memory_rows(TransformerConfig(max_seq_len=64), 12, measure=False)}
    large = {r["category"]: r["bytes"] for r in memory_rows(TransformerConfig(max_seq_len=128), 12, measure=False)}
    assert large["attention (T²)"] == 4 * small["attention (T²)"]
    assert large["optimizer state (AdamW m, v)"] > small["optimizer state (AdamW m, v)"]  # position table grows


def test_health_checks_pass_on_a_correct_model_and_flag_a_leaky_one(tiny_text):
    trainer, records = train(tiny_text, 30)
    x, y = trainer.corpus.get_batch("val", 2, torch.Generator().manual_seed(0))
    checks = {c.name: c for c in run_health_checks(trainer.model, x, y, records, 1.0)}
    assert checks["attention rows sum to 1"].passed
    assert checks["no future leak"].passed and checks["no future leak"].value == 0.0
    assert checks["gradients reach every parameter"].passed
    assert checks["initial loss close to ln(vocab)"].passed
    assert checks["shape contracts"].passed
    trainer.model.config.mask = "off_by_one"
    leaky = {c.name: c for c in run_health_checks(trainer.model, x, y)}
    assert not leaky["no future leak"].passed


def test_loss_trend_detects_divergence_and_plateau():
    assert loss_trend_check([3.0 - 0.01 * i for i in range(40)]).passed
    assert not loss_trend_check([1.0 + 0.05 * i for i in range(40)]).passed
    assert "plateau" in loss_trend_check([2.0] * 40).detail
