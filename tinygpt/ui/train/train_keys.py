"""The Train page's session keys: the settings form's widgets (one per field of tinygpt/ui/train/settings.py), the
page's own widgets, the live knobs' notes, and the last Step click. Plain strings but for the Step click's two
functions, so settings.py stays pure (no Streamlit calls)."""

from __future__ import annotations

import time

import streamlit as st

# ---------------------------------------------------------------- the form's widgets (settings.py's fields)

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

# ---------------------------------------------------------------- the page's own widgets

W_STEP_N = "w_step_n"
W_TRAIN = "w_train"
CONTROLS = {"pause": "w_pause", "resume": "w_resume", "step": "w_step", "stop": "w_stop"}  # the run's buttons' keys
W_TARGET = "w_target"
W_SMOOTH = "w_smooth"
W_X_AXIS = "w_x_axis"  # loss curves on training steps or on wall-clock seconds (Train and Compare)
W_BRANCH = "w_branch"  # Runs: the branch control; its widgets are w_branch:<run>:<step>:<setting> (ui.branching)
# Train's folding boxes, keyed: an unkeyed expander is a new element whenever a note above it comes or goes on a
# rerun, and folded shut after each change in it (a review: the branch panel closed at every setting)
W_BRANCH_BOX, W_CHART_OPTIONS_BOX = "w_branch_box", "w_chart_options_box"

# ---------------------------------------------------------------- the live knobs and the form's starting point

KNOB_NOTES = "knob_notes"  # {knob: {"value", "request", "run"}}: live knob changes the page follows until answered
KNOB_WIDGETS = "knob_widgets"  # {value key: generation}: the key suffix of each live knob's widget (knob_widgets.py)
KNOB_MOUNTED = "knob_mounted"  # {widget key: monotonic time it was mounted}: a fresh widget's default echo (moved)
KNOB_ECHO = "knob_echo"  # a fresh knob widget's default echo was refused: the page is drawn again (knob_widgets)
KNOB_BOUNDS = "knob_bounds"  # {value key: (min, max)}: a live slider's bounds when last drawn (knob_widgets.mount)
KNOBS_DRAWN = "knobs_drawn"  # (run id, {knob: value}, its context): the run's knob values the widgets last drew
FORM_RUN = "form_run"  # (run id, its preset label or None): the run the form last took its settings from (form.py)
FORM_TEXT = "form_text"  # (text_name, sha256) of the run text the form was seeded with: its name, kept (settings)
FORM_REPLACED = "form_replaced"  # (monotonic time, {widget key: (value replaced, value put)}): form.replace_fields
FORM_BASE = "form_base"  # (run id, {field: value}): the form when that run came into view, to tell this viewer's edits
CONTROL_CLICK = "control_click"  # (command, run id): a Pause/Resume/Step/Stop click the page has not acted on yet
TRAIN_CLICK = "train_click"  # True: a Train click the page has not acted on yet (click_train)
STEP_REQUESTED_AT = "step_requested_at"  # unix time of the last Step click: refresh a paused run's view briefly


def mark_step_requested() -> None:
    """A Step click: the Train page refreshes a paused run's view for a few seconds to show the steps."""
    st.session_state[STEP_REQUESTED_AT] = time.time()


def step_requested_recently(seconds: float = 5.0) -> bool:
    return time.time() - (st.session_state.get(STEP_REQUESTED_AT) or 0) < seconds


def click_control(command: str, run: str | None) -> None:
    """A run button's on_click ("pause", "resume", "step", "stop"), for the run in view when it was drawn.

    Why a callback: Streamlit runs it before the script run the click starts, and session state keeps it until
    the page acts on it (`take_control_click`). A button's click lives only in the one script run it starts: when
    another request from the browser (a widget's value, the live view's timer) cut that run short before the page
    reached its button code (it first draws the form and reads the run), the click was gone, and Stop did nothing."""
    st.session_state[CONTROL_CLICK] = (command, run)


def take_control_click(run: str | None) -> str | None:
    """The command of the run button clicked for `run` since the page last acted on one (then forgotten); a click
    for another run (the page shows another one now) is dropped."""
    command, clicked_for = st.session_state.pop(CONTROL_CLICK, None) or (None, None)
    return command if run and clicked_for == run else None


def click_train() -> None:
    """The Train button's on_click: kept until the page starts the run (`take_train_click`), for the reason
    `click_control` gives (a script run cut short by another request took a plain button's click with it)."""
    st.session_state[TRAIN_CLICK] = True


def take_train_click() -> bool:
    """Whether Train was clicked since the page last acted on it (then forgotten)."""
    return bool(st.session_state.pop(TRAIN_CLICK, False))


def click_pending() -> bool:
    """A kept click the page's full run has not acted on yet: a fragment's rerun (which does not run the page's
    button code) asks for the full run instead of leaving the click waiting for the next widget change."""
    return TRAIN_CLICK in st.session_state or CONTROL_CLICK in st.session_state
