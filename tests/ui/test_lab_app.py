"""The Experiments page and workshop links through AppTest (offline: synthetic corpus only), and its helpers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.lab.pitfalls.scaling import CONSEQUENCES, GRADIENTS  # noqa: E402
from tinygpt.lab.registry import EXPERIMENTS  # noqa: E402
from tinygpt.lab.results import read_result
from tinygpt.lab.verdict import ENDED, Clause, decide
from tinygpt.ui.experiments import experiments_keys, lab  # noqa: E402
from tinygpt.ui.host import resources  # noqa: E402
from tinygpt.ui.teach.workshop import parse_workshop, workshop_link  # noqa: E402
from tinygpt.ui.train import knob_widgets, train_keys  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def open_experiments(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/experiments.py").run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("key", list(EXPERIMENTS))
def test_each_experiment_renders_from_a_url(runs_dir, key):
    at = open_experiments({"experiment": key})
    assert at.selectbox(key=experiments_keys.W_EXPERIMENT).value == key
    shown = "\n".join(i.value for i in at.info)
    assert EXPERIMENTS[key].what_to_look_for[:40] in shown
    assert len(EXPERIMENTS[key].configs(source="synthetic:copy")) >= 2


def test_the_learners_text_and_seed_stay_over_a_visit_to_another_page(runs_dir):
    """A review's learner pasted her text, set seed 99, looked at Runs and Train, came back: Tiny Shakespeare and
    seed 1337 again, and "Run side by side" trained on Shakespeare."""
    from tinygpt.ui.train import settings

    at = open_experiments({"experiment": "scaling"})
    at.selectbox(key=experiments_keys.W_LAB_SOURCE).set_value(settings.SOURCE_PASTE).run()
    at.text_area(key=experiments_keys.W_LAB_PASTE).set_value("her own text, " * 50).run()
    at.number_input(key=experiments_keys.W_LAB_SEED).set_value(99).run()
    at.switch_page("pages/runs.py").run()
    at.switch_page("pages/train.py").run()
    at.switch_page("pages/experiments.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key=experiments_keys.W_LAB_SOURCE).value == settings.SOURCE_PASTE
    assert at.text_area(key=experiments_keys.W_LAB_PASTE).value.startswith("her own text")
    assert at.number_input(key=experiments_keys.W_LAB_SEED).value == 99
    assert any("times over" in w.value for w in at.warning)  # 700 characters: small enough to memorise, said
    at.text_area(key=experiments_keys.W_LAB_PASTE).set_value("   \n  ").run()  # no text a run would take
    assert not any("times over" in w.value for w in at.warning), [w.value for w in at.warning]


def test_shape_drift_and_memory_tabs_render(runs_dir):
    at = open_experiments()
    frames = at.dataframe
    assert any("with contract" in df.value.columns for df in frames)
    assert not at.error
    assert any("def memory_rows" in code.value for code in at.code)  # "Show the code" next to the chart


def verdict_boxes(at: AppTest) -> dict[str, str]:
    """The verdict's box by kind: a reproduced pitfall is green (success), one that did not is a warning."""
    return {
        kind: "\n".join(str(e.value) for e in elements if "Reproduced" in str(e.value) or "reproduce" in str(e.value))
        for kind, elements in (("success", at.success), ("warning", at.warning))
    }


