"""The run in view: its id in the session, mirrored into the URL (`?run=<id>`) so that a refresh or a second tab
reattaches to the same run (Streamlit clears query params on a page switch, so `sync_run_id()` puts it back on every
run); a shared link's read-only view (`?view=1`); the runs an experiment names in the URL; and the run's reader, the
server's one shared reader of it (tinygpt/ui/host/resources.py). A script run looks the run's folder up once:
`sync_run_id` finds it, and the page's reader (`reader_in_view`, which run_handle.open_run asks) takes that folder."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import streamlit as st

from tinygpt.errors import RunStoreError
from tinygpt.runs.files import validate_run_id
from tinygpt.runs.owners import read_owner
from tinygpt.runs.reader import RunReader
from tinygpt.runs.store import RunStore
from tinygpt.ui.host import resources
from tinygpt.ui.screen.flashes import flash
from tinygpt.ui.state import RUN_ID

URL_RUN = "run"  # the query parameter that carries the run id
URL_VIEW = "view"  # ?view=1: a shared link to someone else's run, opened read-only
SHARED_OPEN = "shared_open"  # a ?view=1 link was just followed: the frame shows that run's live view
SHARED_RUN = "shared_run"  # the run this session opened from a ?view=1 link (the URL keeps view=1 while it shows)
CHECKED = "run_checked"  # (run id, its folder): what sync_run_id found on this script run, for the page's reader


def run_id() -> str | None:
    return st.session_state.get(RUN_ID)


def set_run_id(new_id: str | None) -> None:
    """Make a run current (None: no run) and write it into the URL."""
    if new_id is None:
        st.session_state.pop(RUN_ID, None)
        st.query_params.pop(URL_RUN, None)
        return
    st.session_state[RUN_ID] = validate_run_id(new_id)
    st.query_params[URL_RUN] = new_id


def sync_run_id(store: RunStore, may_attach: Callable[[dict, str], bool] = lambda config, run: True) -> str | None:
    """Called on every script run, before the page: a run id in the URL wins (a refresh, a second tab, a link
    shared with "share this run"); otherwise the session's run id is put back into the URL (page switches clear
    it). `may_attach(owner, run_id)`, asked with the owner part of the run's config.json (owners.read_owner),
    says whether a link may make that run this session's current one: a learner's own run, or any run with ?view=1
    (read-only); a link copied from someone else's address bar opens the learner's own session instead. A bad or
    unknown id in the URL is dropped with a message instead of failing the page. A link's run is looked up once
    (RunStore.existing; "deleted elsewhere" is for the session's own run), and a refused link builds no reader.
    The folder found is kept for this script run (CHECKED): the page's reader takes it instead of looking again."""
    st.session_state.pop(CHECKED, None)
    from_url = st.query_params.get(URL_RUN)
    attached = run_dir = None  # the link's run and its folder, found just now
    if from_url and from_url != st.session_state.get(RUN_ID):
        try:
            run_dir = store.existing(from_url)  # RunStoreError for a bad id or no such run, saying which
            # Decided on config.json's owner alone: a refused link used to build and cache a full RunReader first.
            if not (may_attach(read_owner(run_dir), from_url) or st.query_params.get(URL_VIEW) == "1"):
                raise RunStoreError(
                    "that link points at another learner's run, so it opened your own session. To show a run to "
                    "others, use 'Share (read-only)' on the Runs page."
                )
            resources.reader_pool().get(run_dir)  # a damaged run is refused here, with why; pages read this reader
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


# ---------------------------------------------------------------- readers: one incremental reader per run


def reader(store: RunStore, run: str | None) -> RunReader | None:
    """The reader of a run, polled (reads only what is new): the server's one shared reader of it, not one per
    session (resources.ReaderPool). None if there is no such run or no page can draw it."""
    if not run:
        return None
    try:
        return resources.run_reader(store, run)
    except RunStoreError:
        return None


def reader_in_view(store: RunStore, run: str | None) -> RunReader | None:
    """`reader`, for the run in view on a page's full script run: from the folder sync_run_id found on this script
    run (taken once), so the folder is looked up once a script run. Any other run, a second ask, or a fragment's
    own rerun (sync_run_id did not run for it; the frame drops CHECKED once the page has run): looked up, as
    `reader` does."""
    checked = st.session_state.pop(CHECKED, None)
    if not run or not checked or checked[0] != run:
        return reader(store, run)
    try:
        return resources.reader_pool().get(checked[1])
    except RunStoreError:  # a config.json no page can draw
        return None


def forget_reader(store: RunStore, run: str) -> None:
    """The run was deleted: drop its shared reader."""
    with contextlib.suppress(RunStoreError):
        resources.reader_pool().forget(store.path(run))


# ---------------------------------------------------------------- runs named in the URL (an experiment's)


def runs_in_url(param: str, labels: list[str], what: str) -> dict[str, str] | None:
    """The runs named in the URL parameter `param` (?lab=id,id), one per label in order; None when there are none
    or not one per label, or (with a message naming `what`) when an id is not a run id."""
    ids = [i for i in str(st.query_params.get(param, "")).split(",") if i]
    if len(ids) != len(labels):
        return None
    try:
        return {label: validate_run_id(i) for label, i in zip(labels, ids, strict=True)}
    except RunStoreError as e:
        flash("warning", f"Ignored the {what} in the address: {e}")
        return None


def show_runs_in_url(param: str, runs: dict[str, str] | None) -> None:
    """Keep the runs on screen in the address (a refresh or a shared link finds them), or clear the parameter."""
    if runs:
        st.query_params[param] = ",".join(runs.values())
    else:
        st.query_params.pop(param, None)
