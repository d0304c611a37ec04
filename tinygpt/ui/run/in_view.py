"""The run in view, from the URL to the page's reader in one module: its id in the session, mirrored into the URL
(`?run=<id>`) so that a refresh or a second tab reattaches to the same run (Streamlit clears query params on a page
switch, so `sync_run_id()` puts it back on every run); a shared link's read-only view (`?view=1`); the runs an
experiment names in the URL; the server's one shared reader of each run (`ReaderPool`); and the handle a page opens
once a script run (`open_run`): the run's id, its reader (polled once), its status, who holds it, and what this
viewer may do with it (`Rules`: plain properties of plain facts, tested without a browser).

A script run looks the run's folder up once: `sync_run_id` finds it (RunStore.existing, the id checked there) and
keeps it for this script run (CHECKED); `open_run` takes that folder instead of looking again. Who may open a link
and who may change a run are tinygpt.runs.owners' rules, asked with the run's owner part and the viewer; the
handle's commands go to the run manager as the viewer (the module functions `pause` ... `set_knob` at the end)."""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from tinygpt.errors import RunStoreError
from tinygpt.runs.check import config_problem
from tinygpt.runs.files import RESUMABLE_STATES
from tinygpt.runs.knobs import knob_changes, knobs_now
from tinygpt.runs.owners import Actor, may_control, may_open_link, read_hold, read_owner
from tinygpt.runs.reader import RunReader
from tinygpt.runs.store import RunStore, validate_run_id
from tinygpt.ui.host import resources
from tinygpt.ui.people import admission, room
from tinygpt.ui.screen.backlog import fragment_rerun
from tinygpt.ui.screen.flashes import flash
from tinygpt.ui.state import RUN_ID
from tinygpt.ui.words.safe import md

URL_RUN = "run"  # the query parameter that carries the run id
URL_VIEW = "view"  # ?view=1: a shared link to someone else's run, opened read-only
VIEW_ASKED = "view_asked"  # this script run's address asked view=1 (sync_run_id), whatever it keeps after
SHARED_OPEN = "shared_open"  # a ?view=1 link was just followed: the frame shows that run's live view
SHARED_RUN = "shared_run"  # the run this session opened from a ?view=1 link (the URL keeps view=1 while it shows)
CHECKED = "run_checked"  # (run id, its folder): what sync_run_id found on this script run, for the page's reader


def run_id() -> str | None:
    return st.session_state.get(RUN_ID)


SIDEBAR_CHANGES = "sidebar_knob_changes"  # (run id, applied knob changes) when the sidebar's run line was drawn


def sidebar_drawn(run_id: str, events: list[dict]) -> None:
    """The frame drew the sidebar's run line ("… · now LR 0.1 (changed at step 9,529)") from these events."""
    st.session_state[SIDEBAR_CHANGES] = (run_id, len(knob_changes(events)))


def sidebar_behind(run_id: str, events: list[dict]) -> bool:
    """Whether a knob change was applied to the run since the sidebar's run line was drawn: a page's live view then
    redraws the page, sidebar included (a review's sidebar read "LR 0.003" beside the slider at 0.1 and the notice
    "LR → 0.1: applied at step 9529"). The sidebar is drawn by full script runs only: a timed sidebar fragment
    detached the main area's buttons mid-click."""
    drawn = st.session_state.get(SIDEBAR_CHANGES)
    return bool(drawn) and drawn[0] == run_id and drawn[1] != len(knob_changes(events))


def redraw_if_moved(shown_id: str | None) -> None:
    """First thing in a page's live fragment: on the fragment's own timed rerun, when the run in view is no longer
    the one the page's full script run drew (Set up in the lesson pane, a branch, a run opened elsewhere), redraw
    the whole page. The fragment holds the old run's handle, and would draw it under the new run's title and
    messages (a review saw "Watching … (read-only)" above "No run yet" for one refresh)."""
    if fragment_rerun() and run_id() != shown_id:
        st.rerun()