def test_running_an_experiment_trains_both_variants_and_colours_the_verdict(runs_dir):
    at = open_experiments({"experiment": "softmax"})
    at.selectbox(key=experiments_keys.W_LAB_SOURCE).set_value("Synthetic: copy").run()
    [button] = [b for b in at.button if b.label == "Run side by side"]
    button.click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = at.session_state[experiments_keys.LAB_RUNS]["softmax"]
    assert set(runs) == {"stable softmax", "naive softmax"}
    at.run()
    store = resources.get_store()
    if not all(store.reader(r).status().get("state") in ENDED for r in runs.values()):
        assert any("Still training" in str(i.value) for i in at.info)  # neutral while the runs train
    deadline = time.time() + 240
    while time.time() < deadline:
        if all(store.reader(r).status().get("state") in ENDED for r in runs.values()):
            break
        time.sleep(0.5)
    at.run()
    readers = {label: store.reader(run_id) for label, run_id in runs.items()}
    for reader in readers.values():
        reader.poll()
    verdict = EXPERIMENTS["softmax"].verdict({label: read_result(rd) for label, rd in readers.items()})
    assert verdict.reproduced is not None, verdict.sentence
    boxes = verdict_boxes(at)
    shown, other = ("success", "warning") if verdict.reproduced else ("warning", "success")
    assert "The naive softmax" in boxes[shown] and not boxes[other]
    assert ("Reproduced." if verdict.reproduced else "Did not reproduce on this run.") in boxes[shown]
    # the latest sample shows its prompt first (a review's started mid-line: "mid + + 1"), the continuation after it
    last = readers["stable softmax"].samples[-1]
    assert last["text"] and read_result(readers["stable softmax"]).sample == last["prompt"] + last["text"]


def test_the_memory_experiment_measures_in_the_page_and_on_cpu_shows_counts_not_a_verdict(runs_dir):
    """Issue 23 finding 6: on CPU the demo counts allocations (churn), not fragmentation: a neutral box that says
    so, never green. On CUDA (the reserved-vs-allocated half) the box is coloured by the verdict as before."""
    import torch

    at = open_experiments({"experiment": "memory"})
    assert any("Press **Run side by side** to measure" in str(i.value) for i in at.info)
    [button] = [b for b in at.button if b.label == "Run side by side"]
    button.click().run()
    assert not at.exception and not at.error
    boxes = verdict_boxes(at)
    if torch.cuda.is_available():
        assert "allocations" in boxes["success"] + boxes["warning"]
    else:
        assert not boxes["success"] and not boxes["warning"]
        assert any("Allocation counts only: no verdict." in str(i.value) for i in at.info)
    assert any("allocations" in df.value.columns for df in at.dataframe)


def test_health_rows_carry_an_outcome_a_measurement_and_a_threshold(tmp_runs):
    from helpers import tiny_config

    from tinygpt.runs.loop import run_training
    from tinygpt.runs.reader import RunReader
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.experiments import lab

    config = tiny_config("", source="synthetic:copy")  # checkpoints do not keep inline text: a named corpus
    with RunStore(tmp_runs).create(config.to_dict(), owner="app") as writer:
        run_dir = writer.run_dir
    assert run_training(run_dir, config) == "finished"
    reader = RunReader(run_dir)
    reader.poll()
    rows = {r["check"]: r for r in lab.health_rows(str(run_dir), reader.checkpoints()[-1], reader.metrics)}
    assert {r["result"] for r in rows.values()} <= {"pass", "FAIL", "not enough data"}
    assert rows["training loss still decreasing"]["result"] in ("pass", "FAIL")  # 20 steps: enough to judge
    assert all(r["threshold"] for r in rows.values())
    assert rows["no future leak"]["result"] == "pass" and rows["no future leak"]["measured"] == "0"
    # Each row says what it read: the shape step's verdict probes the same windows (results.probe_batch)
    step = reader.checkpoints()[-1]
    windows = f"held-out windows of {config.model.max_seq_len} characters (checkpoint of step {step})"
    assert rows["attention rows sum to 1"]["measured on"] == f"4 {windows}"
    assert rows["no future leak"]["measured on"] == f"2 {windows}"
    last = reader.metrics[-1]["step"]  # the step checks read every step recorded, not only those to the checkpoint
    assert rows["training loss still decreasing"]["measured on"] == f"the run's recent steps, to step {last:,}"
    # A diverged run checkpointed at step 0 and broken later (a review's softmax run: "no steps yet"): the step checks
    # read the steps after the checkpoint too
    # the step checks read the steps as written, not a page's thinned records (a review: every 16th step)
    sparse = [*reader.metrics[:-1:4], reader.metrics[-1]]  # as a reader thins: every 4th step, and the newest
    thinned = {r["check"]: r for r in lab.health_rows(str(run_dir), step, sparse)}
    assert thinned["training loss still decreasing"]["detail"] == rows["training loss still decreasing"]["detail"]
    # under a leak to the newest step, no trend is judged (Train and Gradients judge none there)
    leaky = {r["check"]: r for r in lab.health_rows(str(run_dir), step, reader.metrics, leaks=[("none", 5, last)])}
    assert leaky["training loss still decreasing"]["result"] == "not enough data"
    assert "under mask none (a leak, since step 5)" in leaky["training loss still decreasing"]["detail"]
    held = {r["check"]: r for r in lab.health_rows(str(run_dir), step, reader.metrics, evals=reader.evals)}
    assert held["held-out loss not rising"]["measured on"].startswith("the run's evals")  # the lab's evidence too
    assert "held-out loss not rising" not in rows  # only where the page passes the evals
    broken = [*reader.metrics, {"step": last + 1, "loss": None, "grad_norm": None}]
    finite = {r["check"]: r for r in lab.health_rows(str(run_dir), reader.checkpoints()[0], broken)}
    assert finite["gradient norm finite"]["result"] == "FAIL", finite["gradient norm finite"]
    unprobed = read_result(reader)  # no checkpoint probe (a run still training): the rows are the snapshot's
    probe = reader.attention_index()["probe_text"]
    assert unprobed.snapshot_input.startswith(f"the probe text ({len(probe)} characters, attention snapshot at step ")


