"""The one table of limits (tinygpt.config.LIMITS), walked at every door a setting comes in by: the config itself
(which the lab, resume and the app's form build through `preset`), the CLI's flags, a --config file, a workshop
link, and the Train form's own ranges. Each field's first value past its upper end is refused at each door, with
the field named, and nothing past a limit reaches a run (issue 34)."""

from __future__ import annotations

import json
import math

import pytest

from tinygpt.cli.flags import MAX_CONFIG_BYTES, config_from_args, parse_args, read_capped
from tinygpt.config import LIMITS, MAX_NEW_TOKENS, ConfigError, Limit
from tinygpt.presets import preset
from tinygpt.presets import setting_section as section_of

FIELDS = sorted(name for name in LIMITS if name != "vocab_size")  # vocab_size comes from the corpus, not a door


def past_the_end(limit: Limit) -> int | float:
    """The first value a door must refuse above the range: one more for a whole number, a little more otherwise."""
    if isinstance(limit.high, int):
        return limit.high + 1
    return limit.high * 1.5 if limit.high else 1.0


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@pytest.mark.parametrize("name", FIELDS)
def test_the_config_refuses_past_the_end_and_says_why(name):
    limit = LIMITS[name]
    with pytest.raises(ConfigError, match=name):
        preset("demo", **{name: past_the_end(limit)})


@pytest.mark.parametrize("name", FIELDS)
def test_the_cli_flag_refuses_past_the_end_with_the_range(name, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(["train", flag(name), str(past_the_end(LIMITS[name]))])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and flag(name) in err and err.count("\n") == 1
    assert ("from" in err and "to" in err) or "in [" in err or "in (" in err  # the range is said


@pytest.mark.parametrize("name", FIELDS)
def test_the_cli_flag_takes_the_upper_end_itself(name):
    limit = LIMITS[name]
    args = parse_args(["train", flag(name), str(limit.high)])
    assert math.isclose(vars(args)[f"{section_of(name)}.{name}"], limit.high)


@pytest.mark.parametrize("name", FIELDS)
def test_a_config_file_past_the_end_is_refused(name, tmp_path):
    path = tmp_path / "config.json"
    section = section_of(name)
    body = {name: past_the_end(LIMITS[name])} if section == "run" else {section: {name: past_the_end(LIMITS[name])}}
    path.write_text(json.dumps(body))
    with pytest.raises(ConfigError, match=name):
        config_from_args(parse_args(["train", "--config", str(path)]))


@pytest.mark.parametrize("name", FIELDS)
def test_a_workshop_link_past_the_end_is_reported_and_not_used(name):
    from tinygpt.ui.teach.workshop import SETTING_TYPES, parse_workshop

    if name not in SETTING_TYPES:  # the publishing intervals are not settings a link carries
        pytest.skip(f"{name} is not a link setting")
    shop = parse_workshop({name: str(past_the_end(LIMITS[name]))})
    value = shop.overrides.get(name)
    assert value is None or LIMITS[name].contains(value)  # dropped, or clamped into the form's range
    assert any(name in error for error in shop.errors), shop.errors  # never in silence


def test_every_form_range_lies_inside_the_table():
    from tinygpt.ui.train.settings import FIELDS as FORM

    for field in FORM:
        limit = LIMITS.get(field.name)
        if limit is None:
            continue
        values = [v for v in (field.minimum, field.maximum, *field.options) if isinstance(v, int | float)]
        assert all(limit.contains(v) or (v == limit.low and not limit.above_low) for v in values), field.name


def test_a_link_setting_the_form_cannot_use_is_reported():
    from tinygpt.ui.teach.workshop import parse_workshop

    shop = parse_workshop({"eval_interval": "5", "synthetic_examples": "10", "learning_rate": "0.01"})
    assert shop.overrides == {"learning_rate": 0.01}
    assert sum("no control for" in e for e in shop.errors) == 2


def test_sample_caps_new_tokens(capsys):
    args = parse_args(["sample", "--run", "x", "--max-new-tokens", str(MAX_NEW_TOKENS)])
    assert args.max_new_tokens == MAX_NEW_TOKENS
    with pytest.raises(SystemExit):
        parse_args(["sample", "--run", "x", "--max-new-tokens", "99999999999999999999999"])
    assert "--max-new-tokens" in capsys.readouterr().err


def test_a_file_is_read_with_a_cap(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(ConfigError, match="larger than"):
        read_capped(big, "--config", MAX_CONFIG_BYTES)
    with pytest.raises(ConfigError, match="larger than"):  # a file that never ends is not read whole
        read_capped("/dev/zero", "--config", MAX_CONFIG_BYTES)
    small = tmp_path / "small.json"
    small.write_bytes(b"{}")
    assert read_capped(small, "--config", MAX_CONFIG_BYTES) == b"{}"


def test_a_config_file_that_is_not_utf8_is_refused_in_words(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b'{"train": {"seed": 1}, "probe_text": "caf\xe9"}')
    with pytest.raises(ConfigError, match="not UTF-8 text: byte 0xe9"):
        config_from_args(parse_args(["train", "--config", str(path)]))


def test_a_resume_past_the_step_limit_is_refused_before_anything_changes(tmp_path):
    from tinygpt.runs.resume import plan_resume
    from tinygpt.runs.store import RunStore

    store = RunStore(tmp_path)
    with store.create(preset("demo").to_dict(), owner="app") as writer:
        run_id = writer.run_id
    before = (store.path(run_id) / "config.json").read_bytes()
    with pytest.raises(ConfigError, match="max_steps"):
        plan_resume(store.path(run_id), max_steps=LIMITS["max_steps"].high + 1)
    assert (store.path(run_id) / "config.json").read_bytes() == before
    assert plan_resume(store.path(run_id), max_steps=500).config.train.max_steps == 500