def set_run_id(new_id: str | None) -> None:
    """Make a run current (None: no run) and write it into the URL."""
    if new_id is None:
        st.session_state.pop(RUN_ID, None)
        st.query_params.pop(URL_RUN, None)
        return
    st.session_state[RUN_ID] = validate_run_id(new_id)
    st.query_params[URL_RUN] = new_id


def sync_run_id(store: RunStore, viewer: Actor) -> str | None:
    """Called on every script run, before the page: a run id in the URL wins (a refresh, a second tab, a link
    shared with "share this run"); otherwise the session's run id is put back into the URL (page switches clear
    it). Whether a link may make its run `viewer`'s current one is owners.may_open_link, asked with the owner part
    of the run's config.json (owners.read_owner): a learner's own run, a run no learner owns, or any run with
    ?view=1 (read-only); a link copied from someone else's address bar opens the learner's own session instead. A
    bad or unknown id in the URL is dropped with a message instead of failing the page. A link's run is looked up once
    (RunStore.existing; "deleted elsewhere" is for the session's own run), and a refused link builds no reader.
    The folder found is kept for this script run (CHECKED): the page's reader takes it instead of looking again."""
    st.session_state.pop(CHECKED, None)
    # Kept for runs_in_url: the address's view=1 goes below where no shared run is in view, and a lab link
    # (?lab=id,id&view=1) was refused by the very words that said view=1 opens it (a review)
    st.session_state[VIEW_ASKED] = st.query_params.get(URL_VIEW) == "1"
    from_url = st.query_params.get(URL_RUN)
    attached = run_dir = None  # the link's run and its folder, found just now
    if from_url and from_url != st.session_state.get(RUN_ID):
        try:
            run_dir = store.existing(from_url)  # RunStoreError for a bad id or no such run, saying which
            # Decided on config.json's owner alone: a refused link used to build and cache a full RunReader first.
            if not may_open_link(read_owner(run_dir), viewer, view=st.query_params.get(URL_VIEW) == "1"):
                raise RunStoreError(
                    "that link is to another learner's run, which a copied address does not open: a read-only "
                    "link does ('Share (read-only)' on the Runs page, or the address with &view=1 at its end)."
                )
            reader_pool().get(run_dir)  # a damaged run is refused here, with why; pages read this reader
            st.session_state[RUN_ID] = attached = from_url
            if st.query_params.get(URL_VIEW) == "1":
                st.session_state[SHARED_OPEN] = st.session_state[SHARED_RUN] = from_url
        except RunStoreError as e:
            flash("warning", f"Ignored the run in the address: {e}")
            st.query_params.pop(URL_RUN, None)
            st.query_params.pop(URL_VIEW, None)
    current = st.session_state.get(RUN_ID)
    if current and current != attached:
        try:
            run_dir = store.existing(current)
        except RunStoreError:  # deleted elsewhere (or a bad id): no run, and no shared reader kept for it
            forget_reader(store, current)
            st.session_state.pop(RUN_ID, None)
            current = None
    if current:
        st.session_state[CHECKED] = (current, run_dir)
    if current and st.query_params.get(URL_RUN) != current:
        st.query_params[URL_RUN] = current
    # view=1 stays in the address while the shared run shows (a refresh must reattach it read-only), not after.
    if current and current == st.session_state.get(SHARED_RUN):
        if st.query_params.get(URL_VIEW) != "1":
            st.query_params[URL_VIEW] = "1"
    else:
        st.query_params.pop(URL_VIEW, None)
    return current


# ---------------------------------------------------------------- readers: one reader per run for the whole server


