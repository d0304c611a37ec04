"""The Circuits page's logic: head roles from the run folder, ablation and the logit lens at a checkpoint (cached:
a checkpoint never changes), the live head switch, and the induction experiment's runs and verdict.

The numbers come from the engine (tinygpt.inside.heads for scores, tinygpt.lab.induction for the verdict,
tinygpt.inside.lens for ablation, the logit lens and the residual stream); this module reads run folders, caches,
and turns results into rows and figures. Deliberately left out: drawing widgets (pages/circuits.py).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
import torch

from tinygpt.config import format_heads, parse_heads
from tinygpt.data import load_corpus
from tinygpt.errors import RunStoreError, TinyGPTError
from tinygpt.inside import heads, lens
from tinygpt.inside.maps import encode_probe
from tinygpt.lab import induction
from tinygpt.lab.results import read_result
from tinygpt.runs.files import ENDED_STATES, read_scores
from tinygpt.runs.models import run_data
from tinygpt.runs.reader import RunReader
from tinygpt.ui import state
from tinygpt.ui.charts import circuits as charts
from tinygpt.ui.charts.help import CHART_HELP
from tinygpt.ui.circuits import best_head, circuits_keys
from tinygpt.ui.circuits.copy_ablation import SECOND_COPY, second_copy, second_copy_measured  # noqa: F401 - read here
from tinygpt.ui.host import resources
from tinygpt.ui.people import admission, room
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import backlog, explain, fonts
from tinygpt.ui.words import runinfo, safe

ABLATION_BATCHES = 20  # validation batches of the run's batch size: the same number nanoGPT's CPU eval averages


def chart(fig, help_name: str, key: str, caption: str | None = None) -> None:
    """explain.show_chart inside a box named `key` (class st-key-<key>), so a browser test can find the chart."""
    with st.container(key=key):
        explain.show_chart(fig, help_name, key=f"{key}_chart", caption=caption)


# ---------------------------------------------------------------- scores over training


@st.cache_data(max_entries=64, show_spinner=False)
def _scores_at(path: str, signature: tuple) -> list[dict]:
    return read_scores(Path(path))


def scores(run_dir: str | Path) -> list[dict]:
    """The run's score records (attention/scores.jsonl), re-read only when the file changed."""
    path = Path(run_dir) / "attention" / "scores.jsonl"
    try:
        st_ = os.stat(path)
        signature = (st_.st_ino, st_.st_size, st_.st_mtime_ns)
    except FileNotFoundError:
        return []
    return _scores_at(str(run_dir), signature)


def head_grid(records: list[dict]) -> tuple[int, int]:
    """(layers, heads per layer) of the run's scores: the shape of its newest record's role arrays, (L, H). Read
    from the scores the page draws, not from config.json: a damaged config.json (the reliability probe's tampered
    family) left the page without "model" while its scores, checked where they are read, were whole."""
    for record in reversed(records):
        for scores in (record.get("roles") or {}).values():
            if isinstance(scores, list) and scores and all(isinstance(row, list) for row in scores):
                return len(scores), len(scores[0])
    return 0, 0


PHASE, OWN = "phase change", "its own jump"  # how the head table names a "since" step that is a jump


def _own_jump(records: list[dict], h, step: int | None) -> int | None:
    """The step of induction head `h`'s own score jump (heads.head_jump: that head's curve, not the best series,
    whose top head can change between snapshots) when it came by `step`; None for another role or no such jump."""
    if h.role != "induction":
        return None
    jump = heads.head_jump(records, h.name)
    return jump.step if jump is not None and (step is None or jump.step <= step) else None


def _since(records: list[dict], h, step: int | None, change_step: int | None) -> tuple[int | None, str]:
    """(since when head `h` has held its role, how that step is named). An induction head with a jump of its own:
    that jump's step, named "the phase change" only where the run's phase change (the best series' jump, the step
    the chart marks and the verdict reads) is at that same step, else its own jump (one screen said "L1H2 ...
    since the phase change at step 1260" beside a verdict crediting L1H1, whose own score jumped at about 1880).
    Else the first of its unbroken run of snapshots in that role (a third step on the same screen, "since step 1880"
    beside a phase change at 1300, once came from the role's first snapshot over the threshold)."""
    own = _own_jump(records, h, step)
    if own is None:
        return h.since, ""
    return own, PHASE if own == change_step else OWN


