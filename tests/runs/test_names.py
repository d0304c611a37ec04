"""Run names (tinygpt/runs/names.py): short, one line, and never the same for two runs (issue 36 item 3)."""

from __future__ import annotations

from tinygpt.cli.commands import main
from tinygpt.presets import preset
from tinygpt.runs.names import NAME_DIFFS, NAME_WORDS, settings_name, store_names, unique_names
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


def _started(configs, start: float = 0.0, who: str = "teacher") -> list[tuple[str, dict]]:
    """(run id, config) of `configs` ({label: RunConfig}) started one after another, as the lab starts them."""
    learner = {"id": who * 2, "name": who}
    return [(f"{who}-{label}", {**c.to_dict(), "created": start + i, "learner": learner, "run_id": f"{who}{i}"})
            for i, (label, c) in enumerate(configs.items())]  # fmt: skip


def test_a_lab_variant_is_named_by_the_settings_that_differ_from_its_pair():
    """The review: the Unstable softmax pair read "… scaling none" and "… scaling none #2"; the setting that differs
    (the naive softmax) was in neither name, so Sample's and the Room's pickers told them apart by "#2" alone."""
    from tinygpt.lab.registry import EXPERIMENTS

    names = unique_names(_started(EXPERIMENTS["softmax"].configs(seed=1337, source="shakespeare")))
    assert names == {
        "teacher-stable softmax": "2L×4H×64 · shakespeare · LR 0.002 · scaling none · scale ×24",
        "teacher-naive softmax": "2L×4H×64 · shakespeare · LR 0.002 · scaling none · scale ×24 · softmax naive",
    }
    drift = unique_names(_started(EXPERIMENTS["shape_drift"].configs(seed=1337, source="shakespeare")))
    assert list(drift.values())[1:] == [
        "2L×4H×64 · shakespeare · LR 0.002 · shape bug softmax_dim",
        "2L×4H×64 · shakespeare · LR 0.002 · shape bug softmax_dim · shape contracts on",
    ]
    for key, experiment in EXPERIMENTS.items():  # derived from the configs: every experiment, none by hand
        if experiment.measure is not None:
            continue  # measured, not trained (memory): no runs to name
        names = unique_names(_started(experiment.configs(seed=1337, source="shakespeare")))
        assert len(set(names.values())) == len(names) and not any("#" in n for n in names.values()), (key, names)


def test_a_later_run_never_renames_an_earlier_one_and_whose_run_it_is_is_no_setting():
    from tinygpt.lab.registry import EXPERIMENTS

    configs = EXPERIMENTS["softmax"].configs(seed=1337, source="shakespeare")
    lab = _started(configs)
    alone = unique_names(lab[:1])
    assert unique_names(lab)[lab[0][0]] == alone[lab[0][0]]  # the stable run keeps its name when the naive starts
    again = unique_names(lab + _started(configs, start=10.0, who="anna"))  # a learner runs the same pair later
    assert again["anna-stable softmax"] == again["teacher-stable softmax"] + " #2"  # only the owner differs
    assert again["anna-naive softmax"] == again["teacher-naive softmax"] + " #2"
    full = {**CONFIG, "created": 1.0, "train": {**CONFIG["train"], "seed": 1, "max_steps": 5, "batch_size": 8},
            "model": {**CONFIG["model"], "dropout": 0.0, "bias": False}}  # fmt: skip
    many = {**full, "created": 2.0, "train": {**full["train"], "seed": 7, "max_steps": 9, "batch_size": 4},
            "model": {**full["model"], "dropout": 0.1, "bias": True}}  # fmt: skip
    named = unique_names([("a", full), ("b", many)])
    assert named["b"] == "2L×4H×64 · shakespeare · LR 0.002 · dropout 0.1 · bias on · seed 7 · +2 more"
    assert NAME_DIFFS == 3
    older = {**CONFIG, "created": 3.0, "model": {k: v for k, v in CONFIG["model"].items() if k != "mask"}}
    assert unique_names([("a", {**CONFIG, "created": 1.0}), ("c", older)])["c"].endswith(" #2")  # missing: alike


def test_a_differing_setting_in_a_name_is_one_printable_line():
    """A name is a CLI line's start ("run <name>: finished") and a picker's label: a setting's value with a
    newline or a control character (the CLI's property test sent "\\n") is written on one line."""
    from tinygpt.runs.names import _setting_words

    assert _setting_words("interventions.zeroed_probes", "\n") == "zeroed probes none"
    assert _setting_words("data.text", "a\tb\x00\nc") == "text a b c"