class ReaderPool:
    """One RunReader per run for the whole server, shared by every browser session: a room of 20 learners watching
    the instructor's run parses its metrics once, not 20 times, and holds them once. Per-session readers made the
    server's memory grow with the sessions alive (a Lecture run at step 33,000: 19 MB of metrics.jsonl, a 6.6 MB
    reader, ~1 s of parsing for every page load; Streamlit keeps a closed tab's session 2 minutes), and the RSS
    never came back down (BENCHMARKS.md, the memory soak).

    A reader is built under its run's own lock, so twenty sessions opening one run at once wait for one parse;
    other runs are not held up. At most `max_runs` readers are kept, the least recently asked-for dropped first."""

    def __init__(self, max_runs: int = 48):
        self.max_runs = max_runs
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, dict] = OrderedDict()  # run folder -> {"lock", "reader"}

    def get(self, run_dir: Path) -> RunReader:
        """The shared reader of the existing run folder `run_dir`, polled now. RunStoreError (from `make`) for a run
        whose config.json no page can draw; nothing is kept for it."""
        key = str(run_dir)
        with self._lock:
            entry = self._entries.setdefault(key, {"lock": threading.Lock(), "reader": None})
            self._entries.move_to_end(key)
        with entry["lock"]:
            if entry["reader"] is None:
                try:
                    entry["reader"] = checked_reader(run_dir)
                except RunStoreError:
                    self.forget(run_dir)
                    raise
                with self._lock:  # a good reader is kept: the least recently asked-for make room for it
                    while len(self._entries) > self.max_runs:
                        self._entries.popitem(last=False)
                return entry["reader"]
        entry["reader"].poll()
        return entry["reader"]

    def forget(self, run_dir: Path) -> None:
        """Drop a run's reader (the run was deleted)."""
        with self._lock:
            self._entries.pop(str(run_dir), None)

    def __len__(self) -> int:
        return len(self._entries)


def checked_reader(run_dir: Path) -> RunReader:
    """A reader of the existing run folder `run_dir` (RunStore.existing) whose config.json every page can draw;
    RunStoreError saying what is damaged otherwise (the reliability probe's tampered family: "num_layers": "many",
    or no "model", raised on Train, Attention and Circuits). The engine's RunReader stays lenient: it reads runs of
    any age and partial test folders."""
    rd = RunReader(run_dir)
    if problem := config_problem(rd.config()):
        raise RunStoreError(f"run {run_dir.name}'s config.json is damaged ({problem}); it cannot be shown.")
    return rd


@st.cache_resource(show_spinner=False)
def reader_pool() -> ReaderPool:
    """This server's ReaderPool."""
    return ReaderPool()


def run_reader(store: RunStore, run_id: str) -> RunReader:
    """The server's shared reader of run `run_id` in `store`, polled. RunStoreError for a bad id, no such run (a
    deleted run's reader is dropped then) or a config.json no page can draw."""
    try:
        run_dir = store.existing(run_id)
    except RunStoreError:
        forget_reader(store, run_id)  # a bad id has no folder, so no reader either
        raise
    return reader_pool().get(run_dir)


def reader(store: RunStore, run: str | None) -> RunReader | None:
    """`run_reader`, or None if there is no run, no such run or no page can draw it."""
    if not run:
        return None
    try:
        return run_reader(store, run)
    except RunStoreError:
        return None


def forget_reader(store: RunStore, run: str) -> None:
    """The run was deleted: drop its shared reader."""
    with contextlib.suppress(RunStoreError):
        reader_pool().forget(store.path(run))


# ---------------------------------------------------------------- the handle a page opens once a script run


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
    """The run a page shows, as `viewer` sees it: the Train, Runs and Circuits pages used to spell its rules out
    inline, each its own way. Commands go through this module's `pause` ... `set_knob`, as the viewer."""

    id: str
    reader: RunReader  # polled once for this script run
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
        pause(self.id, self.viewer)

    def step(self, n: int) -> None:
        step(self.id, n, self.viewer)

    def stop(self) -> None:
        stop(self.id, self.viewer)

    def resume(self, check_slot: bool = True) -> None:
        resume(self.id, self.viewer, check_slot)

    def set_knob(self, name: str, value: Any) -> str:
        return set_knob(self.id, name, value, self.viewer)

    def reader_now(self, store: RunStore) -> RunReader | None:
        """The run's reader for a fragment of the page: on the page's full script run, the one open_run polled;
        on the fragment's own rerun (its timer), looked up and polled again: None once the run was deleted (its
        shared reader dropped: run_reader) or cannot be read."""
        if not fragment_rerun():
            return self.reader
        return reader(store, self.id)


