"""Support for the Experiments page: start a pitfall experiment's runs side by side, read their numbers, and show
the verdict in the colour it earned.

`results()` turns each run folder into an `experiments.RunResult` (tinygpt.lab.results.read_result, with the
checkpoint probes cached here), which the experiment's own `verdict()` judges. `show_verdict()` is the one place
that picks the box: green only when the pitfall reproduced, a warning when it did not, neutral while training; the
box follows the pitfall's own clauses, and a consequence of it that did not show is said apart, neutral.
Nothing here is canned: every number comes from the runs or from a measurement taken on this machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import streamlit as st
import torch

from tinygpt import model as model_lib
from tinygpt.config import MAX_TEXT_FIELDS, DataConfig, TransformerConfig
from tinygpt.data import SYNTHETIC_TASKS, text_from_user
from tinygpt.errors import DataError, TinyGPTError
from tinygpt.lab.checks import FAIL
from tinygpt.lab.experiment import Experiment
from tinygpt.lab.health import TREND_WINDOW, check_training_metrics, held_out_check, run_health_checks
from tinygpt.lab.memory import memory_rows
from tinygpt.lab.pitfalls import shape_drift
from tinygpt.lab.results import LEAK_WINDOWS, checkpoint_probe, finite_mean, probe_batch, read_result
from tinygpt.lab.step_checks import unjudged_under_a_model_leak
from tinygpt.lab.verdict import RunResult, Verdict, held_out_windows
from tinygpt.runs.knobs import under_leak
from tinygpt.runs.models import load_model
from tinygpt.runs.reader import RunReader
from tinygpt.runs.window import metrics_between
from tinygpt.ui import state
from tinygpt.ui.experiments import experiments_keys
from tinygpt.ui.host import runlist
from tinygpt.ui.host.resources import head_stats
from tinygpt.ui.people import admission, room
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import explain, fonts
from tinygpt.ui.train import settings
from tinygpt.ui.words import run_words, safe

# The corpora an experiment may run on: the page's label -> the data source (the learner's own text: "text").
LAB_SOURCES = {
    settings.SOURCE_SHAKESPEARE: "shakespeare",
    **{f"Synthetic: {t}": f"synthetic:{t}" for t in SYNTHETIC_TASKS},
    settings.SOURCE_UPLOAD: "text",
    settings.SOURCE_PASTE: "text",
}


@dataclass
class CorpusChoice:
    label: str  # a key of LAB_SOURCES ("" for an experiment with a corpus of its own)
    source: str  # the data source its runs train on
    pasted: str = ""
    uploaded: bytes | None = None
    uploaded_name: str = ""  # the file's name: the runs' names say it (DataConfig.text_name)


def corpus_picker(experiment: Experiment, link_source: str | None, column) -> CorpusChoice:
    """The corpus widgets in `column`: the choice (fixed, shown disabled, for an experiment with a corpus of its
    own), the uploader or text box when it is the learner's own text, and a warning where the effect was measured
    not to show on that corpus. `link_source`: a workshop link's ?source= preselects it."""
    if experiment.source:
        shown = next((k for k, v in LAB_SOURCES.items() if v == experiment.source), experiment.source)
        column.text_input("Corpus (every run)", shown, disabled=True)
        return CorpusChoice("", experiment.source)
    state.init(
        experiments_keys.W_LAB_SOURCE, next((k for k, v in LAB_SOURCES.items() if v == link_source), "Tiny Shakespeare")
    )
    # Kept over page visits (persist_state): a review's learner came back from Runs to Tiny Shakespeare and seed
    # 1337, her pasted text gone, and ran the pair on Shakespeare
    label = column.selectbox(
        "Corpus (every run)", list(LAB_SOURCES), key=experiments_keys.W_LAB_SOURCE, persist_state="session"
    )
    choice = CorpusChoice(label, LAB_SOURCES[label])
    if label == settings.SOURCE_UPLOAD:
        file = column.file_uploader(settings.UPLOAD_LABEL, type=None, key=experiments_keys.W_LAB_UPLOAD)
        choice.uploaded = file.getvalue() if file is not None else None
        choice.uploaded_name = file.name if file is not None else ""
    elif label == settings.SOURCE_PASTE:
        choice.pasted = column.text_area(
            "Text to train on", key=experiments_keys.W_LAB_PASTE, height=120, max_chars=MAX_TEXT_FIELDS["text"],
            persist_state="session",
        )
    if why := experiment.does_not_show_on.get(choice.source):
        column.warning(f"Measured: this pitfall does not show on this corpus: {why}.", icon=":material/info:")
    elif not experiment.measured_on(choice.source):
        column.info(
            "Not benchmarked on this corpus: the benchmark ran every pitfall on Tiny Shakespeare, the copy task, two "
            "English texts and Python source code, never on this text. The verdict below is judged from these runs "
            "alone, so it still says whether it showed.",
            icon=":material/info:",
        )
    # Before the runs start: a learner's text shorter than what the runs read may be learned by heart, and then the
    # verdict says "not enough data" (held-out loss tells memorising from learning): said now, not after.
    # Only for text a run would take: a review read "This text has 6 characters ... about 30720 times over" beside
    # "the text is empty" (a paste of spaces), and the same beside "the file is not UTF-8 text"
    try:
        own = text_from_user(choice.pasted or choice.uploaded or "") if (choice.pasted or choice.uploaded) else ""
    except TinyGPTError:
        own = ""  # the runs' start says what is wrong with it
    if warning := experiment.held_out_warning(own):
        column.warning(warning, icon=":material/info:")
    return choice


