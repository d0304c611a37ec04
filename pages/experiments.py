"""Experiments: every classic transformer failure as a one-click, side-by-side pair of runs, with a computed verdict."""

from tinygpt.ui import frame, state

# First, before the imports below: a deep link's first run on a fresh server skips app.py (see tinygpt/ui/frame.py), and
# app.py must paint the menu before torch loads.
frame.require()


import functools

import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.lab import health as health_lib
from tinygpt.lab import registry
from tinygpt.lab.memory import memory_rows
from tinygpt.ui.charts import compare
from tinygpt.ui.circuits import circuits_view
from tinygpt.ui.experiments import experiments_keys, form_words, health_view, lab
from tinygpt.ui.host import resources
from tinygpt.ui.people import admission, people_keys, room
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import backlog, explain, fonts
from tinygpt.ui.screen.numbers import number_box
from tinygpt.ui.teach import lesson, workshop
from tinygpt.ui.train import settings

REFRESH_S = 1.0

store = resources.get_store()
shop = workshop.parse_workshop(state.get(people_keys.WORKSHOP_PARAMS) or {})

st.title("tinygpt · Experiments")
st.caption(
    "Break a transformer on purpose. Each experiment trains a correct model and one or more broken ones side by "
    "side, on the same data and seed, apart only in the settings it names; the verdict below the charts is "
    "computed from the runs' own numbers."
)


circuits_view.induction_entry(store)

keys = list(registry.EXPERIMENTS)
state.init(experiments_keys.W_EXPERIMENT, shop.experiment or keys[0])
key = st.selectbox(
    "Experiment",
    keys,
    key=experiments_keys.W_EXPERIMENT,
    format_func=lambda k: registry.EXPERIMENTS[k].title,
    disabled=shop.locked and shop.experiment is not None,
)
experiment = registry.EXPERIMENTS[key]
st.query_params["experiment"] = key
st.info(experiment.what_to_look_for)
claims = st.container()  # which clauses are the pitfall, which consequences: filled once the corpus is chosen

left, mid, right = st.columns([2, 1, 1])
corpus = lab.corpus_picker(experiment, shop.overrides.get("source"), left)  # a workshop link's ?source= first
lab.show_claims(experiment, corpus.source, claims)
state.init(experiments_keys.W_LAB_SEED, 1337)
seed = number_box(mid, "Seed (every run)", 0, 2**31 - 1, key=experiments_keys.W_LAB_SEED, persist_state="session")
measured = experiment.measure is not None  # measured in this process, not trained (memory)
mine = lab.not_its_runs(experiment, store)  # ?lab= runs of another experiment are refused, not judged as this one's
runs = None if measured else experiments_keys.lab_runs(key, list(experiment.variants), mine)
ours = lesson.read_room(str(store.root))["runs"].get(f"exp:{key}")  # the lesson's runs of it: the room's
theirs = not runs and not measured and bool(ours)  # none of one's own: everyone may look at the room's
runs = ours if theirs else runs
if runs and not measured:  # the pickers set the next runs: runs opened from a link may have trained on others
    shown = {label: (rd.config() if (rd := in_view.reader(store, run)) else {}) for label, run in runs.items()}
    text = form_words.picked_text(corpus.source, corpus.pasted, corpus.uploaded)
    if note := form_words.runs_unlike_form(shown, corpus.source, text, int(seed)):
        st.caption(note)
if right.button("Run side by side", type="primary", icon=":material/play_arrow:", width="stretch"):
    try:
        if measured:
            with st.spinner("Measuring both loops..."):
                experiments_keys.set_lab_measured(key, int(seed), experiment.measure(int(seed)))
        else:
            data = lab.experiment_data(experiment, corpus)
            settings.ensure_corpus(data)
            start = functools.partial(lab.start_experiment, key, experiment, data.source, int(seed), text=data.text,
                                      text_name=data.text_name)  # fmt: skip
            admission.attempt(start, "run this experiment", st)  # its runs together are one slot of the learner's
    except TinyGPTError as exc:
        st.error(str(exc))
admission.slot_question(room.current(), st)

# Keyed and tracked, so a lesson step's click can open the tab its check reads (every tab's content still runs).
tabs = st.tabs(["Side by side", "Model health", "Shape contracts", "Memory per step"], key=experiments_keys.W_EXP_TAB,
               on_change="rerun")  # fmt: skip

