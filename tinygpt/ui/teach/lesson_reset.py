"""The lesson's "Reset the lecture run" (issue 37). Two steps break the lecture run on purpose (`Step.reset` in
tinygpt/ui/teach/lesson.py: the mask step switches the mask off, the learning-rate step sets it to 0.1). After either,
the instructor branches the lecture run from its checkpoint before the change (tinygpt.runs.branch.reset_point), with
the old settings, and the branch becomes the room's lecture run: a healthy run trains on the projector again within
seconds, on the batches the broken one drew, while the broken one stays (paused, its training slot freed) to compare.
Learners follow the room, so only the instructor's pane offers it.

`offer` reads the room and the lecture run's events and says what a reset would do, or plainly why there is none;
`reset` makes the branch; `pane_part` draws the button; `follow_reset` moves a learner who watched the broken run.
`afresh` starts the lesson again for a new class: step 1, and no lecture run, so step 1's Set up starts a new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.runs.branch import checkpoint_settings, read_branch, reset_point
from tinygpt.runs.files import read_events
from tinygpt.runs.owners import Actor
from tinygpt.runs.store import RunStore
from tinygpt.ui import state
from tinygpt.ui.host import resources
from tinygpt.ui.people import people_keys
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import flashes
from tinygpt.ui.teach import lesson, teach_keys
from tinygpt.ui.teach.lesson import LECTURE, Step
from tinygpt.ui.train import branching
from tinygpt.ui.words import safe
from tinygpt.ui.words.knob_words import knob_value, knob_word


@dataclass(frozen=True)
class Offer:
    """What the pane offers: `point` (checkpoint step, changes) to branch the lecture run `run_id` from, or None
    with `text` saying why not; with a point, `text` says what the reset does."""

    run_id: str | None
    point: tuple[int, dict[str, Any]] | None
    text: str


def _changes(run_dir, knobs: tuple[str, ...]) -> list[dict]:
    """The run's applied changes of `knobs`, in order, made while it trained: for a branch, those after its branch
    step (what it copied from its parent up to there, and its own branch-step changes, are its starting point)."""
    branch = read_branch(run_dir)
    start = branch["step"] if branch else -1
    return [e for e in read_events(run_dir) if e.get("kind") == "knob" and e.get("ok", True)
            and e.get("knob") in knobs and e.get("old") != e.get("new") and e["step"] > start]  # fmt: skip


def offer(room_data: dict, store: RunStore, knobs: tuple[str, ...]) -> Offer:
    """Whether the room's lecture run can be reset to before its first change of `knobs`, and the words for it."""
    rid = (room_data["runs"].get(LECTURE) or {}).get("run")
    if not rid or not store.exists(rid):
        return Offer(None, None, "The room has no lecture run to reset: Set up this step starts one.")
    run_dir = store.path(rid)
    words = " or ".join(knob_word(k) for k in knobs)
    changes = _changes(run_dir, knobs)
    if not changes:
        branch = read_branch(run_dir)
        since = f" since it was branched at step {branch['step']}" if branch else ""
        return Offer(rid, None, f"The lecture run's {words} has not changed{since}: nothing to reset.")
    first = changes[0]
    word, old = knob_word(first["knob"]), knob_value(first["old"])
    said = f"{word} {old}→{knob_value(first['new'])} at step {first['step']}"
    point = reset_point(run_dir, knobs)
    if point is None:
        return Offer(rid, None, f"The lecture run saved no checkpoint before its change ({said}), so there is "
                     "nothing to branch it from: move the knob back, or start a new lecture run.")  # fmt: skip
    step, undo = point
    # What the branch would have, checked: reset_point reads every change in the folder, a branch's copied ones too.
    value = undo.get(first["knob"], branching.setting_of(checkpoint_settings(run_dir, step), first["knob"]))
    if value != first["old"]:
        return Offer(rid, None, f"The lecture run's checkpoint before its change ({said}) has {word} "
                     f"{knob_value(value)}, not {old}: branch it from another checkpoint on Runs.")  # fmt: skip
    return Offer(rid, point, f"Branches the lecture run from its checkpoint at step {step}, before {said}: a new "
                 f"run with {word} {old}, on the same batches. The broken run is paused and kept, to compare on "
                 "the Runs page.")  # fmt: skip


