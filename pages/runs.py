"""Runs: every run in the run store; open, resume, delete, compare, download."""

from tinygpt.ui import frame, state

# First, before the imports below: a deep link's first run on a fresh server skips app.py (see tinygpt/ui/frame.py), and
# app.py must paint the menu before torch loads.
frame.require()


import time

import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.runs.knobs import knobs_now
from tinygpt.ui.charts import compare, curves, heatmaps, parts
from tinygpt.ui.host import resources, runlist
from tinygpt.ui.people import admission, room
from tinygpt.ui.run import in_view
from tinygpt.ui.run.in_view import Rules, open_run
from tinygpt.ui.runs import bundle, runs_keys
from tinygpt.ui.screen import explain, flashes, fonts
from tinygpt.ui.train import branching, train_keys
from tinygpt.ui.words import leaks, picking, run_words, runinfo, safe, timing

store = resources.get_store()
current = in_view.run_id()

st.title("tinygpt · Runs")
st.caption(f"Every run in `{store.root}`, live or finished. A run survives a server restart and can be resumed.")

learner = room.current()
rows = runlist.run_rows(store, learner)
if not rows:
    st.info("No runs yet: start one on **Train**.")
    st.stop()

# The columns a person reads first, few enough for 1280 px at Large fonts (fourteen scrolled sideways there, and
# six with a 400 px name column still hid 256 px); the rest, the id among them, one click away.
fonts.grid_place().dataframe(rows, hide_index=True, width="stretch", column_order=runinfo.RUNS_TABLE_FIRST,
                             column_config=runinfo.runs_table_widths(fonts.large_fonts()))  # fmt: skip
with st.expander("All columns (live changes, knobs now, corpus, created, run id)"):
    fonts.grid_place().dataframe(rows, hide_index=True, width="stretch")
ids = [r["run"] for r in rows]
by_id = {r["run"]: r for r in rows}


st.subheader("One run")
# A new run in view (a branch started here, Open) is picked. Labels say nothing that changes: the browser sends back
# the label it showed, and a "(current)" left on the parent after a branch (picking.pick_label).
if state.get(runs_keys.W_RUNS_PICK) not in ids or state.get(runs_keys.PICK_FOLLOWS, current) != current:
    state.put_widget(runs_keys.W_RUNS_PICK, current if current in ids else ids[0])
state.put(runs_keys.PICK_FOLLOWS, current)
pick = st.selectbox("Run", ids, format_func=lambda run: by_id[run]["name"], key=runs_keys.W_RUNS_PICK)
in_view_words = " · the run in view (named in the sidebar)" if pick == current else ""
st.caption(picking.pick_status(by_id[pick]["state"], by_id[pick]["step"], time.strftime("%H:%M:%S")) + in_view_words)
# The picked run, through the handle every page uses (its rules: owner, state, the instructor's hold, the CLI's).
readable = by_id[pick]["state"] != "unreadable"
run = open_run(store, pick, learner) if readable else None
rules = run.rules if run else Rules(mine=learner.instructor, state=None)  # unreadable: the instructor may delete it
mine = rules.mine
if hold := (runinfo.hold_note(run.hold, run.config, learner) if run and run.hold else None):  # as Train says it
    getattr(st, hold[0])(hold[1])  # a review's held learner read only "paused" here, Resume greyed without a reason
# Five buttons in a row cut their labels at Large fonts ("Download b…", "Share (read-…"): two rows there.
b = [*st.columns(3), *st.columns(2)] if fonts.large_fonts() else st.columns(5)
if b[0].button("Open", help="Make it the current run of every page (read-only if it is not yours)", width="stretch"):
    in_view.set_run_id(pick)
    flashes.flash("success", f"Opened {by_id[pick]['name']}" + ("." if mine else " (read-only: it is not yours)."),
                  pick)  # fmt: skip
    st.rerun()
# A run another process writes or wrote (the CLI, torchrun) is read-only here for everyone: the manager refuses
# to write into it, so its buttons say where to act instead of failing after a click.
elsewhere = runlist.written_elsewhere(store, pick)
if elsewhere:
    st.caption("Trained from the command line: the app only watches it (for everyone). Continue it there:")
    st.code(elsewhere, language="bash")
why = "Only its owner can" if not mine else "The instructor paused it: only they can resume it" if rules.held else None


def _resume(check_slot: bool) -> None:
    run.resume(check_slot)  # through admission: the room's budget, one slot a learner
    in_view.set_run_id(pick)
    flashes.flash("success", f"Resumed {by_id[pick]['name']} from its last checkpoint.", pick)
    st.rerun()


if b[1].button("Resume", disabled=not rules.can_resume, width="stretch", help=why):
    admission.attempt(_resume, "resume this one", st)  # one slot a learner: another run of theirs asks first
admission.slot_question(learner, st)
writing = runlist.live_writer(store, pick)  # delete is refused while another process writes the run
if b[2].button("Delete…", disabled=not mine or bool(writing), width="stretch", help=writing or (None if mine else why)):
    state.put(runs_keys.W_DELETE_CONFIRM, pick)
if b[4].button("Share (read-only)", help="A link that opens this run for others to watch", width="stretch"):
    st.code(runinfo.share_link(st.context.url, pick), language=None)
    st.caption("Anyone who opens this link watches the run; only its owner and the instructor can change it.")
