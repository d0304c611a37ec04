"""Admission: the one rule every path that starts or resumes training in the app asks first.

Train, Resume on the Runs page, the Experiments page's "Run side by side" and the induction experiment all start
runs through `start` or `resume` here, so a rule holds on every route, not only on the one it was written for
(a learner once trained two runs at once by resuming an old one on Runs, and six by clicking an experiment twice,
past the room's time budget). In order:

1. ownership: only a run's owner and the instructor may resume it (the run manager checks it too), and a run the
   CLI or torchrun wrote is read-only in the app for everyone (the manager refuses to write into it);
2. the room's budget (the instructor's Room page), for learners: each run's size and steps are checked before it
   exists, and its minutes go with it to the run manager, which stops it when they are spent;
3. a hold holds: while the instructor holds any run of a learner's (paused it: tinygpt.runs.files.HOLD_FILE), in
   whatever state it is now (paused before it started, or stopped since), that learner starts, branches and
   resumes nothing (`HeldRun`, not a question: "stop it and start the new run" would undo the hold). A held
   learner once pressed Train on a run paused in the queue and trained a copy of it to the end;
4. one training slot per learner: a learner's runs that train or wait in the queue hold their slot; the runs an
   experiment starts together (its variants, side by side) count as one. A second start raises `SlotTaken`,
   and the page asks (`slot_question`): stop the other run(s) and go on, or cancel;
5. memory, device and data: the run manager's preflight (tinygpt.runs.preflight), before a run folder exists.

The instructor has no budget, no hold and no slot limit: they prepare the room's runs ahead of the lesson.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import streamlit as st

from tinygpt.config import ConfigError, RunConfig
from tinygpt.errors import TinyGPTError
from tinygpt.runs.files import read_config
from tinygpt.runs.owners import Actor
from tinygpt.ui import state
from tinygpt.ui.host import resources, runlist
from tinygpt.ui.people import people_keys
from tinygpt.ui.words import safe


def readable(runs: list[str]) -> str:
    """ "«2L×4H×64 · reverse · LR 0.002»": the runs as the Runs table names them (tinygpt.runs.names), each its id
    where it has no readable name; "" for none. A message names a run so; its id is for links and files."""
    names = runlist.run_names(resources.get_store()) if runs else {}
    return ", ".join(f"«{names.get(run) or run}»" for run in runs)


class SlotTaken(TinyGPTError):
    """The learner already has runs training or queued; `runs` names them (ids). Each learner holds one slot."""

    def __init__(self, runs: list[str]):
        self.runs = runs
        super().__init__(
            f"You already have a run training or queued ({readable(runs) or 'it has just ended'}). Each learner "
            "trains one run (or one experiment's runs side by side) at a time, so the room's few training slots go "
            "round."
        )


class HeldRun(TinyGPTError):
    """The instructor holds runs of the learner's (`held`: their summaries, oldest first): no start, branch or
    resume until the instructor lets go (rule 3 above). Not a question: "stop it and start the new run" would
    undo the hold (the rehearsal's held learner was offered that, told the run was "training or queued")."""

    def __init__(self, held: list):
        self.runs = [s.run_id for s in held]
        names = runlist.run_names(resources.get_store())
        said = " and ".join(
            f"«{names.get(s.run_id) or s.run_id}» ({runlist.STATE_WORDS.get(s.state, s.state)} at step {s.step:,})"
            for s in held
        )
        whose = "your run" if len(held) == 1 else "your runs"
        super().__init__(
            f"The instructor is holding {whose} {said}: you can start or resume runs again when they let go. "
            "Meanwhile you can watch, sample, or open runs on Runs."
        )


def check_hold(learner: Actor) -> None:
    """HeldRun while the instructor holds any run of `learner`'s (never for the instructor): every path that
    starts, branches or resumes training asks it first, whatever the learner chose about their slot."""
    if not learner.instructor and (held := runlist.held_of(resources.get_store(), learner)):
        raise HeldRun(held)


def check_room_budget(config: RunConfig, budget: Mapping[str, int], resuming: bool = False) -> None:
    """ConfigError if a run is bigger than the room's per-run budget (the instructor's Room page): one learner's
    12-layer x 512-wide run would hold a training slot for hours, so it is refused with the numbers."""
    from tinygpt.runs.preflight import parameter_count

    model = dataclasses.replace(config.model, vocab_size=max(config.model.vocab_size, 65))
    params = parameter_count(model)
    limit = int(budget.get("max_params") or 0)
    if limit and params > limit:
        raise ConfigError(
            f"this model has about {params / 1e6:.2f}M parameters, above the room's budget of {limit / 1e6:.2f}M "
            "per run (set by the instructor): fewer layers, a smaller width or a shorter context."
        )
    steps = int(budget.get("max_steps") or 0)
    if steps and config.train.max_steps > steps and resuming:  # no Max steps to lower on a run that exists (a review)
        raise ConfigError(
            f"this run's max_steps {config.train.max_steps:,} is above the room's budget of {steps:,} steps per run "
            f"(set by the instructor), so it cannot resume under it: start a new run of at most {steps:,} steps, or "
            "ask the instructor to raise the budget."
        )
    if steps and config.train.max_steps > steps:
        raise ConfigError(
            f"max_steps {config.train.max_steps} is above the room's budget of {steps} steps per run (set by the "
            f"instructor): lower Max steps to {steps} or less."
        )


def _check_slot(learner: Actor, besides: str | None = None) -> None:
    """SlotTaken if another run of the learner's trains or waits in the queue."""
    if busy := busy_runs(learner, besides):
        raise SlotTaken(busy)


def busy_runs(learner: Actor, besides: str | None = None) -> list[str]:
    """The learner's runs that hold a training slot now (training or queued), but `besides`; [] for the instructor.
    A run of theirs whose worker sits paused or diverged gives its slot up instead (it stays resumable): it trains
    nothing, and the slot question called it "a run training or queued" (RunManager.release_if_paused)."""
    if learner.instructor:
        return []
    manager = resources.get_manager()
    return [run for run in resources.my_active_runs(learner) if run != besides and not manager.release_if_paused(run)]


def check_budget(learner: Actor, configs: Mapping[str, RunConfig], resuming: bool = False) -> None:
    """ConfigError with the numbers if any run is above the room's per-run budget (learners only)."""
    if not learner.instructor:
        for config in configs.values():
            check_room_budget(config, resources.room_budget(), resuming)


def check_branch_step(learner: Actor, step: int) -> None:
    """ConfigError for a learner's branch from a checkpoint at or past the room's step budget: a branch trains on
    from there, so no Max steps within the budget leaves it anything to train."""
    steps = int(resources.room_budget().get("max_steps") or 0)
    if not learner.instructor and steps and step >= steps:
        raise ConfigError(
            f"this branch would start at step {step:,}, past the room's budget of {steps:,} steps per run (set by "
            f"the instructor): pick a checkpoint before step {steps:,} and Max steps of at most {steps:,}, or ask "
            "the instructor to raise the budget."
        )


def start(
    learner: Actor,
    configs: Mapping[str, RunConfig],
    parent: str | None = None,
    check_slot: bool = True,
    priority: str = "live",
) -> dict[str, str]:
    """Queue runs owned by `learner` that count as one slot (one config, or an experiment's variants): a hold first
    (HeldRun: a learner the instructor holds starts nothing), the budget, then the slot (SlotTaken; `check_slot`
    False once the learner chose to stop their other runs), then the run manager's own checks. `priority`
    "prepared" for runs started ahead of need (the lesson's Prepare, a lab batch): a run a person waits for
    ("live") goes ahead of them (tinygpt.runs.slots). Returns {label: run_id}."""
    check_hold(learner)
    check_budget(learner, configs)
    if check_slot:
        _check_slot(learner)
    manager, limit = resources.get_manager(), resources.time_limit_s(learner)
    return {
        label: manager.start(config, parent=parent, actor=learner, time_limit_s=limit, priority=priority)
        for label, config in configs.items()
    }


def resume(learner: Actor, run_id: str, check_slot: bool = True) -> None:
    """Resume one run of `learner`'s (a paused one continues; an ended one restarts from its checkpoint): the
    room's budget as for a new run (a run made before the instructor set it is no way round it: the reliability
    probe's admission family resumed a 0.2M-parameter run under a 1,000-parameter budget, with no time limit);
    its own slot is its own, any other run of theirs that trains or waits takes it (SlotTaken). Nothing resumes
    while the instructor holds a run of theirs (HeldRun), this one or another."""
    check_hold(learner)
    if not learner.instructor:
        try:
            config = read_config(resources.get_store().path(run_id))
        except (TinyGPTError, TypeError, ValueError):
            config = None  # a damaged config.json: the run manager's own resume says what is wrong with it
        if config is not None:
            check_budget(learner, {"run": config}, resuming=True)
    if check_slot:
        _check_slot(learner, besides=run_id)
    resources.get_manager().resume(run_id, actor=learner, time_limit_s=resources.time_limit_s(learner))


Action = Callable[[bool], object]  # what a learner asked for, called with check_slot (start or resume above)


def ask(action: Action, what: str) -> None:
    """Keep `action` (what the learner asked for) until they answer the slot question on this page."""
    state.put(people_keys.PENDING_START, {"action": action, "what": what})


def slot_question(learner: Actor, messages) -> None:
    """While an action waits because its learner's slot is taken: stop the other run(s) and do it, or cancel."""
    pending = state.get(people_keys.PENDING_START)
    if not pending:
        return
    busy = busy_runs(learner)
    messages.warning(safe.md(str(SlotTaken(busy or ["it has just ended"]))))
    go, cancel = messages.columns(2)
    if go.button(f"Stop it and {pending['what']}", type="primary", width="stretch", key="slot_go"):
        for other in busy:
            resources.get_manager().stop(other, actor=learner)
        state.pop(people_keys.PENDING_START)
        try:
            pending["action"](False)  # the stopped runs may still be on their way out: their slot is given up
        except TinyGPTError as e:
            messages.error(safe.md(e))
            return
        st.rerun()
    if cancel.button("Keep it; cancel", width="stretch", key="slot_cancel"):
        state.pop(people_keys.PENDING_START)
        st.rerun()


def attempt(action: Action, what: str, messages) -> bool:
    """Do `action`; if the learner's slot is taken, keep it for the slot question instead. False if it failed
    (the message is shown in `messages`) or waits for the answer."""
    try:
        action(True)
    except SlotTaken:
        ask(action, what)
        return False
    except TinyGPTError as e:
        messages.error(safe.md(e))
        return False
    return True