def reset(actor: Actor, store: RunStore, found: Offer) -> str:
    """Branch the lecture run at `found.point`, make the branch the room's lecture run, pause the broken one (its
    training slot goes to the branch); returns the branch's id. TinyGPTError says why not, before any change."""
    assert found.run_id is not None and found.point is not None
    step, changes = found.point
    new_id = branching.start_branch(actor, store, found.run_id, step, changes, check_slot=False)
    lesson.write_room(store.root, runs={LECTURE: {"run": new_id}})
    if resources.is_active(found.run_id):
        resources.get_manager().pause(found.run_id, actor=actor, through="Reset the lecture run")
    return new_id


def pane_part(step: Step, actor: Actor, on_click=None, args: tuple = ()) -> None:
    """In the instructor's lesson pane, on a step that breaks the lecture run: "Reset the lecture run", or why
    there is nothing to reset. Nothing for a learner (they follow the room's lecture run). `on_click`: the button's
    callback (the banner closes its popover with it)."""
    if not (step.reset and actor.instructor):
        return
    store = resources.get_store()
    found = offer(lesson.read_room(store.root), store, tuple(step.setup.knobs))
    if found.point is not None and st.button("Reset the lecture run", icon=":material/restart_alt:",
                                              key="lesson_reset", width="stretch", on_click=on_click, args=args):
        try:
            new_id = reset(actor, store, found)
        except TinyGPTError as exc:
            st.error(safe.md(exc))
            return
        in_view.set_run_id(new_id)
        flashes.flash("success", f"The lecture run is reset: {found.text.removeprefix('Branches the lecture run ')}",
                    new_id)  # fmt: skip
        kept = {k: v for k, v in (state.get(people_keys.WORKSHOP_PARAMS) or {}).items() if k != "experiment"}
        st.switch_page(step.page, query_params={**kept, in_view.URL_RUN: new_id})  # the branch, on the projector
    st.caption(safe.md(found.text))  # its values come from the run's events file


def follow_reset(room_data: dict, actor: Actor, store: RunStore) -> bool:
    """A learner watching the lecture run the instructor has just reset moves to its branch, the room's lecture run
    now, once (True: the page must be drawn again); one watching the room's previous lecture run moves to a new
    class's fresh one. A review's learner stayed on the paused broken run, her pane reading the branch's "not
    enough data" as another run's. One who opens the old run again stays there, and so does a session that opens it
    by its address without having watched it as the lecture run."""
    lecture = (room_data["runs"].get(LECTURE) or {}).get("run")
    before = state.get(teach_keys.LESSON_FOLLOWED)
    if actor.instructor or not lecture or before == lecture:
        return False
    state.put(teach_keys.LESSON_FOLLOWED, lecture)
    viewing = in_view.run_id()
    branch = read_branch(store.path(lecture)) if viewing and viewing != lecture and store.exists(lecture) else None
    if branch is not None and branch["parent"] == viewing and before is None:
        # A session that never watched it as the lecture run opened the old run by its address (a link, a bookmark):
        # it stays (a review's learner asked for the broken run by name and was moved), told where the lecture went
        flashes.flash("info", f"The instructor reset this run: the lecture run is now its branch from step "
                      f"{branch['step']} (on the Runs page). You stay on the run you opened.", viewing)  # fmt: skip
        return False
    if branch is not None and branch["parent"] == viewing:
        said = f"The instructor reset the lecture run: you now watch its branch from step {branch['step']}."
    elif viewing and viewing == before:  # a new class's fresh lecture run (afresh): a review's learner stayed behind
        said = "The instructor started a fresh lecture run for a new class: you now watch it."
    else:
        return False
    in_view.set_run_id(lecture)
    flashes.flash("info", f"{said} The run you watched stays on the Runs page.", lecture)
    return True


def afresh(actor: Actor) -> str | None:
    """A new class on this server: the room back at step 1 and without a lecture run, so that step 1's Set up starts
    a fresh one (the class watches a model learn from ln V, not a run thousands of steps old whose step-1 check was
    decided before they came; a knob step's check would read the last class's knob change until the new one
    applied). The old lecture run is paused, if it trains, and stays on the Runs page; the prepared runs stay (their
    checks wait for each step's Set up again). Returns the old lecture run's id, or None."""
    store = resources.get_store()
    old = (lesson.read_room(store.root)["runs"].get(LECTURE) or {}).get("run")
    if old and resources.is_active(old):
        resources.get_manager().pause(old, actor=actor, through="a new class")
    lesson.write_room(store.root, step=0, runs={LECTURE: {}})
    return old

