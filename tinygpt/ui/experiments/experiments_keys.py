"""The Experiments page's session keys, and the runs of each experiment this session started or its URL names."""

from __future__ import annotations

import streamlit as st

from tinygpt.ui.run.in_view import runs_in_url, show_runs_in_url

W_EXPERIMENT = "w_experiment"
W_EXP_TAB = "w_exp_tab"  # the Experiments page's tab: a lesson step's click opens the one its check reads
W_LAB_SOURCE = "w_lab_source"
W_LAB_SEED = "w_lab_seed"
W_LAB_UPLOAD = "w_lab_upload"  # the learner's own text for an experiment: a file ...
W_LAB_PASTE = "w_lab_paste"  # ... or pasted
W_HEALTH_RUN = "w_health_run"
W_MEM_BATCH = "w_mem_batch"
W_MEM_CONTEXT = "w_mem_context"
W_MEM_WIDTH = "w_mem_width"
LAB_RUNS = "lab_runs"  # {experiment key: {variant label: run_id}}
URL_LAB = "lab"  # ?lab=<id>,<id>: an experiment's runs, in variant order, so a refresh reattaches
LAB_MEASURED = "lab_measured"  # {experiment key: (seed, results)} for experiments measured in-process (memory)


def lab_runs(key: str, labels: list[str], not_its_runs=None) -> dict[str, str] | None:
    """The runs of experiment `key` this session started, or those named in the URL (?lab=id,id) when
    `not_its_runs` ({label: run id} -> why they are another experiment's, or None) finds them this one's."""
    known = st.session_state.setdefault(LAB_RUNS, {})
    if key not in known and (named := runs_in_url(URL_LAB, labels, "experiment runs")):
        if not_its_runs is not None and (why := not_its_runs(named)):
            st.warning(f"Ignored the experiment runs in the address: they are not this experiment's runs ({why}). "
                       "Pick the experiment they were started for, or press Run side by side.")  # fmt: skip
            show_runs_in_url(URL_LAB, None)
            return None
        known[key] = named
    show_runs_in_url(URL_LAB, known.get(key))
    return known.get(key)


def set_lab_runs(key: str, runs: dict[str, str]) -> None:
    st.session_state.setdefault(LAB_RUNS, {})[key] = dict(runs)
    show_runs_in_url(URL_LAB, runs)


def lab_measured(key: str) -> tuple[int, dict] | None:
    """The last in-process measurement of experiment `key` this session took, with its seed."""
    return st.session_state.setdefault(LAB_MEASURED, {}).get(key)


def set_lab_measured(key: str, seed: int, results: dict) -> None:
    st.session_state.setdefault(LAB_MEASURED, {})[key] = (int(seed), results)
