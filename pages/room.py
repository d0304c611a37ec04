"""Room: the instructor's view of the workshop: every learner's runs, live, and one of them on the projector."""

from tinygpt.ui import frame

# First, before the imports below: a deep link's first run on a fresh server skips app.py (see tinygpt/ui/frame.py), and
# app.py must paint the menu before torch loads.
frame.require()


import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.runs.files import read_config_json
from tinygpt.runs.owners import read_owner, run_learner
from tinygpt.ui import state
from tinygpt.ui.charts import compare
from tinygpt.ui.host import positions, resources, runlist
from tinygpt.ui.people import people_keys, room, room_flags, room_table
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import backlog, explain, flashes, fonts
from tinygpt.ui.teach import lesson, prediction_view
from tinygpt.ui.train import form
from tinygpt.ui.words import picking, run_words, safe

REFRESH_S = 3.0  # the room changes slowly: a refresh every few seconds is plenty and cheap for the server

st.title("tinygpt · Room")
if not room.current().instructor:
    st.info("The room dashboard is for the instructor: enter the instructor key in the sidebar.")
    st.stop()
st.caption(
    "Every run on this server, learners' and yours: the table newest first, the chart the learners' runs "
    "first. Pick one and bring it to the projector."
)
store = resources.get_store()

# "Eyes on the projector": every learner's run paused as a hold (they cannot resume it), then let go at once.
held, me, manager = runlist.held_runs(store), room.current(), resources.get_manager()
h1, h2 = st.columns(2)
pause_all = h1.button("Pause every learner's run", icon=":material/front_hand:", width="stretch")
let_go = h2.button(f"Let go: resume {len(held)} held", icon=":material/play_arrow:", disabled=not held, width="stretch")
if pause_all or let_go:
    for run in runlist.learners_in_play(store, me) if pause_all else held:
        try:
            if pause_all:
                manager.pause(run, actor=me)
            else:
                manager.let_go(run, actor=me)
        except TinyGPTError as e:  # e.g. the run ended or was deleted meanwhile: say so, go on with the others
            flashes.flash("warning", f"Run {run}: {e}")
    st.rerun()
if held:
    st.caption(f"You hold {len(held)} run(s): their learners cannot resume them until you let go (or resume one "
               "on Train).")  # fmt: skip


@backlog.live_fragment(REFRESH_S)
def dashboard() -> None:
    rows = runlist.room_rows(store, room.current())
    named = bool(state.get(people_keys.W_SPREAD_NAMES))  # the predictions' toggle names them here too
    if not rows:  # who is here, before any run: a review's Room said nothing of the four learners in it
        st.info("No runs yet: learners start theirs on **Train**.")
        if here := positions.without_runs(resources.positions(), {}, {}, len(lesson.STEPS), named=named):
            st.caption(safe.md(here))
        return
    drawn, note = picking.room_chart_runs(rows)  # every run with a step, learners' first; the note says what is not
    readers = {label: in_view.reader(store, run) for run, label in drawn}
    series = {label: rd.metrics for label, rd in readers.items() if rd is not None and rd.metrics}
    if unread := [label for _, label in drawn if label not in series]:
        note = " ".join([note, f"No loss could be read for {len(unread)} run(s): {', '.join(unread)}."]).strip()
    lecture = (lesson.read_room(store.root)["runs"].get(lesson.LECTURE) or {}).get("run")  # "own settings" vs it
    data = [d for run, label in drawn if (d := room_flags.run_data(run, readers[label], label))]
    flags = room_flags.room_flags(data, room_flags.run_data(lecture, in_view.reader(store, lecture)))
    rows = room_flags.with_flags(rows, flags)
    # Learners' runs only: the instructor's pages report no lesson position (resources.report_position), so their
    # runs (the lecture, the prepared ones) would read "not seen" while the instructor teaches.
    learners = {
        r["run"]: run_learner(read_owner(store.path(r["run"]))).get("id")
        for r in rows
        if r.get("whose") == runlist.LEARNER
    }
    rows = positions.with_positions(rows, learners, resources.positions(), len(lesson.STEPS))
    st.markdown("  \n".join(f"**{line}**" for line in runlist.room_counts(rows)))  # by owner: what each word says
    by_label = {label: flags.get(run, []) for run, label in drawn}
    whose = {r["run"]: runlist.WHOSE.get(r.get("whose"), "") for r in rows}  # the chart's sections: learners' first
    groups = {label: whose.get(run, "") for run, label in drawn}
    chart = compare.room_chart(series, flags=by_label, groups=groups, large=fonts.large_fonts())
    explain.show_chart(chart, code=False)
    if note:
        st.caption(note)
    st.table(room_table.table(rows), hide_index=True)  # cells wrap: names and states read whole at 1280 Large
    for line in room_table.flag_notes(rows) + room_table.paused_notes(rows):  # what the cells leave out
        st.caption(line)
    if waits := room_table.queue_note(rows):
        st.caption(waits)
    names = {r["run"]: "the instructor's run" if r.get("whose") == runlist.INSTRUCTOR else f"{r['learner']}'s run"
             for r in rows if r.get("whose") != runlist.NOBODY}  # fmt: skip
    if here := positions.without_runs(resources.positions(), learners, names, len(lesson.STEPS), named=named):
        st.caption(safe.md(here))  # learners' names: text, never markdown