def test_the_shape_step_and_the_health_step_give_one_checkpoint_the_same_numbers(tmp_runs):
    """A review read step 2's row sums and leak of the silent bug and step 9's of the same checkpoint as two
    different numbers (the probe text's snapshot and 2 windows against 4 windows): both now read probe_batch."""
    from helpers import tiny_config

    from tinygpt.runs.loop import run_training
    from tinygpt.runs.reader import RunReader
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.experiments import lab

    config = tiny_config("", source="synthetic:copy", shape_bug="softmax_dim")  # the silent bug
    with RunStore(tmp_runs).create(config.to_dict(), owner="app") as writer:
        run_dir = writer.run_dir
    assert run_training(run_dir, config) == "finished"
    reader = RunReader(run_dir)
    reader.poll()
    step = reader.checkpoints()[-1]
    rows = {r["check"]: r for r in lab.health_rows(str(run_dir), step, reader.metrics)}
    result = read_result(reader, lab.checkpoint_probe)  # the shape step's numbers
    assert rows["attention rows sum to 1"]["result"] == "FAIL" and rows["no future leak"]["result"] == "FAIL"
    # a model that sees what it predicts: its losses measure copying, as under a leaking mask (a review read "pass")
    with_evals = {r["check"]: r for r in lab.health_rows(str(run_dir), step, reader.metrics, evals=reader.evals)}
    for loss_row in ("training loss still decreasing", "held-out loss not rising"):
        assert with_evals[loss_row]["result"] == "not enough data", with_evals[loss_row]
        assert "leaking the future under a mask that hides it" in with_evals[loss_row]["detail"]
    assert rows["attention rows sum to 1"]["measured"] == f"{result.row_sum_error:.4g}"
    assert rows["no future leak"]["measured"] == f"{result.leak:.4g}"
    assert result.snapshot_input == rows["attention rows sum to 1"]["measured on"]
    assert result.leak_input == rows["no future leak"]["measured on"]
    # Review: "(checkpoint of step 200): a freshly initialised model ... scores 4.151" read as the checkpoint's; a
    # later review: an unseeded fresh model on 4 windows passed and FAILed one run at random. The run's first step is
    # its initialised model's loss, read as such
    initial = rows["initial loss close to ln(vocab)"]
    assert initial["measured on"] == "the run's first training batch", initial
    assert initial["measured"] == f"{reader.metrics[0]['loss']:.4g}"
    assert "this run's first step scored" in initial["detail"]
    no_first = lab.health_checks(str(run_dir), step)[0]  # a run without its first step: a fresh model, seeded
    fresh = {r["check"]: r for r in no_first}["initial loss close to ln(vocab)"]
    assert "checkpoint of step" not in fresh["measured on"] and fresh["measured on"].endswith("not the checkpoint")
    assert fresh == {r["check"]: r for r in lab.health_checks(str(run_dir), step)[0]}["initial loss close to ln(vocab)"]


