"""Train: choose the settings, start a run, and watch its loss, learning rate and gradient norm live."""

import time

import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.ui import app_support as sup
from tinygpt.ui import charts, state

state.require_frame()  # a deep link's first run can skip app.py: see tinygpt/ui/state.py

REFRESH_S = 0.45  # live charts refresh period while a run trains: ~2.2 Hz, so timer jitter never drops it below 2
LIVE_POINTS = 400  # points per live curve: plenty for a chart ~900 px wide, and cheap to rebuild twice a second
WIDTHS = [16, 32, 48, 64, 96, 128, 192, 256, 384, 512]

store = sup.get_store()
run_id = state.run_id()

st.title("tinygpt · Train")
st.caption("Pick a corpus and a model, press **Train**, and watch the loss fall. Live knobs act on the running model.")

# ---------------------------------------------------------------- settings


def _apply_preset() -> None:
    values = sup.preset_values(st.session_state[state.W_PRESET])
    for field, key in FIELD_KEYS.items():
        st.session_state[key] = values[field]


FIELD_KEYS = {
    "num_layers": state.W_LAYERS,
    "hidden_dim": state.W_WIDTH,
    "num_heads": state.W_HEADS,
    "max_seq_len": state.W_CONTEXT,
    "batch_size": state.W_BATCH,
    "learning_rate": state.W_LR,
    "warmup_steps": state.W_WARMUP,
    "attn_scale": state.W_SCALE,
    "attn_scale_mult": state.W_SCALE_MULT,
    "mask": state.W_MASK,
    "window": state.W_WINDOW,
    "dropout": state.W_DROPOUT,
    "max_grad_norm": state.W_CLIP,
    "seed": state.W_SEED,
    "max_steps": state.W_MAX_STEPS,
}
first_preset = next(iter(sup.PRESET_LABELS))
if state.W_PRESET not in st.session_state and run_id:  # a reattached tab: show the settings of its run
    _rd = state.reader(store, run_id)
    _values, _source = sup.values_from_config(_rd.config() if _rd else {})
    if _rd:  # live knobs as they are now, not as the run started
        _knobs = sup.current_knobs(_rd.config(), _rd.events)
        _values |= {f: _knobs[k] for f, k in sup.KNOB_OF_SETTING.items() if _knobs.get(k) is not None}
    for _field, _value in _values.items():
        state.init(FIELD_KEYS[_field], _value)
    if _source:
        state.init(state.W_SOURCE, _source)
    if _source == sup.SOURCE_PASTE and _rd:
        state.init(state.W_PASTE, (_rd.config().get("data") or {}).get("text", ""))
state.init(state.W_PRESET, first_preset)
for _field, _value in sup.preset_values(first_preset).items():
    state.init(FIELD_KEYS[_field], _value)
state.init(state.W_SOURCE, sup.SOURCE_SHAKESPEARE)
state.init(state.W_STEP_N, 10)


def _knob_changed(field: str) -> None:
    """A live knob's widget changed: if the current run is live, change it there too."""
    run = state.run_id()
    if not run or not sup.is_live(run):
        return
    value = st.session_state[FIELD_KEYS[field]]
    rd = state.reader(store, run)
    current = sup.current_knobs(rd.config(), rd.events) if rd else {}
    try:
        sup.apply_knob(run, sup.KNOB_OF_SETTING[field], value, current)
    except TinyGPTError as e:
        state.flash("error", f"Could not change {field}: {e}")
        return
    notes = state.get(state.KNOB_NOTES) or {}
    notes[sup.KNOB_OF_SETTING[field]] = {"value": value, "at": time.time()}
    state.put(state.KNOB_NOTES, notes)


