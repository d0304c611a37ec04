"""The Circuits page's session keys, the induction experiment's runs (this session's, or those its URL names) and
the head a click chooses."""

from __future__ import annotations

import streamlit as st

from tinygpt.ui.run.in_view import runs_in_url, show_runs_in_url

W_CIRC_STEP = "w_circ_step"  # the step the head table and the checkpoint views look at
W_CIRC_MODE = "w_circ_mode"  # zero or mean ablation
W_CIRC_TAB = "w_circ_tab"  # the Circuits page's checkpoint tab (Head ablation, Logit lens)
W_CIRC_HEAD = "w_circ_head"  # the head whose ablation the probe chart shows, "L1H2"
CIRC_HEAD_FOR = "circ_head_for"  # (run id, head) the Head picker last opened on (open_on_head)
W_CIRC_PROBE = "w_circ_probe"  # the logit lens's and the ablation's probe text
W_CIRC_OFF = "w_circ_off"  # heads to switch off in the live run, ["L1H2", ...]
W_CIRC_SOURCE = "w_circ_source"  # the induction experiment's corpus
W_CIRC_SEED = "w_circ_seed"
W_CIRC_TABLE = "circ_heads"  # the head table (a row click chooses W_CIRC_HEAD); the key ends in the head chosen
W_CIRC_CELLS = "circ_ablation_cells"  # the ablation heatmap (a cell click chooses W_CIRC_HEAD); the same
CIRC_STEP_RUN = "circ_step_run"  # the run the chosen step (W_CIRC_STEP) was chosen on
CIRC_NEWEST = "circ_newest_step"  # the newest snapshot step when the page was last drawn: a step left there follows
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


def open_on_head(run_id: str, head: str | None, names: list[str]) -> None:
    """Open the Head picker on `head` (best_head.checked_head) once per run and head found, before the picker is
    drawn: a head chosen after that (the picker, a click on the heatmap or the table) stays until another run or
    another head found (the verdict's, once the experiment ends) opens it anew."""
    if head in names and st.session_state.get(CIRC_HEAD_FOR) != (run_id, head):
        st.session_state[W_CIRC_HEAD] = head
        st.session_state[CIRC_HEAD_FOR] = (run_id, head)
