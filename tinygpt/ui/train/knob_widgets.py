"""The live knobs' widgets on the Train page: what they show, and what one of them sends when it moves.

What they show: while the run in view takes knob changes (training or queued), the run's own values (its config,
then every applied knob event), for every viewer, the owner too; this viewer's own change shows while its answer
is pending, and a refused one snaps back to the run's value (the live view says why). Otherwise (no run, or an
ended one) the widgets are the form for the next run.

What one sends: the knob of the widget that moved, with that widget's value (one `KnobChange` per move). A slider
sends when it rests: every arrow-key press is a move of its own, and a burst of 20 presses was 20 changes, each a
command, an event and a chart marker. A slider's move is kept as a pending note instead (its value, no request
yet), and the live view's refresh sends it once no press came for SETTLE_S (`settled`); the note keeps the widget
on the value being turned meanwhile. A typed value (the exact box) or a click (radio) is one deliberate move and is
sent at once. What came of it (`answers`) the live view reads from the run's events, and the widgets follow it
(`run_moved`: a refused change snaps back).

Why each widget is drawn under a key with a generation (`w_lr@3`): the browser sends every widget's value with
every rerun request, and a request it sent before it drew a value the server set (the run moved, the exact box
following its slider, a preset) carries the old value, which Streamlit then takes for a move of that widget. The
rehearsal lost an update that way: in a burst of 30 arrow-key presses on Warmup, the learning rate's exact box
sent its old 0.002 and the run's rate went back from 0.05. So the server never changes a value under a widget
the browser holds: when the form's value changed from the server's side, the widget is drawn anew under the next
key, and the old widget's stale copy belongs to a widget that is gone (Streamlit skips widgets it no longer
knows, and an unchanged value is no change). The widget the learner moves keeps its key, and so its focus.
"""

from __future__ import annotations

import time
from typing import Any

from tinygpt.runs.knobs import knob_answer, knobs_now
from tinygpt.ui import state
from tinygpt.ui.train import train_keys
from tinygpt.ui.words import runinfo

LIVE_ROLES = ("", "_exact")  # a knob's widgets: the main one, and a log slider's exact box
SETTLE_S = 0.4  # s a slider rests before its value is sent: longer than a key repeat, shorter than a person waits
SETTLING_WIDGETS = ("slider", "log_slider")  # moved by key presses in bursts; a log slider's exact box is typed


def settles(widget: str, key: str, value_key: str) -> bool:
    """Whether a move of the widget drawn under `key` waits for the knob to rest (pure): a slider's, not the exact
    box's beside a log slider."""
    return widget in SETTLING_WIDGETS and not key.startswith(value_key + "_exact")


def settled(notes: dict[str, dict], now: float, settle_s: float | None = None) -> list[str]:
    """The knobs whose pending change (a note with no request yet) has rested for `settle_s` (SETTLE_S, read at
    call time) by `now` (pure)."""
    settle_s = SETTLE_S if settle_s is None else settle_s
    return [
        knob
        for knob, note in notes.items()
        if note.get("request") is None and note.get("moved_at") is not None and now - note["moved_at"] >= settle_s
    ]


def widget_key(value_key: str, generations: dict[str, int], role: str = "") -> str:
    """The key a knob's widget is drawn under now (pure: tests look their widgets up with it)."""
    return f"{value_key}{role}@{generations.get(value_key + role, 0)}"


