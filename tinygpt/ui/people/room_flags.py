"""Which of the room's runs are off, and why, derived from each run's own files: the Room page's "flag" column and
the room chart's panel titles.

Four flags, each with its reason in numbers:
  diverged      the run's status says so, or a recent loss was not finite (written as null: tinygpt.runs.files)
  leaking       its mask now lets positions see the future (tinygpt.lab.health's no-future-leak wording) and its
                training loss sits at least MASK_CHEAT nats (the mask pitfall's own margin) below what a causal
                model reached on the same text: the run's own loss before its mask changed, or a causal run of the
                room over the same steps
  stalled       its status says "running" (it holds a training slot: not queued, starting or paused), yet its
                step has not moved for STALL_S seconds: a training worker rewrites status.json with its step every
                step (tinygpt.runs.loop.STATUS_INTERVAL), so the file's age, on the same machine's wall clock as the
                page (time.time() both), is how long the step has stood still. A loss that falls slowly is not a
                stall: the old rule (the health checklist's loss trend over the last 50 steps) fired on healthy runs
                late in training, where a decrease of 0.01 nats hides in the step-to-step noise
  own settings  a learner's run whose settings differ from the room's lecture run (the run the lesson steers)

Too little data is no flag, never a guess: fewer than LEAK_WINDOW leaky steps, no causal loss to hold them to, no
time its status was written, or no lecture run in the room.
Pure: plain dicts in, Flags out; no Streamlit. Tested in tests/ui/people/test_room.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from tinygpt.config import LEAKING_MASKS
from tinygpt.lab.pitfalls.mask import MASK_CHEAT
from tinygpt.runs.knobs import knob_changes, knobs_now
from tinygpt.runs.owners import run_learner
from tinygpt.ui.words.knob_words import knob_value, knob_word
from tinygpt.ui.words.setting_words import setting_word

DIVERGED, LEAKING, STALLED, OWN = "diverged", "leaking", "stalled", "own settings"
LEAK_WINDOW = 20  # losses averaged on each side of the comparison: one step's loss is noisy by ~0.05-0.1 nats
PEER_MIN = 5  # a causal run of the room must have this many losses over the same steps to be held against
STALL_S = 60.0  # s without a new step while "running": the Demo preset's 300 steps take 2.4-2.6 s on the 2-core
# test machine (README), an eval or a checkpoint a few seconds; a worker still loading the data is "starting"
FINITE_WINDOW = 50  # recent step records searched for a non-finite loss
# What "own settings" compares: what changes how a run learns (not its length, seed, device or bookkeeping).
MODEL_SETTINGS = ("num_layers", "num_heads", "hidden_dim", "max_seq_len", "dropout", "softmax", "token_shift")
LAB_SETTINGS = ("detach_residual", "shape_bug")  # config.json's "interventions" (read_config_json moves older ones)
TRAIN_SETTINGS = ("batch_size", "optimizer")
KNOBS_SKIPPED = ("min_lr",)  # follows the learning rate (tinygpt.schedule.moved_floor): not a change of its own


class Flag(NamedTuple):
    word: str  # DIVERGED, LEAKING, STALLED or OWN
    reason: str  # the numbers it was derived from, in words

    def __str__(self) -> str:
        return f"{self.word}: {self.reason}"


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _losses(metrics: Iterable[dict]) -> list[tuple[int, float]]:
    return [(int(m["step"]), float(m["loss"])) for m in metrics if _finite(m.get("loss")) and _finite(m.get("step"))]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def diverged(state: str, reason: str, metrics: Sequence[dict]) -> Flag | None:
    if state == "diverged":
        return Flag(DIVERGED, reason or "the run stopped as diverged")
    bad = [m for m in metrics[-FINITE_WINDOW:] if "loss" in m and not _finite(m.get("loss"))]
    if bad:
        return Flag(DIVERGED, f"loss not finite at step {bad[-1].get('step')} ({len(bad)} of the last "
                              f"{len(metrics[-FINITE_WINDOW:])} steps)")  # fmt: skip
    return None


def _mask_segments(config: dict, events: Sequence[dict]) -> tuple[str, int, str | None]:
    """(mask now, the step it came into force (0: from the start), the mask before it or None)."""
    model = config.get("model") or {}
    mask, since, before = model.get("mask") or "causal", 0, None
    for e in knob_changes(events):
        if e.get("knob") == "mask" and isinstance(e.get("step"), int) and e.get("new") != mask:
            mask, since, before = e.get("new"), e["step"], mask
    return mask, since, before


def leaking(config: dict, events: Sequence[dict], metrics: Sequence[dict], peers: Sequence[Mapping]) -> Flag | None:
    """Leaking: a leaky mask now and a training loss MASK_CHEAT nats below the lowest causal reference (the
    conservative side: the best causal loss makes the gap smallest). `peers`: the room's other runs as
    {"config", "events", "metrics"}; only causal ones on the same text count."""
    mask, since, before = _mask_segments(config, events)
    if mask not in LEAKING_MASKS:  # the masks that let a position see the future (a sliding window is causal)
        return None
    losses = _losses(metrics)
    leaky = [(s, v) for s, v in losses if s >= since][-LEAK_WINDOW:]
    if len(leaky) < LEAK_WINDOW:
        return None
    now, first, last = _mean([v for _, v in leaky]), leaky[0][0], leaky[-1][0]
    references = []
    if before == "causal":
        own = [v for s, v in losses if s < since][-LEAK_WINDOW:]
        if len(own) >= PEER_MIN:
            references.append((_mean(own), f"its own causal loss before step {since}"))
    for peer in peers:
        peer_config = peer.get("config") or {}
        if not _like_for_like(peer_config, config) or _mask_segments(peer_config, peer.get("events") or [])[
            0
        ] not in ("causal", "sliding_window"):
            continue
        same = [v for s, v in _losses(peer.get("metrics") or []) if first <= s <= last]
        if len(same) >= PEER_MIN:
            name = f" {peer['name']}" if peer.get("name") else ""
            references.append((_mean(same), f"the causal run{name}'s over steps {first}-{last}, its model and batch"
                                             " the same"))  # fmt: skip
    if not references:
        return None
    floor, which = min(references)
    if now > floor - MASK_CHEAT:
        return None
    return Flag(LEAKING, f"train loss {now:.2f}, {floor - now:.2f} nats below {which} ({floor:.2f}; a leak is "
                         f"{MASK_CHEAT} below): the mask '{mask}' lets positions see the future")  # fmt: skip


def _like_for_like(peer: Mapping, config: Mapping) -> bool:
    """Whether a peer's loss can stand for this run's causal loss: the same text, model, interventions and batch. A
    review's flag held a 2-layer, 4-head run at context 32 to the lecture run's (1 head, context 16) over the same
    steps."""
    return peer.get("data") == config.get("data") and _fixed(peer) == _fixed(config)


def stalled(state: str, status: Mapping, now: float) -> Flag | None:
    """Training (state "running") and its step unmoved for STALL_S s: `status` is its status.json (the worker
    rewrites it, with "step" and "updated" = time.time(), every step); `now` is time.time() on the same machine."""
    updated = status.get("updated")
    if state != "running" or not _finite(updated):
        return None
    still = now - float(updated)
    if still < STALL_S:
        return None
    step = status.get("step") or 0
    return Flag(STALLED, f"running, but its step {step:,} has not moved for {still:.0f} s: its worker writes its "
                         f"status every step, and last wrote it then (a stall is {STALL_S:.0f} s)")  # fmt: skip


def _fixed(config: Mapping) -> dict[str, Any]:
    """What a run fixes at its start and no knob changes: its model, interventions and batch ({setting: value})."""
    model, train, lab = (config.get(part) or {} for part in ("model", "train", "interventions"))
    return ({k: model.get(k) for k in MODEL_SETTINGS} | {k: lab.get(k) for k in LAB_SETTINGS}
            | {k: train.get(k) for k in TRAIN_SETTINGS})  # fmt: skip


def _settings(config: dict, events: Sequence[dict]) -> dict[str, Any]:
    out = {knob_word(k): v for k, v in knobs_now(config, events).items() if k not in KNOBS_SKIPPED}
    out |= {setting_word(k): v for k, v in _fixed(config).items()}
    return out | {"corpus": (config.get("data") or {}).get("source")}


def own_settings(run: Mapping, lecture: Mapping | None) -> Flag | None:
    """A learner's run whose settings (knobs now included) differ from the lecture run's; None without one. A value
    the lecture run started with or has now is the lecture's own: the instructor turns its knobs on purpose (mask
    none at step 4, a 0.1 learning rate at step 7), and a learner who did not follow a deliberate break is not
    using settings of their own."""
    config = run.get("config") or {}
    learner = run_learner(config)
    if not lecture or not learner or run.get("run") == lecture.get("run"):
        return None
    if learner.get("id") == run_learner(lecture.get("config") or {}).get("id"):
        return None
    mine = _settings(config, run.get("events") or [])
    theirs = _settings(lecture.get("config") or {}, lecture.get("events") or [])
    started = _settings(lecture.get("config") or {}, [])
    def lecture_value(k: str) -> str:  # its start, and its value now where a lesson step turned it (LR 0.1 at step 7)
        now, first = knob_value(theirs.get(k)), knob_value(started.get(k))
        return f"lecture run: {first}" if now == first else f"lecture run: {first}, {now} now"

    diff = [f"{k} {knob_value(v)} ({lecture_value(k)})" for k, v in mine.items()
            if v != theirs.get(k) and v != started.get(k)]  # fmt: skip
    if not diff:
        return None
    more = f", and {len(diff) - 3} more" if len(diff) > 3 else ""
    return Flag(OWN, ", ".join(diff[:3]) + more)


def run_flags(
    run: Mapping, peers: Sequence[Mapping] = (), lecture: Mapping | None = None, now: float | None = None
) -> list[Flag]:
    """A run's flags. `run`: {"run", "state", "reason", "config", "events", "metrics", "status"} (metrics or status
    may be missing: then only what its state and config say); `peers`: the room's runs for the leak's causal
    reference; `now`: time.time() (the default), against which a running run's status is old or not."""
    config, events, metrics = run.get("config") or {}, run.get("events") or [], run.get("metrics") or []
    state = run.get("state") or ""
    found = [diverged(state, run.get("reason") or "", metrics)]
    if not found[0]:
        others = [p for p in peers if p.get("run") != run.get("run")]
        moment = time.time() if now is None else now
        found += [leaking(config, events, metrics, others), stalled(state, run.get("status") or {}, moment)]
    found.append(own_settings(run, lecture))
    return [f for f in found if f is not None]


