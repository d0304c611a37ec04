"""Circuits: what each head does over training, the induction-head phase change, head ablation, the logit lens."""

import functools

import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.inside import heads
from tinygpt.lab import induction
from tinygpt.ui import frame, state
from tinygpt.ui.circuits import best_head, circuits_keys
from tinygpt.ui.circuits import circuits_view as view
from tinygpt.ui.host import resources, runlist
from tinygpt.ui.people import admission, room
from tinygpt.ui.run import follow, in_view
from tinygpt.ui.run.in_view import open_run
from tinygpt.ui.screen import backlog, fonts
from tinygpt.ui.screen.numbers import number_box
from tinygpt.ui.train import knob_widgets
from tinygpt.ui.words import ablation_words, runinfo, safe

frame.require()  # a deep link's first run can skip app.py: see tinygpt/ui/frame.py

store = resources.get_store()
large = fonts.large_fonts()
st.title("tinygpt · Circuits")
st.caption(
    "Which heads look at the previous character, which ones find the last time the current character appeared and "
    "copy what came next (induction heads), and what happens when one is switched off."
)
with st.expander("How each number is defined", icon=":material/functions:"):
    for role in heads.ROLES:
        st.markdown(f"- **{role}**: {heads.ROLE_DEFINITIONS[role]}.")
    st.markdown(
        f"Each score is in [0, 1]; its *uniform baseline* is the score of a head that spreads its weight evenly over "
        f"the keys the mask lets it see. A head is labelled with a role once that score is {heads.ROLE_RATIO:g}x its "
        f"baseline or more (the lesson's \"specialised\"; the role the most times above its baseline wins). The "
        f"induction verdict asks more of its best head: a score above {heads.ROLE_THRESHOLD}. In-context loss: the "
        "loss on the second copy of the repeated probe against the first copy's."
    )


@backlog.live_fragment(2.0 if state.get(circuits_keys.CIRC_LIVE) else None)
def experiment() -> None:
    st.subheader("The induction-head phase change")
    st.page_link("pages/experiments.py", label="More experiments: the pitfall lab", icon=":material/science:")
    labels = list(induction.INDUCTION_VARIANTS)
    c1, c2, c3 = st.columns([2, 1, 1.5])  # 1:1 cut "Start the experiment" with Large fonts
    source = c1.selectbox("Corpus", list(induction.INDUCTION_SOURCES), key=circuits_keys.W_CIRC_SOURCE,
                          format_func=induction.INDUCTION_SOURCES.get)  # fmt: skip
    state.init(circuits_keys.W_CIRC_SEED, 1337)
    seed = number_box(c2, "Seed", 0, 10**6, key=circuits_keys.W_CIRC_SEED)
    st.caption(induction.INDUCTION_SOURCE_NOTES.get(source, ""))
    if c3.button("Start the experiment", icon=":material/play_arrow:", key="circ_start"):  # one slot: admission
        admission.attempt(functools.partial(view.start_experiment, source, int(seed), room.current()), "start it", st)
    admission.slot_question(room.current(), st)
    runs = circuits_keys.circuit_runs(labels)
    if not runs:
        st.caption(induction.INDUCTION_EXPECTED)
        return
    readers, records, ended = view.experiment_state(store, runs)
    if bool(state.get(circuits_keys.CIRC_LIVE)) != (not ended):  # started or ended: redraw the page, so the fragment
        state.put(circuits_keys.CIRC_LIVE, not ended)  # refreshes itself exactly while the runs train
        st.rerun()
    for rd in readers.values():
        resources.touch(rd.run_id)
    view.experiment_progress(readers, ended)  # a bar and when the verdict should come, while the runs train
    final = view.final_scores(readers, ended)  # the verdict's own measurement: the caption names its best head too
    view.chart(view.experiment_figure(readers, records, large), "phase_change_chart", "circ_phase",
               caption=view.change_caption(records, ended, final))  # fmt: skip
    verdict = view.experiment_verdict(readers, records, ended)  # a run that stopped early: not judged
    box = {True: st.success, False: st.error, None: st.info}[verdict.reproduced]
    box(f"**{verdict.status.capitalize()}.** {safe.md(verdict.sentence)}", icon=":material/science:")
    st.caption(f"Expected: {verdict.expected}")
    if verdict.observed:
        fonts.grid_place().dataframe(
            [{"measure": k, "value": "-" if v is None else str(v)} for k, v in verdict.observed.items()],
            hide_index=True,
        )
    if in_view.run_id() != runs[labels[0]] and st.button("Look at the 2-layer run's heads below", key="circ_open"):
        in_view.set_run_id(runs[labels[0]])
        st.rerun()


