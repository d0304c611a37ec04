"""What a reader may trust of a run folder: every record checked where it is read, before any page sees it.

A run folder is written by another process (a worker, the CLI, torchrun, a copied folder, or anyone with a shell
on the server), so its files are input, not state: `status.json` with `"tokens_per_s": "fast"`, a knob event
without `"knob"`, `attention/scores.jsonl` with a 7 where a (layers, heads) grid belongs, or steps of 1e15 and -3
each crashed a page once. The rule here is one per file, applied by tinygpt.runs as it reads:

    status.json          every known field of its type (a bad one becomes None, or the step the metrics show);
                         what was wrong is said in the reason ("status.json is damaged: tokens_per_s 'fast' ...")
    events.jsonl         an event with an unknown kind or a step that is not a whole number is skipped; a knob
                         event needs a knob name and values that knob can hold (knobs_now feeds them to charts)
    attention/index.json probe_text a string, tokens strings, snapshots {step, file} with whole-number steps
    attention/scores     a record needs a step in [0, MAX_STEP] and every role a grid of numbers of one shape
    config.json          its model, train and data sections there and each known field a value its RunConfig
                         accepts (`config_problem`); a reader refuses a run whose config is damaged, with why

Strings stay strings: pages show them as text (tinygpt/ui/words/safe.py), never as markdown. Imports config only.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..config import ATTN_SCALES, LIVE_MODEL_KNOBS, LIVE_TRAIN_KNOBS, MASKS, SECTIONS, RunConfig, upgrade_config_dict

MAX_STEP = 10**9  # no run takes a billion steps: a step beyond is damage, not progress

# status.json: field -> what it must be. "count": a whole number >= 0; "number": finite float; "text": a string.
STATUS_FIELDS = {
    "step": "count",
    "max_steps": "count",
    "tokens_per_s": "number",
    "train_flops_per_token": "number",
    "matmul_peak_gflops": "number",
    "best_val_loss": "number",
    "pid": "count",
    "server_pid": "count",  # the app server that queued it (status.interrupted: gone means nothing will start it)
    "queue_position": "count",
    "updated": "number",
    "reason": "text",
    "device": "text",
}


def _count(value: Any) -> int | None:
    """A whole number of steps (JSON may write 12 as 12.0), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if 0 <= value <= MAX_STEP else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


_CHECKS = {"count": _count, "number": _number, "text": lambda v: v if isinstance(v, str) else None}


def clean_status(status: dict, states: tuple[str, ...], metric_step: int | None = None) -> dict:
    """status.json with every known field of its type. A field of the wrong type becomes None (the step: the last
    step in the metrics), an unknown state "stopped", and the reason ends with what was damaged."""
    clean, damaged = dict(status), []
    for name, kind in STATUS_FIELDS.items():
        if name not in status or status[name] is None:
            continue
        value = _CHECKS[kind](status[name])
        if value is None:
            damaged.append(
                f"{name} {_short(status[name])} is not {'a whole number' if kind == 'count' else 'a ' + kind}"
            )
        clean[name] = value
    if clean.get("step") is None:
        clean["step"] = metric_step or 0
    if status.get("state") not in states:
        damaged.append(f"state {_short(status.get('state'))} is not a run state")
        clean["state"] = "stopped"
    if damaged:
        note = "status.json is damaged: " + "; ".join(damaged)
        clean["reason"] = f"{clean['reason']} ({note})" if clean.get("reason") else note
    return clean


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def valid_event(record: Any, kinds: tuple[str, ...]) -> bool:
    """Whether an events.jsonl record may reach a page: a known kind, a whole-number step, a text message, and for a
    knob event a knob name and values that knob can hold."""
    if not isinstance(record, dict) or record.get("kind") not in kinds or _count(record.get("step", 0)) is None:
        return False
    if not isinstance(record.get("message", ""), str):
        return False
    if record["kind"] != "knob":
        return True
    if not isinstance(record.get("knob"), str):
        return False
    if record.get("ok", True) is False:  # a refusal carries the error text, no values
        return isinstance(record.get("error", ""), str)
    return all(valid_knob_value(record["knob"], record.get(side)) for side in ("old", "new") if side in record)


