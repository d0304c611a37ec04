"""What one app server shares between its browser sessions: the run store, the run manager (the training worker
processes), and models and statistics computed from run files that never change once written. The shared readers of
runs are the run in view's (tinygpt/ui/run/in_view.py, ReaderPool).

Every function here holds a Streamlit cache or talks to the manager; the numbers themselves come from the engine
(tinygpt.runs.models.load_model, tinygpt.inside.maps). Deliberately left out: per-session state (tinygpt/ui/state.py).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.inside import maps as inside
from tinygpt.runs.files import read_config_json, snapshot_path
from tinygpt.runs.models import LoadedModel, load_model
from tinygpt.runs.reader import RunReader
from tinygpt.runs.store import RunStore


@st.cache_resource(show_spinner=False)
def store_at(root: str) -> RunStore:
    return RunStore(root)


def get_store() -> RunStore:
    """The run store ($TINYGPT_RUNS_DIR, default ./runs), one per server process."""
    return store_at(str(RunStore().root))


@st.cache_resource(show_spinner=False)
def manager_at(root: str):
    from tinygpt.runs.scheduler import RunManager  # imported late: the Streamlit script must not pay for it twice

    return RunManager(store_at(root))


def get_manager():
    """The one RunManager of this server: owns the training worker processes of every browser session."""
    return manager_at(str(RunStore().root))


def is_live(run_id: str | None) -> bool:
    """True while a worker process trains (or is about to train) the run."""
    if not run_id:
        return False
    try:
        return bool(get_manager().is_live(run_id))
    except TinyGPTError:
        return False


def is_queued(run_id: str | None) -> bool:
    """True while the run waits in the manager's queue for a training slot."""
    return bool(run_id) and run_id in get_manager().queued_runs()


def is_active(run_id: str | None) -> bool:
    """A worker trains it or it waits for one: a page showing it refreshes by itself (a queued page that did not
    refresh kept saying "queued" long after its run had trained and finished)."""
    return is_live(run_id) or is_queued(run_id)


@st.cache_resource(show_spinner=False)
def _queue_memo() -> dict:
    return {"lock": threading.Lock(), "at": 0.0, "waits": {}}


def queue_forecast(run_id: str | None) -> dict | None:
    """The manager's forecast for a queued run (tinygpt.runs.forecast.queue_forecast: its place in the order of
    starting, what starts before it, in how many seconds), worked out once a second for the whole server: every
    queued page asks at each refresh, and each working-out reads every queued run's folder. A page never waits for
    another page's: while one works it out, the others take the last answer. None for a run not queued."""
    if not run_id:
        return None
    memo = _queue_memo()
    if time.monotonic() - memo["at"] > 1.0 and memo["lock"].acquire(blocking=False):
        try:
            memo["waits"] = get_manager().queue_forecast()
            memo["at"] = time.monotonic()
        finally:
            memo["lock"].release()
    return memo["waits"].get(run_id)


def touch(run_id: str | None) -> None:
    """Renew the lease of a live or queued run: a run pauses itself when no page has looked at it for a while
    (queued runs too: a learner watching the queue must not find their run paused before it started)."""
    if run_id:
        get_manager().touch(run_id)


def keepalive_seconds() -> float:
    """How often any open page renews its learner's leases (the frame's sidebar fragment): a third of the run
    manager's lease, at most 30 s. A fixed 30 s let a 20 s lease pause the run of a learner reading Sample."""
    from tinygpt.runs.worker import lease_from_env  # not the manager: the frame asks before the page is drawn

    try:
        lease = lease_from_env()
    except TinyGPTError:  # a bad TINYGPT_LEASE_SECONDS: the run manager says so when it starts
        return 30.0
    return max(1.0, min(30.0, lease / 3))


def touch_mine(learner) -> None:
    """Renew the leases of every live or queued run `learner` owns: any page of the app they look at (Sample,
    Runs, another learner's run) keeps their own runs going."""
    from tinygpt.runs.owners import run_learner

    manager = get_manager()
    store = get_store()
    for run_id in [*manager.live_runs(), *manager.queued_runs()]:
        config = read_config_json(store.path(run_id))
        if run_learner(config).get("id") == learner.id:
            manager.touch(run_id)


def my_active_runs(learner) -> list[str]:
    """The runs `learner` owns that train or wait for a slot now (one learner holds at most one slot)."""
    from tinygpt.runs.owners import run_learner

    manager = get_manager()
    store = get_store()
    return [
        run_id
        for run_id in [*manager.live_runs(), *manager.queued_runs()]
        if run_learner(read_config_json(store.path(run_id))).get("id") == learner.id
    ]


def device_options() -> list[str]:
    """Devices this machine can train on, "auto" first."""
    from tinygpt.device import available_devices

    return ["auto", *[str(d) for d in available_devices() if str(d) != "auto"]]


@st.cache_resource(max_entries=6, show_spinner=False)
def cached_model(run_dir: str, step: int) -> LoadedModel:
    """The model of one checkpoint (CPU, eval mode), shared by every session: a checkpoint never changes."""
    return load_model(run_dir, step)


@st.cache_data(max_entries=20_000, show_spinner=False)
def snapshot_head_stats(run_dir: str, step: int) -> list[dict]:
    """inside.head_stats of one attention snapshot, with its step. A snapshot file never changes once written, so
    this is cached per (run, step) and each file is read once per server."""
    try:
        weights = np.load(snapshot_path(run_dir, step), allow_pickle=False)  # (L, H, T, T)
    except (FileNotFoundError, ValueError):
        return []
    return [{"step": int(step), **row} for row in inside.head_stats(weights)]


def head_stats(reader: RunReader) -> list[dict]:
    """Entropy and max weight per head for every attention snapshot of a run, oldest first."""
    rows: list[dict] = []
    for snap in reader.attention_index().get("snapshots", []):
        rows.extend(snapshot_head_stats(str(reader.run_dir), int(snap["step"])))
    return rows


@st.cache_resource(show_spinner=False)
def room_budget() -> dict:
    """The per-run budget the instructor sets on the Room page, shared by every session of this server:
    {"max_params": int or 0 (no limit), "max_steps": int or 0, "max_minutes": float or 0}. Size and steps are
    checked when a learner presses Train; the minutes go with the run to the run manager, which stops it when its
    worker has held a training slot that long (`time_limit_s`)."""
    return {"max_params": 0, "max_steps": 0, "max_minutes": 0.0}


@st.cache_resource(show_spinner=False)
def positions():
    """Each learner's lesson step and run in view, as their pages last reported (tinygpt/ui/host/positions.py)."""
    from tinygpt.ui.host.positions import Positions

    return Positions()


def report_position(learner, step: int | None, run_id: str | None) -> None:
    """This session's learner is on lesson step `step` with `run_id` in view (the Room table reads it)."""
    if not learner.instructor:
        positions().saw(learner.id, step, run_id, name=learner.name)


def time_limit_s(learner) -> float | None:
    """The room's time budget for a new run of `learner` in seconds (None: no limit; the instructor has none)."""
    minutes = float(room_budget().get("max_minutes") or 0)
    return minutes * 60 if minutes > 0 and not learner.instructor else None
