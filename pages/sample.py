"""Sample: continue a prompt with a run's model, one character at a time, and see why each character won."""

from tinygpt.ui import frame, state

# First, before the imports below: a deep link's first run on a fresh server skips app.py (see tinygpt/ui/frame.py), and
# app.py must paint the menu before torch loads.
frame.require()


import time

import streamlit as st

from tinygpt.config import MAX_TEXT_FIELDS
from tinygpt.errors import TinyGPTError
from tinygpt.inside import maps as inside
from tinygpt.runs.files import checkpoint_stem, list_checkpoints, read_events, read_json
from tinygpt.runs.owners import run_learner
from tinygpt.ui.charts import compare, heatmaps
from tinygpt.ui.host import resources, runlist
from tinygpt.ui.people import room
from tinygpt.ui.run import in_view
from tinygpt.ui.run.in_view import open_run
from tinygpt.ui.sample import sample_keys
from tinygpt.ui.screen import explain, fonts
from tinygpt.ui.screen.numbers import number_box
from tinygpt.ui.words import picking, safe

store = resources.get_store()
current = in_view.run_id()

st.title("tinygpt · Sample")
st.caption(
    "Generation uses a saved checkpoint, so it works while training goes on. Pick an early checkpoint to hear "
    "babble, a late one to read words."
)

me = room.current()
runs = [r for r in store.list_runs() if r.state != "unreadable"]
runs.sort(key=lambda r: run_learner(r.config).get("id") != me.id)  # mine first: a fresh learner's default is theirs
with_ckpt = {r.run_id: r for r in runs if list_checkpoints(store.path(r.run_id))}
if not with_ckpt:
    st.info("No checkpoints yet: train a run on **Train**; it saves one every few steps and when it stops.")
    st.stop()

options = list(with_ckpt)
names = runlist.run_names(store)
if current is not None and current not in with_ckpt:  # the run in view saved nothing yet: another run is sampled
    in_view_state = next((r.state for r in runs if r.run_id == current), None)
    st.info(picking.no_checkpoint_yet(safe.md(names.get(current) or current), in_view_state))
if state.get(sample_keys.W_SAMPLE_RUN) not in options or state.get(sample_keys.SAMPLE_FOLLOW) != current:
    # follow the current run (when it has a checkpoint) until the user picks another one
    state.put(sample_keys.W_SAMPLE_RUN, current if current in options else options[0])
    state.put(sample_keys.SAMPLE_FOLLOW, current)


def _label(run: str) -> str:  # the name the Runs table shows, not the bare id
    r = with_ckpt[run]
    return picking.pick_label(run, names.get(run, ""), r.config or {}, me_id=me.id, current=run == current)


c1, c2 = st.columns([2, 1])
# The picked run is this page's; where it is not the run in view, the caption says so (a review's sidebar named the
# learner's branch while the page sampled the lecture run). Opening it from here (an on_change writing the URL)
# redrew the page's buttons under a click in the browser tests.
run = c1.selectbox("Run", options, format_func=_label, key=sample_keys.W_SAMPLE_RUN)
c1.caption(picking.pick_status(with_ckpt[run].state, with_ckpt[run].step, time.strftime("%H:%M:%S")))  # pick_label
handle = open_run(store, run, me)  # the run this page shows: the picked one (the current run until another is picked)
if handle is None:  # deleted meanwhile, or its config.json is damaged (the Runs table says why)
    st.warning(f"Run {run} cannot be read now: pick another run, or see why on **Runs**.")
    st.stop()
rd = handle.reader
ckpts = rd.checkpoints()
if state.get(sample_keys.W_SAMPLE_CKPT) not in ckpts or state.get(sample_keys.SAMPLE_CKPT_LATEST, True):
    state.put(sample_keys.W_SAMPLE_CKPT, ckpts[-1])
c2.selectbox(
    "Checkpoint (step)",
    ckpts,
    key=sample_keys.W_SAMPLE_CKPT,
    on_change=lambda: state.put(sample_keys.SAMPLE_CKPT_LATEST, state.get(sample_keys.W_SAMPLE_CKPT) == ckpts[-1]),
)
step = state.get(sample_keys.W_SAMPLE_CKPT)
events, run_config = read_events(store.path(run)), with_ckpt[run].config or {}
# The checkpoint's own config: the knobs its weights trained under, live changes included (the name's are the first).
ckpt_config = (read_json(checkpoint_stem(rd.run_dir, step).with_suffix(".json"), {}) or {}).get("config")
at_ckpt = picking.at_checkpoint(run_config, events, step, ckpt_config, picking.rate_at(rd.metrics, step))
st.caption(picking.sample_source(run, names.get(run, ""), step, None if run == current else names.get(current, current),
                                 at_ckpt, none_in_view=current is None))  # fmt: skip
for kind, note in picking.checkpoint_notes(run_config, events, rd.evals, step, ckpts, rd.metrics):  # true at this step
    (st.warning if kind == "warning" else st.info)(note, icon=":material/visibility:")