def checked_run_reader(run_id: str | None) -> RunReader | None:
    """The shared reader of the run in view that sync_run_id found on this script run (CHECKED, left for the
    page's open_run), or None: for the frame's sidebar, which must not look the folder up a second time."""
    checked = st.session_state.get(CHECKED)
    if not run_id or not checked or checked[0] != run_id:
        return None
    try:
        return reader_pool().get(checked[1])
    except RunStoreError:
        return None


def open_run(store: RunStore, run_id: str | None, viewer: Actor) -> RunHandle | None:
    """The handle of `run_id` for `viewer` (None: no run, or it cannot be read). On a page's full script run the
    run in view's folder is the one sync_run_id found (CHECKED, taken once): no second look-up. Any other run, a
    second ask, or a fragment's own rerun (sync_run_id did not run for it; the frame drops CHECKED once the page
    has run) is looked up, as `reader` does."""
    checked = st.session_state.pop(CHECKED, None)
    if not run_id:
        return None
    if checked and checked[0] == run_id:
        try:
            rd = reader_pool().get(checked[1])
        except RunStoreError:  # a config.json no page can draw
            return None
    elif (rd := reader(store, run_id)) is None:
        return None
    status, config = rd.status(), rd.config()
    hold = read_hold(rd.run_dir)  # read here once a script run: runinfo.hold_note takes it from the handle
    rules = Rules(
        mine=may_control(config, viewer),
        state=status.get("state"),
        live=resources.is_live(run_id),
        queued=resources.is_queued(run_id),
        held=bool(hold) and not viewer.instructor,
        elsewhere=config.get("owner") not in ("app", None),  # the CLI's run (runlist.written_elsewhere's rule)
    )
    return RunHandle(run_id, rd, status, viewer, rules, hold)


# ---------------------------------------------------------------- runs named in the URL (an experiment's)


def runs_in_url(param: str, labels: list[str], what: str) -> dict[str, str] | None:
    """The runs named in the URL parameter `param` (?lab=id,id), one per label in order; None when there are none
    or not one per label, or (with a message naming `what`) when an id is not a run id."""
    ids = [i for i in str(st.query_params.get(param, "")).split(",") if i]
    if len(ids) != len(labels):
        return None
    # Said at once (st.warning, not a flash): the page calls this after the frame showed its flashes, so a flash
    # waited for the next click and a reviewer's learner saw the address change with no word why.
    try:
        named = {label: validate_run_id(i) for label, i in zip(labels, ids, strict=True)}
    except RunStoreError as e:
        st.warning(md(f"Ignored the {what} in the address: {e}"))
        return None
    # The link rule of ?run= (owners.may_open_link) for these too: a learner's lab runs on their own pasted text
    # opened in full, samples included, for anyone with the address (a review's finding).
    store, viewer = resources.get_store(), room.current()
    view = st.query_params.get(URL_VIEW) == "1" or bool(st.session_state.get(VIEW_ASKED))
    for run_id in named.values():
        with contextlib.suppress(RunStoreError):  # a run not there (yet) is the page's to say
            if not may_open_link(read_owner(store.existing(run_id)), viewer, view=view):
                # Not "their owner can share": anyone can, and &view=1 is all a read-only link adds (a review)
                st.warning(md(f"Ignored the {what} in the address: they are another learner's runs, which a "
                              "copied address does not open. Each opens read-only ('Share (read-only)' on the Runs "
                              "page, or the address with &view=1 at its end)."))  # fmt: skip
                return None
    return named


def show_runs_in_url(param: str, runs: dict[str, str] | None) -> None:
    """Keep the runs on screen in the address (a refresh or a shared link finds them), or clear the parameter."""
    if runs:
        st.query_params[param] = ",".join(runs.values())
    else:
        st.query_params.pop(param, None)


# ---------------------------------------------------------------- what a viewer sends to a run
# The run manager's commands (pause, step, stop, a knob) and a resume through the room's admission, each as that
# viewer (the run manager checks again: a page's rule is for its buttons, the manager's for the run). The handle
# sends its commands through these; a knob changed from a widget callback, which runs before the page has its
# handle, calls `set_knob` directly: one function for both.


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