def valid_knob_value(knob: str, value: Any) -> bool:
    """A value this live knob can hold: one of its choices, a finite number, or the ablated heads' text. Knobs
    this version does not know (an older run's) keep plain JSON scalars."""
    if knob == "mask":
        return value in MASKS
    if knob == "attn_scale":
        return value in ATTN_SCALES
    if knob == "ablated_heads":
        return isinstance(value, str)
    if knob in ("window", "warmup_steps"):
        return _count(value) is not None
    if knob in LIVE_MODEL_KNOBS + LIVE_TRAIN_KNOBS:
        return _number(value) is not None
    return value is None or isinstance(value, (str, int, float, bool))


def clean_index(index: Any) -> dict:
    """attention/index.json as readers use it; a damaged part is dropped (a snapshot without a whole-number step
    cannot be shown; load_attention builds file names from steps, never from the index)."""
    if not isinstance(index, dict):
        return {}
    tokens = index.get("tokens")
    snapshots = [s for s in index.get("snapshots") or [] if isinstance(s, dict) and _count(s.get("step")) is not None]
    return {
        **index,
        "probe_text": index.get("probe_text") if isinstance(index.get("probe_text"), str) else "",
        "tokens": tokens if isinstance(tokens, list) and all(isinstance(t, str) for t in tokens) else [],
        "snapshots": snapshots if isinstance(index.get("snapshots"), list) else [],
    }


def clean_scores(record: Any) -> dict | None:
    """A scores.jsonl record whose step is a whole number in range and whose roles are (layers, heads) grids of
    numbers (or None) of one shape; None for anything else."""
    if not isinstance(record, dict) or _count(record.get("step")) is None or not isinstance(record.get("roles"), dict):
        return None
    shapes = set()
    for grid in record["roles"].values():
        if grid is None:
            continue
        if not isinstance(grid, list) or not grid or not all(isinstance(row, list) and row for row in grid):
            return None
        if not all(_number(s) is not None for row in grid for s in row):
            return None
        shapes.add(tuple(len(row) for row in grid))
    if len(shapes) != 1:  # no grid at all, or roles of different shapes
        return None
    baselines = record.get("baselines")
    copy = record.get("copy_loss")
    residual = record.get("residual")
    return {
        **record,
        "step": _count(record["step"]),
        "baselines": {k: _number(v) for k, v in baselines.items()} if isinstance(baselines, dict) else {},
        "copy_loss": copy
        if isinstance(copy, dict) and all(_number(copy.get(k)) is not None for k in ("first", "second"))
        else None,
        "residual": residual
        if isinstance(residual, dict)
        and all(isinstance(v, list) and all(_number(x) is not None for x in v) for v in residual.values())
        else {},
    }


CONFIG_SECTIONS = ("model", "train", "data")  # every config.json has these; "interventions" came later


def config_problem(config: Any, sections: bool = True) -> str | None:
    """None if config.json describes a run every page can draw: a JSON object with its model, train and data
    sections, each known field a value RunConfig accepts (the same checks a new run's settings pass). Otherwise
    what is wrong, in one line. Keys a RunConfig does not know (the run's id, owner, vocab ...; fields of older
    versions) are not judged here. The reliability probe's tampered family: a config.json with "num_layers":
    "many" or without "model" raised TypeError and KeyError on Train, Attention and Circuits. `sections` False:
    a missing section is its defaults (what a resume would train with), only a present one is judged (the run
    listing, which also reads the partial folders of engine tests and older versions)."""
    if not isinstance(config, dict):
        return f"it holds a {type(config).__name__}, not a JSON object"
    config = upgrade_config_dict(config)  # an older file's lab switches (under "model") judged where they live now
    present = [name for name in SECTIONS if name in config]
    missing = [name for name in CONFIG_SECTIONS if not isinstance(config.get(name), dict)]
    missing += [name for name in present if name not in CONFIG_SECTIONS and not isinstance(config[name], dict)]
    if missing and (sections or any(name in present for name in missing)):
        return f"its {', '.join(missing)} section{'s are' if len(missing) > 1 else ' is'} missing or not an object"
    known = {f.name for f in dataclasses.fields(RunConfig)}
    sections_ = {name: _known_fields(SECTIONS[name], config[name]) for name in present}
    try:
        RunConfig.from_dict({**{k: v for k, v in config.items() if k in known}, **sections_})
    except (ValueError, TypeError, AttributeError) as exc:  # ConfigError is a ValueError
        return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return None


def _known_fields(cls: type, section: dict) -> dict:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in section.items() if k in names}
