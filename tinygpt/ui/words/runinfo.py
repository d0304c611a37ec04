"""What the pages say about a run, as pure functions of its files' contents: the status line, the ETA, the planned
learning-rate schedule under the current knobs, the marker notes, the answer to a live-knob change, the Runs table's
columns, the hold note.

Pure: plain dicts and lists in, strings and numbers out; no Streamlit, no files (what reads the run store, the Runs
and Room rows among it, is tinygpt/ui/host/runlist.py). Tested in tests/ui/words/test_runinfo.py.
"""

from __future__ import annotations

import math
from typing import Any

from tinygpt.config import LEAKING_MASKS, trains_until_stopped
from tinygpt.runs.knobs import knob_answer, knobs_at, knobs_now
from tinygpt.runs.owners import Actor, run_learner
from tinygpt.schedule import lr_at
from tinygpt.ui.words.clipping import clip_caption  # noqa: F401 - the pages' one place for run texts
from tinygpt.ui.words.knob_words import change_label, knob_marks, knob_value, knob_word, shown_changes
from tinygpt.ui.words.run_words import is_owner, reason_for
from tinygpt.ui.words.setting_words import in_words

# The ETA's pace: the wall clock over the last ETA_WINDOW steps, so evaluations, samples and checkpoints (every 250
# to 500 steps) are part of it; over 50 steps the ETA halved or doubled as one came in or left the window. None
# before ETA_MIN_STEPS timed steps: the first few are no pace to promise by.
ETA_WINDOW, ETA_MIN_STEPS = 500, 10


def eta_seconds(metrics: list[dict], step: int, max_steps: int | None) -> float | None:
    """Seconds left at the run's own pace (its wall clock over its last ETA_WINDOW step records); None for a run
    that trains until stopped, or that has not timed ETA_MIN_STEPS steps yet."""
    if not max_steps or trains_until_stopped(max_steps) or len(metrics) < 2 or step >= max_steps:
        return None
    recent = current_stretch([m for m in metrics[-ETA_WINDOW:] if isinstance(m.get("time"), (int, float))])
    if len(recent) < 2:
        return None
    steps = recent[-1]["step"] - recent[0]["step"]
    seconds = recent[-1]["time"] - recent[0]["time"]
    if steps < ETA_MIN_STEPS or seconds <= 0:
        return None
    return (max_steps - step) * seconds / steps


STRETCH_GAP_S = 30.0  # a gap this long between two step records is no training: a pause, or a branch's copied history


def current_stretch(timed: list[dict]) -> list[dict]:
    """The records of the run's current stretch of training: back from the newest to the first gap of
    STRETCH_GAP_S. A branch's records before its branch point are its parent's, timed when the parent trained: a
    review's branch read "ETA 15 min 01 s", then 5 min 27 s ten seconds later, the window spanning both."""
    start = len(timed) - 1
    while start > 0 and timed[start]["time"] - timed[start - 1]["time"] < STRETCH_GAP_S:
        start -= 1
    return timed[start:]


def recent_tokens_per_s(metrics: list[dict], window: int = 50) -> float | None:
    """Training throughput of the run's own last `window` steps: their tokens over their step time (the harmonic
    mean of each step's tokens/s; every step has the same tokens). status.json's tokens_per_s is a wall-clock rate
    between two status writes, which at the end of a run covers a few steps plus the final eval and checkpoint."""
    rates = [m["tokens_per_s"] for m in metrics[-window:] if isinstance(m.get("tokens_per_s"), (int, float))]
    rates = [r for r in rates if r > 0 and math.isfinite(r)]
    return len(rates) / sum(1.0 / r for r in rates) if rates else None


def own_records(metrics: list[dict], config: dict | None) -> list[dict]:
    """The records a run trained itself: a branch's past its branch step (those before are its parent's, copied
    with the history). A queued branch read "last measured 23,610 tokens/s", its parent's speed (a review)."""
    branch = (config or {}).get("branch")
    start = branch.get("step") if isinstance(branch, dict) else None
    if not isinstance(start, int):
        return metrics
    return [m for m in metrics if isinstance(m.get("step"), int) and m["step"] > start]


def step_rate(metrics: list[dict]) -> float | None:
    """Steps per second over the last ~50 step records (the run's own recent pace); None without two timed ones."""
    recent = [m for m in metrics[-50:] if isinstance(m.get("time"), (int, float))]
    if len(recent) < 2:
        return None
    steps, seconds = recent[-1]["step"] - recent[0]["step"], recent[-1]["time"] - recent[0]["time"]
    return steps / seconds if steps > 0 and seconds > 0 else None