def room_flags(
    runs: Sequence[Mapping], lecture: Mapping | None = None, now: float | None = None
) -> dict[str, list[Flag]]:
    """{run id: its flags} for the room's runs (each as `run_flags` takes it); `lecture`: the room's lecture run
    the same way (None: the room has none, so no run is said to use its own settings); `now` as run_flags'."""
    moment = time.time() if now is None else now
    return {r["run"]: run_flags(r, runs, lecture, moment) for r in runs}


def flag_text(flags: Sequence[Flag]) -> str:
    """The table's cell: every flag with its reason, "" for none."""
    return "; ".join(str(f) for f in flags)


def flag_words(flags: Sequence[Flag]) -> str:
    """The chart panel's line: the flags' words only ("" for none)."""
    return ", ".join(f.word for f in flags)


def run_data(run_id: str, reader: Any, name: str = "") -> dict | None:
    """What `run_flags` reads, from a RunReader (or None: no reader, no data); `name`: how a flag names it."""
    if reader is None:
        return None
    status = reader.status()
    return {"run": run_id, "state": status.get("state") or "", "reason": status.get("reason") or "", "status": status,
            "config": reader.config(), "events": reader.events, "metrics": reader.metrics, "name": name}  # fmt: skip


def with_flags(rows: Sequence[dict], flags: Mapping[str, Sequence[Flag]]) -> list[dict]:
    """The Room table's rows (tinygpt.ui.host.runlist.room_rows) with a "flag" column after "state": each run's flags
    with their reasons, "" for a run without one or not read (only the chart's runs are); and "flag words", the
    flags' words alone, which the table's cell shows (room_table: the reasons are said under it)."""
    out = []
    for row in rows:
        cells, mine = list(row.items()), flags.get(row.get("run"), ())
        at = next((i + 1 for i, (key, _) in enumerate(cells) if key == "state"), len(cells))
        out.append(dict([*cells[:at], ("flag", flag_text(mine)), *cells[at:], ("flag words", flag_words(mine))]))
    return out