persist = {"persist_state": "session"}
state.init(sample_keys.W_PROMPT, "\n")
state.init(sample_keys.W_TEMPERATURE, 0.8)
state.init(sample_keys.W_TOP_K, 0)
state.init(sample_keys.W_TOP_P, 1.0)
state.init(sample_keys.W_NUM_CHARS, 200)
state.init(sample_keys.W_SAMPLE_SEED, 0)
st.text_area("Prompt", key=sample_keys.W_PROMPT, height=80, max_chars=MAX_TEXT_FIELDS["prompt"], **persist)
s1, s2, s3, s4, s5 = st.columns(5)
s1.slider("Temperature", 0.0, 2.0, step=0.05, key=sample_keys.W_TEMPERATURE, help="0 = always the likeliest", **persist)
number_box(s2, "Top-k (0 = off)", 0, 1000, key=sample_keys.W_TOP_K, **persist)
s3.slider("Top-p (1 = off)", 0.05, 1.0, step=0.05, key=sample_keys.W_TOP_P, **persist)
number_box(s4, "Characters", 1, 2000, key=sample_keys.W_NUM_CHARS, **persist)
number_box(s5, "Seed", 0, 2**31 - 1, key=sample_keys.W_SAMPLE_SEED, **persist)

# (temperature, top-k, top-p) as the sliders are now: the charts say when they were drawn with others
sampling = (float(state.get(sample_keys.W_TEMPERATURE)), int(state.get(sample_keys.W_TOP_K)),
            float(state.get(sample_keys.W_TOP_P)))  # fmt: skip
seed = int(state.get(sample_keys.W_SAMPLE_SEED))  # one read: the stream, its header and the record say the same seed
if st.button("Generate", type="primary", icon=":material/edit:"):
    try:
        loaded = resources.cached_model(str(rd.run_dir), step)
        model, tokenizer = loaded.model, loaded.tokenizer
        prompt = state.get(sample_keys.W_PROMPT)
        unknown = tokenizer.unknown_chars(prompt)
        if unknown:
            raise TinyGPTError(
                "the prompt has characters this model has never seen: "
                + ", ".join(repr(c) for c in unknown)
                + ". Remove them or train on a corpus that contains them."
            )
        last: dict = {}
        top_p = state.get(sample_keys.W_TOP_P)
        stream = inside.stream_text(
            model,
            tokenizer,
            prompt,
            int(state.get(sample_keys.W_NUM_CHARS)),
            float(state.get(sample_keys.W_TEMPERATURE)),
            int(state.get(sample_keys.W_TOP_K)) or None,
            top_p if top_p < 1.0 else None,
            seed,
            last,
        )
        st.markdown(picking.generated_header(safe.md(names.get(run) or run), step, at_ckpt, sampling, seed))
        if note := picking.prompt_note(len(prompt), model.config.max_seq_len):
            st.caption(note)
        box = st.empty()  # a code block keeps newlines and spaces exactly; markdown would reflow them
        text, shown_at = "", 0.0
        for char in stream:
            text += char
            if time.monotonic() - shown_at > 0.03:  # ~30 updates a second: streams visibly, stays cheap
                box.code(prompt + text + "▌", language=None, wrap_lines=True)
                shown_at = time.monotonic()
        box.code(prompt + text, language=None, wrap_lines=True)
        state.put(
            sample_keys.LAST_SAMPLE,
            {**last, "prompt": prompt, "text": text, "vocab": tokenizer.vocab, "run": run, "step": step, "at": at_ckpt,
             "settings": sampling, "context": model.config.max_seq_len,
             "seed": seed},
        )
    except TinyGPTError as e:
        st.warning(safe.md(e))
        state.pop(sample_keys.LAST_SAMPLE)  # the charts below would describe an earlier prompt
elif (last := state.get(sample_keys.LAST_SAMPLE)) and last.get("run") != run:  # another run's, not drawn under this
    st.caption(f"Your last sample was drawn from {safe.md(names.get(last['run']) or last['run'])}, another run: "
               "**Generate** draws one from this run.")  # a review read one run's text under the next run's header
elif last:
    st.markdown(picking.generated_header(safe.md(names.get(last["run"]) or last["run"]), last["step"],
                                         last.get("at", ""), last.get("settings"), last.get("seed")))  # fmt: skip
    if note := picking.prompt_note(len(last.get("prompt", "")), last.get("context", 0) or 10**9):
        st.caption(note)
    st.code(last.get("prompt", "") + last["text"], language=None, wrap_lines=True)

last = state.get(sample_keys.LAST_SAMPLE)
large = fonts.large_fonts()
if last and last.get("probs") is not None and last.get("run") == run:
    if stale := picking.stale_sample_note(last.get("settings"), sampling):
        st.caption(stale)
    c1, c2 = (st.container(), st.container()) if large else st.columns(2)  # side by side, Large cut both titles
    with c1:
        # Of the step that drew the last character: "next character after the last position" read as a forecast
        # of the character to come after the text (a review)
        st.markdown(f"**What the last character was drawn from** (it picked {last['char']!r})")
        explain.show_chart(
            compare.next_char_chart(last["vocab"], last["probs_raw"], last["probs"], large=large),
            "next_char_chart",
        )
    with c2:
        st.markdown(f"**Where the last generated character looked** ({last['char']!r})")
        if last.get("attention") is not None:
            explain.show_chart(
                heatmaps.attention_row_chart(last["attention"], last["keys"], large=large), "attention_row_chart"
            )
