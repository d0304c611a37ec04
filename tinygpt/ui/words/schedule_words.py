"""The learning-rate chart's note (pure: no Streamlit): the run's own schedule in words, from its settings, its
live changes and the knobs in force now, as tinygpt.schedule.lr_at computes it."""

from __future__ import annotations

from typing import Any

from tinygpt.config import trains_until_stopped
from tinygpt.schedule import lr_at
from tinygpt.ui.words.knob_words import knob_changes, knob_value, knob_word, shown_changes

SCHEDULE_KNOBS = ("learning_rate", "min_lr", "warmup_steps")


def lr_note(config: dict, knobs: dict[str, Any], ended: bool = False, events: list[dict] = (),
            step: int | None = None) -> str:  # fmt: skip
    """The run's own schedule in words: from its settings, then each live change of its rate or warmup with its
    step (`events`), and, for a run that still trains, the plan from `step` on (`knobs`: in force now). The chart's
    help said "a linear warmup, then a cosine decay" of every run (a review read it under warmup 0); later reviews
    read a finished run's schedule as if its last knobs had held from step 0, a plan "from now on" that warmed up
    again from the peak long after warmup had ended, and two changes of warmup merged into one."""
    train = config.get("train") or {}
    max_steps = int(train.get("max_steps") or 0)
    if max_steps < 1 or train.get("learning_rate") is None:
        return ""
    text = _branch_words(config, events, max_steps) or f"This run's settings: {_schedule_words(train, max_steps)}."
    # a branch's own change is no live change (a review's branch read "Changed live (LR 0.002 → 0.0005 at step 500)")
    changes = [e for e in shown_changes(events) if e.get("knob") in SCHEDULE_KNOBS and not e.get("branch")]
    said = ", ".join(f"{knob_word(e['knob'])} {knob_value(e.get('old'))} → {knob_value(e.get('new'))} at step "
                     f"{int(e.get('step') or 0):,}" for e in changes)  # fmt: skip
    if not said:  # set before its first step (a queued run's knobs): what differs from its settings
        said = ", ".join(f"{knob_word(n)} {knob_value(train.get(n))} → {knob_value(knobs[n])}" for n in SCHEDULE_KNOBS
                         if n != "min_lr" and knobs.get(n) is not None and knobs[n] != train.get(n))  # fmt: skip
    if not said:
        return text
    if ended:
        # The floor moves with the rate (Trainer.set_knob keeps their ratio): a finished run's caption named its
        # settings' floor, 0.0002, under a line that ended at 5e-05 (a review)
        floor, first = knobs.get("min_lr"), train.get("min_lr")
        # every floor it had, in order: "0.0002 → 5e-05" left out the 0.0006 between two changes (a review)
        floors = [first] + [e.get("new") for e in knob_changes(events) if e.get("knob") == "min_lr"
                            and not e.get("branch")]  # fmt: skip
        if floors[-1] != floor:  # the knobs now say where it ended (events from before the floor was logged)
            floors.append(floor)
        chain = " → ".join(knob_value(f) for i, f in enumerate(floors) if i == 0 or f != floors[i - 1])
        moved = (f"; the floor moved with the rate, {chain}"
                 if floor is not None and first is not None and floor != first else "")  # fmt: skip
        return f"{text} Changed live ({said}){moved}: the line shows the rates it used."
    now = {**train, **{n: knobs[n] for n in SCHEDULE_KNOBS if knobs.get(n) is not None}}
    return f"{text} Changed live ({said}); from here: {_plan_words(now, max_steps, int(step or 0))}."


