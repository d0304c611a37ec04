"""The one place that owns Streamlit session state: every key the app uses, and typed accessors for them.

Pages never write `st.session_state["..."]` with a string of their own; they call the functions here, so a
reader of the app can see in one screen everything a browser session remembers:

- the current run id, mirrored into the URL (`?run=<id>`) so that a refresh or a second tab reattaches to
  the same run. Streamlit clears query params on a page switch, so `sync_run_id()` puts it back on every run;
- one incremental `RunReader` per run this session looks at (each reads only what is new since its last poll);
- the settings widgets' keys (`W_*`); they use `persist_state="session"` so values survive page switches;
- small caches for the Attention page (the last grid figure and the step it shows, so the grid is re-sent only
  when its step changes) and the Sample page (the last generation, to draw its charts).

Deliberately left out: anything that must outlive a browser session (that lives in the run folder).
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import streamlit as st

from tinygpt.errors import RunStoreError
from tinygpt.runs.files import validate_run_id
from tinygpt.runs.owners import read_owner
from tinygpt.runs.reader import RunReader
from tinygpt.runs.store import RunStore
from tinygpt.ui.host import resources
from tinygpt.ui.words.safe import md

URL_RUN = "run"  # the query parameter that carries the run id

# ---------------------------------------------------------------- keys of non-widget state

RUN_ID = "run_id"
LEARNER = "learner"  # tinygpt.runs.owners.Actor: this browser's learner (tinygpt/ui/people/room.py)
LEARNER_COOKIES = "learner_cookies"  # {cookie: value} the frame still has to write (a new learner, a rename)
PENDING_START = "pending_start"  # {"action", "what"}: a start waiting for "stop my other run first?" (admission)
URL_VIEW = "view"  # ?view=1: a shared link to someone else's run, opened read-only
CONTROL = "control"  # {(run_id, Actor): bool}: may that actor change that run (control_decision), decided once
KNOB_NOTES = "knob_notes"  # {knob: {"value", "request", "run"}}: live knob changes the page follows until answered
KNOB_WIDGETS = "knob_widgets"  # {value key: generation}: the key suffix of each live knob's widget (knob_widgets.py)
KNOBS_DRAWN = "knobs_drawn"  # (run id, {knob: value}): the run's knob values the live knob widgets last drew
FORM_BASE = "form_base"  # (run id, {field: value}): the form when that run came into view, to tell this viewer's edits
STEP_REQUESTED_AT = "step_requested_at"  # unix time of the last Step click: refresh a paused run's view briefly
ATTN_GRID = "attn_grid"  # {"key": (...), "drawn": unix time}: what the attention grid shows, and since when
ATTN_PLAYING = "attn_playing"  # the Attention page's play button: advance the step slider by itself
ATTN_PLAY_STARTED = "attn_play_started"  # play began (from the first snapshot if it was at the newest)
ATTN_PLAY_DONE = "attn_play_done"  # play reached the newest snapshot: switch the button off on the next run
ATTN_FOLLOW = "attn_follow"  # the step slider follows the newest snapshot (until the user scrubs back)
PROBE_RUN = "probe_run"  # the run whose probe text the probe box was filled with
LAST_SAMPLE = "last_sample"  # {"prompt", "text", "probs_raw", "probs", "attention", "keys", "char", "vocab", ...}
SAMPLE_FOLLOW = "sample_follow"  # the current run the Sample page's run select last followed
SAMPLE_CKPT_LATEST = "sample_ckpt_latest"  # the checkpoint select follows the newest checkpoint
FLASH = "flash"  # one-shot messages for the next run of a page: [(kind, text, run id or None)]
FIGURES = "figures"  # {cache name: OrderedDict(key -> figure)}: figures rebuilt only when their inputs change
SET_BY_PAGE = "set_by_page"  # {widget key: (value replaced, value put, monotonic time)}: see put_widget
SESSION_TOKEN = "session_token"  # a random token: this session in the server's count of live watchers (live.py)
PENDING_LARGE = "pending_large"  # a page asked for Large fonts on/off: applied before the toggle is drawn next
SHARED_OPEN = "shared_open"  # a ?view=1 link was just followed: the frame shows that run's live view
SHARED_RUN = "shared_run"  # the run this session opened from a ?view=1 link (the URL keeps view=1 while it shows)

# ---------------------------------------------------------------- widget keys (Train page settings and friends)

W_PRESET = "w_preset"
W_SOURCE = "w_source"
W_PASTE = "w_paste"
W_UPLOAD = "w_upload"
W_LAYERS = "w_layers"
W_WIDTH = "w_width"
W_HEADS = "w_heads"
W_CONTEXT = "w_context"
W_BATCH = "w_batch"
W_LR = "w_lr"
W_WARMUP = "w_warmup"
W_SCALE = "w_scale"
W_SCALE_MULT = "w_scale_mult"
W_MASK = "w_mask"
W_WINDOW = "w_window"
W_DROPOUT = "w_dropout"
W_CLIP = "w_clip"
W_SEED = "w_seed"
W_DEVICE = "w_device"
W_MAX_STEPS = "w_max_steps"
W_OPTIMIZER = "w_optimizer"
W_TOKEN_SHIFT = "w_token_shift"
W_STEP_N = "w_step_n"
W_LARGE = "w_large"
W_TARGET = "w_target"
W_SMOOTH = "w_smooth"
W_X_AXIS = "w_x_axis"  # loss curves on training steps or on wall-clock seconds (Train and Compare)

W_PROBE = "w_probe"
W_ATTN_STEP = "w_attn_step"
W_ATTN_LAYER = "w_attn_layer"
W_ATTN_HEAD = "w_attn_head"
W_ATTN_ROW = "w_attn_row"
W_ATTN_TOY = "w_attn_toy"  # toy mode: a short probe whose every cell shows its number
W_ATTN_PER_ROW = "w_attn_per_row"  # panels per row of the step-by-step view

W_PROMPT = "w_prompt"
W_TEMPERATURE = "w_temperature"
W_TOP_K = "w_top_k"
W_TOP_P = "w_top_p"
W_NUM_CHARS = "w_num_chars"
W_SAMPLE_SEED = "w_sample_seed"
W_SAMPLE_RUN = "w_sample_run"
W_SAMPLE_CKPT = "w_sample_ckpt"

W_COMPARE = "w_compare"
W_LEARNER_NAME = "w_learner_name"
W_ROOM_PICK = "w_room_pick"
W_INSTRUCTOR_KEY = "w_instructor_key"
W_SHOW_KEY = "w_show_key"  # Room: the instructor key revealed (off on every visit)
W_PREDICT = "w_predict"  # Lesson: a learner's answer to a step's question, the radio w_predict:<step key>
W_SPREAD_NAMES = "w_spread_names"  # Room: the learners named beside their answers (off on every visit)
W_RUNS_PICK = "w_runs_pick"
W_DELETE_CONFIRM = "w_delete_confirm"
W_BRANCH = "w_branch"  # Runs: the branch control; its widgets are w_branch:<run>:<step>:<setting> (ui.branching)
W_GRAD_FIELD = "w_grad_field"
W_GRAD_VIEW = "w_grad_view"


def get(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)


def put(key: str, value: Any) -> None:
    st.session_state[key] = value


def pop(key: str, default: Any = None) -> Any:
    return st.session_state.pop(key, default)


def has(key: str) -> bool:
    return key in st.session_state


def init(key: str, value: Any) -> None:
    """Give a widget key its first value (a widget's own `value=` would fight with session state)."""
    if key not in st.session_state:
        st.session_state[key] = value


ECHO_S = 5.0  # how long the browser may still send a widget's old value after the server replaced it


def put_widget(key: str, value: Any) -> None:
    """Set a widget's value from the server's side (a log slider's exact box following the slider, a preset, a
    clamp), remembering the value it replaced, so that `stale_echo` can recognise that value coming back.

    Why: the browser sends every widget's value with each rerun request, and a live fragment asks for one every
    half second. A request sent before the browser drew the server's new value carries the old one, which looks like
    the learner changing it back: one key press on the learning-rate slider moved the exact box, whose stale value
    then moved the slider back (two knob commands, 0.002 -> 0.005 -> 0.002, or four)."""
    old = get(key)
    if old != value:
        st.session_state.setdefault(SET_BY_PAGE, {})[key] = (old, value, time.monotonic())
    put(key, value)


def stale_echo(key: str) -> bool:
    """In a widget's on_change: is its "new" value only the browser's stale copy of the one `put_widget` replaced
    (within ECHO_S)? Then the server's value is put back, and the caller should do nothing else. Deliberately
    left out: telling an echo from a learner who sets the old value back on purpose within those seconds (the
    widget then shows the current value again, and a second try works)."""
    entry = get(SET_BY_PAGE, {}).get(key)
    if entry is None:
        return False
    old, new, at = entry
    if time.monotonic() - at > ECHO_S:
        del st.session_state[SET_BY_PAGE][key]
        return False
    if get(key) != old:
        return False
    put(key, new)
    return True


def large_fonts() -> bool:
    """The sidebar's "Large fonts (projector)" toggle."""
    return bool(st.session_state.get(W_LARGE))


def request_large_fonts(on: bool = True) -> None:
    """Turn Large fonts on (or off) from a page: the toggle is drawn by the frame before any page runs, and a
    widget's value cannot change once it is drawn (StreamlitWidgetAlreadyInstantiatedError: "Bring to the
    projector" showed that traceback). The frame applies it on the next run, before the toggle."""
    st.session_state[PENDING_LARGE] = bool(on)


def apply_pending_large() -> bool | None:
    """Called by the frame just before it draws the toggle: the value a page asked for (None if none)."""
    pending = st.session_state.pop(PENDING_LARGE, None)
    if pending is not None:
        st.session_state[W_LARGE] = pending
    return pending


def mark_step_requested() -> None:
    """A Step click: the Train page refreshes a paused run's view for a few seconds to show the steps."""
    st.session_state[STEP_REQUESTED_AT] = time.time()


def step_requested_recently(seconds: float = 5.0) -> bool:
    return time.time() - (st.session_state.get(STEP_REQUESTED_AT) or 0) < seconds


# ---------------------------------------------------------------- the current run, mirrored in the URL


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
    (RunStore.existing; "deleted elsewhere" is for the session's own run), and a refused link builds no reader."""
    from_url = st.query_params.get(URL_RUN)
    attached = None  # the link's run, found just now
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
    if current and current != attached and not store.exists(current):  # deleted elsewhere
        st.session_state.pop(RUN_ID, None)
        current = None
    if current and st.query_params.get(URL_RUN) != current:
        st.query_params[URL_RUN] = current
    # view=1 stays in the address while the shared run shows (a refresh must reattach it read-only), not after.
    if current and current == st.session_state.get(SHARED_RUN):
        if st.query_params.get(URL_VIEW) != "1":
            st.query_params[URL_VIEW] = "1"
    else:
        st.query_params.pop(URL_VIEW, None)
    return current


def control_decision(run: str, actor: Any, decide: Callable[[], bool]) -> bool:
    """Whether `actor` may change run `run`: `decide()` (tinygpt.ui.people.room.can_control) once per run and actor in
    this session, remembered here. The frame's link check and the page's controls used to decide it each script
    run, twice on a link's first. It cannot go stale: a run's owner is written once, when the run is created, and
    an actor who becomes the instructor is another Actor (a new key)."""
    decisions = st.session_state.setdefault(CONTROL, {})
    if (run, actor) not in decisions:
        decisions[(run, actor)] = bool(decide())
    return decisions[(run, actor)]


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


def forget_reader(store: RunStore, run: str) -> None:
    """The run was deleted: drop its shared reader."""
    with contextlib.suppress(RunStoreError):
        resources.reader_pool().forget(store.path(run))


# ---------------------------------------------------------------- one-shot messages


def flash(kind: str, text: str, run_id: str | None = None) -> None:
    """Show `text` as st.<kind> (success, info, warning, error) at the top of the next page run, once (a widget
    callback that fires again must not put it there twice). `run_id`: it is about that run, and shows only over it."""
    pending = st.session_state.setdefault(FLASH, [])
    if (kind, text, run_id) not in pending:
        pending.append((kind, text, run_id))


def show_flashes(run_id: str | None = None) -> None:
    """Show the pending one-shot messages as text (they often carry a value from the URL or a user's file): those
    about no run, and those about `run_id` (None: the run in view). One about another run is dropped, not kept: it
    was news of that click, stale by the time its run is in view again (Bring to the projector shows none)."""
    shown = run_id or st.session_state.get(RUN_ID)
    for kind, text, about in st.session_state.pop(FLASH, []):
        if about is None or about == shown:
            getattr(st, kind)(md(text))


# ---------------------------------------------------------------- Experiments page (the pitfall lab)

W_EXPERIMENT = "w_experiment"
W_EXP_TAB = "w_exp_tab"  # the Experiments page's tab: a lesson step's click opens the one its check reads
W_LAB_SOURCE = "w_lab_source"
W_LAB_SEED = "w_lab_seed"
W_LAB_UPLOAD = "w_lab_upload"  # the learner's own text for an experiment: a file ...
W_LAB_PASTE = "w_lab_paste"  # ... or pasted
W_HEALTH_RUN = "w_health_run"
W_MEM_BATCH = "w_mem_batch"
W_MEM_CONTEXT = "w_mem_context"
W_MEM_WIDTH = "w_mem_width"
LAB_RUNS = "lab_runs"  # {experiment key: {variant label: run_id}}
URL_LAB = "lab"  # ?lab=<id>,<id>: an experiment's runs, in variant order, so a refresh reattaches


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


def lab_runs(key: str, labels: list[str]) -> dict[str, str] | None:
    """The runs of experiment `key` this session started, or those named in the URL (?lab=id,id)."""
    known = st.session_state.setdefault(LAB_RUNS, {})
    if key not in known and (named := runs_in_url(URL_LAB, labels, "experiment runs")):
        known[key] = named
    show_runs_in_url(URL_LAB, known.get(key))
    return known.get(key)


def set_lab_runs(key: str, runs: dict[str, str]) -> None:
    st.session_state.setdefault(LAB_RUNS, {})[key] = dict(runs)
    show_runs_in_url(URL_LAB, runs)


LAB_MEASURED = "lab_measured"  # {experiment key: (seed, results)} for experiments measured in-process (memory)


def lab_measured(key: str) -> tuple[int, dict] | None:
    """The last in-process measurement of experiment `key` this session took, with its seed."""
    return st.session_state.setdefault(LAB_MEASURED, {}).get(key)


def set_lab_measured(key: str, seed: int, results: dict) -> None:
    st.session_state.setdefault(LAB_MEASURED, {})[key] = (int(seed), results)


# ---------------------------------------------------------------- Circuits page (head roles, ablation, lens)

W_CIRC_STEP = "w_circ_step"  # the step the head table and the checkpoint views look at
W_CIRC_MODE = "w_circ_mode"  # zero or mean ablation
W_CIRC_TAB = "w_circ_tab"  # the Circuits page's checkpoint tab (Head ablation, Logit lens)
W_CIRC_HEAD = "w_circ_head"  # the head whose ablation the probe chart shows, "L1H2"
W_CIRC_PROBE = "w_circ_probe"  # the logit lens's and the ablation's probe text
W_CIRC_OFF = "w_circ_off"  # heads to switch off in the live run, ["L1H2", ...]
W_CIRC_SOURCE = "w_circ_source"  # the induction experiment's corpus
W_CIRC_SEED = "w_circ_seed"
W_CIRC_TABLE = "circ_heads"  # the head table (a row click chooses W_CIRC_HEAD); the key ends in the head chosen
W_CIRC_CELLS = "circ_ablation_cells"  # the ablation heatmap (a cell click chooses W_CIRC_HEAD); the same
CIRC_PROBE_RUN = "circ_probe_run"  # the run whose probe text the probe box was filled with
CIRC_RUNS = "circ_runs"  # {label: run_id} of the induction experiment this session started
CIRC_LIVE = "circ_live"  # the experiment's runs still train: its fragment refreshes itself
URL_CIRC = "induction"  # ?induction=<id>,<id>: the experiment's runs, so a refresh reattaches


def circuit_runs(labels: list[str]) -> dict[str, str] | None:
    """The induction experiment's runs this session started, or those named in the URL (?induction=id,id)."""
    if not st.session_state.get(CIRC_RUNS) and (named := runs_in_url(URL_CIRC, labels, "induction runs")):
        st.session_state[CIRC_RUNS] = named
    show_runs_in_url(URL_CIRC, st.session_state.get(CIRC_RUNS))
    return st.session_state.get(CIRC_RUNS) or None


def set_circuit_runs(runs: dict[str, str]) -> None:
    st.session_state[CIRC_RUNS] = dict(runs)
    show_runs_in_url(URL_CIRC, runs)


def choose_circuit_head(name: str, names: list[str]) -> None:
    """A click on the head table or the ablation heatmap chooses head `name` ("L1H2") in the Head select box (in
    a widget callback, so before the box is drawn); a name the model does not have is ignored."""
    if name in names:
        st.session_state[W_CIRC_HEAD] = name


# ---------------------------------------------------------------- figures kept while their inputs stay the same


def cached_figure(name: str, key: Any, build: Callable[[], Any], max_entries: int = 16) -> Any:
    """The figure built for `key` in this session, building it only the first time (e.g. the attention grid per
    snapshot step: scrubbing back and forth then costs no rebuilding). Least recently used entries go first."""
    caches: dict[str, OrderedDict] = st.session_state.setdefault(FIGURES, {})
    cache = caches.setdefault(name, OrderedDict())
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = cache[key] = build()
    while len(cache) > max_entries:
        cache.popitem(last=False)
    return value


def session_token() -> str:
    """A random token of this browser session (not of the learner: two tabs are two sessions)."""
    if SESSION_TOKEN not in st.session_state:
        import secrets

        st.session_state[SESSION_TOKEN] = secrets.token_hex(8)
    return st.session_state[SESSION_TOKEN]


# ---------------------------------------------------------------- workshop mode (settings in the URL)

WORKSHOP_PARAMS = "workshop_params"  # the workshop link's query parameters, kept across page switches
WORKSHOP_LOCKED = "workshop_locked"  # ?lock=1: every setting read-only
LESSON_STEP = "lesson_step"  # the lesson step this session's pane shows (tinygpt/ui/teach/lesson_view.py)
LESSON_SEEN = "lesson_seen"  # the room's step when the pane last followed it (a later move takes it along)
LESSON_CHECKED = "lesson_checked"  # the lesson step whose check the pane last drew (lesson_view.check_view)
LESSON_SHOWN = "lesson_shown"  # the page's last full run drew the lesson pane (False: drawn without it)
LESSON_PENDING = "lesson_pending"  # {widget key: value} a lesson setup sets at the start of the page it opens
LESSON_RUNS = "lesson_runs"  # {role: {label: run_id}}: the runs a learner's own setup started for the lesson


def locked() -> bool:
    return bool(st.session_state.get(WORKSHOP_LOCKED))


# ---------------------------------------------------------------- the frame (ui/frame.py) runs before every page

FRAME_RAN = "frame_ran"


def mark_frame() -> None:
    """The frame calls this just before running the page."""
    st.session_state[FRAME_RAN] = True


def frame_marked() -> bool:
    """Whether the frame ran before the page in this script run (tinygpt.ui.frame.require asks); clears the mark."""
    return bool(st.session_state.pop(FRAME_RAN, False))
