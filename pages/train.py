"""Train: choose the settings, start a run, and watch its loss, learning rate and gradient norm live."""

from tinygpt.ui import frame, state

# First, before the imports below: a deep link's first run on a fresh server skips app.py (see tinygpt/ui/frame.py), and
# app.py must paint the menu before torch loads.
frame.require()



import streamlit as st

from tinygpt.runs.files import ACTIVE_STATES
from tinygpt.ui.host import live as live_period
from tinygpt.ui.host import resources
from tinygpt.ui.people import admission, room
from tinygpt.ui.run import in_view
from tinygpt.ui.run.in_view import Rules, open_run
from tinygpt.ui.screen import backlog, explain, fonts
from tinygpt.ui.screen.numbers import number_box
from tinygpt.ui.teach import teach_keys
from tinygpt.ui.train import form, guard, knob_widgets, next_run, train_keys, train_view
from tinygpt.ui.words import run_words, runinfo, safe

store = resources.get_store()
run_id = in_view.run_id()

large = fonts.large_fonts()
st.title("tinygpt · Train")
if not large:  # on a projector the first screen is for the buttons, the knobs and the loss chart
    st.caption(
        "Pick a corpus and a model, press **Train**, and watch the loss fall. Live knobs act on the running model."
    )

learner = room.current()
run = open_run(store, run_id, learner)  # the run in view: its reader, its status and what this viewer may do
rd, status = (run.reader, run.status) if run else (None, {})
run_state = status.get("state")
live = bool(run and run.rules.live)
mine = run is None or run.rules.mine  # others' runs: watch, compare, sample; no controls
rules = run.rules if run else Rules(mine=True, state=None)  # no run: every control off

form.seed_form(rd)  # a reattached tab's form: its run's settings
left, right = st.columns([1.2, 2], gap="large")
with left:  # the live knobs show the run while it takes changes, read-only for a watcher
    live_run = (run_id, rd.config(), rd.events) if rd is not None and rules.in_play else None
    source, uploaded = form.draw_form(rd, live_run, read_only=not mine, run_state=run_state)

# ---------------------------------------------------------------- controls


with right:
    # Two rows on a projector, so every label fits at large fonts ("Tr...", "Re..." in one row of five).
    rows = [st.columns(3), st.columns(3)] if large else [st.columns([1.3, 1, 1, 1, 1])]
    b = [c for row in rows for c in row]
    b[0].button(  # its click kept by on_click until the page acts on it below, as the run's buttons' are
        "Train", type="primary", icon=":material/play_arrow:", width="stretch", key=train_keys.W_TRAIN,
        on_click=train_keys.click_train, disabled=rules.held,  # held: the note below says why (admission refuses)
    )  # fmt: skip
    # The run's buttons: fixed keys, outside the live view's fragment, their click kept by on_click until the page
    # acts on it below (train_keys.click_control). A queued run can be paused or stopped too (no redraw as it starts).
    allowed = (rules.can_pause, rules.can_resume, rules.can_step, rules.can_stop)
    for col, command, enabled in zip(b[1:5], train_keys.CONTROLS, allowed, strict=True):
        col.button(command.title(), key=train_keys.CONTROLS[command], disabled=not enabled, width="stretch",
                   on_click=train_keys.click_control, args=(command, run_id))  # fmt: skip
    hold = runinfo.hold_note(run.hold, rd.config(), learner) if run and run.hold else None  # read once, by open_run
    if not large:
        guard.checked(train_keys.W_STEP_N, "Steps per Step click", lambda n: guard.valid_count(n, 1, 10_000), 1)
        number_box(st, "Steps per Step click", 1, 10_000, key=train_keys.W_STEP_N, persist_state="session")
    # Messages go into one container, so the live view below keeps its place whether or not there are any.
    messages = st.container()
    watching = ("live" if live else "ended") if rd is not None and not mine else ""  # (form.next_run_values)
    if rd is not None and not mine:
        starts = safe.md(next_run.next_run_words(source, uploaded, watching))  # what Train would start, from the form
        # Live: the knobs on the left are the watched run's, so they are not what Train starts (a review read LR 0.1
        # there beside "with the settings on the left … LR 0.003")
        knobs = {"live": "the data and model on the left, and the preset's live knobs (those on the left are the "
                         "watched run's)",
                 "ended": "the settings on the left (its live knobs the preset's where you did not change "
                          "them)"}[watching]  # fmt: skip
        messages.info(f"Watching {safe.md(run_words.watching(rd.config()))} (read-only). **Train** starts your own "
                      f"run with {knobs}: {starts}.")  # fmt: skip
    elif rd is not None and not live and (broken := next_run.broken_knobs(form.form_values())):  # kept, unsaid
        messages.warning(f"**Train** starts a new run with the live knobs on the left, {', '.join(broken)} among "
                         "them: set them back first for a correct model, or keep them to break it.")  # fmt: skip
    if hold is not None:
        getattr(messages, hold[0])(hold[1])
    limit = resources.get_manager().time_limit(run_id) if run_id and resources.is_active(run_id) else None
    if limit:
        messages.caption(
            f":material/timer: The room's time budget stops this run after {runinfo.format_duration(limit)} in a "
            "training slot (set by the instructor)."
        )
    edits = next_run.edits_for_a_new_run(run_id, rd.config(), source, uploaded) if rd else []  # this viewer's own
    if live and edits:  # settings that cannot change live: say that they need a new run, and what it starts with
        messages.info(f"You changed {', '.join(edits)} in the form: only a new run takes that. **Train** starts it: "
                      f"{safe.md(next_run.next_run_words(source, uploaded))}.")  # fmt: skip

    if train_keys.take_train_click():  # a click in this script run or in one cut short
        form.train_clicked(source, uploaded, learner, run_id if mine else None, messages, watching)
    admission.slot_question(learner, messages)  # a second run waits for "stop the first?" (one slot a learner)

    form.run_button_clicked(run, learner, messages)  # a click for this run, in this script run or one cut short