def _branch_words(config: dict, events: list[dict], max_steps: int) -> str:
    """A branch's schedule, which is two: its parent's up to the branch step (its metrics begin with the parent's
    steps), then its own from the next. "" for a run that is no branch, or whose branch left the schedule alone. A
    review's branch (LR 0.002 → 0.0005 at step 500) read "a linear warmup over 30 steps to 0.0005" beside a line
    that warmed up to 0.002."""
    branch, train = config.get("branch") or {}, config.get("train") or {}
    step, changed = branch.get("step"), [k for k in branch.get("changes") or {} if k in (*SCHEDULE_KNOBS, "max_steps")]
    if not isinstance(step, int) or not changed:
        return ""
    old = {e.get("knob"): e.get("old") for e in events if e.get("kind") == "knob" and e.get("branch")}
    known = all(old.get(k) is not None for k in changed)  # max_steps is no knob: the parent's is not in the events
    # the parent's own length: a branch to 1,500 steps read "its parent's: ... a cosine decay to the floor at step
    # 1,500" of a parent that decays to 4,000 (a review; its rate at the branch step is the 4,000-step cosine's)
    parent_steps = int(old.get("max_steps") or max_steps)
    # its settings at step 0, before its own live changes (copied into the branch's events, said after this): the
    # branch event's "old" is the parent at the branch step (a review read "a linear warmup over 50 steps to 0.005"
    # of a parent that warmed up over 30 to 0.002 and was changed live at steps 8,127 and 17,728)
    first: dict[str, Any] = {}
    for e in events:
        if (e.get("kind") == "knob" and e.get("ok", True) and not e.get("branch") and e.get("old") is not None
                and isinstance(e.get("step"), int) and e["step"] <= step and e.get("knob") in SCHEDULE_KNOBS):
            first.setdefault(e["knob"], e["old"])  # fmt: skip
    parent = _schedule_words({**train, **old, **first}, parent_steps) if known else "its parent's schedule"
    said = ", ".join(f"{knob_word(k)} {knob_value(old.get(k))} → {knob_value(train.get(k))}" if old.get(k) is not None
                     else f"{knob_word(k)} {knob_value(train.get(k))}" for k in changed
                     if k != "min_lr" or "learning_rate" not in changed)  # fmt: skip
    own = _plan_words(train, max_steps, step, at=f"at step {step + 1:,}")
    return f"Up to step {step:,}, its parent's: {parent}. Branched there ({said}): {own}."


def _plan_words(train: dict, max_steps: int, step: int, at: str = "now") -> str:
    """The schedule from `step` on, as lr_at computes it with these settings: still warming up, or decaying
    (`at`: where the first rate named stands, "now" or "at step 501")."""
    lr, min_lr = float(train["learning_rate"]), float(train.get("min_lr") or 0.0)
    warmup = int(train.get("warmup_steps") or 0)
    if step < warmup and warmup >= max_steps and not trains_until_stopped(max_steps):  # to the run's end
        return f"warming up toward {lr:g} to its last step, {lr_at(max_steps - 1, lr, min_lr, warmup, max_steps):.3g}"
    if step < warmup:
        return f"warming up to {lr:g} by step {warmup:,}, {_after_peak(train, max_steps)}"
    rate = lr_at(step, lr, min_lr, warmup, max_steps)
    if min_lr >= lr:
        return f"it stays at {lr:g} (its floor is its peak)"
    if trains_until_stopped(max_steps):
        return f"{rate:.3g} {at}, near the peak: the run trains until stopped"
    return f"a cosine decay from {rate:.3g} {at} to the floor, {min_lr:g}, at step {max_steps:,}"


def _schedule_words(train: dict, max_steps: int) -> str:
    """ "a linear warmup over 30 steps to 0.002, then a cosine decay to the floor, 0.0002, at step 300" (lr_at's
    schedule for these settings)."""
    lr, min_lr = float(train["learning_rate"]), float(train.get("min_lr") or 0.0)
    warmup = int(train.get("warmup_steps") or 0)
    until_stopped = trains_until_stopped(max_steps)
    if warmup > max_steps and not until_stopped:  # the warmup outlasts the run: it never reaches its peak
        top = lr_at(max_steps - 1, lr, min_lr, warmup, max_steps)
        return (f"a linear warmup over {warmup:,} steps toward {lr:g}, longer than its {max_steps:,} steps: it ends "
                f"at {top:.3g} without reaching the peak")  # fmt: skip
    if warmup == max_steps and not until_stopped:  # its last step is the peak (lr_at: (step + 1) / warmup)
        return f"a linear warmup over all its {max_steps:,} steps to {lr:g}, reached at the last step"
    start = f"a linear warmup over {warmup:,} steps to {lr:g}"
    # lr_at's first step is learning_rate x 1 / warmup: a warmup of 1 step starts at the peak, as none does
    start = f"no warmup (it starts at the peak, {lr:g})" if warmup <= 1 else start
    return f"{start}, {_after_peak(train, max_steps)}"


def _after_peak(train: dict, max_steps: int) -> str:
    """ "then a cosine decay to the floor, 0.0002, at step 300": what lr_at does once the warmup reached the peak."""
    lr, min_lr = float(train["learning_rate"]), float(train.get("min_lr") or 0.0)
    if min_lr >= lr:  # before the until-stopped case: the Lecture preset's floor is its peak, so nothing decays
        return "then it stays there (its floor is its peak)"
    if trains_until_stopped(max_steps):
        return ("then it stays near the peak: the run trains until stopped (its cosine decay runs to step "
                f"{max_steps:,})")
    return f"then a cosine decay to the floor, {min_lr:g}, at step {max_steps:,}"