dashboard()
prediction_view.room_spread()  # the lesson step in play: the count per answer, live; the share right after its check
with st.expander("Per-run budget for learners", icon=":material/speed:"):
    budget = resources.room_budget()
    b1, b2, b3 = st.columns(3)
    params = b1.number_input("Max parameters (millions, 0 = no limit)", 0.0, 1000.0, budget["max_params"] / 1e6)
    steps = b2.number_input("Max steps per run (0 = no limit)", 0, 1_000_000, budget["max_steps"])
    minutes = b3.number_input("Max minutes per run (0 = no limit)", 0.0, 24 * 60.0, float(budget["max_minutes"]), 1.0)
    budget.update(max_params=int(params * 1e6), max_steps=int(steps), max_minutes=float(minutes))
    st.caption("Size and steps are checked when a learner presses Train: a bigger run is refused with the numbers. "
               "The minutes go with each new run: once its worker has trained (or sat paused) that long in a slot, "
               "it is stopped with a checkpoint and says why; a resume starts a new budget at the back of the "
               "queue. Memory is checked for everyone: a run estimated not to fit is refused before it starts. "
               "Your own runs have no budget.")  # fmt: skip
rows = {r["run"]: r for r in runlist.room_rows(store)}
names = {run: f"{r['learner']} · {r['name']} · {r['state']}" for run, r in rows.items()}
runs = list(names)
if runs:
    c1, c2 = st.columns([3, 2])  # 3:1 cut the button's label to "Bring to the pr…" with Large fonts
    pick = c1.selectbox("Run", runs, key=people_keys.W_ROOM_PICK, format_func=names.get)
    if c2.button("Bring to the projector", type="primary", icon=":material/cast:", width="stretch"):
        in_view.set_run_id(pick)
        form.forget_settings()  # Train shows the run's own settings and knobs, not this browser's last form
        fonts.request_large_fonts()  # applied before the sidebar's toggle is drawn on the next run
        shown = runlist.run_names(store).get(pick) or pick  # the name the table shows; the id is for links
        whose = run_words.watching(read_config_json(store.path(pick)))  # the projected page named nobody (a review)
        flashes.flash("success", f"On your screen, in large fonts: {whose}, «{shown}».")
        st.switch_page("pages/train.py")
    # One learner's run held (or let go) from here: a review had to project it and press Pause on Train
    holds, row = pick in held, rows[pick]
    can = row.get("whose") == runlist.LEARNER and (holds or row.get("state") in ("running", "queued", "starting"))
    if c2.button("Let go of this run" if holds else "Pause and hold this run", icon=":material/front_hand:",
                 width="stretch", disabled=not can, key="room_hold_one",
                 help="A learner's run that trains or waits: paused, and its learner cannot resume it until you "
                      "let go."):  # fmt: skip
        try:
            if holds:
                manager.let_go(pick, actor=me)
            else:
                manager.pause(pick, actor=me)
        except TinyGPTError as e:  # it ended or was deleted meanwhile
            flashes.flash("warning", f"{names[pick]}: {e}")
        st.rerun()
room.key_reveal()