def _change_step(records: list[dict]) -> int | None:
    change = heads.phase_change(records)
    return change.score.step if change.score is not None else None


def head_rows(records: list[dict], step: int | None) -> list[dict]:
    """The head table at `step`: every head's dominant role (since when), and each score next to its baseline."""
    rows, change_step = [], _change_step(records)
    for h in heads.head_roles(records, step):
        since, why = _since(records, h, step, change_step)
        row: dict[str, Any] = {
            "head": h.name,
            "role": h.role or "-",
            "since step": "-" if since is None else str(since) + (f" ({why})" if why else ""),
        }
        for role in heads.ROLES:
            score, base = h.scores.get(role), h.baselines.get(role)
            row[role] = None if score is None else f"{score:.2f} (uniform {base:.2f})"
        rows.append(row)
    return rows


def role_sentences(records: list[dict], step: int | None) -> list[str]:
    """ "L1H2 is an induction head since step 340 (score 0.81, uniform baseline 0.06)." for each head with a role;
    "since the phase change at step 1260" or "since its own score jumped at step 1880" where the step is that
    head's own jump (`_since`)."""
    change_step, out, found = _change_step(records), [], heads.head_roles(records, step)
    for h in found:
        if h.role is None:
            continue
        since, why = _since(records, h, step, change_step)
        sentence = dataclasses.replace(h, since=since).sentence
        if why == PHASE:
            sentence = sentence.replace(f"since step {since}", f"since the phase change at step {since}")
        elif why == OWN:
            sentence = sentence.replace(f"since step {since}", f"since its own score jumped at step {since}")
        out.append(sentence)
    return out or [_no_role(found)]


def _no_role(found: list) -> str:
    """Where no head has a role: says so, with the nearest (a review read an empty list under "Heads at step 300",
    the best score 1.7x its baseline)."""
    near = [(score / base, h, role) for h in found for role, score in h.scores.items()
            if score is not None and (base := h.baselines.get(role))]  # fmt: skip
    said = f"No head has a role yet: no score reaches {heads.ROLE_RATIO:g}x its uniform baseline"
    if not near:
        return said + "."
    ratio, h, role = max(near, key=lambda n: n[0])
    return (f"{said}. The nearest: {h.name}'s {heads.ROLE_NOUNS[role].split(' ', 1)[1].removesuffix(' head')} score "
            f"{h.scores[role]:.3f} against its baseline {h.baselines[role]:.3f} ({ratio:.1f}x).")


def residual_caption(records: list[dict]) -> str:
    """What the residual-stream chart shows, from its own numbers: how the stream into each block and what that
    block's LayerNorm hands on changed between the first and the newest measurement (the fixed sentence it
    replaces said the LayerNorm line "stays about the same size" beside a chart where it rose from 8 to 10)."""
    measured = [r for r in records or [] if (r.get("residual") or {}).get("resid")]
    if len(measured) < 2:
        return "Not enough data yet: the residual stream has been measured at fewer than two steps."
    first, last = measured[0], measured[-1]
    a, b = first["residual"], last["residual"]
    span = f"From step {first['step']} to step {last['step']}"

    def change(old: list, new: list, i: int) -> tuple[float, float, float] | None:
        if i >= min(len(old), len(new)) or not old[i]:
            return None
        return float(old[i]), float(new[i]), float(new[i]) / float(old[i])

    parts = []
    streams = [c for i in range(len(b["resid"])) if (c := change(a["resid"], b["resid"], i))]
    norms = [(i, c) for i in range(len(b.get("ln") or [])) if (c := change(a.get("ln") or [], b["ln"], i))]
    if streams:
        x, y, k = streams[-1]
        parts.append(f"the stream into ln_f went from {x:.1f} to {y:.1f} (×{k:.2f})")
    for i, (x, y, k) in norms:
        name = "ln_f's output" if i == len(b["resid"]) - 1 else f"layer {i}'s LayerNorm output"
        parts.append(f"{name} from {x:.1f} to {y:.1f} (×{k:.2f})")
    if not parts:
        return "Not enough data yet: the measurements have no norms to compare."
    text = f"{span}: " + ", ".join(parts) + "."
    if streams and norms:
        stream_move = max(abs(k - 1) for _, _, k in streams)
        norm_move = max(abs(k - 1) for _, (_, _, k) in norms)
        if norm_move < 0.5 * stream_move:
            text += " LayerNorm divides out the stream's size: what it hands on changed less than the stream did."
        else:
            text += (" What LayerNorm hands on changed about as much as the stream here: its output size is set by "
                     "its learned gain, which moved too, not by the stream's size.")  # fmt: skip
    return text