def mount(value_key: str, role: str = "", bounds: tuple | None = None) -> str:
    """The key to draw the widget of `value_key` under: the same as before while the widget holds the form's
    value, a new one (holding the form's value) when the value changed from the server's side, or when the
    slider's `bounds` (min, max) did: Streamlit makes a slider with new bounds a new widget, at its minimum. A
    learner's Set up opened the Lecture run (context 16) from a Demo form (context 32) and the Window slider read 1,
    the run's window 8."""
    generations = dict(state.get(train_keys.KNOB_WIDGETS) or {})
    key = widget_key(value_key, generations, role)
    value = state.get(value_key)
    drawn_bounds = dict(state.get(train_keys.KNOB_BOUNDS) or {})
    new_bounds = bounds is not None and drawn_bounds.get(value_key + role, bounds) != bounds
    if bounds is not None:
        state.put(train_keys.KNOB_BOUNDS, {**drawn_bounds, value_key + role: bounds})
    if state.has(key) and (state.get(key) != value or new_bounds):
        generations[value_key + role] = generations.get(value_key + role, 0) + 1
        state.put(train_keys.KNOB_WIDGETS, generations)
        key = widget_key(value_key, generations, role)
    if not state.has(key):
        state.put(key, value)
        mounted = {k: t for k, t in (state.get(train_keys.KNOB_MOUNTED) or {}).items() if time.monotonic() - t < 60}
        state.put(train_keys.KNOB_MOUNTED, {**mounted, key: time.monotonic()})
    return key


FRESH_S = 15.0  # s after its mount a widget's report of its own default is taken for an echo (3.4 s seen, at load 3)


def echo_pending() -> bool:
    """Whether a fresh widget's default echo was refused since the last look (moved): the page must be drawn again,
    or the widget keeps showing the default while the form holds its value. Once."""
    return bool(state.pop(train_keys.KNOB_ECHO))


def is_current(key: str, value_key: str, generations: dict[str, int]) -> bool:
    """Whether `key` is the widget of `value_key` drawn now, not one the server replaced (pure)."""
    role = key[len(value_key) : key.rindex("@")] if key.startswith(value_key) and "@" in key else None
    return role is not None and key == widget_key(value_key, generations, role)


def moved(value_key: str, key: str, defaults: tuple = (), others: dict[str, tuple] | None = None) -> Any:
    """A widget's on_change: its value becomes the form's value (and the other widgets of the knob follow it on
    this run, drawn anew). Returns the value, the one the knob change sends; None for a widget the server has
    replaced, whose value is the browser's stale copy (Streamlit still runs the callback of a widget it has just
    dropped when the browser reports it, seen in a real browser: the exact box's old 0.002 after the slider's
    0.005), and which must never be sent. None too for a widget mounted under FRESH_S ago reporting its own
    default (`defaults`: its minimum, its first option): a click on Large fonts while the page's first run drew the
    form came back with every new knob widget at its default, and the next Train started at LR 1e-06, warmup 0,
    clip off (a review; 3 of 6 here at load 3). The page is then drawn again (`echo_pending`), and the widget anew
    with the form's value (mount: its state is not the form's). An echo comes from every widget drawn anew at once:
    one fresh widget alone at its default is a learner's move (`others`: the other knobs' value keys and defaults),
    and a review's warmup dragged to 0 and clip typed as 0 within 15 s of opening Train snapped back unsaid."""
    generations = state.get(train_keys.KNOB_WIDGETS) or {}
    if not is_current(key, value_key, generations):
        return None
    value = state.get(key)
    mounted = (state.get(train_keys.KNOB_MOUNTED) or {}).get(key)
    if mounted is not None and time.monotonic() - mounted < FRESH_S and value in defaults and (
            others is None or _echoing(others, generations)):  # fmt: skip
        state.put(train_keys.KNOB_ECHO, True)
        return None
    state.put(value_key, value)
    return value


def _echoing(others: dict[str, tuple], generations: dict[str, int]) -> bool:
    """Whether another knob's widget, drawn anew under FRESH_S ago, reports one of its defaults (`others`: value
    key -> defaults) where the form holds another value: the echo of a page drawn anew, not a learner's move."""
    now = time.monotonic()
    for key, at in (state.get(train_keys.KNOB_MOUNTED) or {}).items():
        for value_key, defaults in others.items():
            if now - at < FRESH_S and is_current(key, value_key, generations) and state.get(key) in defaults \
                    and state.get(key) != state.get(value_key):  # fmt: skip
                return True
    return False


