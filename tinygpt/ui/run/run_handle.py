"""The run in view, as one handle a page builds once per script run: its id, its reader (polled once), its status,
who holds it, its config with the applied knob changes, and what this viewer may do with it.

The control rules (`Rules`) are plain properties of plain facts, so they are tested without a browser; the Train,
Runs and Circuits pages used to spell them out inline, each its own way. Every page builds the handle once
(`open_run`) and reads the run through it. Commands go through the handle, as this viewer (the run manager checks
again: a page's rule is for its buttons, the manager's for the run); a knob changed from a widget callback, before
the page has its handle, goes through `set_knob` below, the one function both use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinygpt.errors import RunStoreError
from tinygpt.runs.files import RESUMABLE_STATES
from tinygpt.runs.knobs import knobs_now
from tinygpt.runs.owners import Actor, read_hold
from tinygpt.ui.host import resources
from tinygpt.ui.people import admission, room
from tinygpt.ui.run import in_view
from tinygpt.ui.screen.backlog import fragment_rerun


@dataclass(frozen=True)
class Rules:
    """What a viewer may do with a run. `mine`: they own it or are the instructor (owners.may_control); `state`:
    its status; `live`: a worker process has it; `queued`: it waits for a training slot; `held`: the instructor
    holds it and the viewer is a learner; `elsewhere`: another process (the CLI) writes or wrote it."""

    mine: bool
    state: str | None
    live: bool = False
    queued: bool = False
    held: bool = False
    elsewhere: bool = False

    @property
    def in_play(self) -> bool:
        """Training, paused with its worker, or queued: a pause, a stop or a knob reaches it."""
        return self.live or self.queued

    @property
    def can_pause(self) -> bool:
        return self.in_play and self.mine and self.state != "paused"

    @property
    def can_resume(self) -> bool:
        return self.mine and self.state in RESUMABLE_STATES and not self.held and not self.elsewhere

    @property
    def can_step(self) -> bool:
        return self.live and self.mine and self.state == "paused" and not self.held

    @property
    def can_stop(self) -> bool:
        return self.in_play and self.mine

    @property
    def can_set_knob(self) -> bool:
        """A queued run takes knobs too: its worker applies them before its first step."""
        return self.in_play and self.mine


@dataclass(frozen=True)
class RunHandle:
    id: str
    reader: Any  # tinygpt.runs.reader.RunReader, polled once for this script run
    status: dict
    viewer: Actor
    rules: Rules
    hold: dict  # {"by", "step", "at"} of the instructor's hold, {} if none

    @property
    def config(self) -> dict:
        return self.reader.config()

    @property
    def knobs(self) -> dict[str, Any]:
        """The run's live knobs now: its config's, then every applied knob change."""
        return knobs_now(self.config, self.reader.events)

    @property
    def holder(self) -> str | None:
        """Who holds the run (the instructor paused it), or None."""
        return self.hold.get("by") or ("the instructor" if self.hold else None)

    def pause(self) -> None:
        _manager().pause(self.id, actor=self.viewer)

    def step(self, n: int) -> None:
        _manager().step(self.id, n, actor=self.viewer)

    def stop(self) -> None:
        _manager().stop(self.id, actor=self.viewer)

    def resume(self, check_slot: bool = True) -> None:
        """Through admission (the room's budget, one training slot a learner: SlotTaken asks first)."""
        admission.resume(self.viewer, self.id, check_slot)

    def set_knob(self, name: str, value: Any) -> str:
        return set_knob(self.id, name, value, self.viewer)

    def reader_now(self, store) -> Any:
        """The run's reader for a fragment of the page: on the page's full script run, the one open_run polled;
        on the fragment's own rerun (its timer), looked up and polled again: None once the run was deleted (its
        shared reader dropped: resources.run_reader) or cannot be read."""
        if not fragment_rerun():
            return self.reader
        try:
            return resources.run_reader(store, self.id)
        except RunStoreError:
            return None


def set_knob(run_id: str, name: str, value: Any, viewer: Actor) -> str:
    """Change one knob of `run_id` as `viewer`: the UI's one way to the run manager's set_knob (the handle's, and
    a widget callback's, which runs before the page builds its handle). Returns the request id its answer names."""
    return _manager().set_knob(run_id, name, value, actor=viewer)


def open_run(store, run_id: str | None, viewer: Actor) -> RunHandle | None:
    """The handle of `run_id` for `viewer` (None: no run, or it cannot be read)."""
    rd = in_view.reader_in_view(store, run_id)  # the folder the frame's sync_run_id found: no second lookup
    if rd is None:
        return None
    status, config = rd.status(), rd.config()
    hold = read_hold(rd.run_dir)  # read here once a script run: runinfo.hold_note takes it from the handle
    rules = Rules(
        mine=room.can_control(config, run_id),
        state=status.get("state"),
        live=resources.is_live(run_id),
        queued=resources.is_queued(run_id),
        held=bool(hold) and not viewer.instructor,
        elsewhere=config.get("owner") not in ("app", None),  # the CLI's run (runlist.written_elsewhere's rule)
    )
    return RunHandle(run_id, rd, status, viewer, rules, hold)


def _manager():
    return resources.get_manager()
