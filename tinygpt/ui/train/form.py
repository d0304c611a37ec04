"""The Train page's settings form, drawn from the table in tinygpt/ui/train/settings.py, and the buttons beside it.

`seed_form` gives every widget its first value (a run that comes into view: its own settings, preset and current
knobs, tinygpt/ui/train/run_form.py; else the first preset); `draw_form` draws the preset select, the data-and-model
box and the live-knob box; a live knob's widget shows the run in view and sends its own knob's new value to the
running worker the moment it changes (`on_change`; tinygpt/ui/train/knob_widgets.py), and the page shows the
worker's answer (knob_widgets.answers).

`train_clicked` (the Train button) builds the run the form describes with `tinygpt.presets.preset`, the one
function the CLI and the lab build their configs with too (`run_config`), and starts it through
tinygpt.ui.people.admission (the room's budget, one training slot per learner: a second Train asks before stopping
the first); `run_button_clicked` acts on the run's Pause / Resume / Step / Stop.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import streamlit as st

from tinygpt.config import MAX_TEXT_FIELDS, DataConfig, RunConfig
from tinygpt.errors import RunStoreError, TinyGPTError
from tinygpt.presets import preset
from tinygpt.runs.corpus import corpus_sha256, read_corpus
from tinygpt.runs.jobs import NoWorkerError
from tinygpt.runs.owners import Actor, NotYourRunError
from tinygpt.runs.reader import RunReader
from tinygpt.ui import state
from tinygpt.ui.host import resources
from tinygpt.ui.people import admission, people_keys, room
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import flashes, fonts, numbers
from tinygpt.ui.train import drafts, guard, knob_widgets, run_form, settings, train_keys
from tinygpt.ui.train.settings import Field
from tinygpt.ui.words import safe
from tinygpt.ui.words.setting_words import in_words, setting_word

# The widgets whose on_change is `_field_moved`: the data-and-model fields and the corpus (the live knobs have
# knob_widgets' keys, which change when the server sets their value).
ECHO_GUARDED = frozenset({*(f.key for f in settings.MODEL_FIELDS), train_keys.W_SOURCE, train_keys.W_PASTE})


def seed_form(rd) -> None:
    """First values for every setting widget (widgets' own `value=` would fight with session state); `rd`: the
    reader of the run in view (the page's handle's), or None."""
    first = next(iter(settings.PRESET_LABELS))
    # A run came into view (a reattached tab, a shared link, the lesson's run): the form shows its settings, not what
    # this session's form held before (issue 32: a learner opening the Lecture run saw her own Demo preset and
    # context, and a Window cut to that context). Once per run: from then on the form is her draft for a new run.
    run_id = rd.run_id if rd is not None else None
    if rd is not None and (state.get(train_keys.FORM_RUN) or [None])[0] != run_id:
        seeds = run_form.form_of(rd.config(), rd.events)
        state.put(train_keys.FORM_RUN, (run_id, seeds.get(train_keys.W_PRESET)))
        replace_fields({key: value for key, value in seeds.items() if state.get(key) != value})
        if seeds.get(train_keys.W_SOURCE) == settings.SOURCE_PASTE:  # its text is in corpus.txt (older: inline)
            try:
                text = read_corpus(rd.run_dir) or (rd.config().get("data") or {}).get("text", "")
            except RunStoreError as e:  # a missing or edited corpus.txt: the run can still be watched
                text = ""
                st.warning(safe.md(f"The form starts without this run's text: {e}"))
            state.put_widget(train_keys.W_PASTE, text)
            name = str((rd.config().get("data") or {}).get("text_name") or "")
            state.put(train_keys.FORM_TEXT, (name, corpus_sha256(text)))  # its file's name, while unedited
    if not state.has(train_keys.W_PASTE):  # a new session: the text this learner pasted before (drafts)
        state.init(train_keys.W_PASTE, drafts.load(resources.get_store().root, room.current()))
    state.init(train_keys.W_PRESET, first)
    for name, value in settings.preset_values(first).items():
        state.init(settings.FIELD_BY_NAME[name].key, value)
    state.init(train_keys.W_DEVICE, "auto")
    state.init(train_keys.W_SOURCE, settings.SOURCE_SHAKESPEARE)
    state.init(train_keys.W_STEP_N, 10)


def forget_settings() -> None:
    """Drop the form's values (from a page that does not draw the form), so the Train page shows the current
    run's settings the next time it is drawn, like a reattached tab: "Bring to the projector" must show the
    learner's run with its own knobs, not the instructor's last form beside "Changed since this run started"."""
    keys = [train_keys.FORM_RUN, train_keys.W_PRESET, train_keys.W_SOURCE, train_keys.W_PASTE,  # FORM_RUN: seed anew
            train_keys.FORM_TEXT]  # fmt: skip
    for key in [*keys, *(f.key for f in settings.FIELDS)]:
        state.pop(key)


def form_values() -> dict[str, Any]:
    """The form's current values, by field name."""
    return {f.name: state.get(f.key) for f in settings.FIELDS}


def next_run_values(watching: str = "") -> dict[str, Any]:
    """The values **Train** starts a run with: the form's, and for a viewer watching a run that is not theirs the
    live knobs of the form's preset, not the watched run's. `watching` "live": the knobs are drawn greyed with the
    watched run's values, which the viewer cannot change (a review's learner picked Demo beside the lecture run and
    got its LR 0.1 and warmup 50, not Demo's 0.002 and 30; copying a run is Branch's job). "ended": the run has no
    worker, the knobs are the viewer's to set, and the preset's stand only where the form still holds the value the
    run had when it came into view (a later review: once the watched run ended, Train took its LR 0.005 beside Demo)."""
    values = form_values()
    if watching and state.get(train_keys.W_PRESET):
        preset_knobs = settings.preset_values(state.get(train_keys.W_PRESET))
        base = state.get(train_keys.FORM_BASE)
        shown = base[1] if watching == "ended" and base else None  # the form as the run came into view
        values |= {f.name: preset_knobs[f.name] for f in settings.KNOB_FIELDS if f.name in preset_knobs
                   and (shown is None or values.get(f.name) == shown.get(f.name))}  # fmt: skip
    return values


def _show_next_run_knobs() -> None:
    """A watched run that is not the viewer's has ended (or paused, its slot given up): the knobs show what
    **Train** would start with (next_run_values "ended"), before they are drawn. They had kept the run's last live
    values, a review's learner reading "mask none (sees the future)" checked beside the preset's causal."""
    wanted = next_run_values("ended")
    moved = {f.key: wanted[f.name] for f in settings.KNOB_FIELDS if state.get(f.key) != wanted.get(f.name)}
    if moved:
        replace_fields(moved)


def _apply_preset() -> None:
    """The preset select's on_change: every field the preset sets takes its value, before the script runs."""
    values = settings.preset_values(state.get(train_keys.W_PRESET))
    replace_fields({settings.FIELD_BY_NAME[name].key: value for name, value in values.items()})


def replace_fields(values: dict[str, Any]) -> None:
    """Set form widgets' values from the server's side (a preset, a run's settings; by widget key), and remember
    the values they replaced, so that the browser's stale copies of them are told from edits (`_field_moved`)."""
    echoing = {key: (state.get(key), value) for key, value in values.items() if key in ECHO_GUARDED}
    for key, value in values.items():
        state.put_widget(key, value)
    replaced = {key: pair for key, pair in echoing.items() if pair[0] != pair[1]}
    state.put(train_keys.FORM_REPLACED, (time.monotonic(), replaced))


def _field_moved(key: str) -> None:
    """A form widget's on_change (every field but the live knobs, which have knob_widgets' keys; the corpus and
    its text). Two or more of the values the page has just replaced (`replace_fields`) coming back at once are a
    browser that has not drawn the new ones yet, not edits: the page's values are put back before the script runs.
    One widget moves per request, so a single replaced value coming back is an edit (when the page replaced only
    one value, within state.ECHO_S it counts as the stale copy: state.stale_echo's trade-off).

    Why: the browser sends every widget's value with each rerun request. A learner who picked "Lecture" and
    pressed Train within a second sent the Train click with the values her browser still showed, Demo's width and
    steps; Streamlit took those for edits, and the run had Lecture's learning rate and heads (drawn under new keys,
    or with other options) with Demo's width and steps. Now the Train click builds the preset's config, whatever
    the browser had drawn yet."""
    record = state.get(train_keys.FORM_REPLACED)
    if not record or key not in record[1] or time.monotonic() - record[0] > state.ECHO_S:
        return
    replaced = record[1]
    if state.get(key) == replaced[key][1]:  # the page's value (put back by an earlier callback of this request)
        return
    stale = [k for k, (old, _) in replaced.items() if state.get(k) == old]
    if key in stale and len(stale) >= min(2, len(replaced)):
        for k in stale:
            state.put(k, replaced[k][1])
        return
    # An edit: from now on this widget's value is the learner's, whatever it is set to next.
    state.put(train_keys.FORM_REPLACED, (record[0], {k: v for k, v in replaced.items() if k != key}))


def _paste_moved() -> None:
    """The text box's on_change: a form field like the others, and the learner's draft kept on the server, so a
    reload does not lose what they pasted (drafts)."""
    _field_moved(train_keys.W_PASTE)
    try:
        drafts.save(resources.get_store().root, room.current(), state.get(train_keys.W_PASTE) or "")
    except OSError as e:  # a full or read-only disk: the text is still in this session's form
        flashes.flash("warning", f"Your text could not be kept for a reload ({e.strerror or e}); it is in this tab.")


def _knob_moved(name: str, key: str) -> None:
    """One live knob's widget moved (its on_change): send that knob, with that widget's value, and nothing else;
    a slider's value once it rests (knob_widgets.settled: a burst of key presses is one change)."""
    field = settings.FIELD_BY_NAME[name]
    others = {f.key: _widget_defaults(f) for f in settings.KNOB_FIELDS if f.name != name}
    value = knob_widgets.moved(field.key, key, _widget_defaults(field), others)
    if value is None:  # a replaced widget's stale copy, or a fresh one's default echo
        return
    run, drawn = in_view.run_id(), state.get(train_keys.KNOBS_DRAWN)
    in_play = bool(run) and bool(drawn) and drawn[0] == run  # the knobs show a run that takes changes
    if in_play and knob_widgets.settles(field.widget, key, field.key):
        knob_widgets.add_knob_note(name, value, None, run, moved_at=time.monotonic())
        return
    _send_knob(name, value)


def _widget_defaults(field: Field) -> tuple:
    """What a numeric knob's widgets show when drawn without a value: the minimum (number box, slider, log slider's
    first stop). A choice's first option (mask causal) is a click a lecture makes on purpose: never refused."""
    options = tuple(field.options or ())
    if options and not all(isinstance(o, (int, float)) for o in options):
        return ()
    low = _slider_bounds(field)[0] if field.widget == "slider" else field.minimum
    return tuple(v for v in (low, field.minimum, *((min(options),) if options else ())) if v is not None)


def send_settled_knobs() -> None:
    """From the Train page's refreshes: send each slider change of the run in view that has rested."""
    run = in_view.run_id()
    notes = knob_widgets.knob_notes(run)
    for name in knob_widgets.settled(notes, time.monotonic()):
        _send_knob(name, notes[name]["value"])


def _send_knob(name: str, value: Any) -> None:
    """Change the current run's knob `name` to `value` (one command; the engine moves coupled knobs, e.g. min_lr
    with the learning rate). The run manager is asked once, and it knows the run's phase: live (sent now),
    queued (kept for its worker, which applies it before its first step; lesson_view's setup relies on that too),
    or ended (NoWorkerError: nothing to change, the form's value is for the next run). The page used to ask
    resources.is_live first, a second liveness check that also dropped a knob turned while the run was queued."""
    run = in_view.run_id()
    if not run:
        return
    rd = in_view.reader(resources.get_store(), run)
    if rd is not None and knob_widgets.asks_nothing(rd.config(), rd.events, name, value, knob_widgets.knob_notes(run)):
        knob_widgets.drop_knob_note(name)  # the run has it already: no command, no event, no "applied" note
        return
    try:  # the run manager checks who may change the run, the knob's name and its value: asked once, there
        request = in_view.set_knob(run, name, value, room.current())  # the handle's own way (a callback has none)
    except NoWorkerError:
        knob_widgets.drop_knob_note(name)  # a pending slider change of a run that ended meanwhile
        return  # an ended run: nothing to change there; the form's value is for the next run, silently as before
    except NotYourRunError as e:  # watching someone else's run: the form's value is for this learner's next run
        knob_widgets.drop_knob_note(name)
        flashes.flash(
            "info",
            f"This run belongs to {e.owner}: {setting_word(name)} stays as it is there; it applies to your next run.",
        )
        return
    except TinyGPTError as e:
        knob_widgets.drop_knob_note(name)
        flashes.flash("error", f"Could not change {setting_word(name)}: {in_words(e)}")
        return
    knob_widgets.add_knob_note(name, value, request, run)


def _draw_field(container, field: Field, disabled: bool) -> None:
    guard.checked_field(field, field.key)  # a forged value from the browser never reaches the widget
    common: dict[str, Any] = {"key": field.key, "persist_state": "session", "help": field.help, "disabled": disabled,
                              "on_change": _field_moved, "args": (field.key,)}  # fmt: skip
    if field.live:  # drawn under its own key, sending its own knob (tinygpt/ui/train/knob_widgets.py)
        bounds = None
        if field.widget == "slider":  # window <= context: clamped in the form's value, before the widget is drawn
            top = _window_top() if field.name == "window" else int(field.maximum)
            state.put(field.key, min(max(int(state.get(field.key) or 0), int(field.minimum)), top))
            bounds = _slider_bounds(field)
        key = knob_widgets.mount(field.key, bounds=bounds)
        guard.checked_field(field, key)
        common = {"key": key, "help": field.help, "disabled": disabled, "on_change": _knob_moved,
                  "args": (field.name, key)}  # fmt: skip
    if field.name == "window":
        common["disabled"] = disabled or state.get(train_keys.W_MASK) != "sliding_window"
    if field.widget == "number":
        extra = {k: v for k, v in (("step", field.step), ("format", field.format)) if v is not None}
        numbers.number_box(container, field.label, field.minimum, field.maximum, **extra, **common)
    elif field.widget == "select":
        labels = field.labels or {}
        container.selectbox(field.label, list(field.options), format_func=lambda o: str(labels.get(o, o)), **common)
    elif field.widget == "heads":
        width = state.get(train_keys.W_WIDTH)
        options = settings.heads_options(width)
        if state.get(field.key) not in options:  # a new width: keep the closest valid head count
            state.put_widget(field.key, settings.closest_heads(width, state.get(field.key)))
        container.select_slider(field.label, options, format_func=lambda h: f"{h} (d_head {width // h})", **common)
        if fonts.large_fonts():  # its ends, "1 (d_head 64)", wrapped over the next field's label (a review); a style
            st.sidebar.html(f"<style>.st-key-{common['key']} [data-testid='stSliderTickBar'] {{display: none}}</style>")
    elif field.widget == "device":
        container.selectbox(field.label, resources.device_options(), **common)
    elif field.widget == "radio":
        labels = field.labels or {}
        container.radio(field.label, list(field.options), format_func=lambda o: str(labels.get(o, o)), horizontal=True,
                        **common)  # fmt: skip
    elif field.widget == "slider":
        container.slider(field.label, *_slider_bounds(field), **common)
    elif field.widget == "log_slider":
        _draw_log_slider(container, field, common)
    else:
        raise ValueError(f"unknown widget {field.widget!r} for {field.name}")


def _slider_bounds(field: Field) -> tuple[int, int]:
    """A slider's (min, max): the window's top is the context (of the run the knobs show, else the form's)."""
    top = _window_top() if field.name == "window" else int(field.maximum)  # window <= context
    return int(field.minimum), max(top, int(field.minimum) + 1)


def _window_top() -> int:
    """The run's context while the live knobs show a run (run_form.window_top), else the form's."""
    drawn = state.get(train_keys.KNOBS_DRAWN)
    return run_form.window_top(drawn[2] if drawn and len(drawn) > 2 else None, state.get(train_keys.W_CONTEXT))


def _draw_log_slider(container, field: Field, common: dict) -> None:
    """A select-slider over log-spaced stops (1, 2, 5 per decade), with the exact value typeable beside it: the
    slider for turning the knob in front of a room, the box where precision matters. The current value is always
    one of the stops, so a preset's or a link's 3e-4 is not snapped away. The two are one knob's two widgets: the
    one moved sets the form's value, and the other is drawn anew with it (knob_widgets.mount)."""
    value = float(state.get(field.key))
    options = sorted({*field.options, value})
    exact_key = knob_widgets.mount(field.key, "_exact")
    guard.checked_field(field, exact_key)
    # Side by side; with large fonts one under the other (beside it the box showed "6.0e" of 6.0e-03).
    large = fonts.large_fonts()
    slider_col, exact_col = (container, container) if large else container.columns([3, 1.3])
    slider_col.select_slider(field.label, options, format_func=lambda v: f"{v:g}", **common)
    exact_col.number_input(
        f"{field.label}, exact" if large else "exact", float(field.minimum), float(field.maximum),
        step=settings.exact_step(field.name, value), format=field.format, key=exact_key, on_change=_knob_moved,
        args=(field.name, exact_key),
        disabled=common.get("disabled", False),
    )  # fmt: skip


def _draw_fields(fields: tuple[Field, ...], disabled: bool, per_row: int = 2) -> None:
    """`per_row` fields per row in table order (1 with large fonts, where two would truncate their values);
    a wide field takes a row of its own."""
    columns: list = []
    for field in fields:
        if field.wide or per_row == 1:
            columns = []
            _draw_field(st, field, disabled)
            continue
        if not columns:
            columns = list(st.columns(per_row))
        _draw_field(columns.pop(0), field, disabled)


def draw_form(
    shown: RunReader | None = None, live_run: tuple[str, dict, list] | None = None, read_only: bool = False,
    run_state: str | None = None,
):  # fmt: skip
    """The preset, live-knob, corpus and model widgets. Returns (corpus label, uploaded file or None).

    `shown`: the reader of the run in view (None: no run), whose own knob values are said where the knobs, set for
    the next run, show others.

    `live_run` (run id, config, events): a run in view that takes knob changes; the live knobs then show its
    values (knob_widgets.run_values), read-only for a viewer who may not change it (`read_only`).

    The live knobs come first, next to the charts they act on; once a run is shown, the data-and-model settings
    (which only a new run uses) fold into an expander, so on a projector the knobs and the loss chart share the
    first screen."""
    # A workshop link with ?lock=1 fixes the preset and the model; the live knobs stay for learners to turn.
    locked, run_shown = people_keys.locked(), shown is not None
    per_row = 1 if fonts.large_fonts() else 2
    st.selectbox(
        "Preset", list(settings.PRESET_LABELS), key=train_keys.W_PRESET, on_change=_apply_preset,
        persist_state="session", disabled=locked, help=settings.preset_note(state.get(train_keys.W_PRESET)),
    )  # fmt: skip
    if run_shown:  # which values are the run's, which this viewer's draft for a new run (issue 32)
        st.caption(
            run_form.next_run_note((state.get(train_keys.FORM_RUN) or [None, None])[1], state.get(train_keys.W_PRESET))
        )
    with st.container(border=True):
        if live_run is None and run_shown:  # a run without a worker takes no change: the knobs are for the next run
            # A run paused when its slot went to a queued run is not "ended": the review read that beside Resume.
            # A watcher's words are not the owner's: a review's learner read "takes no change until it resumes"
            # under the instructor's paused run, which never takes a watcher's change.
            paused = ("this run is paused and is not yours to change" if read_only else
                      "this run is paused and takes no change until it resumes")  # fmt: skip
            st.markdown(f"**Live knobs** · {paused if run_state == 'paused' else 'this run has ended'}: "
                        "they set your next run")  # fmt: skip
            if read_only:  # they show what Train would start: the preset's where this viewer changed nothing
                _show_next_run_knobs()
            if note := run_form.ended_knobs_note(shown.config(), shown.events, form_values()):  # the run's own
                st.caption(note)
        elif read_only and live_run is not None:  # greyed out: a review read "change the running model" above them
            st.markdown("**Live knobs** · the run's: not yours to change (only its owner and the instructor "
                        "can)")  # fmt: skip
        elif live_run is None:  # no run in view: a review read "change the running model" with no run at all
            st.markdown("**Live knobs** · set your next run, and change it as it trains")
        else:
            st.markdown("**Live knobs** · change the running model at its next step")
        if live_run is not None:
            run, config, events = live_run
            keys = {f.name: f.key for f in settings.KNOB_FIELDS}
            values = knob_widgets.run_values(config, events, list(keys), knob_widgets.knob_notes(run))
            knob_widgets.show_run(run, values, keys, (config.get("model") or {}).get("max_seq_len"))
            # The form as the run shows it: a live change of the run's (the instructor's mask → none) is no edit of
            # this viewer's. A review's learner read "Train starts your own run (its live knobs the preset's where
            # you did not change them) … mask none" once the watched run paused: her form held the run's none.
            if (base := state.get(train_keys.FORM_BASE)) and base[0] == run:
                state.put(train_keys.FORM_BASE, (run, {**base[1], **values}))
        else:
            state.pop(train_keys.KNOBS_DRAWN)
        _draw_fields(settings.KNOB_FIELDS, read_only and live_run is not None, per_row)
    uploaded = None
    # Unkeyed: it takes the place of a bordered container once a run is shown, and keyed, the container's old
    # fields stayed beside the expander's (two "Corpus" boxes in the knobs browser test)
    model_box = st.expander("**Data and model** · changing these starts a new run") if run_shown else None
    with model_box or st.container(border=True):
        if not run_shown:
            st.markdown("**Data and model** · changing these starts a new run")
        source = st.selectbox(
            "Corpus", settings.SOURCES, key=train_keys.W_SOURCE, persist_state="session", disabled=locked,
            on_change=_field_moved, args=(train_keys.W_SOURCE,),
        )  # fmt: skip
        # One container whatever the corpus, so the widgets below keep their places when it changes (otherwise
        # they are redrawn as new elements, and a value typed during that rerun can be lost).
        with st.container():
            if source == settings.SOURCE_UPLOAD:
                uploaded = st.file_uploader(settings.UPLOAD_LABEL, type=None, key=train_keys.W_UPLOAD)
            elif source == settings.SOURCE_PASTE:
                st.text_area(
                    "Text to train on",
                    key=train_keys.W_PASTE,
                    height=120,
                    persist_state="session",
                    disabled=locked,
                    max_chars=MAX_TEXT_FIELDS["text"],  # the config's limit, said by the box as one types
                    on_change=_paste_moved,
                )
            elif source == settings.SOURCE_SHAKESPEARE:
                st.caption(settings.SHAKESPEARE_CAPTION)
            else:
                st.caption("Generated problems with exact answers: copy, reverse, sort or add.")
        _draw_fields(settings.MODEL_FIELDS, locked, per_row)
    return source, uploaded


# ---------------------------------------------------------------- the buttons beside the form


def run_config(label: str, values: Mapping[str, Any], data: DataConfig) -> RunConfig:
    """A validated RunConfig from the form's values (by field name) and corpus: `tinygpt.presets.preset`, the CLI's
    path too, so identical settings give identical configs (min_lr following the learning rate, short runs'
    intervals, cross-field checks). Raises ConfigError saying what to change."""
    config = preset(settings.preset_name(label), **values, source=data.source, text=data.text)
    return settings.with_text_name(config, data.text_name)


def config_from_form(source: str, uploaded: Any, learner: Actor, messages, watching: str = "") -> RunConfig:
    """The run the form describes (TinyGPTError says what to change; `watching`: next_run_values); loads Tiny
    Shakespeare (the embedded copy, or a download when that copy is damaged) with a progress bar in `messages`, gone
    again whatever happens."""
    values = next_run_values(watching)
    pasted, data_bytes = state.get(train_keys.W_PASTE, ""), uploaded.getvalue() if uploaded else None
    name = uploaded.name if uploaded else settings.kept_text_name(pasted, state.get(train_keys.FORM_TEXT))
    data = settings.data_config(source, pasted, data_bytes, values["max_seq_len"], name)
    config = run_config(state.get(train_keys.W_PRESET), values, data)
    # Asked here as well as in admission.start (the authoritative check, which every start path asks, and asks again
    # when the slot question is answered later): ensure_corpus below loads Tiny Shakespeare, a download when the
    # embedded copy is damaged, under a progress bar, for a run the budget would refuse anyway. The check itself is
    # arithmetic on the config, so asking twice costs nothing.
    admission.check_budget(learner, {"run": config})
    if data.source == "shakespeare":
        bar = messages.progress(0.0, text="Loading Tiny Shakespeare ...")
        try:
            settings.ensure_corpus(data, lambda done, total: bar.progress(min(1.0, done / max(total, 1))))
        finally:  # a failure's message must not sit under a half-full bar
            bar.empty()
    return config


def train_clicked(
    source: str, uploaded: Any, learner: Actor, parent: str | None, messages, watching: str = ""
) -> None:
    """The Train button: start the form's run (`watching`: next_run_values), or, if this learner already trains one,
    ask first (admission: the budget, the slot, the run manager's preflight), make it the page's run, and redraw."""
    try:
        config = config_from_form(source, uploaded, learner, messages, watching)
    except TinyGPTError as e:
        messages.error(safe.md(e))
        return

    def start(check_slot: bool) -> None:
        (new_id,) = admission.start(learner, {"run": config}, parent=parent, check_slot=check_slot).values()
        in_view.set_run_id(new_id)
        knob_widgets.clear_knob_notes()
        st.rerun()

    admission.attempt(start, "start the new run", messages)


def run_button_clicked(run, learner: Actor, messages) -> None:
    """Act on a Pause / Resume / Step / Stop click kept for the run in view (`train_keys.take_control_click`: in
    this script run or one cut short), through the page's run handle, then redraw with the worker's answer."""
    command = train_keys.take_control_click(run.id if run else None)
    if not command or run is None:
        return
    try:
        if command == "pause":
            run.pause()
        if command == "resume":  # another run of this learner's may hold their slot: admission asks first
            run_id = run.id
            if not admission.attempt(lambda check: admission.resume(learner, run_id, check), "resume this run",
                                     messages):  # fmt: skip
                return  # refused (said in `messages`) or waiting for the slot question: no rerun to wipe it out
        if command == "step":
            run.step(int(state.get(train_keys.W_STEP_N)))
            train_keys.mark_step_requested()
        if command == "stop":
            run.stop()
    except TinyGPTError as e:
        messages.error(safe.md(e))
    else:
        time.sleep(0.2)  # let the worker answer, so the status below is the new one
        st.rerun()