# ---------------------------------------------------------------- live view


def is_active() -> bool:
    """Refresh by itself while a worker trains or the run waits in the queue (or just took the steps a Step
    click asked for)."""
    state_now = (rd.status() if rd else {}).get("state")
    return resources.is_active(run_id) and (state_now in ACTIVE_STATES or train_keys.step_requested_recently())


active = bool(run_id) and is_active()
# The refresh period adapts to how many sessions have the app open on this server (tinygpt/ui/host/live.py).
period = live_period.period(live_period.session_token()) if active else None


@backlog.live_fragment(period)
def live_view() -> None:
    if train_keys.click_pending():  # a click whose full run was cut short: only the full run acts on it
        st.rerun()
    in_view.redraw_if_moved(run_id)  # a timed refresh never draws a run no longer in view, nor "No run yet" over it
    rd = run.reader_now(store) if run else None  # the page's handle: on a timed refresh, polled again
    if rd is None and run is not None:  # deleted or unreadable since the page drew it: the full page says so
        st.rerun()
    if rd is None:  # a learner following the room is pointed at the lesson pane; one with runs, at theirs
        train_view.no_run_yet(store, learner, bool(state.get(teach_keys.LESSON_SHOWN)) and not learner.instructor)
        return
    form.send_settled_knobs()  # a slider's change once it rests (a burst of key presses is one change)
    resources.touch(run_id)  # the lease: a run nobody watches pauses itself
    status = rd.status()
    config = rd.config()
    # Someone turned a knob, or a change was refused, or one applied since the sidebar named the run's knobs: the
    # knobs and the sidebar, drawn outside this fragment, must show the run; a knob change is rare, a redraw cheap
    if knob_widgets.run_moved(rd.run_id, config, rd.events) or in_view.sidebar_behind(rd.run_id, rd.events):
        st.rerun()
    # The charts are rebuilt only when the run's records changed, and shared with every page watching this run
    # (train_view.shared_figures); otherwise the same figures are sent again, which costs the server little.
    view = train_view.build_view(store, rd, config, status, large, learner)
    st.markdown(f"**{safe.md(view['status_line'])}**")  # the reason is a file's text, in this viewer's words
    if status.get("state") == "queued":  # while waiting: when it will start, and what to watch meanwhile
        train_view.queue_note(run_id, config, learner)
    if (fraction := runinfo.progress_fraction(status)) is not None:  # None: trains until stopped, no end to near
        st.progress(fraction)
    # Variable content lives in containers, so the charts below keep their places and update in place.
    with st.container():
        for kind, text in knob_widgets.answers(rd.run_id, rd.events, config):  # this run's only, never the last one's
            getattr(st, kind)(safe.md(text))
    explain.show_chart(view["loss"], "loss_chart", code=False, key="train_loss", caption=view["val_note"])
    with st.container():
        if view["markers"]:
            st.caption(f"Markers: {safe.md(view['markers'])}")  # messages come from events.jsonl
    explain.show_chart(view["lr"], "lr_chart", code=False, key="train_lr", caption=view.get("lr_note"))
    explain.show_chart(view["grad"], "grad_norm_chart", code=False, key="train_grad", caption=view.get("clip"))
    last = view["sample"]
    if last:
        heading, text = runinfo.sample_lines(last)
        st.markdown(heading)
        if last.get("error"):
            st.warning(safe.md(last["error"]))
        else:
            st.code(text, language=None, height=220, wrap_lines=True)  # long lines scrolled sideways (a review)
    # The one full redraw from here: the run ended (the auto-refresh stops, the right buttons enable). A change of
    # the room's refresh period waits for the page's next full run: a redraw from a live fragment under load is
    # what preceded the white and the deaf pages of the load test (BENCHMARKS.md, "A workshop room under load").
    if active and not is_active():
        st.rerun()


# A constant timer: a fragment whose run_every changes between full reruns (or that stops being drawn) can leave
# the browser a timer for a fragment the page no longer has (Streamlit #15084: a white page under load).
@st.fragment(run_every=2.0)
def watch_state() -> None:
    """A page showing a run that is not training still follows it: when another tab (or the instructor) resumes,
    steps, stops or deletes it, the page redraws within ~2 s instead of showing "paused" until reloaded."""
    if train_keys.click_pending() or knob_widgets.echo_pending():  # a kept click; a knob widget drawn anew
        st.rerun()
    if rd is None or active:  # nothing shown, or the live view already refreshes
        return
    form.send_settled_knobs()  # a paused run's knobs too
    now = run.reader_now(store)
    if now is None or (now.status().get("state"), resources.is_live(run_id)) != (run_state, live):
        st.rerun()


with right:
    live_view()
    watch_state()
    if run_id:  # under the charts: on a projector the first screen is for the knobs and the loss chart
        train_view.chart_options()
        train_view.branch_expander(store, rd, learner)  # a new run from one of its checkpoints, as on Runs
        # one expander for the three live charts, outside the fragment: static text is not re-sent
        explain.show_code(["loss_chart", "lr_chart", "grad_norm_chart"], "Show the code behind these charts")
explain.preload_plotly()  # last, so it never delays the page itself: the Attention page's first view is then faster
