"""Knob events read back: the changes a run took live, the answer to one request (by its id), and the knobs in
force now (the config's, then every change in order).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..config import LIVE_MODEL_KNOBS, LIVE_TRAIN_KNOBS
from .check import valid_knob_value


def is_knob(event: Any) -> bool:
    """A knob event. Not validated again: every event reaching these functions was validated when it was taken
    in, by the one who read events.jsonl (RunReader._add_event for pages, files.read_events for one-off readers,
    both check.valid_event), so a damaged line never gets here. A list of events built by hand must be valid."""
    return isinstance(event, dict) and event.get("kind") == "knob"


def knob_changes(events: Iterable[dict]) -> list[dict]:
    """The knob events that changed a value (applied, old != new), in order: chart markers and knob history."""
    return [e for e in events if is_knob(e) and e.get("ok", True) and e.get("old") != e.get("new")]


def knob_answer(events: Iterable[dict], request: str) -> dict | None:
    """The first knob event answering `request` (a RunManager.set_knob id), or None while none has come.
    Its "ok" says whether it applied ("step"), else "error" says why not."""
    if not request:  # events from commands without an id (older run folders, tests) answer nobody
        return None
    return next((e for e in events if is_knob(e) and e.get("request") == request), None)


def knobs_now(config: dict, events: Iterable[dict]) -> dict[str, Any]:
    """A run's live knob values now: those in its config.json, then every change in order."""
    model, train = config.get("model") or {}, config.get("train") or {}
    knobs = {k: model.get(k) for k in LIVE_MODEL_KNOBS}
    knobs.update({k: train.get(k) for k in LIVE_TRAIN_KNOBS})
    for event in knob_changes(events):
        if event.get("knob") in knobs and valid_knob_value(event["knob"], event.get("new")):
            knobs[event["knob"]] = event.get("new")
    return knobs