# ---------------------------------------------------------------- at a checkpoint


def _probe(loaded, text: str) -> tuple[torch.Tensor, list[str]]:
    return encode_probe(loaded.model, loaded.tokenizer, text)


@st.cache_data(max_entries=32, show_spinner=False)
def ablation(run_dir: str, step: int, probe_text: str, mode: str) -> dict:
    """lens.head_ablation (one mode) at a checkpoint on ABLATION_BATCHES validation batches and the probe text,
    plus the seconds it took (cached per checkpoint, probe and mode: a click computes one mode, half the work)."""
    import time

    loaded = resources.cached_model(run_dir, step)
    config = loaded.config
    corpus = load_corpus(run_data(run_dir, config), config.model.max_seq_len)  # a pasted corpus: its corpus.txt
    generator = torch.Generator().manual_seed(0)
    batches = [corpus.get_batch("val", config.train.batch_size, generator) for _ in range(ABLATION_BATCHES)]
    x = torch.cat([b[0] for b in batches])  # 20 x (B, T) -> (20 B, T)
    y = torch.cat([b[1] for b in batches])
    try:  # the probe's panel needs a probe the model can read; the page says what is wrong with one it cannot
        idx = _probe(loaded, probe_text)[0]
    except TinyGPTError:
        idx = None
    started = time.perf_counter()
    out = lens.head_ablation(loaded.model, x, y, idx if idx is not None and idx.shape[1] > 1 else None, modes=(mode,))
    out["seconds"] = time.perf_counter() - started
    out["tokens"] = int(x.numel())
    out["windows"] = tuple(x.shape)  # (20 B, T)
    out["held_out"] = int(corpus.val_data.numel())  # the split they are drawn from: on a short text, 5x overlap
    out["batches"] = ABLATION_BATCHES  # x is that many batches end to end: the noise pairs them (ablation_words)
    return out


def ablation_figure(
    result: dict, mode: str, selected: tuple[int, int] | None, large: bool, copy: list[list[float]] | None = None
):
    """The ablation heatmap: validation batches, the probe text and, in zero mode where given, `copy`
    (`second_copy`: the second copy of the repeated probe, what the lesson's ablation check judges)."""
    deltas = {"validation batches": result[mode]["val"]}
    if "probe" in result[mode]:
        deltas["probe text"] = result[mode]["probe"]
    if copy is not None and mode == "zero":  # measured with zero ablation only
        deltas[SECOND_COPY] = copy
    return charts.ablation_heatmap(deltas, mode=mode, selected=selected, large=large)


# Clicking a head. The Head select box (circuits_keys.W_CIRC_HEAD) holds the chosen head; a click on a heatmap cell or a
# table row sets it in the widget's callback, before the box is drawn, so box, outline and probe chart agree. The
# clickable widgets' keys end in the head chosen now: after any choice they start with nothing selected, so a
# click on any other head is always a change (a selection that outlived it would swallow the next click).


def _cell_clicked(key: str, names: list[str], num_layers: int, num_heads: int) -> None:
    picked = charts.clicked_head(state.get(key), num_layers, num_heads)
    if picked is not None:
        circuits_keys.choose_circuit_head(heads.head_name(*picked), names)


def _row_clicked(key: str, names: list[str], rows: list[dict]) -> None:
    chosen = ((state.get(key) or {}).get("selection") or {}).get("rows") or []
    if chosen and 0 <= chosen[0] < len(rows):
        circuits_keys.choose_circuit_head(rows[chosen[0]]["head"], names)


