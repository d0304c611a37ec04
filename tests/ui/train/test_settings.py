"""The Train form as data (tinygpt/ui/train/settings.py): one table of fields, and the same config through the app's
path and the CLI's path."""

from __future__ import annotations

import pytest

from tinygpt.cli import flags as cli_flags
from tinygpt.config import ConfigError, DataConfig
from tinygpt.ui.train import settings


def cli_config(preset: str, values: dict, source: str):
    flags = ["train", "--preset", preset, "--source", source]
    for name, value in values.items():
        flags += ["--" + name.replace("_", "-"), str(value)]
    return cli_flags.config_from_args(cli_flags.build_parser().parse_args(flags))


SAMPLES = [
    {},
    {"learning_rate": 1e-4, "max_steps": 5},  # the CLI used to refuse this (min_lr 2e-4 > lr)
    {"num_heads": 2, "hidden_dim": 48, "max_steps": 40, "warmup_steps": 0},
    {"mask": "sliding_window", "window": 8, "max_seq_len": 16, "attn_scale": "none", "attn_scale_mult": 2.5},
    {"max_grad_norm": 0.0, "dropout": 0.1, "seed": 7, "batch_size": 3, "num_layers": 1},
]


@pytest.mark.parametrize("label", list(settings.PRESET_LABELS))
@pytest.mark.parametrize("changes", SAMPLES)
def test_app_and_cli_build_the_same_config_from_the_same_settings(label, changes):
    values = {**settings.preset_values(label), **changes}
    app = settings.build_config(label, values, settings.data_config("Synthetic: copy"))
    flags = {k: v for k, v in values.items() if k != "device"}
    assert app == cli_config(settings.PRESET_LABELS[label], flags, "synthetic:copy")


def test_min_lr_follows_the_learning_rate_and_short_runs_get_evals_and_checkpoints():
    config = settings.build_config("Demo (CPU, seconds)", {"learning_rate": 1e-4, "max_steps": 8}, DataConfig())
    assert config.train.min_lr == pytest.approx(1e-5)
    assert config.train.eval_interval == 2 and config.checkpoint_every == 2


def test_a_window_longer_than_the_context_is_refused_with_the_same_message_everywhere():
    values = {"mask": "sliding_window", "window": 500}
    with pytest.raises(ConfigError) as app:
        settings.build_config("Demo (CPU, seconds)", values, DataConfig(source="synthetic:copy"))
    with pytest.raises(ConfigError) as via_cli:
        cli_config("demo", values, "synthetic:copy")
    assert str(app.value) == str(via_cli.value)
    assert "sliding window (500) is longer than the context (32)" in str(app.value)


def test_every_field_has_one_widget_key_and_belongs_to_a_config_section():
    keys = [f.key for f in settings.FIELDS]
    assert len(set(keys)) == len(keys)
    assert {f.name for f in settings.KNOB_FIELDS} <= set(settings.LIVE_KNOBS)
    config = settings.build_config("Demo (CPU, seconds)", {}, DataConfig())
    for field in settings.FIELDS:  # every field names a real config attribute
        assert any(hasattr(part, field.name) for part in (config.model, config.train, config.data))


def test_preset_values_reattach_values_and_the_changed_list():
    values = settings.preset_values("nanoGPT CPU")
    assert values["hidden_dim"] == 128 and values["max_steps"] == 2000 and "device" not in values
    config = settings.build_config("nanoGPT CPU", values, DataConfig(source="synthetic:copy")).to_dict()
    events = [{"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "none", "step": 5}]
    back, source = settings.values_from_config(config, events)
    assert source == "Synthetic: copy" and back["mask"] == "none" and back["num_heads"] == 4
    form = {**back, "num_heads": 8, "mask": "causal"}  # the mask is live: not a "changed since start"
    assert settings.changed_since_start(back, source, form, "Tiny Shakespeare") == [
        "corpus Synthetic: copy → Tiny Shakespeare",
        "heads 4 → 8",
    ]


def test_heads_follow_the_width():
    assert settings.heads_options(64) == [1, 2, 4, 8, 16]
    assert settings.closest_heads(48, 8) == 8 and settings.closest_heads(96, 5) == 4


def test_the_ghost_curve_is_labelled_with_what_the_new_run_changed():
    from tinygpt.ui.charts import curves

    data = settings.data_config("Synthetic: copy")
    before = settings.build_config("Demo (CPU, seconds)", {}, data).to_dict()
    after = settings.build_config("Demo (CPU, seconds)", {"num_heads": 8}, data).to_dict()
    label = settings.ghost_label(before, after)
    assert label == "previous run: heads 4 → 8"
    assert settings.ghost_label(before, before) == "previous run (same settings)"
    parent = [{"step": s, "loss": 3.0 - s / 100} for s in range(1, 101)]
    spec = curves.loss_chart(parent[:50], [], [], 29, ghost=parent, ghost_label=label)
    # The previous run only as far as the new one has come (the axis fits the new run), named in the subtitle
    assert [r["step"] for r in spec["datasets"]["ghost"]] == list(range(1, 51))
    assert label in " ".join(spec["title"]["subtitle"])
    assert not curves.loss_chart(parent, [], [], 29)["datasets"]["ghost"]