def show_claims(experiment: Experiment, source: str, where=st) -> None:
    """Before the runs start: which clauses of the claim are the pitfall itself and which are consequences, each
    with the corpora it was seen on and whether `source` is one of them (Experiment.claims), in `where` (the page
    passes a container under the description, filled once the corpus is chosen)."""
    for line in experiment.claims(source):
        where.caption(line)


def experiment_data(experiment: Experiment, choice: CorpusChoice) -> DataConfig:
    """The data every run of `experiment` trains on. The learner's own text is checked against the longest context
    among them (ConfigError or DataError says what to fix: an empty box, a file that is not UTF-8 text, too short)."""
    if choice.source != "text":
        return DataConfig(source=choice.source)
    block_size = max(c.model.max_seq_len for c in experiment.configs(source="shakespeare").values())
    try:
        return settings.data_config(choice.label, choice.pasted, choice.uploaded, block_size, choice.uploaded_name)
    except DataError as e:  # the lab sets the context itself: "or lower max_seq_len" named no control here (a review)
        raise DataError(str(e).replace(" or lower max_seq_len", "")) from None


def start_experiment(
    key: str, experiment: Experiment, source: str, seed: int, check_slot: bool = True, text: str = "",
    text_name: str = "",
) -> None:  # fmt: skip
    """Start every variant of an experiment (same data, same seed) as the page's runs of it, owned by this
    learner and as one training slot (tinygpt.ui.people.admission: the room's budget and time limit apply to each
    run), then redraw. `text`: the corpus when `source` is "text" (the learner's own); `text_name` its file's."""
    made = experiment.configs(seed=seed, source=source, text=text)
    configs = {label: settings.with_text_name(config, text_name) for label, config in made.items()}
    experiments_keys.set_lab_runs(
        key, admission.start(room.current(), configs, check_slot=check_slot, priority="prepared")
    )
    st.rerun()


def offer_own_runs(store, key: str, experiment: Experiment) -> None:
    """The learner's newest runs of this experiment (runlist.newest_own_experiment), named, with a button that
    opens them here: a tab without ?lab= in its address showed none of them."""
    own = runlist.newest_own_experiment(store, room.current(), experiment.variants)
    if not own:
        return
    names = runlist.run_names(store)
    st.caption("Your last runs of this experiment: " + ", ".join(f"{label} **{safe.md(names.get(run) or run)}**"
                                                                  for label, run in own.items()) + ".")  # fmt: skip
    if st.button("Open them", key="lab_open_own", icon=":material/open_in_new:"):
        experiments_keys.set_lab_runs(key, own)
        st.rerun()


def not_its_runs(experiment: Experiment, store):
    """For experiments_keys.lab_runs: {label: run id} -> why those runs are not `experiment`'s, or None (a run not
    there yet is the page's to say, so it counts as matching)."""

    def check(named: dict[str, str]) -> str | None:
        configs = {}
        for label, run_id in named.items():
            reader = in_view.reader(store, run_id)
            configs[label] = reader.config() if reader is not None else {}
        return experiment.not_its_runs(configs)

    return check


