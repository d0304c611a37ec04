"""Run names: the short readable name a person reads wherever a run is shown (the app's sidebar, tables, pickers,
chart legends, `python -m tinygpt runs`); the id stays where a link or a file needs it.

A name is the run's settings, "2L×4H×64 · shakespeare · LR 0.002", and, when runs share those settings, the place
of the run among them by start time: the first keeps the plain name, the next are "… #2", "… #3". A class of
twenty learners presses Train on the defaults, so settings alone named twenty runs the same.

Live knob changes are not part of a name: a name listed every change, so 30 changes made it several lines long,
and it changed under the learner while the run trained. The changes have their own words where a run is shown
(the tables' "live changes", the charts' markers).

Made from config.json alone (fixed when the run is created), so a name never changes while the run trains. Pure
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


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def settings_name(config: Mapping[str, Any]) -> str:
    """The settings part of a name: "2L×4H×64 · synthetic:copy · LR 0.002", then whatever is not the default
    recipe (an optimizer other than AdamW, token shift, a mask or scaling other than the usual)."""
    model, train, data = (config.get(part) or {} for part in ("model", "train", "data"))
    parts = [f"{model.get('num_layers', '?')}L×{model.get('num_heads', '?')}H×{model.get('hidden_dim', '?')}"]
    parts.append(str(data.get("source") or "?"))
    parts.append(f"{NAME_WORDS['learning_rate']} {_value(train.get('learning_rate', '?'))}")
    if train.get("optimizer", "adamw") != "adamw":
        parts.append(str(train["optimizer"]))
    if model.get("token_shift"):
        parts.append(f"shift {model['token_shift']}")  # how many characters back each MLP reads
    for knob, usual in _USUAL.items():
        if model.get(knob, usual) != usual:
            parts.append(f"{NAME_WORDS[knob]} {_value(model[knob])}")
    return " · ".join(parts)


def unique_names(runs: Iterable[tuple[str, Mapping[str, Any] | None]]) -> dict[str, str]:
    """{run id: name} for (run id, config) pairs: runs that share their settings are numbered by start time (the
    config's `created`, then the id), the first plain, the next "#2", "#3". A run without a config (an unreadable
    folder) gets "" and the page shows its id."""
    by_settings: dict[str, list[tuple[float, str]]] = {}
    names = {}
    for run_id, config in runs:
        if not config:
            names[run_id] = ""
            continue
        base = settings_name(config)
        created = config.get("created")
        by_settings.setdefault(base, []).append((float(created) if isinstance(created, (int, float)) else 0.0, run_id))
    for base, started in by_settings.items():
        for place, (_, run_id) in enumerate(sorted(started), start=1):
            names[run_id] = base if place == 1 else f"{base} #{place}"
    return names


def store_names(root: str | Path) -> dict[str, str]:
    """`unique_names` of every run in a run folder, from the config.json files alone (a page's sidebar asks on
    every rerun; reading every run's status as RunStore.list_runs does would cost more than the name is worth)."""
    root = Path(root)
    if not root.is_dir():
        return {}
    folders = [entry for entry in root.iterdir() if RUN_ID_RE.match(entry.name) and entry.is_dir()]
    return unique_names((folder.name, read_config_json(folder)) for folder in folders)
