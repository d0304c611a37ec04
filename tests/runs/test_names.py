"""Run names (tinygpt/runs/names.py): short, one line, and never the same for two runs (issue 36 item 3)."""

from __future__ import annotations

from tinygpt.cli.commands import main
from tinygpt.presets import preset
from tinygpt.runs.names import NAME_WORDS, settings_name, store_names, unique_names
from tinygpt.runs.store import RunStore

CONFIG = {
    "model": {"num_layers": 2, "num_heads": 4, "hidden_dim": 64, "mask": "causal", "attn_scale": "head_dim"},
    "train": {"learning_rate": 0.002},
    "data": {"source": "shakespeare"},
}


def test_a_name_is_the_settings_that_tell_runs_apart():
    assert settings_name(CONFIG) == "2L×4H×64 · shakespeare · LR 0.002"
    levers = {
        "model": {**CONFIG["model"], "token_shift": 1, "mask": "none"},
        "train": {"learning_rate": 0.004, "optimizer": "muon"},
        "data": {"source": "synthetic:copy"},
    }
    assert settings_name(levers) == "2L×4H×64 · synthetic:copy · LR 0.004 · muon · shift 1 · mask none"
    assert settings_name({}) == "?L×?H×? · ? · LR ?"  # a damaged config still names something


def test_runs_with_the_same_settings_are_numbered_by_start_time():
    """Issue 36: three default runs were all "2L×4H×64 · shakespeare · LR 0.002"."""
    runs = [("late", {**CONFIG, "created": 30.0}), ("first", {**CONFIG, "created": 10.0}),
            ("other", {**CONFIG, "train": {"learning_rate": 0.01}, "created": 20.0}),
            ("middle", {**CONFIG, "created": 20.0}), ("broken", {})]  # fmt: skip
    names = unique_names(runs)
    assert names == {
        "first": "2L×4H×64 · shakespeare · LR 0.002",
        "middle": "2L×4H×64 · shakespeare · LR 0.002 #2",
        "late": "2L×4H×64 · shakespeare · LR 0.002 #3",
        "other": "2L×4H×64 · shakespeare · LR 0.01",
        "broken": "",
    }


def test_live_changes_do_not_grow_a_name(tmp_path):
    """Issue 36: 30 knob changes made a name several lines long. The name is config.json's alone."""
    store = RunStore(tmp_path)
    with store.create(preset("demo").to_dict(), owner="cli") as writer:
        for step in range(1, 31):
            writer.append_event({"step": step, "kind": "knob", "knob": "learning_rate", "ok": True, "old": 0.002,
                                 "new": 0.001 * step})  # fmt: skip
        run_id = writer.run_id
    [name] = store_names(tmp_path).values()
    assert name == settings_name(store.reader(run_id).config()) and len(name) < 60 and "\n" not in name
    assert store_names(tmp_path / "nowhere") == {}


def test_the_engines_words_are_the_apps(tmp_path):
    from tinygpt.ui.words.knob_words import knob_word

    assert all(word == knob_word(knob) for knob, word in NAME_WORDS.items())


def test_python_m_tinygpt_runs_puts_the_name_beside_the_id(tmp_path, capsys):
    store = RunStore(tmp_path)
    ids = []
    for _ in range(2):
        with store.create(preset("demo").to_dict(), owner="cli") as writer:
            ids.append(writer.run_id)
    names = store_names(tmp_path)
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    for run_id in ids:
        assert lines[run_id].startswith(f"{run_id}  {names[run_id]}")
    assert len(set(names.values())) == 2 and any(name.endswith(" #2") for name in names.values())