# The question right under its button: below the open Branch panel it was out of sight at 1280x720 (a review)
pending = state.get(runs_keys.W_DELETE_CONFIRM)
if pending and pending in ids:
    st.warning(f"Delete {safe.md(by_id[pending]['name'])} (run `{pending}`) and all its files? This cannot be undone.")
    d1, d2, _ = st.columns([1, 1, 4])
    if d1.button("Yes, delete", type="primary"):
        try:
            if resources.is_live(pending):
                resources.get_manager().stop(pending, actor=learner)
            store.delete(pending, actor=learner, wait_s=10)  # a worker told to stop checkpoints first
        except TinyGPTError as e:
            st.error(safe.md(e))
        else:
            in_view.forget_reader(store, pending)
            if pending == current:
                in_view.set_run_id(None)
            flashes.flash("success", f"Deleted {by_id[pending]['name']}.")
        state.pop(runs_keys.W_DELETE_CONFIRM)
        st.rerun()
    if d2.button("Cancel"):
        state.pop(runs_keys.W_DELETE_CONFIRM)
        st.rerun()


def _bundle() -> bytes:
    rd = in_view.run_reader(store, pick)
    config = rd.config()
    vocab_size = len(config.get("vocab") or []) or 65
    knobs = knobs_now(config, rd.events)
    figures = {
        "Loss": curves.loss_chart(rd.metrics, rd.evals, rd.events, vocab_size),
        "Learning rate": curves.lr_chart(rd.metrics),
        "Gradient norm": curves.grad_norm_chart(rd.metrics, knobs.get("max_grad_norm") or 0.0, rd.events),
        "Per-layer gradient norms": parts.layer_grad_chart(rd.metrics, "layer_grad_norms"),
        "Update / weight ratios": parts.layer_grad_chart(rd.metrics, "update_ratios"),
    }
    snapshots = rd.attention_index().get("snapshots", [])
    if snapshots:  # the newest attention snapshot, all layers and heads
        step = int(snapshots[-1]["step"])
        tokens = rd.attention_index().get("tokens")
        figures[f"Attention at step {step}"] = heatmaps.attention_grid(rd.load_attention(step), tokens)
    return bundle.make_bundle(rd.run_dir, figures)


b[3].download_button(
    "Download bundle",
    data=_bundle,
    file_name=f"tinygpt-{pick}.zip",
    mime="application/zip",
    help="config JSON, metrics CSV, the latest safetensors checkpoint and its JSON, figures as HTML",
    width="stretch",
    on_click="ignore",
)

if readable:  # anyone may branch any run: the branch is a new run of their own, the parent is only read
    with st.expander("Branch from a checkpoint (a new run from there, settings changed, on the same batches)"):
        branching.branch_panel(store, pick, by_id[pick]["name"], learner)

st.subheader("Compare runs")
# The names alone: a chip with the state and step too was cut at Large fonts ("2L×4H×64 · shakespeare · L…").
chosen = st.multiselect("Runs to compare (two or more)", ids, format_func=lambda run: by_id[run]["name"],
                        key=runs_keys.W_COMPARE)  # fmt: skip
if len(chosen) >= 2:
    readers = {run: in_view.reader(store, run) for run in chosen}
    readers = {run: rd for run, rd in readers.items() if rd is not None}
    # The legends name runs as the table above does (one name each); live changes are the numbered markers.
    names = {run: by_id[run]["name"] for run in readers}
    configs = {names[run]: rd.config() or {} for run, rd in readers.items()}
    if apart := run_words.texts_apart(configs):
        st.warning(apart)
    if seeds := run_words.seeds_apart(configs):  # a seed moves a curve by itself: part of a gap is chance
        st.caption(safe.md(seeds))  # run names may hold markdown
    series = {names[run]: rd.metrics for run, rd in readers.items()}
    evals = {names[run]: rd.evals for run, rd in readers.items()}
    events = {names[run]: rd.events for run, rd in readers.items()}  # live knob changes: markers, table
    all_names = {r["run"]: r["name"] for r in rows}  # a branch's rule names its parent, compared or not
    branches = branching.branch_points({names[run]: rd.config() for run, rd in readers.items()}, all_names)
    large = fonts.large_fonts()
    state.init(train_keys.W_X_AXIS, "steps")
    axis = st.segmented_control(
        "x axis", ["steps", "seconds"], key=train_keys.W_X_AXIS, help="seconds: time to quality"
    )
    seconds = axis == "seconds"
    c1, c2 = st.container(), st.container()  # one under the other: each as wide as the page, legends whole
    with c1:
        loss = compare.compare_chart(series, "loss", evals=evals, events=events, branches=branches, seconds=seconds,
                                     large=large)  # fmt: skip
        leaking = leaks.compared_note({names[run]: (rd.config(), rd.events, rd.metrics) for run, rd in readers.items()})
        explain.show_chart(loss, "compare_chart", key="cmp_loss", caption=leaking)
    with c2:
        grad = compare.compare_chart(series, "grad_norm", events=events, branches=branches, seconds=seconds,
                                     large=large)  # fmt: skip
        explain.show_chart(grad, "compare_chart", key="cmp_grad")
    if seconds:  # what the seconds count, and the loads, devices and threads that differ between the runs
        footing = {names[run]: {"metrics": rd.metrics, "evals": rd.evals, "status": rd.status()}
                   for run, rd in readers.items()}  # fmt: skip
        st.caption(" ".join(timing.seconds_notes(footing)))
    diff = compare.config_diff({names[run]: rd.config() for run, rd in readers.items()}, events=events)
    st.markdown("**Settings that differ** (live knob changes included: `old → new @step`)")
    if diff:
        st.table(compare.shown_diff(diff), hide_index=True)  # wraps; a data frame hid runs at 1280 px (a review)
    else:
        st.caption("The runs have the same settings.")
elif chosen:
    st.caption("Pick at least one more run.")