def verdict_progress(runs: dict[str, tuple[dict, list[dict]]]) -> tuple[float, str]:
    """(fraction of all planned steps done, sentence) for an experiment whose verdict waits for every run to end
    ({label: (status, metrics)}): the estimate is the slowest run's remaining steps at its own recent pace, and
    there is none while a run waits for a slot or is paused (its start is not this run's to know)."""
    fraction, parts, etas, waiting = _tally(runs)
    if not waiting and not etas:
        return 1.0, "Every run has ended: " + "; ".join(parts) + "."
    if waiting:
        head = (
            f"No estimate yet: {', '.join(waiting)} {'is' if len(waiting) == 1 else 'are'} not training now; "
            "the verdict comes when every run has ended."
        )
    else:
        head = (
            f"Verdict in about {format_duration(max(etas))}, when the slowest run ends (each run's remaining steps "
            "at its own pace over its last 50 steps)."
        )
    return fraction, f"{head} {'; '.join(parts)}."


def progress_words(runs: dict[str, tuple[dict, list[dict]]]) -> str:
    """verdict_progress in a few words, for the projector's one line: "(runs 33% trained; the last done in about
    2 min 17 s)", "(runs 33% trained; 1 not training now)", or "" once every run has ended. A review's banner said
    only "Still training: the verdict comes when both runs end", the progress one click away."""
    fraction, _, etas, waiting = _tally(runs)
    if waiting:
        return f"(runs {fraction:.0%} trained; {len(waiting)} not training now)"
    return f"(runs {fraction:.0%} trained; the last done in about {format_duration(max(etas))})" if etas else ""


def _tally(runs: dict[str, tuple[dict, list[dict]]]) -> tuple[float, list[str], list[float], list[str]]:
    """(fraction of the planned steps done, each run in words, the training runs' seconds left, the runs not
    training now) of {label: (status, metrics)}."""
    done = total = 0
    parts, etas, waiting = [], [], []
    for label, (status, metrics) in runs.items():
        step, max_steps = int(status.get("step") or 0), int(status.get("max_steps") or 0)
        state = str(status.get("state") or "unknown")
        done, total = done + min(step, max_steps), total + max_steps
        rate = step_rate(metrics)
        if state in ("finished", "stopped", "failed", "diverged"):
            parts.append(f"{label}: {state} at step {step:,}")
        elif state == "running" and rate:
            etas.append(max(0, max_steps - step) / rate)
            parts.append(f"{label}: step {step:,} / {max_steps:,} at {rate:,.0f} steps/s")
        else:
            where = f", position {status['queue_position']} in the queue" if status.get("queue_position") else ""
            waiting.append(label)
            parts.append(f"{label}: {state}{where}, step {step:,} / {max_steps:,}")
    return (done / total if total else 0.0), parts, etas, waiting


def format_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def queue_words(forecast: dict | None) -> str:
    """When a queued run starts and why it waits, from its entry in tinygpt.runs.forecast.queue_forecast (None:
    the manager has no place for it yet). A review saw a learner told "Starts in about 14 s, when a training slot
    frees up" while 15 prepared runs, which the slot rule starts first, took 248 s: the words name what is ahead,
    and give no number that the runs ahead make impossible (none at all before any run has a measured pace)."""
    if not forecast:
        return "Waiting for a training slot"
    prepared, live, seconds = (
        forecast.get("prepared_ahead") or 0,
        forecast.get("live_ahead") or 0,
        forecast.get("seconds"),
    )
    if seconds is not None and not math.isfinite(seconds):
        return ("Starts only when someone stops a run: every training slot it could get is held, or will be, by a "
                "run that trains until stopped")  # fmt: skip
    when = None if seconds is None else "within seconds" if seconds < 1 else f"about {format_duration(seconds)}"
    if forecast.get("prepared"):  # a prepared run waits for the runs ahead of it in its own class, plainly
        prepared, live = 0, prepared + live
    if prepared:
        first = "Queued: prepared runs (the lesson's long runs, a lab batch) train first in the free training slot"
        more = f" and {live} live run(s)" if live else ""
        if when is None:  # no pace measured yet: the count is true, a number of seconds would not be
            return f"{first}; it starts not before the {prepared} ahead of it{more} have trained (no pace measured yet)"
        return f"{first} ({prepared} ahead of it{more}, {when})"
    ahead = f" ({live} run(s) ahead of it)" if live else ""
    if when is None:
        return f"Waiting for a training slot{ahead}: no run has a measured pace yet to say when"
    return f"Starts {when if when.startswith('within') else 'in ' + when}, when a training slot frees up{ahead}"


