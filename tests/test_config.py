"""Config validation: every bad setting names itself and says what to change."""

import math

import pytest

from tinygpt.config import (
    INTERVENTION_FIELDS,
    ConfigError,
    DataConfig,
    Interventions,
    RunConfig,
    TrainConfig,
    TransformerConfig,
    upgrade_config_dict,
)
from tinygpt.errors import TinyGPTError
from tinygpt.presets import PRESETS, preset


def test_heads_must_divide_width_and_the_message_suggests_fixes():
    with pytest.raises(ConfigError) as info:
        TransformerConfig(hidden_dim=100, num_heads=8)
    message = str(info.value)
    assert "hidden_dim 100 is not divisible by num_heads 8" in message
    assert "5 or 10 heads" in message  # the nearest head counts below and above 8 that divide 100
    with pytest.raises(ConfigError, match="try 2 or 4 heads"):  # not "1 or 2", which left out 4
        TransformerConfig(hidden_dim=64, num_heads=3)
    assert "96/104" in message


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"num_layers": 0}, "num_layers must be a positive"),
        ({"max_seq_len": -1}, "max_seq_len must be a positive"),
        ({"dropout": 1.0}, "dropout must be in [0, 1)"),
        ({"attn_scale": "sqrt"}, "attn_scale must be one of head_dim, hidden_dim, none"),
        ({"attn_scale_mult": 0.0}, "attn_scale_mult must be a positive"),
        ({"mask": "future"}, "mask must be one of causal, none, off_by_one, sliding_window"),
        ({"window": 0}, "window must be a positive"),
        ({"softmax": "fast"}, "softmax must be one of stable, naive"),
    ],
)
def test_transformer_config_rejects(kwargs, fragment):
    with pytest.raises(ConfigError, match=None) as info:
        TransformerConfig(**kwargs)
    assert fragment in str(info.value)
    assert isinstance(info.value, TinyGPTError)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"learning_rate": 0}, "learning_rate must be > 0"),
        ({"min_lr": 1.0}, "min_lr 1.0 must be between 0 and learning_rate"),
        ({"beta2": 1.0}, "beta2 must be in [0, 1)"),
        ({"max_grad_norm": -1}, "max_grad_norm must be >= 0"),
        ({"batch_size": 0}, "batch_size must be a positive"),
        ({"warmup_steps": -5}, "warmup_steps must be a whole number >= 0"),
        ({"device": "tpu"}, "device must be one of auto, cpu, cuda, mps"),
        ({"learning_rate": float("nan")}, "learning_rate must be a finite number"),
    ],
)
def test_train_config_rejects(kwargs, fragment):
    with pytest.raises(ConfigError) as info:
        TrainConfig(**kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "mode, expected",
    [("head_dim", 1 / math.sqrt(32)), ("hidden_dim", 1 / math.sqrt(128)), ("none", 1.0)],
)
def test_each_scale_mode_gives_its_documented_scale(mode, expected):
    config = TransformerConfig(hidden_dim=128, num_heads=4, attn_scale=mode)
    assert config.scale == pytest.approx(expected)
    doubled = TransformerConfig(hidden_dim=128, num_heads=4, attn_scale=mode, attn_scale_mult=2.0)
    assert doubled.scale == pytest.approx(2 * expected)


def test_run_config_round_trips_through_a_dict():
    config = preset("demo", num_heads=2, learning_rate=3e-3, source="synthetic:add")
    again = RunConfig.from_dict(config.to_dict())
    assert again == config
    assert again.model.num_heads == 2 and again.train.learning_rate == 3e-3
    assert again.data == DataConfig(source="synthetic:add")


def test_unknown_keys_are_named():
    with pytest.raises(ConfigError, match="unknown TransformerConfig field"):
        TransformerConfig.from_dict({"n_head": 4})


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds(name):
    config = preset(name)
    assert config.model.hidden_dim % config.model.num_heads == 0


def test_unknown_preset_and_setting():
    with pytest.raises(ConfigError, match="unknown preset"):
        preset("huge")
    with pytest.raises(ConfigError, match="unknown setting"):
        preset("demo", colour="red")


