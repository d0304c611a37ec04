"""What a viewer sends to a run: the run manager's commands (pause, step, stop, a knob) and a resume through the
room's admission, each as that viewer (the run manager checks again: a page's rule is for its buttons, the manager's
for the run). The run in view's handle (tinygpt/ui/run/in_view.py, RunHandle) sends its commands through here; a
knob changed from a widget callback, which runs before the page has its handle, calls `set_knob` directly: one
function for both."""

from __future__ import annotations

from typing import Any

from tinygpt.runs.owners import Actor
from tinygpt.ui.host import resources
from tinygpt.ui.people import admission


def pause(run_id: str, viewer: Actor) -> None:
    _manager().pause(run_id, actor=viewer)


def step(run_id: str, n: int, viewer: Actor) -> None:
    _manager().step(run_id, n, actor=viewer)


def stop(run_id: str, viewer: Actor) -> None:
    _manager().stop(run_id, actor=viewer)


def resume(run_id: str, viewer: Actor, check_slot: bool = True) -> None:
    """Through admission (the room's budget, one training slot a learner: SlotTaken asks first)."""
    admission.resume(viewer, run_id, check_slot)


def set_knob(run_id: str, name: str, value: Any, viewer: Actor) -> str:
    """Change one knob of `run_id` as `viewer`: the UI's one way to the run manager's set_knob (the handle's, and
    a widget callback's, which runs before the page builds its handle). Returns the request id its answer names."""
    return _manager().set_knob(run_id, name, value, actor=viewer)


def _manager():
    return resources.get_manager()