def test_workshop_link_round_trips_and_reports_bad_values():
    link = workshop_link(
        "http://host:8501/", "demo", {"num_heads": 2, "mask": "none"}, hidden={"mask"}, locked=True, tutorial=1
    )
    query = dict(part.split("=", 1) for part in link.split("?", 1)[1].split("&"))
    shop = parse_workshop(query)
    assert shop.preset == "demo" and shop.overrides == {"num_heads": 2, "mask": "none"}
    assert shop.hidden == {"mask"} and shop.locked and shop.tutorial == 1 and not shop.errors
    bad = parse_workshop({"preset": "huge", "num_heads": "three", "colour": "red", "hidden_dim": "100"})
    assert len(bad.errors) == 4 and bad.preset is None  # 100 is not a width the widget offers: reported too
    clash = parse_workshop({"hidden_dim": "96", "num_heads": "5"})  # the bad value is dropped, the rest applies
    assert clash.overrides == {"hidden_dim": 96} and "does not divide the width 96" in clash.errors[0]


def open_app(query: dict) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def test_a_workshop_link_loads_a_preset_hides_controls_and_survives_page_switches(runs_dir):
    at = open_app(
        {"preset": "nanogpt-cpu", "num_heads": "8", "mask": "none", "hide": "mask,attn_scale", "tutorial": "2"}
    )
    assert at.selectbox(key=train_keys.W_PRESET).value == "nanoGPT CPU"
    assert at.selectbox(key=train_keys.W_WIDTH).value == 128
    assert at.select_slider(key=train_keys.W_HEADS).value == 8
    assert at.radio(key=knob_widgets.widget_key(train_keys.W_MASK, {})).value == "none"
    styles = "\n".join(str(m.value) for m in at.markdown if "<style>" in str(m.value))
    assert '[class*="st-key-w_mask-"]' in styles and ".st-key-w_scale" in styles and "display: none" in styles
    assert any("Lesson 3/" in str(m.value) for m in at.sidebar.markdown)  # ?tutorial=2: the third step
    at.switch_page("pages/gradients.py").run()
    assert not at.exception
    assert at.query_params["preset"] in (["nanogpt-cpu"], "nanogpt-cpu")  # put back after the page switch
    at.switch_page("pages/train.py").run()
    assert at.select_slider(key=train_keys.W_HEADS).value == 8  # the learner's page still has the link's settings


def test_the_experiment_is_in_the_url_on_the_experiments_page_only(runs_dir):
    """A review's lesson read "/attention?run=...&experiment=scaling" on the projector two steps after the scaling
    experiment: a link copied from there named an experiment the page does not show. Kept all the same: back on
    Experiments, the same experiment (and a locked link's stays locked)."""
    at = open_experiments({"experiment": "residual", "lock": "1"})
    assert at.query_params["experiment"] in (["residual"], "residual")
    for page in ("pages/attention.py", "pages/train.py"):
        at.switch_page(page).run()
        assert not at.exception, at.exception
        assert "experiment" not in at.query_params, (page, dict(at.query_params))
        assert at.query_params["lock"] in (["1"], "1")  # the rest of the link stays
    at.switch_page("pages/experiments.py").run()
    assert at.query_params["experiment"] in (["residual"], "residual")
    assert at.selectbox(key=experiments_keys.W_EXPERIMENT).value == "residual"
    assert at.selectbox(key=experiments_keys.W_EXPERIMENT).disabled  # the locked link's experiment