def test_lecture_preset_trains_until_stopped_at_a_constant_rate():
    """Issue 20 finding 7: the Demo preset ends after 300 steps, so every live demo started by raising Max steps by
    hand. The Lecture preset has no planned end and no cosine to run out of: after its warmup the rate is the peak
    at any step, also when the learner picks another learning rate before pressing Train."""
    from tinygpt.config import UNTIL_STOPPED, trains_until_stopped
    from tinygpt.schedule import lr_at

    config = preset("lecture")
    train = config.train
    assert train.max_steps >= UNTIL_STOPPED and trains_until_stopped(train.max_steps)
    assert not trains_until_stopped(preset("demo").train.max_steps)
    assert train.warmup_steps > 0 and train.min_lr == train.learning_rate
    for step in (train.warmup_steps, 10_000, 500_000):
        assert (
            lr_at(step, train.learning_rate, train.min_lr, train.warmup_steps, train.max_steps) == train.learning_rate
        )
    assert lr_at(0, train.learning_rate, train.min_lr, train.warmup_steps, train.max_steps) < train.learning_rate
    other = preset("lecture", learning_rate=1e-3).train
    assert other.min_lr == other.learning_rate == 1e-3  # the floor follows the peak at the preset's own ratio, 1
    assert preset("demo", learning_rate=1e-3).train.min_lr == 1e-4  # the other presets keep their cosine to lr/10
    assert preset("lecture", min_lr=1e-4).train.min_lr == 1e-4  # an explicit floor still wins
    # A short run's derived intervals are not shrunk against a million steps, and the scaling knob has a head
    # wide enough to saturate (d_head 128: turning 1/sqrt(d_head) off multiplies every score by ~11).
    assert config.train.eval_interval <= 200 and config.checkpoint_every <= 1000
    assert config.model.head_dim >= 128


# config.json's "model" section as the code before issue 32 wrote it (the demo preset shrunk, two lab switches on).
MODEL_BEFORE_ISSUE_32 = {
    "vocab_size": 65, "hidden_dim": 32, "num_layers": 2, "num_heads": 2, "max_seq_len": 16, "dropout": 0.0,
    "bias": False, "attn_scale": "head_dim", "attn_scale_mult": 1.0, "mask": "causal", "window": 8,
    "softmax": "stable", "detach_residual": True, "ablated_heads": "", "zeroed_probes": "hook_pos",
    "shape_bug": "none", "shape_contracts": False, "token_shift": 0, "fused_attention": True,
}  # fmt: skip


def test_a_config_written_before_the_lab_switches_moved_reads_with_them_in_their_own_section():
    old = {"model": MODEL_BEFORE_ISSUE_32, "train": {"max_steps": 10}, "data": {}, "checkpoint_every": 3}
    config = RunConfig.from_dict(old)
    assert config.interventions == Interventions(detach_residual=True, zeroed_probes="hook_pos")
    assert config.model == TransformerConfig(vocab_size=65, hidden_dim=32, num_layers=2, num_heads=2, max_seq_len=16)
    assert RunConfig.from_dict(config.to_dict()) == config  # today's layout round-trips
    assert set(config.to_dict()["interventions"]) == set(INTERVENTION_FIELDS)
    upgraded = upgrade_config_dict(old)
    assert upgraded["interventions"] == {
        "detach_residual": True, "zeroed_probes": "hook_pos", "shape_bug": "none", "shape_contracts": False
    }  # fmt: skip
    assert old["model"] is MODEL_BEFORE_ISSUE_32 and "shape_bug" in old["model"]  # the input is left alone
    assert upgrade_config_dict(upgraded) == upgraded  # today's layout passes through
    # A value already in the section wins over an older one left under "model"; damage is left to the readers.
    mixed = {**old, "interventions": {"detach_residual": False}}
    assert RunConfig.from_dict(mixed).interventions.detach_residual is False
    assert upgrade_config_dict({"model": "many"}) == {"model": "many"}
    with pytest.raises(ConfigError, match="shape_bug must be one of"):
        RunConfig.from_dict({"model": {"shape_bug": "softmax"}})