@st.cache_data(max_entries=200, show_spinner=False)
def probe_of(run_dir: str, step: int) -> dict[str, float]:
    """Leak score and no-peek loss of a run's checkpoint (cached: a checkpoint never changes once written)."""
    try:
        return checkpoint_probe(run_dir, step)
    except Exception:  # noqa: BLE001 - the verdict shows n/a rather than failing the page
        return {}


def result_of(reader: RunReader, probes: bool = False) -> RunResult:
    return read_result(reader, probe_of if probes else None)


def results(readers: dict[str, RunReader | None], experiment: Experiment | None = None) -> dict[str, RunResult]:
    """{variant label: its RunResult} for the runs that exist (readers already polled by the page)."""
    probes = bool(experiment and experiment.probes)
    return {label: result_of(reader, probes) for label, reader in readers.items() if reader is not None}


def consequence_notes(verdict: Verdict, experiment: Experiment | None = None) -> tuple[str, list[str]]:
    """(the verdict's sentence without its consequence clauses, those clauses' own sentences). A consequence that
    did not show on this text ("Smaller attention gradients unscaled: measured: not seen on this text (it was on Tiny
    Shakespeare).") or was not measured is reported apart, neutral: it is not the pitfall, and the box's colour is
    the pitfall clauses' alone (verdict.decide). `experiment`: its consequences' names, for the not-measured ones."""
    sentence, notes = verdict.sentence, []
    names = dict.fromkeys([*verdict.not_seen, *(experiment.consequences if experiment else ())])
    for name in names:
        said = name.capitalize()  # as verdict.decide writes them
        for head, tail in ((f" {said}: measured: not seen on this text (it was on ", ")."),
                           (f" {said} (a consequence seen on ", "): not measured.")):  # fmt: skip
            start = sentence.find(head)
            end = sentence.find(tail, start + len(head)) if start >= 0 else -1
            if end >= 0:
                notes.append(sentence[start : end + len(tail)].strip())
                sentence = sentence[:start] + sentence[end + len(tail) :]
    return sentence, notes


# Above the room's runs on a session that has none of its own: the page shows them (a review's instructor switched
# to another pitfall at step 8 and was offered to train its variants again, beside the room's finished runs).
ROOM_RUNS_NOTE = (
    ":material/groups: **The room's runs, prepared for the lesson**: shown here to look at (nobody's runs change "
    "from this page). Press **Run side by side** to train your own pair."
)


def runs_about(runs: dict[str, str], readers: dict[str, RunReader | None], room_runs: dict | None) -> str:
    """Whose runs the page's verdict judged, on which corpus and seed, from their configs: "your runs (your text,
    seed 4242)", or "the room's runs (Tiny Shakespeare, seed 1337)" where they are the lesson's, `room_runs` (the
    lesson pane's check of the same title names its runs the same way)."""
    configs = [rd.config() for rd in readers.values() if rd is not None]
    return run_words.runs_about(configs, room.current(), room=bool(room_runs) and dict(room_runs) == dict(runs))


ONE_SEED = (":material/casino: **One seed.** Each ± is the paired noise of these runs' batches and held-out windows "
            "at this seed, not the spread between seeds: another seed starts every run from other weights and batches. "
            "To see whether the verdict holds, change **Seed (every run)** and run it again.")  # fmt: skip
# The same for a verdict that prints no ± (a step, a tensor, row sums): "Each ± is …" under none (a review)
ONE_SEED_PLAIN = (":material/casino: **One seed.** Another seed starts every run from other weights and batches. To "
                  "see whether the verdict holds, change **Seed (every run)** and run it again.")  # fmt: skip