experiment()

st.divider()
run_id = in_view.run_id()
run = open_run(store, run_id, room.current())  # the run in view, once for this script run
follow.follow_idle_run(store, run, False)  # a pause, a resume or a stop elsewhere redraws the page
if run is None:
    st.info("No run selected: start one on **Train** or open one on **Runs** to see its heads.")
    st.stop()
rd = run.reader
records = view.scores(rd.run_dir)
if not records:
    st.info("No head-role scores yet: they are computed with every attention snapshot, once the run trains.")
    st.stop()
steps = [r["step"] for r in records]
live = follow.trains(run)

st.subheader("Heads over training")
st.caption(f"Run **{runlist.run_names(store).get(run_id) or run_id}** (`{run_id}`), as Runs names it.")
measured = view.verdict_final(store, run_id)  # (label, final measurement) once the experiment of this run ended
if measured:
    st.caption(best_head.verdict_head_caption(*measured))
if state.get(circuits_keys.CIRC_STEP_RUN) != run_id:  # the step belongs to a run: another run starts at its last
    state.put(circuits_keys.W_CIRC_STEP, None)  # snapshot, never at a step chosen on an earlier run (a Demo run's 300
    state.put(circuits_keys.CIRC_STEP_RUN, run_id)  # beside an induction run's verdict at step 3000)
wanted = state.get(circuits_keys.W_CIRC_STEP)  # on the newest step drawn before: the newest now (a review's stayed)
wanted = None if wanted == state.get(circuits_keys.CIRC_NEWEST) else wanted
state.put(circuits_keys.W_CIRC_STEP, steps[-1] if wanted is None else min(steps, key=lambda s: abs(s - wanted)))
state.put(circuits_keys.CIRC_NEWEST, steps[-1])
step = st.select_slider(
    "Step", steps, key=circuits_keys.W_CIRC_STEP, help="The head table and the checkpoint views below."
)
follow.steps_since_drawn(store, run, steps[-1], lambda: state.put(circuits_keys.W_CIRC_STEP, None), "circ_newest")
mark = view.change_mark(records, live)  # "provisional" while the run trains
fig = view.charts.role_history_chart(heads.score_rows(records), change=mark, events=rd.events, large=large)
disagree = best_head.heads_disagree(records, measured[1] if measured else None)  # "" unless two heads are named
view.chart(fig, "role_history_chart", "circ_roles", caption=disagree or None)
st.markdown(f"**Heads at step {step}**, from the training-time snapshot scores")
for sentence in view.role_sentences(records, step):
    st.markdown(f"- {sentence}")
num_layers, num_heads = view.head_grid(records)  # from the scores: a damaged config.json had no "model"
names = [heads.head_name(lay, h) for lay in range(num_layers) for h in range(num_heads)]
st.caption("Click a row to see that head's ablation below.")
view.head_table(view.head_rows(records, step), names)
view.chart(view.charts.residual_chart(records, large=large), "residual_chart", "circ_resid",
           caption=view.residual_caption(records))  # fmt: skip

st.subheader("At a checkpoint: ablation and the logit lens")
ck = runinfo.nearest_checkpoint(rd.checkpoints(), step)
if ck is None:
    st.info("No checkpoint yet.")
    st.stop()