def test_a_bad_workshop_link_gives_messages_not_a_traceback(runs_dir):
    at = open_app({"preset": "huge", "num_heads": "three"})
    warnings = "\n".join(w.value for w in at.warning).replace("\\", "")  # shown as text: markdown escaped
    assert "unknown preset 'huge'" in warnings and "num_heads" in warnings


def test_a_locked_link_fixes_the_model_but_not_the_live_knobs(runs_dir):
    at = open_app({"preset": "demo", "lock": "1"})
    assert at.selectbox(key=train_keys.W_PRESET).disabled
    assert at.selectbox(key=train_keys.W_WIDTH).disabled and at.number_input(key=train_keys.W_LAYERS).disabled
    assert not at.radio(key=knob_widgets.widget_key(train_keys.W_MASK, {})).disabled  # live knobs: the learners'
    assert any("locked" in str(c.value) for c in at.sidebar.caption)


def test_an_experiment_with_a_corpus_of_its_own_shows_it_fixed(runs_dir):
    """No positional embedding runs on the copy task whatever the corpus select said: the page shows that task in
    a disabled box instead of a choice the runs would ignore."""
    at = open_experiments({"experiment": "position"})
    shown = [t for t in at.text_input if t.label == "Corpus (every run)"]
    assert len(shown) == 1 and shown[0].value == "Synthetic: copy" and shown[0].disabled
    assert not [s for s in at.selectbox if s.label == "Corpus (every run)"]
    assert any("def forward" in code.value for code in at.code)  # its code: the model's forward, hook_pos in it


def test_an_experiment_runs_on_the_learners_own_text_and_an_empty_box_says_so(runs_dir):
    """Issue 23: the Experiments page offered Tiny Shakespeare and the synthetic tasks only."""
    at = open_experiments({"experiment": "residual"})
    at.selectbox(key=experiments_keys.W_LAB_SOURCE).set_value("Paste text").run()
    [button] = [b for b in at.button if b.label == "Run side by side"]
    button.click().run()
    assert not at.exception and "the text is empty" in " ".join(e.value for e in at.error)  # nothing started
    text = "".join(f"line {i}: the quick brown fox jumps over the lazy dog, and then it rests.\n" for i in range(300))
    at.text_area(key=experiments_keys.W_LAB_PASTE).input(text).run()
    at.number_input(key=experiments_keys.W_LAB_SEED).set_value(4242).run()
    [button] = [b for b in at.button if b.label == "Run side by side"]
    button.click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = at.session_state[experiments_keys.LAB_RUNS]["residual"]
    store, manager = resources.get_store(), resources.get_manager()
    try:
        for run_id in runs.values():
            reader = store.reader(run_id)
            assert reader.config()["data"]["source"] == "text"
            assert (reader.run_dir / "corpus.txt").read_text() == text  # both runs train on exactly it
        # Review defect 2: the verdict (or its still-training box) says whose runs, which corpus and seed, as the
        # lesson pane's check of the same title names the room's
        at.run()
        boxes = [str(e.value) for kind in (at.info, at.success, at.warning) for e in kind]
        assert any("On your runs (your text, seed 4242): " in b for b in boxes), boxes
    finally:
        for run_id in runs.values():
            manager.stop(run_id)


def test_a_corpus_a_pitfall_was_measured_not_to_show_on_is_said_before_the_runs_start(runs_dir):
    """Issue 23 (the corpora x seeds matrix): unscaled logits and no warmup do not show on the copy task (0 of 5
    seeds each); the page says so, with the measured reason, when that corpus is chosen."""
    at = open_experiments({"experiment": "scaling"})
    assert not [w for w in at.warning if "does not show on this corpus" in w.value]
    at.selectbox(key=experiments_keys.W_LAB_SOURCE).set_value("Synthetic: copy").run()
    [said] = [w.value for w in at.warning if "does not show on this corpus" in w.value]
    assert "copying wants one-hot attention" in said and "0 of 5 seeds" in said