def show_verdict(verdict: Verdict, experiment: Experiment | None = None, about: str = "") -> None:
    """The verdict box, coloured by `reproduced` (the pitfall's own clauses), with the expected effect; then each
    consequence of the pitfall as measured, neutral, never as a failure (`consequence_notes`); then the numbers it
    was judged on. `about`: whose runs, which corpus and seed (`runs_about`), said first."""
    on = f"On {about}: " if about else ""
    if verdict.reproduced is None and not verdict.undecided:
        st.info(f"**No verdict yet.** {on}{verdict.sentence}", icon=":material/hourglass_top:")
        return
    sentence, notes = consequence_notes(verdict, experiment)
    text = f"{on}{sentence}\n\nExpected: {verdict.expected}."
    if verdict.reproduced is None:  # ended, but a clause was not measured (or the memory demo's CPU counts)
        st.info(f"**{verdict.undecided.capitalize()}: no verdict.** {text}", icon=":material/help:")
    elif verdict.reproduced:
        st.success(f"**Reproduced.** {text}", icon=":material/check_circle:")
    else:
        st.warning(f"**Did not reproduce on this run.** {text}", icon=":material/warning:")
    for note in notes:
        st.caption(f":material/straighten: **A consequence, not the pitfall.** {note}")
    if verdict.reproduced is not None and (experiment is None or experiment.measure is None):
        # a review: no verdict said whether another seed could overturn it
        st.caption(ONE_SEED if "±" in verdict.sentence else ONE_SEED_PLAIN)
    rows = [{"measured": name, "value": _cell(value)} for name, value in verdict.observed.items()]
    if rows:  # a verdict of "not enough data" may measure nothing beyond its sentence: no empty table under it
        # A table, not a grid: its cells wrap and take the page's font size (a review at Large fonts read "held-out
        # loss 2.226 no warmup vs 1.749 warm…", cut, in a grid that stayed small)
        st.table(rows, hide_index=True)


def sample_caption(label: str, run) -> str:
    """ "naive softmax · at step 0, before any training: the run diverged at step 44 and wrote no later sample": a
    run's latest sample says which model wrote it (a review read a diverged run's step-0 text as its output)."""
    step = run.sample_step
    if step is None:
        return label
    said = f"{label} · at step {step:,}" + (", before any training" if step == 0 else "")
    if run.diverged_step is not None and step < run.diverged_step:
        said += f": the run diverged at step {run.diverged_step:,} and wrote no later sample"
    return said


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if value != 0 and abs(value) < 1e-2 else f"{value:.3f}"
    return "n/a" if value is None else str(value)


def health_checks(run_dir: str, step: int, first_step: dict | None = None) -> tuple[list[dict], float]:
    """The model health checklist's checks of one checkpoint of a run, as table rows (pass / FAIL / not enough
    data), and the checkpoint's clip (max_grad_norm). `first_step`: the run's step-1 record, whose loss is the
    initialised model's (the initial-loss check reads it, else a seeded fresh model)."""
    loaded = load_model(run_dir, int(step))
    # The windows the shape step's verdict probed (results.probe_batch): the same checkpoint gives the same row sums
    # and leak here as there, and each row says what it read
    x, y = probe_batch(loaded, run_dir)  # (4, T) each
    leak_x = x[:LEAK_WINDOWS]  # (2, T)
    # The initial-loss check reads the run's first step, or a new model on those windows, never the checkpoint:
    # "(checkpoint of step 200): a freshly initialised model ..." read as the checkpoint's score (a review)
    fresh = f"{held_out_windows(*map(int, x.shape))}, read by a new model, not the checkpoint"
    on = {"no future leak": held_out_windows(int(leak_x.shape[0]), int(x.shape[1]), int(step)),
          "initial loss close to ln(vocab)": "the run's first training batch" if first_step else fresh,
          "shape contracts": f"random tokens, 2 x {loaded.config.model.max_seq_len} and one too long"}  # fmt: skip
    batch = held_out_windows(int(x.shape[0]), int(x.shape[1]), int(step))
    checks = run_health_checks(loaded.model, x, y, leak_idx=leak_x, first_step=first_step)
    return [_row(c, on.get(c.name, batch)) for c in checks], float(loaded.config.train.max_grad_norm)


def _row(c, on: str) -> dict:
    measured = c.shown or ("" if c.value is None else f"{c.value:.4g}")
    return {"check": c.name, "result": c.outcome, "measured": measured,
            "threshold": c.threshold, "measured on": on, "detail": c.detail}  # fmt: skip


@st.cache_data(max_entries=64, show_spinner=False)
def _checkpoint_rows(run_dir: str, step: int, first_step: dict | None) -> tuple[list[dict], float]:
    """health_checks, once per checkpoint: ~0.15 s on a CPU for a lesson run (measured on the shape-drift runs), so
    the tab shows them at once instead of behind a button, and a live run's refreshes do not measure them again."""
    return health_checks(run_dir, step, first_step)


