"""Knob events read back: the changes a run took live, the answer to one request (by its id), and the knobs in
force now (the config's, then every change in order).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..config import LEAKING_MASKS, LIVE_MODEL_KNOBS, LIVE_TRAIN_KNOBS
from ..schedule import moved_floor
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


def _configured(config: dict) -> dict[str, Any]:
    model, train = config.get("model") or {}, config.get("train") or {}
    return {k: model.get(k) for k in LIVE_MODEL_KNOBS} | {k: train.get(k) for k in LIVE_TRAIN_KNOBS}


def _applied(knobs: dict[str, Any], changes: Iterable[dict]) -> dict[str, Any]:
    for event in changes:
        if event.get("knob") in knobs and valid_knob_value(event["knob"], event.get("new")):
            knobs[event["knob"]] = event.get("new")
    return knobs


def knobs_first(config: dict, events: Iterable[dict]) -> dict[str, Any]:
    """The knobs a run's first step trained under: each knob's value before its first change ("old"), else the
    config's. They differ for a branch: its config.json holds its own settings, and its steps before the branch
    point are the parent's, under the old values its branch event records (a review's Train page said a branch
    "trained with mask none in steps 0-200", steps its causal parent trained)."""
    knobs = _configured(config)
    seen: set[str] = set()
    for event in knob_changes(events):
        knob = event.get("knob")
        if knob in knobs and knob not in seen and valid_knob_value(knob, event.get("old")):
            knobs[knob] = event.get("old")
        seen.add(knob)
    return knobs


def knobs_now(config: dict, events: Iterable[dict]) -> dict[str, Any]:
    """A run's live knob values now: those in its config.json, then every change in order (a branch's config
    already holds its own values: its branch event changes nothing more)."""
    return _applied(_configured(config), knob_changes(events))


def with_queued(knobs: dict[str, Any], queued: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The knobs a queued run will start with: `knobs` (knobs_now) and the changes waiting for its worker, which it
    applies before its first step ((name, value) in order, tinygpt.runs.scheduler.RunManager.queued_knobs), the
    learning rate carrying min_lr along as the trainer does. A review: a queued run's plan drew warmup 50 to a peak
    of 0.003 beside "LR → 0.01: applies at the next step", and the run started at 0.01 with warmup 60."""
    knobs = dict(knobs)
    for name, value in queued:
        if not valid_knob_value(name, value):
            continue  # the worker refuses it, and says so
        old = knobs.get(name)
        if name == "learning_rate" and isinstance(old, (int, float)) and old > 0 and value != old:
            knobs["min_lr"] = moved_floor(float(knobs.get("min_lr") or 0.0), float(old), float(value))
        knobs[name] = value
    return knobs


def events_upto(events: Iterable[dict], step: int) -> list[dict]:
    """The events recorded at or before `step` (a change recorded at step s applied after step s)."""
    return [e for e in events if isinstance(e.get("step"), int) and e["step"] <= step]


def knobs_at(config: dict, events: Iterable[dict], step: int) -> dict[str, Any]:
    """The live knobs in force at `step`: those of the first step (knobs_first), then every change made at or
    before that step."""
    events = list(events)
    return _applied(knobs_first(config, events), knob_changes(events_upto(events, step)))


def mask_spans(config: dict, events: Iterable[dict], upto: int) -> list[tuple[str, int, int]]:
    """(mask, first step, last step) of every stretch of a run's mask up to step `upto`: the config's mask, then
    each applied change. A change recorded at step s took effect after step s, so one stretch ends and the next
    begins at s (the steps the Runs table and the knob markers write). Stretches of no steps are left out."""
    events = list(events)
    mask, start, spans = knobs_first(config, events).get("mask") or "causal", 0, []
    for event in knob_changes(events):
        if event.get("knob") == "mask" and isinstance(event.get("step"), int) and event["step"] <= upto:
            spans.append((mask, start, event["step"]))
            mask, start = event.get("new"), event["step"]
    spans.append((mask, start, upto))
    return [(m, a, b) for m, a, b in spans if b > a]


def attention_spans(config: dict, events: Iterable[dict], upto: int) -> list[tuple[str, Any, int, int]]:
    """(mask, window, first step, last step) of every stretch of a run's attention pattern up to step `upto`: as
    mask_spans, cut at a window change too (the window only under mask sliding_window, None under any other).
    The entropy chart's even-spread line under "sliding_window, steps 103-600" was window 5's where steps 103-126
    had window 8 (a review)."""
    events = list(events)
    first = knobs_first(config, events)
    mask, window, start, spans = first.get("mask") or "causal", first.get("window"), 0, []
    for event in knob_changes(events):
        step = event.get("step")
        if event.get("knob") in ("mask", "window") and isinstance(step, int) and step <= upto:
            spans.append((mask, window, start, step))
            mask, window = (event.get("new"), window) if event["knob"] == "mask" else (mask, event.get("new"))
            start = step
    spans.append((mask, window, start, upto))
    merged: list[tuple[str, Any, int, int]] = []
    for m, w, a, b in ((m, w if m == "sliding_window" else None, a, b) for m, w, a, b in spans if b > a):
        if merged and merged[-1][:2] == (m, w) and merged[-1][3] == a:
            merged[-1] = (m, w, merged[-1][2], b)  # a window change under another mask: one stretch
        else:
            merged.append((m, w, a, b))
    return merged


def under_leak(step: object, leaks) -> bool:
    """Whether a record at `step` was made under a leaking mask: in steps a+1..b of one of `leaks` ((mask, a, b),
    leak_spans': a change recorded at step a took effect after it)."""
    return isinstance(step, int) and any(a < step <= b for _, a, b in leaks or ())


def leak_spans(config: dict, events: Iterable[dict], upto: int) -> list[tuple[str, int, int]]:
    """The stretches of mask_spans under a mask that shows a position the character it must predict
    (config.LEAKING_MASKS: "none", "off_by_one"; a sliding window is causal and does not leak)."""
    return [span for span in mask_spans(config, events, upto) if span[0] in LEAKING_MASKS]