def test_a_corpus_the_benchmark_never_ran_a_pitfall_on_is_said_to_be_unmeasured(runs_dir):
    """The picker offers every synthetic task, the benchmark measured the copy task only: on the others the page
    says the verdict stands on the runs alone, and says nothing of the kind where it was measured."""
    at = open_experiments({"experiment": "mask"})
    assert not [i for i in at.info if "Not benchmarked" in i.value]
    at.selectbox(key=experiments_keys.W_LAB_SOURCE).set_value("Synthetic: sort").run()
    assert [i for i in at.info if "Not benchmarked on this corpus" in i.value]
    at.selectbox(key=experiments_keys.W_LAB_SOURCE).set_value("Synthetic: copy").run()
    assert not [i for i in at.info if "Not benchmarked" in i.value]


def test_a_short_text_of_ones_own_is_warned_about_before_the_runs_start(runs_dir):
    """Issue 33 finding 1: on 2,000 characters the runs learn the text by heart; the page says so before anything
    trains (and the verdict then says "not enough data", from the held-out loss), and says nothing on a long one."""
    at = open_experiments({"experiment": "warmup"})
    at.selectbox(key=experiments_keys.W_LAB_SOURCE).set_value("Paste text").run()
    at.text_area(key=experiments_keys.W_LAB_PASTE).input("the cat sat on the mat. " * 84).run()  # 2,016 characters
    [said] = [w.value for w in at.warning if "times over" in w.value]
    assert (
        "2,016 characters" in said
        and "not enough data" in said
        and "Not benchmarked" in " ".join(i.value for i in at.info)
    )
    at.text_area(key=experiments_keys.W_LAB_PASTE).input("the cat sat on the mat. " * 200_000).run()
    assert not [w for w in at.warning if "times over" in w.value]


def test_the_scaling_experiment_says_which_clauses_are_the_pitfall_and_where_its_consequence_was_seen(runs_dir):
    """Issue 33 finding 3: a claim that held on Shakespeare was stated as if it held everywhere. Before the runs
    start the page says which clauses are the pitfall and which are consequences, with the corpora each was seen
    on; on a learner's own text, "Not benchmarked on this corpus"."""
    at = open_experiments({"experiment": "scaling"})
    said = "\n".join(c.value for c in at.caption)
    assert "**The pitfall itself**, what the verdict turns on, is every clause but the consequence below" in said
    assert "**A consequence, not the pitfall:** smaller attention gradients unscaled, seen on Tiny Shakespeare" in said
    assert "(this corpus too)" in said and not [i for i in at.info if "Not benchmarked" in i.value]
    at.selectbox(key=experiments_keys.W_LAB_SOURCE).set_value("Paste text").run()
    assert [i for i in at.info if "Not benchmarked on this corpus: " in i.value]
    said = "\n".join(c.value for c in at.caption)
    assert "seen on Tiny Shakespeare; not benchmarked on this corpus: these runs measure it" in said
    at = open_experiments({"experiment": "mask"})  # no consequence: every clause is the pitfall
    assert any("Every clause of it is the pitfall itself" in c.value for c in at.caption)


def not_seen_verdict():
    """A scaling verdict whose pitfall clauses held and whose consequence (smaller attention gradients) did not."""
    clauses = {"near one-hot": True, GRADIENTS: Clause(False, consequence=True, seen_on=CONSEQUENCES[GRADIENTS])}
    return decide("unscaled: near one-hot", clauses, {"max weight, unscaled": 0.97}, "Unscaled attention is one-hot.")


def test_a_consequence_not_seen_is_taken_out_of_the_verdicts_sentence_as_measured():
    """A consequence not seen (or not measured) is said apart from the sentence the box colours."""
    verdict = not_seen_verdict()
    sentence, notes = lab.consequence_notes(verdict, EXPERIMENTS["scaling"])
    assert verdict.reproduced is True and sentence == "Unscaled attention is one-hot."
    assert notes == [
        "Smaller attention gradients unscaled: measured: not seen on this text (it was on Tiny Shakespeare)."
    ]
    unmeasured = decide("x", {"a": False, GRADIENTS: Clause(None, True, CONSEQUENCES[GRADIENTS])}, {}, "Said.")
    sentence, notes = lab.consequence_notes(unmeasured, EXPERIMENTS["scaling"])
    assert sentence == "Said. Failed: a." and notes == [
        "Smaller attention gradients unscaled (a consequence seen on Tiny Shakespeare): not measured."
    ]