def test_runs_on_two_texts_of_ones_own_are_named_apart_by_their_texts():
    """A review: runs on base64.py and on glob.py were both "2L×4H×64 · text · LR 0.002"; the first named nothing
    of its text. A text of one's own is named by its sha256's start."""
    from tinygpt.runs.names import settings_name, unique_names

    def on(sha):
        return {"model": {"num_layers": 2, "num_heads": 4, "hidden_dim": 64},
                "train": {"learning_rate": 0.002}, "data": {"source": "text", "text_sha256": sha}}  # fmt: skip

    assert settings_name(on("3f9a1c" + "0" * 58)) == "2L×4H×64 · text 3f9a1c · LR 0.002"
    names = unique_names([("a", on("3f9a1c" + "0" * 58)), ("b", on("fa579f" + "1" * 58))])
    assert names == {"a": "2L×4H×64 · text 3f9a1c · LR 0.002", "b": "2L×4H×64 · text fa579f · LR 0.002"}
    assert settings_name({**on(""), "data": {"source": "text"}}) == "2L×4H×64 · text · LR 0.002"  # no hash: as it was
    # An upload by its file's name (two reviews: "text 9f0265" said nothing of json_decoder.py); a long one cut
    named = {**on("9f0265" + "2" * 58)}
    named["data"] = {**named["data"], "text_name": "json_decoder.py"}
    assert settings_name(named) == "2L×4H×64 · json_decoder.py · LR 0.002"
    named["data"]["text_name"] = "a_very_long_file_name_of_notes.txt"
    assert settings_name(named) == "2L×4H×64 · a_very_long_file_name_o… · LR 0.002"


def test_a_scale_multiplier_other_than_one_is_in_the_name():
    """A review: the softmax lab's runs read "… · scaling none" and "… · softmax naive", their ×24 scale, what makes
    the naive softmax overflow, in neither name."""
    from tinygpt.runs.names import settings_name

    model = {"num_layers": 2, "num_heads": 4, "hidden_dim": 64, "attn_scale": "none", "attn_scale_mult": 24.0}
    config = {"model": model, "train": {"learning_rate": 0.002}, "data": {"source": "shakespeare"}}
    assert settings_name(config) == "2L×4H×64 · shakespeare · LR 0.002 · scaling none · scale ×24"
    assert "scale ×" not in settings_name({**config, "model": {**model, "attn_scale_mult": 1.0}})


def test_a_window_under_another_mask_is_no_difference_in_a_name():
    """A review: a branch taken after its parent's mask went back to causal was named "… window 4": it read as a
    sliding window. A window does nothing under another mask."""
    model = {"num_layers": 2, "num_heads": 4, "hidden_dim": 64, "mask": "causal", "window": 8}
    base = {"model": model, "train": {"learning_rate": 0.002}, "data": {"source": "shakespeare"}, "created": 1}
    branch = {**base, "model": {**base["model"], "window": 4}, "created": 2}
    names = unique_names([("a", base), ("b", branch)])
    assert "window" not in names["b"] and names["b"].endswith("#2")
    sliding = {**base, "model": {**base["model"], "mask": "sliding_window"}, "created": 3}
    names = unique_names([("c", sliding), ("d", {**sliding, "model": {**sliding["model"], "window": 4}, "created": 4})])
    assert names["d"].endswith("window 4")


def test_a_broken_run_started_first_is_named_by_its_breakage_and_the_usual_run_after_it_plainly():
    """A review: a naive-softmax run started first kept the plain name, and the stable run after it read
    "… · softmax stable", as if the broken one were the usual recipe. A breakage is named whoever started first."""
    naive = {**CONFIG, "created": 1.0, "model": {**CONFIG["model"], "softmax": "naive"}}
    stable = {**CONFIG, "created": 2.0, "model": {**CONFIG["model"], "softmax": "stable"}}
    detached = {**CONFIG, "created": 3.0, "interventions": {"detach_residual": True, "zeroed_probes": "hook_pos"}}
    named = unique_names([("naive", naive), ("stable", stable), ("detached", detached)])
    assert named == {
        "naive": "2L×4H×64 · shakespeare · LR 0.002 · softmax naive",
        "stable": "2L×4H×64 · shakespeare · LR 0.002",
        "detached": "2L×4H×64 · shakespeare · LR 0.002 · detach residual on · zeroed probes hook_pos",
    }