def compute_rate(status: dict, tokens_per_s: float) -> str | None:
    """ "57 GFLOP/s, 31% of this machine's matmul peak": the step's matmul arithmetic (the worker's count from the
    model's shapes, tinygpt.flops) at the run's recent tokens/s, against the dense-matmul peak the worker measured
    for the same sizes on the same threads. None when the run did not record them (older runs, MPS)."""
    per_token, peak = status.get("train_flops_per_token"), status.get("matmul_peak_gflops")
    if not isinstance(per_token, (int, float)) or per_token <= 0:
        return None
    gflops = tokens_per_s * per_token / 1e9
    text = f"{gflops:,.1f} GFLOP/s" if gflops < 100 else f"{gflops:,.0f} GFLOP/s"
    if isinstance(peak, (int, float)) and peak > 0:
        # The peak is measured for this model's own matmul sizes (tinygpt/runs/peak.py): two runs of other shapes
        # read 168 and 174 GFLOP/s on one machine (a review), so the words say whose peak it is.
        share = f"{100 * gflops / peak:.0f}%"
        text += f", {share} of this machine's matmul peak at this model's sizes ({peak:,.0f} GFLOP/s)"
    return text


def status_line(status: dict, metrics: list[dict], config: dict | None = None, viewer: Actor | None = None) -> str:
    """`step N / M · X tokens/s · ETA · state: reason`; `step N · X tokens/s · until stopped · state` for a run
    with no planned end (the Lecture preset): it has no ETA to give. Only a running run's speed is current: any
    other state says "last measured X tokens/s" (no GFLOP/s), the speed of its last steps. With the run's `config`,
    the reason is in `viewer`'s words (run_words.reason_for: "stopped by you" only for who stopped it)."""
    # The newer of status.json's step (rewritten every few tenths of a second) and the last record drawn beside it:
    # a lesson pane read "by step 836 it is 2.04" from the records above "lecture · run: step 819" from the status.
    last = metrics[-1].get("step") if metrics else None
    step = max(int(status.get("step") or 0), int(last) if isinstance(last, (int, float)) and last == last else 0)
    max_steps = status.get("max_steps")
    endless = trains_until_stopped(max_steps)
    parts = [f"step {step:,} / {max_steps:,}" if max_steps and not endless else f"step {step:,}"]
    metrics = own_records(metrics, config)  # a branch's speed and ETA are its own steps', not its parent's
    tps = recent_tokens_per_s(metrics)
    state = status.get("state", "unknown")
    if tps and state == "running":
        parts.append(f"{tps:,.0f} tokens/s")
        if (speed := compute_rate(status, tps)) is not None:
            parts.append(speed)
    elif tps:  # paused, queued or ended: its last steps' speed, said as such (it read as current while paused)
        parts.append(f"last measured {tps:,.0f} tokens/s")
    if endless and state in ("queued", "starting", "running", "paused"):
        parts.append("until stopped")
    elif state in ("running", "starting") and (eta := eta_seconds(metrics, step, max_steps)) is not None:
        parts.append(f"ETA {format_duration(eta)}")  # none before the run has a pace of its own ("ETA -" read odd)
    text = state
    if status.get("queue_position"):
        text += f" (position {status['queue_position']} in the queue)"
    reason = str(status.get("reason") or "")
    reason = reason_for(reason, config, viewer) if config is not None else reason
    if reason:  # reasons often start with their state ("finished: reached max_steps"): say it once
        text += f": {reason.removeprefix(state + ':').strip()}" if reason != state else ""
    parts.append(text)
    return " · ".join(p for p in parts if p.strip())  # an empty part drew "· ·"


def sample_lines(record: dict) -> tuple[str, str]:
    """(heading, text) of the Train page's sample: the text is the prompt and then the model's characters (the
    continuation alone started mid-word), and the heading says how much of it is the prompt."""
    prompt, text = str(record.get("prompt") or ""), str(record.get("text") or "")
    told = f": the first {len(prompt)} characters are the prompt from the corpus, the rest the model's"
    return f"**Sample at step {record.get('step')}**{told if prompt else ''}", prompt + text