FULL_STEPS = 4000  # at least the newest this many steps the step checks read one by one (a reader thins older ones)


def health_rows(
    run_dir: str,
    step: int,
    metrics: list[dict],
    clip: float | None = None,
    evals: list[dict] | None = None,
    leaks: list[tuple] = (),
    changes: tuple[tuple[int, str], ...] = (),
) -> list[dict]:
    """The checklist: the checkpoint at `step`'s checks, then the step checks on every step the run has recorded
    (`metrics`, to its newest step, not only to the checkpoint: a review's diverged softmax run, checkpointed at
    step 0 and broken at step 59, read "gradient norm finite: not enough data: no steps yet"). `clip`: the run's
    max_grad_norm now (a live knob), else the checkpoint's. `evals` (those under a leaking mask are left out): the
    held-out check too, so the checklist and a "memorised" verdict read the same evidence. The step checks read at
    least the newest FULL_STEPS steps as written (a review: "over those 50 steps" of a page's thinned records, every
    16th step, and a plateau FAIL that every step read as falling); `leaks` ((mask, a, b) spans): a loss trend is
    not judged on steps under a leaking mask (Train and Gradients judge none there either); `changes` ((step,
    words) of each live change): the held-out check names those between the evals it compares."""
    first = metrics[0] if metrics and metrics[0].get("step") == 1 else None
    rows, checkpoint_clip = _checkpoint_rows(run_dir, int(step), first)
    last = metrics[-1].get("step") if metrics else None
    on = f"the run's recent steps, to step {last:,}" if isinstance(last, int) else "the run's recent steps"
    if isinstance(last, int):  # the thinned records before the window, then every step in it
        # From a FULL_STEPS boundary on, to the end: one window a training run's refreshes catch up on (window.py reads
        # only what is new), not a new one read from the file's start at every step
        metrics = _filled(metrics, metrics_between(run_dir, max(1, (last - FULL_STEPS) // FULL_STEPS * FULL_STEPS + 1),
                                                   math.inf))  # fmt: skip
        metrics = _filled(metrics, _before_the_decay(run_dir, metrics))
    # The checkpoint leaks under a mask that hides the future (the silent shape bug): no loss row is judged
    model_leaks = not under_leak(int(step), leaks) and any(
        r["check"] == "no future leak" and r["result"] == FAIL for r in rows)  # fmt: skip
    judged = unjudged_under_a_model_leak if model_leaks else list
    steps = judged(check_training_metrics(metrics, checkpoint_clip if clip is None else float(clip), leaks))
    rows = rows + [_row(c, on) for c in steps]  # a new list: `rows` is the cache's
    if evals is not None:
        newest = evals[-1].get("step") if evals else None
        read = f"the run's evals, to step {newest:,}" if isinstance(newest, int) else "the run's evals"
        kept = [e for e in evals if not under_leak(e.get("step"), leaks)]  # under a leak: copying, no evidence
        masks = sorted({m for m, _, _ in leaks})
        rows += [_row(c, read) for c in judged([held_out_check(kept, len(evals) - len(kept), " or ".join(masks),
                                                               changes)])]  # fmt: skip
    return rows


def _filled(metrics: list[dict], full: list[dict]) -> list[dict]:
    """`metrics` with the steps `full` spans (every step, as written) in place of its thinned records there."""
    full = [m for m in full if isinstance(m.get("step"), int) and m["step"] <= (metrics[-1].get("step") or 0)]
    if not full:
        return metrics
    lo, hi = full[0]["step"], full[-1]["step"]
    return [m for m in metrics if (m.get("step") or 0) < lo] + full + [m for m in metrics if (m.get("step") or 0) > hi]


def _before_the_decay(run_dir: str, metrics: list[dict]) -> list[dict]:
    """Every step around the last one at half the peak learning rate or more, where it lies among thinned records:
    the loss trend judges the TREND_WINDOW steps before the schedule's decay (health.schedule_trend_check), and a
    review's plateau FAIL came from every 16th of them, which every step read as falling."""
    rates = [(i, m["lr"]) for i, m in enumerate(metrics) if isinstance(m.get("lr"), (int, float))]
    if not rates:
        return []
    half = max(lr for _, lr in rates) / 2
    i = max(i for i, lr in rates if lr >= half)
    if i + 1 >= len(metrics) or metrics[i + 1].get("step", 0) - metrics[i].get("step", 0) <= 1:
        return []  # every step is there already
    return metrics_between(run_dir, max(1, metrics[i]["step"] - TREND_WINDOW), metrics[i + 1]["step"])


def extra_series(key: str, readers: dict[str, RunReader | None]) -> dict[str, dict[str, list[dict]]]:
    """The experiment-specific curves, {field: {run label: records}}: what its claim is about."""
    out: dict[str, dict[str, list[dict]]] = {}
    live = {label: rd for label, rd in readers.items() if rd is not None}
    if key == "scaling":
        entropy, max_weight = {}, {}
        for label, rd in live.items():
            by_step: dict[int, list[dict]] = {}
            for row in head_stats(rd):
                by_step.setdefault(row["step"], []).append(row)
            steps = sorted(by_step)
            entropy[label] = [
                {"step": s, "attention_entropy": finite_mean([r["entropy"] for r in by_step[s]])} for s in steps
            ]
            max_weight[label] = [
                {"step": s, "max_attention_weight": finite_mean([r["max_weight"] for r in by_step[s]])} for s in steps
            ]
        out = {"attention_entropy": entropy, "max_attention_weight": max_weight}
        out["attention_grad_norm"] = {
            label: [
                {
                    "step": m["step"],
                    "attention_grad_norm": finite_mean(
                        [v for g, v in (m.get("layer_grad_norms") or {}).items() if g.endswith(".attn")]
                    ),
                }
                for m in rd.metrics
            ]
            for label, rd in live.items()
        }
    elif key == "residual":
        out["first_layer_grad_norm"] = {
            label: [
                {"step": m["step"], "first_layer_grad_norm": (m.get("layer_grad_norms") or {}).get("L0.attn")}
                for m in rd.metrics
            ]
            for label, rd in live.items()
        }
    elif key == "warmup":
        out["lr"] = {label: rd.metrics for label, rd in live.items()}
    return out


def memory_table(results: dict[str, dict]) -> list[dict]:
    """The fragmentation measurement as rows: one per loop, every measured number in MB or a count."""
    rows = []
    for label, numbers in results.items():
        row = {"loop": label}
        for name, value in numbers.items():
            if name.endswith("_bytes") or name == "bytes_allocated":
                row[name.removesuffix("_bytes").replace("_", " ") + " (MB)"] = round(value / 1e6, 2)
            elif name in ("allocations", "device", "source"):
                row[name] = value
        rows.append(row)
    return rows


def memory_comparison(width: int, context: int, batch: int) -> list[dict]:
    """Memory rows for the chosen settings next to twice the context (the T^2 term shows) and twice the batch."""
    heads = 4 if width % 4 == 0 else 1
    rows = []
    for label, t, b in (
        (f"B={batch}, T={context}", context, batch),
        (f"B={batch}, T={2 * context}", 2 * context, batch),
        (f"B={2 * batch}, T={context}", context, 2 * batch),
    ):
        config = TransformerConfig(vocab_size=65, hidden_dim=width, num_layers=4, num_heads=heads, max_seq_len=t)
        for row in memory_rows(config, b, measure=label.startswith(f"B={batch}, T={context}")):
            rows.append({**row, "label": label})
    return rows


def shape_contracts() -> None:
    """The Experiments page's Shape contracts tab: the model's own shape contract on a tiny model, case by case."""
    st.caption(  # a demo model, said: a review took its context 16 and vocabulary 65 for the experiment's runs'
        "Shape bugs usually surface three matmuls later as a cryptic message. The model's shape contract checks "
        "its input at the door and names the tensor, the expected and the actual shape. Shown on a demo model "
        "(vocabulary 65, context 16, 1 layer), not the experiment's runs: the checklist's \"shape contracts\" row "
        "runs the contracts, the softmax's row sums among them, on each run's own model."
    )
    torch.manual_seed(0)
    demo_model = model_lib.TinyGPT(
        TransformerConfig(vocab_size=65, hidden_dim=32, num_layers=1, num_heads=2, max_seq_len=16)
    )
    fonts.grid_place().dataframe(shape_drift.shape_drift_cases(demo_model), hide_index=True, width="stretch")
    explain.show_code_of([model_lib.TinyGPT._check_input])