run_dir = str(rd.run_dir)
if state.get(circuits_keys.CIRC_PROBE_RUN) != run_id:  # a new run: its own probe. The box and the Head picker keep
    state.put(circuits_keys.W_CIRC_PROBE, rd.attention_index().get("probe_text", ""))  # their values over a visit
    state.put(circuits_keys.CIRC_PROBE_RUN, run_id)  # to another page (persist_state): this marker never finds it empty
probe = st.text_input("Probe text", key=circuits_keys.W_CIRC_PROBE, persist_state="session",
                      help="The run's probe; type any text the vocabulary has.")  # fmt: skip
st.caption(f"From the checkpoint at step {ck:,} ({runinfo.checkpoint_where(ck, step)}).")
tab_ablate, tab_lens = st.tabs(["Head ablation", "Logit lens"], key=circuits_keys.W_CIRC_TAB, on_change="rerun")
with tab_ablate:  # an unreadable probe (empty, unknown characters) is said under the heatmap, which needs none
    try:
        a1, a2 = st.columns(2)
        mode = (
            a1.segmented_control("Ablation", ["zero", "mean"], key=circuits_keys.W_CIRC_MODE, default="zero") or "zero"
        )
        circuits_keys.open_on_head(run_id, best_head.checked_head(records, measured and measured[1]), names)
        head = a2.selectbox("Head", names, key=circuits_keys.W_CIRC_HEAD, persist_state="session",
                            help="Or click a cell of the heatmap.")  # fmt: skip
        result = view.ablation(run_dir, ck, probe, mode)
        layer, h = divmod(names.index(head), num_heads)
        caption = f"{ablation_words.ablation_words(result)} {ablation_words.ablation_noise(result, mode)}"
        copied = view.second_copy_measured(run_dir, ck) if mode == "zero" else None
        if copied is not None:
            caption += " " + ablation_words.second_copy_words(copied, view.SECOND_COPY, bool(measured))
        fig = view.ablation_figure(result, mode, (layer, h), large, copied and copied["deltas"])
        view.ablation_chart(fig, names, num_layers, num_heads, caption, "probe" in result[mode])
        probs = view.ablated_figure(run_dir, ck, probe, layer, h, mode, result, large)
        view.chart(probs, "ablated_probs_chart", "circ_ablated")
    except TinyGPTError as e:
        st.warning(safe.md(e))
with tab_lens:
    try:
        lens_fig, lens_said = view.logit_lens_view(run_dir, ck, probe, large)
        view.chart(lens_fig, "logit_lens_chart", "circ_lens", lens_said)
    except TinyGPTError as e:
        st.warning(safe.md(e))

st.subheader("Switch a head off while it trains")
off_now = view.heads_off(run.knobs)
st.caption(
    f"Heads off now: {', '.join(off_now) or 'none'}. A switched-off head writes nothing into the residual stream "
    "(zero ablation, live): watch the loss and the other heads' scores as the model routes around it."
)
state.init(circuits_keys.W_CIRC_OFF, off_now)
chosen = st.multiselect("Heads to switch off", names, key=circuits_keys.W_CIRC_OFF, disabled=not live)
# While it trains (a queued run, which the handle's rule also lets take knobs, has no heads to watch yet).
if st.button("Apply", key="circ_apply", disabled=not (live and run.rules.can_set_knob)):
    try:
        request = run.set_knob("ablated_heads", view.heads_text(chosen))
        knob_widgets.add_knob_note("ablated_heads", view.heads_text(chosen), request, run_id)
    except TinyGPTError as e:
        st.error(safe.md(e))
for knob, note in knob_widgets.knob_notes(run_id).items():
    if knob == "ablated_heads":
        st.caption(runinfo.knob_note(rd.events, note["request"], knob, note["value"])[1])
if not live:
    st.caption("The switch needs a run that is training now.")