def progress_fraction(status: dict) -> float | None:
    """How far through its planned steps a run is (0-1); None for a run that trains until stopped (no bar)."""
    max_steps = status.get("max_steps") or 0
    if trains_until_stopped(max_steps):
        return None
    return min(1.0, max(0.0, (status.get("step") or 0) / max_steps)) if max_steps else 0.0


def event_notes(events: list[dict], limit: int = 5) -> str:
    """The newest knob changes (written as the charts' markers write them, knob_words.change_label) and non-finite
    events (their messages) as one line of text; the older ones left out are counted ("2 earlier: on the chart"):
    a review read five of seven changes under a chart numbered ①-⑦, nothing saying two were left out."""
    changes = {id(e) for e in shown_changes(events)}  # min_lr moves with its lr
    every = [e for e in events if id(e) in changes or e.get("kind") in ("nonfinite", "diverged")]
    marked, earlier = every[-limit:], max(0, len(every) - limit)
    line = " · ".join(change_label(e) if id(e) in changes else in_words(e.get("message") or "") for e in marked)
    return f"{earlier} earlier (on the chart) · {line}" if earlier and line else line


def knob_note(events: list[dict], request: str, knob: str, value: Any, config: dict | None = None) -> tuple[str, str]:
    """(kind, text) of what happened to a live-knob change the page asked for: "success" with the step it
    applied at, "error" with the worker's reason, or "info" while the worker has not answered yet. With the run's
    `config`, a warmup change after warmup ended also says what it did to the learning rate (warmup_effect)."""
    answer = knob_answer(events, request)
    change = f"{knob_word(knob)} → {knob_value(value)}"  # the knob's word, as its chart marker will name it
    if answer is None:
        return "info", f"{change}: applies at the next step"
    if answer.get("ok") is False:
        return "error", f"{change}: not applied: {in_words(answer.get('error') or answer.get('message'))}"
    # A change answered at step s applies after it: step s trained at the old value (a review read "applied at step
    # 784" beside step 784's old learning rate in metrics.jsonl)
    step = answer.get("step")
    text = f"{change}: applied after step {step}" + (f", from step {step + 1}" if isinstance(step, int) else "")
    effect = warmup_effect(config, events, answer) if config and knob == "warmup_steps" else None
    if effect:
        return "info", f"{text}. {effect}"
    return "success", text


def warmup_effect(config: dict, events: list[dict], answer: dict) -> str | None:
    """What a warmup_steps change did to the learning rate, warmup over or still running: the trainer
    computes each step's rate from the warmup in force (schedule.lr_at), so a new value either warms up again (a
    drop), moves the cosine decay's phase, or changes nothing measurable. Computed, not assumed."""
    step, old, new = answer.get("step"), answer.get("old"), answer.get("new")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (step, old, new)):
        return None
    train = config.get("train") or {}
    upto = next((i for i, e in enumerate(events) if e is answer), len(events) - 1)
    knobs = knobs_now(config, events[: upto + 1])  # the knobs in force when it applied
    lr, min_lr = float(knobs.get("learning_rate") or 1e-3), float(knobs.get("min_lr") or 0.0)
    max_steps = int(train.get("max_steps") or 0)
    before, after = lr_at(step, lr, min_lr, old, max_steps), lr_at(step, lr, min_lr, new, max_steps)
    if step < old:  # still warming up: the rate jumps to the new ramp (a review: 1000 -> 200 at step 488 doubled it)
        was, now = distinct(before, after)
        where = ("it is over, so the cosine decay runs from here" if new <= step else
                 f"it now ends at step {new}")  # fmt: skip
        return (f"At step {step} the warmup was still running (to step {old}): with {new} warmup steps {where}; "
                f"from step {step + 1} the learning rate goes from {was} to {now} ({(after - before) / before:+.0%}).")
    ended = f"warmup was already over (it ended at step {old})" if old else "the run had no warmup"
    if new > step:
        return (f"At step {step} {ended}: {new} warmup steps start it again, so from step {step + 1} the learning "
                f"rate drops from "
                f"{before:.3g} to {after:.3g} and climbs back until step {new}.")  # fmt: skip
    if abs(after - before) <= 1e-3 * max(abs(before), 1e-12):
        return (f"At step {step} {ended}: the change has no measurable effect on training (the learning rate "
                f"stays {before:.3g}, within 0.1%).")  # fmt: skip
    was, now = distinct(before, after)  # "0.00194 to 0.00194" read as no change (a review): digits until they differ
    return (f"At step {step} {ended}: nothing warms up again; the cosine decay shifts, so the learning rate goes "
            f"from {was} to {now} ({(after - before) / before:+.1%}).")  # fmt: skip