persist = {"persist_state": "session"}
# A workshop link with ?lock=1 fixes the preset and the model; the live knobs stay for learners to turn.
fixed = {**persist, "disabled": state.locked()}
left, right = st.columns([1.2, 2], gap="large")
with left:
    st.selectbox("Preset", list(sup.PRESET_LABELS), key=state.W_PRESET, on_change=_apply_preset, **fixed)
    with st.container(border=True):
        st.markdown("**Data and model** · changing these starts a new run")
        source = st.selectbox("Corpus", sup.SOURCES, key=state.W_SOURCE, **fixed)
        uploaded = None
        # One container whatever the corpus, so the widgets below keep their places when it changes (otherwise
        # they are redrawn as new elements, and a value typed during that rerun can be lost).
        with st.container():
            if source == sup.SOURCE_UPLOAD:
                uploaded = st.file_uploader("A UTF-8 .txt file", type=["txt"], key=state.W_UPLOAD)
            elif source == sup.SOURCE_PASTE:
                st.text_area("Text to train on", key=state.W_PASTE, height=120, **fixed)
            elif source == sup.SOURCE_SHAKESPEARE:
                st.caption("1.1 MB of Shakespeare; downloaded once on first use (or set TINYGPT_SHAKESPEARE).")
            else:
                st.caption("Generated problems with exact answers: copy, reverse, sort or add.")
        c1, c2 = st.columns(2)
        c1.number_input("Layers", 1, 12, key=state.W_LAYERS, **fixed)
        c2.selectbox("Width (hidden_dim)", WIDTHS, key=state.W_WIDTH, **fixed)
        width = st.session_state[state.W_WIDTH]
        heads = sup.heads_options(width)
        if st.session_state.get(state.W_HEADS) not in heads:  # a new width: keep the closest valid head count
            wanted = st.session_state.get(state.W_HEADS) or 1
            st.session_state[state.W_HEADS] = min(heads, key=lambda h: (abs(h - wanted), h))
        c1.selectbox(
            "Heads",
            heads,
            key=state.W_HEADS,
            format_func=lambda h: f"{h} · d_head {width // h}",
            help="Only head counts that divide the width: each head gets width / heads dimensions.",
            **fixed,
        )
        c2.number_input("Context (max_seq_len)", 4, 1024, key=state.W_CONTEXT, **fixed)
        c1.number_input("Batch size", 1, 1024, key=state.W_BATCH, **fixed)
        c2.number_input("Max steps", 1, 1_000_000, key=state.W_MAX_STEPS, **fixed)
        c1.number_input("Dropout", 0.0, 0.9, step=0.05, key=state.W_DROPOUT, **fixed)
        c2.number_input("Seed", 0, 2**31 - 1, key=state.W_SEED, **fixed)
        state.init(state.W_DEVICE, "auto")
        st.selectbox("Device", sup.device_options(), key=state.W_DEVICE, **fixed)
    with st.container(border=True):
        st.markdown("**Live knobs** · change the running model at its next step")
        c1, c2 = st.columns(2)
        c1.number_input(
            "Learning rate", 1e-6, 10.0, step=1e-4, format="%.1e", key=state.W_LR,
            on_change=_knob_changed, args=("learning_rate",), **persist,
        )  # fmt: skip
        c2.number_input(
            "Warmup steps", 0, 100_000, key=state.W_WARMUP, on_change=_knob_changed, args=("warmup_steps",), **persist
        )
        c1.number_input(
            "Clip grad norm (0 = off)", 0.0, 1000.0, step=0.1, key=state.W_CLIP,
            on_change=_knob_changed, args=("max_grad_norm",), **persist,
        )  # fmt: skip
        c2.number_input(
            "Scale multiplier", 0.01, 100.0, step=0.5, key=state.W_SCALE_MULT,
            on_change=_knob_changed, args=("attn_scale_mult",), **persist,
        )  # fmt: skip
        st.selectbox(
            "Attention scaling", list(sup.SCALE_LABELS), format_func=sup.SCALE_LABELS.get, key=state.W_SCALE,
            on_change=_knob_changed, args=("attn_scale",), **persist,
        )  # fmt: skip
        st.selectbox(
            "Mask", list(sup.MASK_LABELS), format_func=sup.MASK_LABELS.get, key=state.W_MASK,
            on_change=_knob_changed, args=("mask",), **persist,
        )  # fmt: skip
        c1, _ = st.columns(2)
        c1.number_input(
            "Window", 1, 1024, key=state.W_WINDOW, disabled=st.session_state[state.W_MASK] != "sliding_window",
            on_change=_knob_changed, args=("window",), **persist,
        )  # fmt: skip

# ---------------------------------------------------------------- controls

rd = state.reader(store, run_id)
status = rd.status() if rd else {}
run_state = status.get("state")
live = sup.is_live(run_id)

with right:
    b = st.columns([1.3, 1, 1, 1, 1])
    train_clicked = b[0].button("Train", type="primary", icon=":material/play_arrow:", width="stretch")
    pause_clicked = b[1].button("Pause", disabled=not live or run_state == "paused", width="stretch")
    resume_clicked = b[2].button(
        "Resume", disabled=not rd or run_state not in ("paused", "stopped", "diverged", "failed"), width="stretch"
    )
    step_clicked = b[3].button("Step", disabled=not live or run_state != "paused", width="stretch")
    stop_clicked = b[4].button("Stop", disabled=not live, width="stretch")
    st.number_input("Steps per Step click", 1, 10_000, key=state.W_STEP_N, **persist)
    # Messages go into one container, so the live view below keeps its place whether or not there are any.
    messages = st.container()
    if live and rd:  # settings that cannot change live: say that they need a new run
        run_values, run_source = sup.values_from_config(rd.config())
        changed = [
            f"{field} {run_values[field]} → {st.session_state[key]}"
            for field, key in FIELD_KEYS.items()
            if field not in sup.KNOB_OF_SETTING and field in run_values and run_values[field] != st.session_state[key]
        ]
        if run_source and run_source != source:
            changed.insert(0, f"corpus {run_source} → {source}")
        if changed:
            messages.info(f"Changed since this run started: {', '.join(changed)}. Press **Train** to start a new run.")

    if train_clicked:
        values = {field: st.session_state[key] for field, key in FIELD_KEYS.items()}
        try:
            data = sup.data_config(
                source,
                st.session_state.get(state.W_PASTE, ""),
                uploaded.getvalue() if uploaded is not None else None,
                int(values["max_seq_len"]),
            )
            config = sup.build_config(st.session_state[state.W_PRESET], values, data, st.session_state[state.W_DEVICE])
            if data.source == "shakespeare":
                bar = messages.progress(0.0, text="Fetching Tiny Shakespeare ...")
                sup.ensure_corpus(data, lambda done, total: bar.progress(min(1.0, done / max(total, 1))))
                bar.empty()
            new_id = sup.get_manager().start(config, parent=run_id)
        except TinyGPTError as e:
            messages.error(str(e))
        else:
            state.set_run_id(new_id)
            state.put(state.KNOB_NOTES, {})
            st.rerun()

    try:
        manager = sup.get_manager() if run_id else None
        if pause_clicked:
            manager.pause(run_id)
        if resume_clicked:
            manager.resume(run_id)
        if step_clicked:
            manager.step(run_id, int(st.session_state[state.W_STEP_N]))
            state.put(state.STEP_REQUESTED_AT, time.time())
        if stop_clicked:
            manager.stop(run_id)
    except TinyGPTError as e:
        messages.error(str(e))
    else:
        if pause_clicked or resume_clicked or step_clicked or stop_clicked:
            time.sleep(0.2)  # let the worker answer, so the status below is the new one
            st.rerun()