def _show_not_seen_verdict():
    from tests.ui.test_lab_app import not_seen_verdict
    from tinygpt.lab.registry import EXPERIMENTS
    from tinygpt.ui.experiments import lab

    lab.show_verdict(not_seen_verdict(), EXPERIMENTS["scaling"])


def test_a_verdict_whose_consequence_was_not_seen_is_green_with_the_consequence_neutral():
    """The box follows the pitfall's own clauses: green; the consequence is a neutral caption, never a warning."""
    at = AppTest.from_function(_show_not_seen_verdict, default_timeout=30).run()
    assert not at.exception, at.exception
    [green] = [s.value for s in at.success]
    assert green.startswith("**Reproduced.** Unscaled attention is one-hot.") and "not seen" not in green
    assert not at.warning and not at.error
    [note] = [c.value for c in at.caption if "not seen on this text" in c.value]
    assert "A consequence, not the pitfall." in note and "(it was on Tiny Shakespeare)" in note
    # what another seed could do (a review: nothing said whether it could overturn the verdict); "Each ± is …" only
    # under a verdict that prints one (a review read it under verdicts with none)
    assert lab.ONE_SEED_PLAIN in [c.value for c in at.caption] and "±" not in green
    assert not [c for c in at.caption if "Each ±" in c.value]


def _room_runs(runs_dir, role: str, configs: dict, train: bool = False) -> dict[str, str]:
    """Runs of the room's lesson (runs/lesson.json, as step 1's Prepare records them), finished: trained for real
    (`train`, tiny) or a few step records."""
    from tinygpt.runs.loop import run_training
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.teach import lesson

    store, runs = RunStore(runs_dir), {}
    teacher = {"learner": {"id": "c" * 16, "name": "teacher", "instructor": True}}
    for label, config in configs.items():
        with store.create(config.to_dict() | teacher, owner="app") as writer:
            if not train:
                for step in range(1, 21):
                    writer.append_metric({"step": step, "loss": 3.0 - step / 100, "grad_norm": 0.5})
                writer.write_status(state="finished", step=20)
            run_dir = writer.run_dir
        if train:
            assert run_training(run_dir) == "finished"
        runs[label] = run_dir.name
    lesson.write_room(runs_dir, runs={role: runs})
    return runs


def test_a_session_without_runs_of_its_own_sees_the_rooms_prepared_runs_labelled_as_the_rooms(runs_dir):
    """The review: after step 8's setup the instructor switched to Causal mask misalignment and read "Press Run
    side by side to train the variants", beside the room's finished mask runs; learners the same from the
    sidebar. The room's runs are shown, said to be the room's, and Run side by side still starts one's own."""
    configs = EXPERIMENTS["mask"].configs(seed=1337, source="synthetic:copy")
    runs = _room_runs(runs_dir, "exp:mask", configs)
    at = open_experiments({"experiment": "mask"})
    assert not at.exception, at.exception
    assert not any("Press **Run side by side** to train" in str(i.value) for i in at.info)
    assert any(lab.ROOM_RUNS_NOTE in str(c.value) for c in at.caption)
    table = at.dataframe[0].value
    assert list(table["run id"]) == list(runs.values())
    verdict = "\n".join(str(e.value) for e in [*at.info, *at.success, *at.warning])
    assert "On the room's runs (the synthetic copy task, seed 1337)" in verdict
    assert not at.session_state[experiments_keys.LAB_RUNS].get("mask")  # shown, not taken as the session's own
    at.selectbox(key=experiments_keys.W_EXPERIMENT).set_value("softmax").run()  # no room runs of it: one's own
    assert any("Press **Run side by side** to train" in str(i.value) for i in at.info)