def distinct(a: float, b: float) -> tuple[str, str]:
    """`a` and `b` in as few significant digits (3 to 6) as tell them apart."""
    for digits in range(3, 7):
        x, y = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if x != y:
            break
    return x, y


def lr_schedule(
    config: dict, knobs: dict[str, Any], points: int = 300, now: int | None = None
) -> list[tuple[int, float]]:
    """The planned learning rate from the step after `now` (the step just completed) to the end, with the knobs in
    force now: [(step, lr)], ~`points` long. Only from now on: the past is the rate used (metrics), and a knob moved
    now changes no step already taken (a plan redrawn from step 1 showed a new warmup "backwards in time"). A run
    that trains until stopped has no end to plan to: its plan reaches a quarter past `now` and past twice the
    warmup, so the chart's axis follows the run instead of squeezing it against a million steps."""
    train = config.get("train") or {}
    max_steps = int(train.get("max_steps") or 0)
    if max_steps < 1:
        return []
    end = max_steps  # the last step drawn; the schedule itself always runs to max_steps, as the trainer's does
    if trains_until_stopped(max_steps):
        warmup_now = int(knobs.get("warmup_steps") or train.get("warmup_steps") or 0)
        end = max(100, 2 * warmup_now, int(1.25 * (now or 0)))
    first = max(1, min(int(now or 0) + 1, end))  # the next step to take

    def knob(name: str, default: Any) -> Any:
        value = knobs.get(name)
        return value if value is not None else train.get(name, default)

    lr, min_lr, warmup = float(knob("learning_rate", 1e-3)), float(knob("min_lr", 0.0)), int(knob("warmup_steps", 0))
    stride = max(1, (end - first) // points)
    corners = {end} | ({warmup} if first <= warmup <= end else set())  # where warmup ends, if still ahead
    steps = sorted(set(range(first, end + 1, stride)) | corners)
    # metrics' `step` is the step just completed (1-based); lr_at takes the 0-based step being taken
    return [(s, lr_at(s - 1, lr, min_lr, warmup, max_steps)) for s in steps]


def nearest_checkpoint(steps: list[int], step: int | None) -> int | None:
    """The latest checkpoint at or before `step` (the first one if all are later); None if there is none."""
    if not steps:
        return None
    if step is None:
        return steps[-1]
    before = [s for s in steps if s <= step]
    return before[-1] if before else steps[0]


def checkpoint_where(ck: int, step: int) -> str:
    """How the checkpoint at `ck` (nearest_checkpoint's pick) stands to `step`: "the same step", "the latest at or
    before step 260", or "the first there is; none at or before step 3". "Nearest to step 260" was said of step 0
    beside a checkpoint at 500 (a review): a later checkpoint would show a model the step had not trained yet."""
    if ck == step:
        return "the same step"
    return f"the latest at or before step {step:,}" if ck < step else \
        f"the first there is; none at or before step {step:,}"  # fmt: skip


def nearest_snapshot(steps: list[int], step: int) -> int:
    """The snapshot step closest to `step` (ties go to the earlier one)."""
    return min(steps, key=lambda s: (abs(s - step), s))


def knob_history(events: list[dict]) -> list[str]:
    """What the run really did besides its config: every applied live change as its chart marker reads, e.g.
    ["mask causal→none @1810"] (a coupled min_lr move is part of its learning-rate change)."""
    return [mark["label"] for mark in knob_marks(events)]


def best_eval(config: dict, events: list[dict], evals: list[dict]) -> tuple[int, float, list[str]] | None:
    """(step, val loss, the live changes in force then) of a run's best validation loss, or None without one:
    a low loss reached under mask "none" is the model reading the answer, no model's that predicts. The best of
    the evals under a causal mask, then; one under a leak only where every eval was (the table says so): a review
    read "mask off_by_one: 0.0601 @900" for a run whose best after its leak, 1.093 at step 2950, showed nowhere."""
    scored = sorted((e["val_loss"], e["step"]) for e in evals if isinstance(e.get("val_loss"), float) and "step" in e)
    if not scored:
        return None
    # The eval at step s ran after that step, before any change recorded at s (loop.publish, then the commands):
    # under knobs_at(s - 1). A review's run switched back from mask none at step 850 read a leak's 0.1539 @850.
    honest = [(v, s) for v, s in scored if knobs_at(config, events, s - 1).get("mask") not in LEAKING_MASKS]
    loss, step = (honest or scored)[0]
    base = knobs_now(config, [])
    then = knobs_at(config, events, step - 1)
    changed = [f"{knob_word(k)} {knob_value(v)}" for k, v in then.items() if v != base.get(k) and k != "min_lr"]
    if then.get("mask") in LEAKING_MASKS and then.get("mask") == base.get("mask"):  # started leaking: say so too
        changed.insert(0, f"{knob_word('mask')} {knob_value(then['mask'])}")
    return step, loss, changed


RUNS_TABLE_FIRST = ["name", "owner", "state", "step", "best val loss"]  # what the Runs table shows first
# Fixed widths (Streamlit's column config as plain dicts): a run name reads in full in 400 px and the rest fit
# beside it at 1280 px with Large fonts; sized by content, the table scrolled sideways by 50 px on a projector.
# In pixels, the five within a 1280x720 window's main area beside the sidebar (~850 px): at "small" an owner
# ("patient-koala-12") read "patient-koa"; at large + 3 medium the best val loss lay past the edge, "be" (reviews)
# The name takes what is left of the 818 px the grid shows at 1280 px (380 scrolled it 32 px sideways, a review): at
# 300 a review read "… max steps 30" for a run of 30000 steps.
RUNS_TABLE_WIDTHS = {"name": {"width": 345}, "owner": {"width": 140}, "state": {"width": 80},
                     "step": {"width": 60}, "best val loss": {"width": 190}}  # fmt: skip
LARGE_FONTS_NAME_WIDTH = 300  # Large fonts widen the sidebar: at 380 the table scrolled 72 px sideways (a browser test)


def runs_table_widths(large: bool) -> dict[str, dict[str, int]]:
    """The Runs table's column widths: RUNS_TABLE_WIDTHS, the name narrower with Large fonts on."""
    return {**RUNS_TABLE_WIDTHS, "name": {"width": LARGE_FONTS_NAME_WIDTH}} if large else RUNS_TABLE_WIDTHS


def share_link(page_url: str, run_id: str) -> str:
    """The read-only link to a run's live view (the Train page, the app's root) from the address of the page the
    link is made on, e.g. http://host:8501/runs -> http://host:8501/?run=ID&view=1 (the Runs page itself has no
    live view; an old /runs?run=ID&view=1 link still opens Train, see tinygpt/ui/frame.py)."""
    base = str(page_url or "").split("?", 1)[0].split("#", 1)[0].rstrip("/")
    if base.endswith("/runs"):
        base = base[: -len("/runs")]
    return f"{base}/?run={run_id}&view=1"


def hold_note(hold, config: dict, actor: Actor) -> tuple[str, str] | None:
    """(kind, text) the Train page says about an instructor's hold on the run it shows (None: no hold), true for
    the one who reads it: its owner is told why Resume and Step are off and that the hold keeps them from starting
    runs (tinygpt.ui.people.admission: a hold holds); any other learner only that the instructor holds it (Resume
    and Step are off for them anyway: it is not their run); the instructor that they paused it and hold it, as
    the status line's "paused by you" says (run_words.reason_for), and how to let go. `hold`: the run handle's
    (RunHandle.hold, read once a script run)."""
    if not hold:
        return None
    # No step here: the status line says where the worker stopped (the hold is written a step or so before that).
    if actor.instructor:
        from tinygpt.ui.words.safe import md  # a learner's name: shown as text, never as markdown

        owner = md(run_learner(config).get("name") or "its learner")
        return "info", (
            f"You paused this run and hold it: {owner} cannot resume it, nor start, branch or resume any run, until "
            "you let go. **Resume** lets go of it."
        )
    if not is_owner(config, actor):
        return "info", "Paused and held by the instructor."
    return "warning", (
        "Paused by the instructor, who holds it: **Resume** and **Step** stay off, and you cannot start, branch or "
        "resume a run, until the instructor lets go of it (look at the projector). You can still watch it, sample "
        "it, stop or delete it, and open runs on Runs."
    )