def ablation_chart(fig, names: list[str], num_layers: int, num_heads: int, caption: str, probe: bool) -> None:
    """The ablation heatmap (box key circ_ablation, as `chart` draws it), clickable: a click on a cell chooses
    that head for the probe chart below. `probe`: the probe's panel is drawn (its help said only then)."""
    key = f"{circuits_keys.W_CIRC_CELLS}_{state.get(circuits_keys.W_CIRC_HEAD)}"
    with st.container(key="circ_ablation"):
        st.plotly_chart(fig, key=key, on_select=functools.partial(_cell_clicked, key, names, num_layers, num_heads),
                        selection_mode="points", config={"displaylogo": False}, theme=None)  # fmt: skip
        st.caption(" ".join([CHART_HELP["ablation_heatmap"], *[CHART_HELP["ablation_probe"]] * probe,
                             "Click a cell to see what that head does below.", caption]))  # fmt: skip
        explain.show_code_of([lens.head_ablation, lens.ablated_loss_sums, lens.head_ablation_reference])


def head_table(rows: list[dict], names: list[str]) -> None:
    """The head table at a step; a click on a row chooses that head for the ablation views."""
    key = f"{circuits_keys.W_CIRC_TABLE}_{state.get(circuits_keys.W_CIRC_HEAD)}"
    clicked = functools.partial(_row_clicked, key, names, rows)
    fonts.grid_place().dataframe(rows, hide_index=True, key=key, on_select=clicked, selection_mode="single-row",
                                 width="stretch")  # fmt: skip


def ablated_figure(run_dir: str, step: int, text: str, layer: int, head: int, mode: str, result: dict, large: bool):
    """The probe's next-character probabilities with one head ablated, as a figure."""
    loaded = resources.cached_model(run_dir, step)
    idx, tokens = _probe(loaded, text)
    value = result["means"][layer, head] if mode == "mean" else None
    clean, ablated = lens.ablated_probs(loaded.model, idx, layer, head, value)
    name = heads.head_name(layer, head)
    return charts.ablated_probs_chart(tokens, clean, ablated, loaded.tokenizer.vocab, head=name, large=large)


LENS_ON_PROJECTOR = 16  # probe positions the lens draws at Large fonts: 31 made 10 px letters on a projector


def logit_lens_view(run_dir: str, step: int, text: str, large: bool):
    """(figure, caption: where the right next character tops the lens); Large fonts draw LENS_ON_PROJECTOR cells."""
    loaded = resources.cached_model(run_dir, step)
    idx, tokens = _probe(loaded, text)
    out = lens.logit_lens(loaded.model, idx)
    right = np.array([[loaded.tokenizer.vocab[i] for i in row] for row in out["top_ids"][:, :-1, 0]])
    hits = right == np.array(tokens[1:])[None, :]  # (L+1, T-1) top guess is the next character
    parts = [f"{name}: {int(row.sum())}/{hits.shape[1]}" for name, row in zip(out["names"], hits, strict=True)]
    keep = slice(-LENS_ON_PROJECTOR if (cut := large and len(tokens) > LENS_ON_PROJECTOR) else None, None)
    said = (f"Top guess right, by where the stream is read: {', '.join(parts)}." + (f" The chart shows the probe's "
            f"last {LENS_ON_PROJECTOR} characters at Large fonts; counts cover all {hits.shape[1]}." if cut else ""))
    fig = charts.logit_lens_chart(out["names"], tokens[keep], out["top_ids"][:, keep], out["top_probs"][:, keep],
                                  loaded.tokenizer.vocab, large=large)  # fmt: skip
    return fig, said


# ---------------------------------------------------------------- the live head switch


def heads_off(knobs: dict) -> list[str]:
    """The heads switched off now, as ["L1H2", ...], from the run's live knobs."""
    return [heads.head_name(lay, h) for lay, h in sorted(parse_heads(knobs.get("ablated_heads") or ""))]


def heads_text(names: list[str]) -> str:
    return format_heads(parse_heads(",".join(names)))


# ---------------------------------------------------------------- the induction experiment


def start_experiment(source: str, seed: int, learner, check_slot: bool = True) -> None:
    """Start the 2-layer run and its 1-layer control side by side, one training slot of `learner`'s
    (tinygpt.ui.people.admission), as the page's experiment; then redraw."""
    configs = induction.induction_configs(source, seed)
    started = admission.start(learner, configs, check_slot=check_slot)
    circuits_keys.set_circuit_runs(started)
    in_view.set_run_id(started[next(iter(configs))])  # the heads section below follows the 2-layer run
    st.rerun()


