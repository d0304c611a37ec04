"""Branching in the app (issue 37): the Runs page's "Branch from this checkpoint" control and the branch points
Compare marks. The rule of what a branch may change and how it is made is the engine's (tinygpt.runs.branch); here
are the widgets, the room's admission (budget, one slot a learner) and the words.

A learner may branch any run they can see, the instructor's lecture run included: the branch is a new run of
their own, and the parent is only read. The control offers the settings a lesson changes (the live knobs and
max_steps, dropout); the CLI's `train --branch` takes any setting a branch may change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import streamlit as st

from tinygpt.config import ATTN_SCALES, LIMITS, MASKS, RunConfig
from tinygpt.errors import TinyGPTError
from tinygpt.runs.branch import branch_of, checkpoint_settings, plan_branch, section_of
from tinygpt.runs.files import list_checkpoints, read_config_json
from tinygpt.runs.keeps import keep_checkpoint
from tinygpt.runs.knobs import knobs_at
from tinygpt.runs.owners import Actor
from tinygpt.runs.store import RunStore
from tinygpt.schedule import lr_at, moved_floor
from tinygpt.ui import state
from tinygpt.ui.host import resources
from tinygpt.ui.people import admission, people_keys
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import flashes
from tinygpt.ui.train import settings, train_keys
from tinygpt.ui.words import safe
from tinygpt.ui.words.knob_words import change_label, knob_value, knob_word, shown_changes
from tinygpt.ui.words.setting_words import setting_word

# (setting, label, choices or None): what the control lets a learner change, in the order a lesson changes them.
SETTINGS = (
    ("learning_rate", "Learning rate", None),
    ("warmup_steps", "Warmup steps", None),
    ("mask", "Mask", MASKS),
    ("attn_scale", "Attention scaling", ATTN_SCALES),
    ("max_steps", "Max steps", None),
    ("dropout", "Dropout", None),
    ("weight_decay", "Weight decay", None),
)
SHOWN_AFTER = 2  # the parent's later live changes a label names; the rest are counted (the subtitle stays short)


def branch_points(configs: Mapping[str, Mapping | None], names: Mapping[str, str]) -> dict[str, tuple[int, str]]:
    """{run name: (branch step, parent's name)} for the compared runs that are branches: `configs` by run name
    (config.json as read), `names` every run's name by id (the parent need not be compared; a deleted parent is
    named by its id)."""
    points = {}
    for name, config in configs.items():
        if (branch := branch_of(config or {})) is not None:
            points[name] = (branch["step"], names.get(branch["parent"], f"run {branch['parent']}"))
    return points


def parent_label(
    parent_config: dict, config: dict, parent_events: Iterable[dict] = (), events: Iterable[dict] = ()
) -> str:
    """The label of the faint parent curve on Train: "parent, branched at step 120 (LR→0.01)" for a branch (a
    learning rate's min_lr, moved along, left unsaid), then the parent's live changes after the branch step that
    the branch did not take (parent_changes_after), settings.ghost_label's "previous run: ..." for a run that
    replaced another."""
    if (branch := branch_of(config)) is None:  # and what the replaced run changed as it trained: the grey curve
        # bends there (a review compared against a curve said to be "LR 0.002" that ran at 0.005 from step 278)
        changes = [change_label(e) for e in shown_changes(parent_events)]
        more = len(changes) - SHOWN_AFTER
        live = ", ".join(changes[:SHOWN_AFTER]) + (f" and {more} more" if more > 0 else "")
        return settings.ghost_label(parent_config, config) + (f"; its live changes: {live}" if changes else "")
    changes = branch["changes"]
    shown = [n for n in changes if n != "min_lr" or "learning_rate" not in changes]
    said = [f"{setting_word(n)}→{knob_value(changes[n])}" for n in shown]
    label = f"parent, branched at step {branch['step']}" + (f" ({', '.join(said)})" if said else " (no change)")
    return "; ".join([label, *parent_changes_after(parent_events, config, events)])


def parent_from(config: dict) -> int | None:
    """The step from which Train draws the faint parent curve: a branch's branch step (up to there the branch's
    history is the parent's, copied, the two curves are one, and the parent's lay hidden under the branch's own:
    review 6.5 looked for it there); None, the whole curve, for a run that replaced another."""
    branch = branch_of(config)
    return None if branch is None else branch["step"]


def parent_changes_after(parent_events: Iterable[dict], config: dict, events: Iterable[dict] = ()) -> list[str]:
    """The parent's live knob changes after the branch step, each with the value the branch had then ("the
    parent's LR changed to 0.1 at step 4208; the branch kept 0.003"), from the two runs' knob events: a branch
    starts from its parent's weights, optimizer state and batches, and a change made to the parent later never
    reaches it, so the curves part there even with no change of the branch's own (review: a "no change" branch,
    said to follow its parent exactly, parted at the parent's LR 0.1). A change the branch also has then is left
    out; after SHOWN_AFTER changes the rest are counted."""
    branch = branch_of(config)
    if branch is None:
        return []
    events, start = list(events), knobs_at(config, list(events), branch["step"])
    said = []
    for event in shown_changes(
        e for e in parent_events if isinstance(e.get("step"), int) and e["step"] > branch["step"]
    ):
        knob, new = event["knob"], event.get("new")
        mine = knobs_at(config, events, event["step"]).get(knob)
        if mine != new:
            kept = "kept" if mine == start.get(knob) else "had"
            said.append(f"the parent's {knob_word(knob)} changed to {knob_value(new)} at step {event['step']}; "
                        f"the branch {kept} {knob_value(mine)}")  # fmt: skip
    more = len(said) - SHOWN_AFTER
    return said[:SHOWN_AFTER] + (
        [f"{more} more live change{'s' if more > 1 else ''} to the parent after that"] if more > 0 else []
    )


def setting_of(config: RunConfig, name: str) -> Any:
    section = section_of(name)
    return getattr(config if section == "run" else getattr(config, section), name)


def changes_from(values: Mapping[str, Any], base: RunConfig) -> dict[str, Any]:
    """The settings whose widget value differs from the checkpoint's (`base`): what the branch changes."""
    return {name: value for name, value in values.items() if value != setting_of(base, name)}


def describe(changes: Mapping[str, Any], base: RunConfig) -> str:
    """ "LR 0.002→0.01, mask causal→none", or, with none, what a branch shares with its parent and what not: its
    start (weights, optimizer state, batches), never the live changes made to the parent later."""
    if not changes:
        return (
            "no change: it starts from the parent's weights, optimizer state and batches at this step; live changes "
            "made to the parent later do not reach it"
        )
    # "max steps 1000→700", as the form labels it (a review read "LR 0.002→0.005, max_steps 1000→700")
    said = [f"{setting_word(n)} {knob_value(setting_of(base, n))}→{knob_value(v)}" for n, v in changes.items()]
    if "learning_rate" in changes and "min_lr" not in changes:
        # the floor moves with the peak (tinygpt.runs.branch), as the live knob moves it: a review found it only in
        # Compare's table ("min_lr 0.0002 → 0.001"), the panel and the flash saying "LR 0.002→0.01" alone
        t = base.train
        floor = moved_floor(t.min_lr, t.learning_rate, float(changes["learning_rate"]))
        if floor != t.min_lr:
            said[list(changes).index("learning_rate")] += f" (its floor {knob_value(t.min_lr)}→{knob_value(floor)})"
    return ", ".join(said)


def schedule_effect(changes: Mapping[str, Any], base: RunConfig, step: int) -> str:
    """What the branch's changes do to the learning rate of its first step (step + 1), where they move it by more
    than 1%: "Its learning rate at step 801: 0.00259 → 0.000479 (the schedule over 950 steps)." A review's
    branch cut max steps 3000→950 and its rate fell 5x at once, the panel saying nothing (the warmup knob says
    its effect; the branch now too). "" where nothing moves it."""
    if not {"learning_rate", "warmup_steps", "max_steps"} & changes.keys():
        return ""
    t = base.train
    peak = float(changes.get("learning_rate", t.learning_rate))
    floor = moved_floor(t.min_lr, t.learning_rate, peak) if "learning_rate" in changes else t.min_lr
    warmup, total = int(changes.get("warmup_steps", t.warmup_steps)), int(changes.get("max_steps", t.max_steps))
    before = lr_at(step, t.learning_rate, t.min_lr, t.warmup_steps, t.max_steps)  # step `step + 1` trains at this
    after = lr_at(step, peak, floor, warmup, total)
    if abs(after - before) <= 0.01 * abs(before):
        return ""
    return f"Its learning rate at step {step + 1}: {before:.3g} → {after:.3g} (the schedule over {total:,} steps)."


def _widget(column, name: str, label: str, choices, value: Any, key: str) -> Any:
    if choices is not None:
        return column.selectbox(label, list(choices), index=list(choices).index(value), key=key)
    limit = LIMITS[name]
    if isinstance(value, int):
        return int(column.number_input(label, int(limit.low), int(limit.high), int(value), step=1, key=key))
    fmt = "%.2e" if name == "learning_rate" else "%.2f"
    low = float(limit.low) + (1e-6 if limit.above_low else 0.0)
    step = settings.exact_step(name, float(value))  # a learning rate's: a tenth of its decade, "−" usable
    return float(column.number_input(label, low, float(limit.high), float(value), step=step, format=fmt, key=key))


def branch_panel(store: RunStore, run_id: str, run_name: str, learner: Actor) -> None:
    """The "Branch from this checkpoint" control for `run_id`: pick a checkpoint, change settings, start. The new
    run becomes the current one."""
    steps = list_checkpoints(store.path(run_id))
    if not steps:
        st.caption("It has no checkpoint yet to branch from.")
        return
    # The newest checkpoint with steps left after it: a finished run's last one would need max_steps raised first.
    planned = (read_config_json(store.path(run_id)).get("train") or {}).get("max_steps")
    inside = [i for i, s in enumerate(steps) if not isinstance(planned, int) or s < planned]
    first = inside[-1] if inside else len(steps) - 1
    # The step is put once (the newest then) and stays: a default that followed the newest checkpoint moved as a
    # training parent saved more (5000 -> 8500 -> 11000), and each move drew new setting boxes, so a learning rate
    # typed a moment before was lost and "Start the branch" made a plain copy (a review)
    step_key, edits_key = f"{train_keys.W_BRANCH}:{run_id}:step", f"{train_keys.W_BRANCH}:{run_id}:edits"
    before = state.get(step_key)
    pruned = before if before is not None and before not in steps else None
    if before not in steps:
        state.put(step_key, steps[first])
    picked_key = f"{step_key}:picked"  # the viewer chose that step: the panel's own default is nobody's choice
    step = st.selectbox("Checkpoint step", steps, key=step_key, on_change=state.put, args=(picked_key, True))
    edited = bool(state.get(edits_key))
    if pruned is not None and (edited or state.get(picked_key)):
        # the run's checkpoint retention deleted the step this viewer had chosen or changed settings on (a training
        # parent). Said only then: a review opened the panel (drawn before, folded) and read "with your changes
        # kept" about a step nobody had picked and changes nobody had made
        kept = ", with your changes kept" if edited else ""
        st.caption(f"The checkpoint at step {pruned:,} is gone (the run keeps only some of its checkpoints): the "
                   f"panel is on step {step:,} now{kept}.")  # fmt: skip
    keep_checkpoint(store.path(run_id), step)  # a training parent's retention must not delete it under the panel
    try:
        base = checkpoint_settings(store.path(run_id), step)
    except TinyGPTError as e:
        st.error(safe.md(e))
        return
    columns = st.columns(2)
    values, edits = {}, state.get(edits_key) or {}
    for i, (name, label, choices) in enumerate(SETTINGS):
        key = f"{train_keys.W_BRANCH}:{run_id}:{step}:{name}"  # per checkpoint: its own values are the defaults,
        # except what this viewer changed: a training parent's retention deletes checkpoints (5000, 8500, 11000 ...)
        # and a learning rate typed on one was lost when the panel moved on (a review's branch was a plain copy)
        values[name] = _widget(columns[i % 2], name, label, choices, edits.get(name, setting_of(base, name)), key)
    changes = changes_from(values, base)
    state.put(edits_key, dict(changes))
    effect = schedule_effect(changes, base, step)  # "max steps 2000→1500.Its learning rate …" lost its space
    # The parent's name in «»: a name is settings ("… · LR 0.003"), read as the branch's LR staying (a review)
    parent = f" A new run of yours; the run it branches from, «{safe.md(run_name)}», stays as it is."
    st.caption(f"From step {step}: {safe.md(describe(changes, base))}." + (f" {safe.md(effect)}" if effect else "")
               + parent)  # fmt: skip

    def start(check_slot: bool) -> None:
        new_id = start_branch(learner, store, run_id, step, changes, check_slot)
        in_view.set_run_id(new_id)
        # Not "training": it may wait for a slot (a review's branch was queued under "…: training.")
        flashes.flash("success", f"Branched {run_name} at step {step} ({describe(changes, base)}): the run in view "
                      "now; Train shows whether it trains or waits for a slot.")  # fmt: skip
        st.rerun()

    if st.button("Start the branch", type="primary", key=f"{train_keys.W_BRANCH}:{run_id}:go"):
        if not admission.attempt(start, "start the branch", st) and state.get(people_keys.PENDING_START):
            # the slot question is drawn at the page's top, before this panel: a rerun draws it now (a review's
            # click on Runs seemed to do nothing, the question showing later on Train)
            st.rerun()


def start_branch(
    learner: Actor, store: RunStore, run_id: str, step: int, changes: Mapping[str, Any], check_slot: bool = True
) -> str:
    """Admission as for any new run (a hold, the room's budget, the learner's one slot), then RunManager.branch."""
    admission.check_hold(learner)  # a hold holds: no branch of any run while the instructor holds one of theirs
    # A checkpoint past the room's step budget first: there no Max steps fits both rules (a review followed the
    # budget's "lower Max steps to 500" into "max_steps 500 leaves nothing to train after the branch step 609")
    admission.check_branch_step(learner, step)
    plan = plan_branch(store, run_id, step, dict(changes))  # what a branch cannot change: refused here, first
    admission.check_budget(learner, {"branch": plan.config})
    if check_slot and (busy := admission.busy_runs(learner)):
        raise admission.SlotTaken(busy)
    manager = resources.get_manager()
    return manager.branch(run_id, step, dict(changes), actor=learner, time_limit_s=resources.time_limit_s(learner))
