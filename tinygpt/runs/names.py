"""Run names: the short readable name a person reads wherever a run is shown (the app's sidebar, tables, pickers,
chart legends, `python -m tinygpt runs`); the id stays where a link or a file needs it.

A name is the run's settings, "2L×4H×64 · shakespeare · LR 0.002", and, when runs share those settings, what tells
a later run from the earlier ones: the settings where it differs ("… · softmax naive"), or its place among runs of
the very same settings by start time, "… #2", "… #3". A class of twenty learners presses Train on the defaults, so
settings alone named twenty runs the same.

Live knob changes are not part of a name: a name listed every change, so 30 changes made it several lines long,
and it changed under the learner while the run trained. The changes have their own words where a run is shown
(the tables' "live changes", the charts' markers).

Made from config.json alone (fixed when the run is created) and the runs started before it, so a name never changes
while the run trains. Pure
apart from `store_names`, which reads the configs of a run folder. Tested in tests/runs/test_names.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .files import RUN_ID_RE, read_config_json

# The knobs' words as the app's labels write them (tinygpt/ui/words/knob_words.py, which the engine cannot import; a
# test checks the two agree).
NAME_WORDS = {"learning_rate": "LR", "mask": "mask", "attn_scale": "scaling"}
_USUAL = {"mask": "causal", "attn_scale": "head_dim"}  # settings a name mentions only when they differ
# The lab's breakages: named whenever a run has one, whoever started first. Named only as a difference from the
# first run of the same settings, a naive-softmax run started first kept the plain name and the stable run after it
# read "… · softmax stable", as if the broken run were the usual one (a review).
_BROKEN = (("model", "softmax", "stable"), ("interventions", "detach_residual", False),
           ("interventions", "zeroed_probes", ""), ("interventions", "shape_bug", "none"))  # fmt: skip


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def settings_name(config: Mapping[str, Any]) -> str:
    """The settings part of a name: "2L×4H×64 · synthetic:copy · LR 0.002" ("text 3f9a1c" for a text of the
    learner's own: its sha256's start), then whatever is not the default recipe (an optimizer other than AdamW,
    token shift, a mask or scaling other than the usual, and any of the lab's breakages: `_BROKEN`)."""
    model, train, data = (config.get(part) or {} for part in ("model", "train", "data"))
    parts = [f"{model.get('num_layers', '?')}L×{model.get('num_heads', '?')}H×{model.get('hidden_dim', '?')}"]
    source, sha, file = str(data.get("source") or "?"), data.get("text_sha256"), data.get("text_name")
    # A learner's own text by its file's name, else its hash's start: "text" alone named runs on base64.py and
    # glob.py alike, and "text 9f0265" said nothing of which file (reviews). Two texts of one name: "#2" after.
    if source == "text" and isinstance(file, str) and file:
        source = file if len(file) <= NAME_FILE else file[: NAME_FILE - 1] + "…"
    elif source == "text" and isinstance(sha, str) and sha:
        source = f"text {sha[:6]}"
    parts.append(source)
    parts.append(f"{NAME_WORDS['learning_rate']} {_value(train.get('learning_rate', '?'))}")
    if train.get("optimizer", "adamw") != "adamw":
        parts.append(str(train["optimizer"]))
    if model.get("token_shift"):
        parts.append(f"shift {model['token_shift']}")  # how many characters back each MLP reads
    for knob, usual in _USUAL.items():
        if model.get(knob, usual) != usual:
            parts.append(f"{NAME_WORDS[knob]} {_value(model[knob])}")
    mult = model.get("attn_scale_mult")  # the softmax lab's ×24, which is what overflows (unnamed: a review)
    if isinstance(mult, (int, float)) and not isinstance(mult, bool) and mult != 1:
        parts.append(f"scale ×{_value(mult)}")
    for section, knob, usual in _BROKEN:
        value = (config.get(section) or {}).get(knob, usual)
        if value != usual:
            parts.append(_setting_words(knob, value))
    return " · ".join(parts)


# What a config holds that does not tell how a run trains: identity and bookkeeping (compare.config_diff's list),
# whose run it is, how often it records (the heads run's "checkpoint every 100" came with its 300 steps), what the
# corpus decides (the vocabulary's size, written into config.json once the text is read: the CLI printed a run's
# name "… · vocab size 65" at its start, "… #2" after) and the text itself (data.text_sha256 stands for it).
_NOT_SETTINGS = ("run_id", "created", "vocab", "parent", "owner", "num_params", "branch", "learner", "data.text",
                 "model.vocab_size", "checkpoint_every", "attention_every", "sample_every")  # fmt: skip
NAME_FILE = 24  # characters of an uploaded file's name a run's name keeps
NAME_DIFFS = 3  # settings a name lists after its settings part at most; "+2 more" says how many it leaves out
_MISSING = object()


def _settings(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"model.softmax": "naive", ...}: every setting of a config, flattened, without `_NOT_SETTINGS`."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if path in _NOT_SETTINGS or (key in _NOT_SETTINGS and not prefix):
            continue
        if isinstance(value, Mapping) and value:
            out.update(_settings(value, f"{path}."))
        else:
            out[path] = value
    return out


def _setting_words(key: str, value: Any) -> str:
    """ "softmax naive", "detach residual on", "warmup steps 0": a setting as a name lists it."""
    knob = key.rsplit(".", 1)[-1]
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif value in ("", None):
        text = "none"
    elif isinstance(value, (int, float)):
        text = _value(value)
    else:
        text = value if isinstance(value, str) else str(value)
        # One line, printable: a name is a CLI line's start and a picker's label (a value of "\n" split the CLI's
        # "run <name>: finished" over two lines).
        text = " ".join("".join(c if c.isprintable() else " " for c in text).split()) or "none"
        text = text if len(text) <= 16 else text[:12] + "…"  # a hash or a long list: enough to tell two apart
    return f"{NAME_WORDS.get(knob, knob.replace('_', ' '))} {text}"


def unique_names(runs: Iterable[tuple[str, Mapping[str, Any] | None]]) -> dict[str, str]:
    """{run id: name} for (run id, config) pairs. Runs that share their settings part (`settings_name`) are taken
    by start time (the config's `created`, then the id): the first keeps the plain name, which stands for its
    settings; a later one adds the settings where it differs from that first one, in the config's order, at most
    NAME_DIFFS of them ("… scaling none · softmax naive": a lab pair one setting apart read "… scaling none" and
    "… scaling none #2", the setting that differs in neither name); runs whose names are still the same are
    numbered, "#2", "#3" (settings all alike). A setting an older config lacks is no difference. Only earlier runs
    count, so a new run never renames one already named. A run without a config (an unreadable folder) gets "" and
    the page shows its id."""
    by_settings: dict[str, list[tuple[float, str, dict[str, Any]]]] = {}
    names = {}
    for run_id, config in runs:
        if not config:
            names[run_id] = ""
            continue
        base = settings_name(config)
        created = config.get("created")
        when = float(created) if isinstance(created, (int, float)) else 0.0
        by_settings.setdefault(base, []).append((when, run_id, _settings(config)))
    taken: dict[str, int] = {}
    for base, started in by_settings.items():
        first: dict[str, Any] | None = None
        for _, run_id, settings in sorted(started, key=lambda r: r[:2]):
            first = settings if first is None else first
            differ = [key for key, value in settings.items() if first.get(key, _MISSING) not in (value, _MISSING)
                      and not (key == "model.window" and settings.get("model.mask") != "sliding_window")]  # fmt: skip
            # a window does nothing under another mask ("… window 4" of a causal branch read as sliding: a review)
            words = [_setting_words(key, settings[key]) for key in differ[:NAME_DIFFS]]
            words += [f"+{len(differ) - NAME_DIFFS} more"] if len(differ) > NAME_DIFFS else []
            name = " · ".join([base, *words])
            taken[name] = taken.get(name, 0) + 1
            names[run_id] = name if taken[name] == 1 else f"{name} #{taken[name]}"
    return names


def store_names(root: str | Path) -> dict[str, str]:
    """`unique_names` of every run in a run folder, from the config.json files alone (a page's sidebar asks on
    every rerun; reading every run's status as RunStore.list_runs does would cost more than the name is worth)."""
    root = Path(root)
    if not root.is_dir():
        return {}
    folders = [entry for entry in root.iterdir() if RUN_ID_RE.match(entry.name) and entry.is_dir()]
    return unique_names((folder.name, read_config_json(folder)) for folder in folders)