def experiment_state(store, runs: dict[str, str]) -> tuple[dict[str, RunReader], dict[str, list[dict]], bool]:
    """(readers, score records, all ended) of an experiment's runs; readers missing runs are left out."""
    readers, records = {}, {}
    for label, run_id in runs.items():
        try:  # the server's shared reader: a long run is parsed once, not at every script run of every learner
            rd = readers[label] = in_view.run_reader(store, run_id)
        except RunStoreError:  # a deleted or damaged run: left out
            continue
        records[label] = scores(rd.run_dir)
    ended = bool(readers) and all(rd.status().get("state") in ENDED_STATES for rd in readers.values())
    return readers, records, ended


@st.cache_data(max_entries=32, show_spinner=False)
def _final_at(run_dir: str, step: int) -> dict | None:
    """circuits.final_induction at one checkpoint (cached: a checkpoint never changes; 256 probe rows, ~0.1 s)."""
    try:
        return induction.final_induction(run_dir, step)
    except Exception:  # noqa: BLE001 - an unreadable checkpoint: the verdict says "not enough data", not a crash
        return None


def final_scores(readers: dict[str, RunReader], ended: bool) -> dict[str, dict | None]:
    """{label: the best induction head measured on VERDICT_ROWS probe rows at the run's last checkpoint}, what
    the verdict judges on (the live per-snapshot scores use 2 rows); {} while the runs train."""
    if not ended:
        return {}
    out: dict[str, dict | None] = {}
    for label, rd in readers.items():
        steps = rd.checkpoints()
        out[label] = _final_at(str(rd.run_dir), steps[-1]) if steps else None
    return out


def experiment_verdict(readers: dict[str, RunReader], records: dict[str, list[dict]], ended: bool):
    """The induction verdict with each run's result, so a run that stopped before its step budget is "not enough
    data", never judged (the Circuits page, the Experiments entry and the lesson read this one verdict)."""
    results = {label: read_result(rd) for label, rd in readers.items()} if ended else None  # ran to the end?
    return induction.induction_verdict(records, ended, final_scores(readers, ended), runs=results)


def experiment_progress(readers: dict[str, RunReader], ended: bool) -> None:
    """While the experiment's runs train: a bar over all their planned steps and when the verdict should come,
    from the runs' own recent pace (runinfo.verdict_progress); once they ended, each run's status line."""
    if ended:  # each run's status line, its reason in this viewer's words ("stopped by you" only for who did)
        viewer = room.current()
        said = [f"{label}: {runinfo.status_line(rd.status(), rd.metrics, rd.config(), viewer)}"
                for label, rd in readers.items()]  # fmt: skip
        st.caption(safe.md(" · ".join(said)))
        return
    fraction, text = runinfo.verdict_progress({label: (rd.status(), rd.metrics) for label, rd in readers.items()})
    with st.container(key="circ_progress"):
        st.progress(min(1.0, max(0.0, fraction)))
        st.caption(safe.md(text))


def experiment_figure(readers: dict[str, RunReader], records: dict[str, list[dict]], large: bool):
    series, changes, baseline = {}, {}, None
    for label, recs in records.items():
        series[label] = {"best": heads.best_series(recs), "copy": heads.copy_loss_series(recs),
                         "train": readers[label].metrics}  # fmt: skip
        change = heads.phase_change(recs)
        baseline = baseline or change.baseline
        if change.score is not None:
            changes[label] = {"step": change.score.step, "label": f"{label}: phase change @{change.score.step}"}
    return charts.phase_change_chart(series, changes=changes, baseline=baseline, threshold=heads.ROLE_THRESHOLD,
                                     large=large)  # fmt: skip


PROVISIONAL = "provisional: the run is still training, later snapshots can move it"