# ---------------------------------------------------------------- live view

recent_step = time.time() - (state.get(state.STEP_REQUESTED_AT) or 0) < 5
active = bool(run_id) and (live and (run_state in sup.ACTIVE_STATES or recent_step))


@st.fragment(run_every=REFRESH_S if active else None)
def live_view() -> None:
    rd = state.reader(store, run_id)
    if rd is None:
        st.info("No run yet. Choose settings on the left and press **Train**.")
        return
    if sup.is_live(run_id):
        sup.get_manager().touch(run_id)  # the lease: a run nobody watches pauses itself
    status = rd.status()
    st.markdown(f"**{sup.status_line(status, rd.metrics)}**")
    st.progress(sup.progress_fraction(status))
    config = rd.config()
    # Variable content lives in containers, so the charts below keep their places and update in place.
    with st.container():
        for knob, note in (state.get(state.KNOB_NOTES) or {}).items():
            applied, error = sup.knob_result(rd.events, knob, note["at"])
            if error:
                st.error(error)
            elif applied is not None:
                st.success(f"{knob} → {note['value']}: applied at step {applied}")
            else:
                st.info(f"{knob} → {note['value']}: applies at the next step")
    large = bool(state.get(state.W_LARGE))
    vocab_size = len(config.get("vocab") or []) or config.get("model", {}).get("vocab_size", 65)
    knobs = sup.current_knobs(config, rd.events)
    target = st.session_state.get(state.W_TARGET) or None
    sup.show_chart(
        charts.loss_chart(
            rd.metrics,
            rd.evals,
            rd.events,
            vocab_size,
            target=target,
            smoothing=st.session_state.get(state.W_SMOOTH, 0.0),
            max_points=LIVE_POINTS,
            large=large,
        ),
        "loss_chart",
        code=False,
        key="train_loss",
    )
    notes = sup.event_notes(rd.events)
    with st.container():
        if notes:
            st.caption(f"Markers: {notes}")
    sup.show_chart(
        charts.lr_chart(
            rd.metrics,
            current_step=status.get("step"),
            schedule=sup.lr_schedule(config, knobs, points=200),
            max_points=LIVE_POINTS,
            large=large,
        ),
        "lr_chart",
        code=False,
        key="train_lr",
    )
    sup.show_chart(
        charts.grad_norm_chart(
            rd.metrics, knobs.get("max_grad_norm") or 0.0, rd.events, max_points=LIVE_POINTS, large=large
        ),
        "grad_norm_chart",
        code=False,
        key="train_grad",
    )
    if rd.samples:
        last = rd.samples[-1]
        st.markdown(f"**Sample at step {last.get('step')}**")
        if last.get("error"):
            st.warning(last["error"])
        else:
            st.code(last.get("text", ""), language=None, height=220)
    still_active = sup.is_live(run_id) and (
        status.get("state") in sup.ACTIVE_STATES or time.time() - (state.get(state.STEP_REQUESTED_AT) or 0) < 5
    )
    if active and not still_active:
        st.rerun()  # a full run turns the auto-refresh off (and enables the right buttons)


def chart_options() -> None:
    """Outside the live fragment: widgets re-sent at every refresh cost the browser a re-render each time."""
    with st.expander("Chart options"):
        o1, o2 = st.columns(2)
        state.init(state.W_TARGET, 0.0)
        state.init(state.W_SMOOTH, 0.0)
        o1.number_input("Target loss (0 = none)", 0.0, 10.0, step=0.1, key=state.W_TARGET)
        o2.slider("Smoothing", 0.0, 0.99, key=state.W_SMOOTH)


with right:
    if run_id:
        chart_options()
    live_view()
    if run_id:  # one expander for the three live charts, outside the fragment: static text is not re-sent
        sup.show_code(["loss_chart", "lr_chart", "grad_norm_chart"], "Show the code behind these charts")
sup.preload_plotly()  # last, so it never delays the page itself: the Attention page's first view is then faster