def test_model_health_opens_on_the_broken_run_by_name_with_its_checks_shown(runs_dir):
    """The review's step 9: "Run to check" opened on the lecture run ("current run (J6Mx…)"), bare ids for the
    others, and nothing until someone picked "silent bug" and pressed Run the checks."""
    from helpers import tiny_config

    from tinygpt.runs.names import store_names

    variants = EXPERIMENTS["shape_drift"].variants
    configs = {label: tiny_config("", source="synthetic:copy", **variants[label]) for label in list(variants)[:2]}
    runs = _room_runs(runs_dir, "exp:shape_drift", configs, train=True)
    lecture = _room_runs(runs_dir, "lecture", {"run": tiny_config("", source="synthetic:copy")})["run"]
    at = open_experiments({"experiment": "shape_drift", "run": lecture})
    picker = at.selectbox(key=f"{experiments_keys.W_HEALTH_RUN}:shape_drift")
    names = store_names(runs_dir)
    assert picker.value == f"silent bug · {names[runs['silent bug']]}"
    assert picker.options[-1] == f"current run · {names[lecture]}"
    [table] = [t.value for t in at.table if "threshold" in t.value.columns]
    rows = dict(zip(table["check"], table["result"], strict=True))
    assert rows["attention rows sum to 1"] == "FAIL" and rows["shape contracts"] == "FAIL"
    assert any("Checked the checkpoint at step 20" in str(c.value) for c in at.caption)


def test_the_leak_row_blames_the_mask_only_when_the_mask_leaks():
    """Review: the silent bug's row read "the mask 'causal' lets positions see the future"; its leak is the softmax."""
    import torch

    from tinygpt.config import Interventions
    from tinygpt.interventions import attach
    from tinygpt.lab.health import check_no_future_leak
    from tinygpt.model import TinyGPT, TransformerConfig

    idx = torch.randint(0, 11, (2, 8), generator=torch.Generator().manual_seed(0))
    for mask, bug, said in (("causal", "softmax_dim", "the mask 'causal' hides the future, so something after it"),
                            ("none", "none", "the mask 'none' lets positions see the future")):  # fmt: skip
        torch.manual_seed(0)
        model = TinyGPT(TransformerConfig(vocab_size=11, max_seq_len=8, hidden_dim=16, num_heads=2, num_layers=1,
                                          mask=mask))  # fmt: skip
        attach(model, Interventions(shape_bug=bug))
        check = check_no_future_leak(model, idx)
        assert check.outcome == "FAIL" and said in check.detail, check.detail


def test_a_too_short_text_for_the_lab_names_no_control_the_page_lacks():
    """A review: "... at least 321 are needed ... Add more text or lower max_seq_len" on Experiments, which has no
    max_seq_len control: the lab sets its runs' context itself."""
    from tinygpt.errors import DataError
    from tinygpt.lab.registry import EXPERIMENTS
    from tinygpt.ui.train import settings

    choice = lab.CorpusChoice(settings.SOURCE_PASTE, "text")
    choice.pasted = "too short"
    with pytest.raises(DataError) as refused:
        lab.experiment_data(EXPERIMENTS["scaling"], choice)
    assert "are needed" in str(refused.value) and "max_seq_len" not in str(refused.value)


def test_a_latest_sample_says_which_step_wrote_it_and_why_no_later_one():
    """A review read a diverged naive-softmax run's "latest sample", unlabelled, as the broken model's output: it
    was the untrained model's, written at step 0, byte for byte the stable run's."""
    from types import SimpleNamespace

    from tinygpt.ui.experiments.lab import sample_caption

    diverged = SimpleNamespace(sample_step=0, diverged_step=44)
    assert sample_caption("naive softmax", diverged) == (
        "naive softmax · at step 0, before any training: the run diverged at step 44 and wrote no later sample"
    )
    assert sample_caption("stable", SimpleNamespace(sample_step=300, diverged_step=None)) == "stable · at step 300"
    assert sample_caption("old run", SimpleNamespace(sample_step=None, diverged_step=None)) == "old run"