def change_caption(
    records: dict[str, list[dict]], ended: bool = True, final: dict[str, dict | None] | None = None
) -> str:
    """Where the red rules are: each run's detected phase change, in words; provisional until the runs end (the
    step is where the score's biggest rise lies so far, which more snapshots can move). Each run's best head is
    the verdict's final measurement where `final` ({label: final_induction(...)}, `final_scores`) has it, else the
    newest snapshot's, each said with its source; a run whose snapshots pick another head says so after. The
    phase change is the snapshots' best score's jump, said with whose score that was at the jump and at the end
    (heads.PhaseChange.whose); the named best head gets its own curve's jump step (heads.head_jump), if any."""
    parts, notes = [], []
    for label, recs in records.items():
        change, measured, live = heads.phase_change(recs), (final or {}).get(label), best_head.snapshot_best(recs)
        when = f"phase change at step {change.score.step}" if change.score is not None else "no phase change"
        when += f" in the snapshots' best score ({change.whose})" if change.score is not None else ""
        when += "" if change.score is not None or ended else " yet"
        if measured:
            best = f"best head {best_head.fresh_words(measured)}"
        elif live is not None:
            best = f"best head in {best_head.SNAPSHOTS}: {live['name']}, {live['score']:.2f} at step {live['step']}"
        else:
            best = "no induction scores yet"
        named = measured["head"] if measured else (live or {}).get("name")
        if change.score is not None and named:  # the named head's own jump, never the best series' step
            best += "; " + induction.own_words(named, heads.head_jump(recs, named))
        parts.append(f"{label}: {when} ({best})")
        if note := best_head.heads_disagree(recs, measured):
            notes.append(f"{label}: {note[0].lower()}{note[1:]}")
    tail = "" if ended else f" ({PROVISIONAL})"
    return " ".join(["Red rules: " + "; ".join(parts) + tail + ".", *notes])


def verdict_final(store, run_id: str) -> tuple[str, dict] | None:
    """(its label, the verdict's final measurement) of the run in view when it is one of this session's induction
    experiment runs and the experiment ended (`final_scores`: the numbers the verdict reads); None otherwise."""
    runs = circuits_keys.circuit_runs(list(induction.INDUCTION_VARIANTS)) or {}
    label = next((lab for lab, rid in runs.items() if rid == run_id), None)
    if label is None:
        return None
    readers, _, ended = experiment_state(store, runs)
    final = final_scores(readers, ended).get(label)
    return (label, final) if final else None


def change_mark(records: list[dict], live: bool) -> dict | None:
    """The heads chart's phase-change marker, saying "provisional" while the run trains."""
    change = heads.phase_change(records)
    if change.score is None:
        return None
    return {"step": change.score.step, "label": f"phase change @{change.score.step}" + (" (provisional)" * live)}


def induction_entry(store) -> None:
    """The Experiments page's entry for the induction experiment, refreshed every 2 s while its runs train. The
    fragment is made at each page run, so whether it refreshes follows the runs' state (CIRC_LIVE)."""
    backlog.live_fragment(2.0 if state.get(circuits_keys.CIRC_LIVE) else None)(_induction_entry)(store)


def _induction_entry(store) -> None:
    """The induction-head experiment lives on Circuits (its charts are the head-role views); here: what it shows,
    how this session's runs stand, and a link that opens them there."""
    with st.container(border=True, key="lab_induction"):
        st.markdown("**Induction heads: watch a circuit form** (on the Circuits page)")
        st.caption(induction.INDUCTION_EXPECTED)
        labels = list(induction.INDUCTION_VARIANTS)
        runs = circuits_keys.circuit_runs(labels)
        readers, records, ended = experiment_state(store, runs) if runs else ({}, {}, True)
        if not readers:  # none started in this session, or its runs were deleted since
            if state.get(circuits_keys.CIRC_LIVE):  # nothing left to refresh for
                state.put(circuits_keys.CIRC_LIVE, False)
                st.rerun()
            st.page_link("pages/circuits.py", label="Run it on Circuits: 2 layers against a 1-layer control",
                         icon=":material/hub:")  # fmt: skip
            return
        for rd in readers.values():  # a page looking at a run keeps it going (runs pause when nobody watches)
            resources.touch(rd.run_id)
        if bool(state.get(circuits_keys.CIRC_LIVE)) != (not ended):  # refresh exactly while the runs train
            state.put(circuits_keys.CIRC_LIVE, not ended)
            st.rerun()
        experiment_progress(readers, ended)
        verdict = experiment_verdict(readers, records, ended)
        st.caption(f"**{verdict.status.capitalize()}.** {safe.md(verdict.sentence)}")
        st.page_link("pages/circuits.py", label="See its phase change and the 2-layer run's heads on Circuits",
                     icon=":material/hub:", query_params={in_view.URL_RUN: runs[labels[0]],
                                                          circuits_keys.URL_CIRC: ",".join(runs.values())})  # fmt: skip