def run_values(config: dict, events: list[dict], names: list[str], notes: dict[str, dict]) -> dict[str, Any]:
    """What the widgets of the knobs `names` show for a run: its values now, except this session's own change
    still waiting for its answer (`notes`, knob_notes of that run). An answered change shows what the run
    did with it: the new value, or the old one again if it was refused (pure)."""
    values = {name: value for name, value in knobs_now(config, events).items() if name in names}
    for name, note in notes.items():
        if name in values and knob_answer(events, note["request"]) is None:
            values[name] = note["value"]
    return {name: value for name, value in values.items() if value is not None}


def asks_nothing(config: dict, events: list[dict], name: str, value: Any, notes: dict[str, dict]) -> bool:
    """Whether sending `value` for knob `name` would change nothing: the run has that value now and no change this
    session sent (`notes`, knob_notes of that run) is still on its way to another (a review's events read "mask
    causal -> causal" after one click; a slider moved away and back before it rested sends nothing). Pure."""
    sent = {knob: note for knob, note in notes.items() if note.get("request")}  # a settling note is not sent yet
    now = run_values(config, events, [name], sent)
    return name in now and now[name] == value and isinstance(now[name], bool) == isinstance(value, bool)


def show_run(run: str, values: dict[str, Any], keys: dict[str, str], context: int | None = None) -> None:
    """Put the run's values into the form (`keys`: knob -> value key) before the widgets are drawn. `context`: the
    run's max_seq_len, kept with them for the Window slider's top (the run's window is bounded by the run's context,
    not by the form's draft for a new run)."""
    for name, value in values.items():
        state.put(keys[name], value)
    state.put(train_keys.KNOBS_DRAWN, (run, values, context))


def run_moved(run: str, config: dict, events: list[dict]) -> bool:
    """From the live view: did the run's knobs move away from what the widgets drew (someone else turned one, or
    a change of this viewer's was answered with a refusal)? Then the page redraws them. False while the widgets
    were not drawn from this run."""
    drawn = state.get(train_keys.KNOBS_DRAWN)
    if not drawn or drawn[0] != run:
        return False
    return run_values(config, events, list(drawn[1]), knob_notes(run)) != drawn[1]


# ---------------------------------------------------------------- the changes this session asked for (KNOB_NOTES)


def knob_notes(run: str | None) -> dict[str, dict]:
    """{knob: {"value", "request", "run", "moved_at"}}: the live-knob changes this session asked of `run`, whose
    answers the page shows. Only that run's: a note of the run shown before ("LR → 0.1: applies at the next step")
    must never appear over another run (Bring to the projector)."""
    notes = state.get(train_keys.KNOB_NOTES) or {}
    return {knob: note for knob, note in notes.items() if run and note.get("run") == run}


def add_knob_note(knob: str, value: Any, request: str | None, run: str, moved_at: float | None = None) -> None:
    """A change asked of `run` (`request`: the manager's id), or one still settling (request None, `moved_at`:
    the monotonic time of its widget's last move; `settled` says when it is sent)."""
    note = {"value": value, "request": request, "run": run, "moved_at": moved_at}
    state.put(train_keys.KNOB_NOTES, {**(state.get(train_keys.KNOB_NOTES) or {}), knob: note})


def answers(run: str, events: list[dict], config: dict) -> list[tuple[str, str]]:
    """(kind, text) for each change this session asked of `run` (knob_notes): the run's answer as the page says it
    (runinfo.knob_note: applied at a step, refused and why, or still waiting for the worker)."""
    return [runinfo.knob_note(events, n["request"], knob, n["value"], config) for knob, n in knob_notes(run).items()]


def drop_knob_note(knob: str) -> None:
    state.put(train_keys.KNOB_NOTES, {k: n for k, n in (state.get(train_keys.KNOB_NOTES) or {}).items() if k != knob})


def clear_knob_notes() -> None:
    state.put(train_keys.KNOB_NOTES, {})