with tabs[0]:
    if measured:
        taken = experiments_keys.lab_measured(key)
        if taken is None:
            st.info("Press **Run side by side** to measure both loops: " + ", ".join(experiment.variants) + ".")
        else:
            st.caption(f"Measured on this machine, seed {taken[0]} (the sizes both loops use).")
            fonts.grid_place().dataframe(lab.memory_table(taken[1]), hide_index=True, width="stretch")
            st.markdown("#### Verdict")
            lab.show_verdict(experiment.verdict(taken[1]), experiment)
    elif not runs:
        st.info("Press **Run side by side** to train the variants: " + ", ".join(experiment.variants) + ".")
        lab.offer_own_runs(store, key, experiment)  # a new tab: the learner's own last runs of it, by name
    else:
        if theirs:
            st.caption(lab.ROOM_RUNS_NOTE)
        live = any(resources.is_live(r) for r in runs.values())

        @backlog.live_fragment(REFRESH_S if live else None)
        def side_by_side() -> None:
            readers = {label: in_view.reader(store, run_id) for label, run_id in runs.items()}
            results = lab.results(readers, experiment)
            for run_id in runs.values():
                resources.touch(run_id)
            fonts.grid_place().dataframe(
                [
                    {
                        "run": label,
                        "state": r.state,
                        "step": r.steps,
                        "train loss (last 20)": None if r.final_train_loss is None else round(r.final_train_loss, 4),
                        "run id": runs[label],
                    }
                    for label, r in results.items()
                ],
                hide_index=True,
                width="stretch",
            )
            large = fonts.large_fonts()
            metrics = {label: rd.metrics for label, rd in readers.items() if rd is not None}
            evals = {label: rd.evals for label, rd in readers.items() if rd is not None}
            cols = st.columns(2)
            with cols[0]:
                explain.show_chart(
                    compare.compare_chart(metrics, "loss", evals, large=large), "lab_compare_chart", key="x_loss"
                )
            with cols[1]:
                explain.show_chart(compare.compare_chart(metrics, "grad_norm", large=large), None, key="x_grad")
            extra = lab.extra_series(key, readers)
            if extra:  # two to a row: three side by side were ~290 px each on a projector, their titles cut
                per_row = 2 if large else len(extra)
                cols = [c for _ in range(0, len(extra), per_row) for c in st.columns(per_row)]
                for col, (field, series) in zip(cols, extra.items(), strict=False):
                    with col:
                        explain.show_chart(compare.compare_chart(series, field, large=large), None, key=f"x_{field}")
            st.markdown("#### Verdict")
            lab.show_verdict(experiment.verdict(results), experiment, lab.runs_about(runs, readers, ours))
            samples = {label: r for label, r in results.items() if r.sample}
            if samples:
                st.markdown("#### Latest samples")
                st.caption("Each run continues the same prompt, its probe text's first characters, shown first.")
                for col, (label, r) in zip(st.columns(len(samples)), samples.items(), strict=True):
                    col.caption(lab.sample_caption(label, r))  # its step: a diverged run's is the untrained model's
                    col.code(r.sample[:300], language=None, wrap_lines=True)  # unwrapped, Large fonts cut it

        side_by_side()
    explain.show_code_of(list(experiment.code))

with tabs[1]:
    st.caption(
        "Checks on a run's latest checkpoint and its recent steps: pass, FAIL, or not enough data (too few steps "
        "to judge), each with the value it measured and the threshold it was held to. The leak detector changes "
        "every token after position t and measures how much the logits at positions <= t move."
    )
    health_view.health_tab(store, experiment, runs, key)  # the experiment's broken run first, its checks at once
    explain.show_code_of([health_lib.leak_score])

with tabs[2]:
    lab.shape_contracts()

with tabs[3]:
    st.caption(
        "Estimated bytes for one training step (arithmetic, fp32; on CUDA one bar is the measured peak). "
        "Parameters, gradients and AdamW's two moments grow with the model; "
        "activations grow with batch x context, and attention's scores and weights with context squared."
    )
    c1, c2, c3 = st.columns(3)
    state.init(experiments_keys.W_MEM_BATCH, 12)
    state.init(experiments_keys.W_MEM_CONTEXT, 64)
    state.init(experiments_keys.W_MEM_WIDTH, 128)
    batch = c1.slider("Batch", 1, 128, key=experiments_keys.W_MEM_BATCH)
    context = c2.select_slider("Context T", [16, 32, 64, 128, 256, 512, 1024], key=experiments_keys.W_MEM_CONTEXT)
    width = c3.select_slider("Width", [32, 64, 128, 256, 384, 512], key=experiments_keys.W_MEM_WIDTH)
    rows = lab.memory_comparison(width, context, batch)
    cuda_peak = any(r.get("source", "").startswith("torch.cuda") for r in rows)
    title = "Memory per training step (estimated, fp32" + ("; the peak bar is measured on CUDA)" if cuda_peak else ")")
    explain.show_chart(compare.memory_chart(rows, title=title, large=fonts.large_fonts()), "memory_chart", code=False)
    explain.show_code_of([memory_rows])
