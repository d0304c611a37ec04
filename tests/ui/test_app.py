"""The Streamlit app through streamlit.testing.v1.AppTest: every page renders, settings give valid configs,
bad settings give messages (not tracebacks), and a real (tiny) run trains behind the Train page.

Offline: runs use a synthetic corpus or pasted text, never Tiny Shakespeare.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import write_run  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.config import RunConfig  # noqa: E402
from tinygpt.lab.registry import EXPERIMENTS  # noqa: E402
from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.attention import attention_keys
from tinygpt.ui.gradients import gradients_keys
from tinygpt.ui.host import resources, runlist  # noqa: E402
from tinygpt.ui.people import people_keys
from tinygpt.ui.runs import bundle, runs_keys  # noqa: E402
from tinygpt.ui.sample import sample_keys
from tinygpt.ui.screen import fonts
from tinygpt.ui.train import form, knob_widgets, settings, train_keys  # noqa: E402
from tinygpt.ui.words import runinfo  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60


def new_app() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


def plain(text: str) -> str:
    """A message as the learner reads it: user-facing messages are markdown-escaped (tinygpt/ui/words/safe.py)."""
    return str(text).replace("\\", "")


def texts(at: AppTest) -> str:
    parts = [plain(m.value) for m in at.markdown] + [plain(c.value) for c in at.caption]
    parts += [plain(e.value) for e in at.error] + [plain(w.value) for w in at.warning] + [i.value for i in at.info]
    parts += [s.value for s in at.success]
    return "\n".join(str(p) for p in parts)


def click(at: AppTest, label: str) -> AppTest:
    [button] = [b for b in at.button if b.label == label]
    return button.click().run()


def start_run(at: AppTest, max_steps: int = 40, source: str = "Synthetic: copy") -> str:
    at.selectbox(key=train_keys.W_SOURCE).set_value(source).run()
    at.number_input(key=train_keys.W_MAX_STEPS).set_value(max_steps).run()
    click(at, "Train")
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    run_id = at.session_state[state.RUN_ID]
    assert at.query_params["run"] == [run_id] or at.query_params["run"] == run_id
    return run_id


def knob_key(at: AppTest, value_key: str, role: str = "") -> str:
    """The key a live knob's widget is drawn under now (tinygpt/ui/train/knob_widgets.py)."""
    generations = at.session_state[train_keys.KNOB_WIDGETS] if train_keys.KNOB_WIDGETS in at.session_state else {}
    return knob_widgets.widget_key(value_key, generations, role)


def rerun_until(at: AppTest, predicate, timeout: float = 60) -> AppTest:
    """Rerun the page until `predicate(at)` holds (an AppTest waits by running its script again; the suite's other
    waits poll with tests/helpers.py's wait_for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        assert not at.exception, at.exception
        if predicate(at):
            return at
        time.sleep(0.5)
    raise AssertionError(f"condition not met in {timeout}s; page said:\n{texts(at)}")


def status_step(at: AppTest) -> int:
    for m in at.markdown:
        value = str(m.value)
        value = plain(value)  # the status line is shown as text (markdown-escaped: it carries a file's reason)
        if value.startswith("**step "):
            return int(value.removeprefix("**step ").split(" ", 1)[0].replace(",", ""))
    return -1


# ---------------------------------------------------------------- pure helpers


@pytest.mark.parametrize("label", list(settings.PRESET_LABELS))
def test_every_preset_gives_a_valid_config(label):
    values = settings.preset_values(label)
    config = form.run_config(label, values, settings.data_config("Synthetic: add"))
    assert isinstance(config, RunConfig)
    assert config.model.hidden_dim % config.model.num_heads == 0
    assert RunConfig.from_dict(config.to_dict()) == config


def test_heads_options_divide_the_width():
    assert settings.heads_options(64) == [1, 2, 4, 8, 16]
    assert settings.heads_options(48) == [1, 2, 3, 4, 6, 8, 12, 16]
    assert all(384 % h == 0 for h in settings.heads_options(384))


def test_status_line_and_eta():
    metrics = [{"step": s, "time": 100.0 + s * 0.1, "tokens_per_s": 12345.6} for s in range(1, 51)]
    line = runinfo.status_line({"state": "running", "step": 50, "max_steps": 150, "tokens_per_s": 12345.6}, metrics)
    assert line.startswith("step 50 / 150 · 12,346 tokens/s · ETA 10 s · running")


def test_lr_schedule_warms_up_then_decays():
    config = {"train": {"max_steps": 100, "learning_rate": 1e-3, "min_lr": 1e-4, "warmup_steps": 10}}
    sched = runinfo.lr_schedule(config, {})
    lrs = dict(sched)
    assert lrs[10] == pytest.approx(1e-3) and lrs[1] < lrs[10] and lrs[100] < lrs[50]


# ---------------------------------------------------------------- pages


def test_train_page_renders_with_presets_and_only_valid_heads(runs_dir):
    at = new_app()
    assert "tinygpt" in at.title[0].value
    heads = at.select_slider(key=train_keys.W_HEADS)
    width = at.selectbox(key=train_keys.W_WIDTH).value
    offered = [int(str(o).split()[0]) for o in heads.options]
    assert offered and all(width % h == 0 for h in offered)
    at.selectbox(key=train_keys.W_WIDTH).set_value(48).run()
    assert not at.exception
    assert [int(str(o).split()[0]) for o in at.select_slider(key=train_keys.W_HEADS).options] == settings.heads_options(
        48
    )
    at.selectbox(key=train_keys.W_PRESET).set_value("nanoGPT CPU").run()
    assert at.selectbox(key=train_keys.W_WIDTH).value == 128
    assert at.number_input(key=train_keys.W_MAX_STEPS).value == 2000


@pytest.mark.parametrize("page", ["pages/attention.py", "pages/gradients.py", "pages/sample.py", "pages/runs.py"])
def test_every_page_renders_without_a_run(runs_dir, page):
    at = new_app()
    at.switch_page(page).run()
    assert not at.exception, at.exception


def test_invalid_settings_show_an_error_not_a_traceback(runs_dir):
    at = new_app()
    at.selectbox(key=train_keys.W_SOURCE).set_value(settings.SOURCE_PASTE).run()
    at.text_area(key=train_keys.W_PASTE).set_value("too short").run()
    click(at, "Train")
    assert not at.exception
    assert at.error and "characters" in plain(at.error[0].value)
    at.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: sort").run()
    at.radio(key=knob_key(at, train_keys.W_MASK)).set_value("sliding_window").run()
    at.slider(key=knob_key(at, train_keys.W_WINDOW)).set_value(30).run()
    at.number_input(key=train_keys.W_CONTEXT).set_value(16).run()  # the window slider ends at the context
    window = at.slider(key=knob_key(at, train_keys.W_WINDOW))
    assert window.value == 16 and window.max == 16
    assert not at.exception
    assert state.RUN_ID not in at.session_state


def test_missing_shakespeare_is_a_message(runs_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("TINYGPT_SHAKESPEARE", str(tmp_path / "nowhere.txt"))
    at = new_app()
    at.selectbox(key=train_keys.W_SOURCE).set_value(settings.SOURCE_SHAKESPEARE).run()
    click(at, "Train")
    assert not at.exception, at.exception
    assert at.error and "TINYGPT_SHAKESPEARE" in plain(at.error[0].value)


def test_failed_corpus_load_leaves_no_progress_bar(runs_dir, monkeypatch, tmp_path):
    """Issue 24 finding 1: offline (here with the embedded copy damaged, the only way left to fail), the message
    stands alone: the "Fetching Tiny Shakespeare ..." bar used to stay on screen beside it."""
    import urllib.error

    import tinygpt.data as data

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("offline")

    monkeypatch.delenv("TINYGPT_SHAKESPEARE", raising=False)
    monkeypatch.setenv("TINYGPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(data, "EMBEDDED_SHAKESPEARE", tmp_path / "gone.txt.xz")
    monkeypatch.setattr(data, "urlopen", no_network)
    at = new_app()
    at.selectbox(key=train_keys.W_SOURCE).set_value(settings.SOURCE_SHAKESPEARE).run()
    click(at, "Train")
    assert not at.exception, at.exception
    assert at.error and "seems offline" in plain(at.error[0].value)
    assert not [p for p in at.get("progress") if "Shakespeare" in str(p.proto.text)]


def test_bad_run_id_in_the_url_is_a_message(runs_dir):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.query_params["run"] = "../../etc"
    at.run()
    assert not at.exception
    assert any("Ignored the run" in plain(w.value) for w in at.warning)


def test_train_then_steps_update_status_and_every_page_renders(runs_dir):
    at = new_app()
    run_id = start_run(at, max_steps=100_000)  # long enough that the pause below always lands mid-run
    rerun_until(at, lambda a: status_step(a) > 0, timeout=60)
    at.selectbox(key=train_keys.W_WIDTH).set_value(128).run()  # not a live knob: the page says it needs a new run
    assert any("width 64 → 128" in i.value for i in at.info), [i.value for i in at.info]
    # Pause, then Step 5: exactly five more steps; Resume trains on; Stop checkpoints and ends the run.
    click(at, "Pause")
    rerun_until(at, lambda a: "· paused" in texts(a), timeout=30)
    paused_at = status_step(at)
    at.number_input(key=train_keys.W_STEP_N).set_value(5).run()
    click(at, "Step")
    rerun_until(at, lambda a: status_step(a) == paused_at + 5 and "· paused" in texts(a), timeout=30)
    click(at, "Resume")
    rerun_until(at, lambda a: status_step(a) > paused_at + 30, timeout=60)
    click(at, "Stop")
    rerun_until(at, lambda a: "· stopped" in texts(a), timeout=30)

    at.switch_page("pages/attention.py").run()
    assert not at.exception, at.exception
    assert not at.warning, [w.value for w in at.warning]
    at.switch_page("pages/gradients.py").run()
    assert not at.exception, at.exception

    at.switch_page("pages/sample.py").run()
    assert not at.exception, at.exception
    at.text_area(key=sample_keys.W_PROMPT).set_value("abc>").run()
    at.number_input(key=sample_keys.W_NUM_CHARS).set_value(20).run()
    click(at, "Generate")
    assert not at.exception, at.exception
    last = at.session_state[sample_keys.LAST_SAMPLE]
    assert len(last["text"]) == 20 and last["run"] == run_id
    # Another run's sample is not drawn under this run's header (a review read one run's text and its 78-character
    # chart under the next run's name): said, and kept for when that run is picked again
    at.session_state[sample_keys.LAST_SAMPLE] = {**last, "run": "another-run-id"}
    at.run()
    assert any("Your last sample was drawn from another-run-id, another run" in plain(c.value) for c in at.caption), [
        c.value for c in at.caption]
    assert not any("it picked" in m.value for m in at.markdown)
    at.session_state[sample_keys.LAST_SAMPLE] = last
    at.run()
    assert any("it picked" in m.value for m in at.markdown)
    at.text_area(key=sample_keys.W_PROMPT).set_value("ABC€").run()
    click(at, "Generate")
    assert not at.exception
    assert at.warning and "'€'" in plain(at.warning[0].value)
    assert sample_keys.LAST_SAMPLE not in at.session_state  # no charts of the earlier prompt under the warning
    assert not any("it picked" in m.value for m in at.markdown)

    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    name = runlist.run_names(resources.get_store())[run_id]  # the pickers name runs, the table keeps the id last
    assert any(str(o).startswith(name) for o in at.selectbox(key=runs_keys.W_RUNS_PICK).options)


# ---------------------------------------------------------------- runs written directly (no worker needed)


def test_sample_names_its_run_and_step_and_explains_a_cheating_run(runs_dir):
    """Issue 24 finding 5: the picker showed bare ids and, after a mask→none run, ":::::" came with no hint why."""
    from tinygpt.runs.store import RunStore

    run_id = write_run(runs_dir)  # mask → none at step 5, a checkpoint at step 20
    name = runlist.run_names(RunStore(runs_dir))[run_id]
    at = new_app()
    at.switch_page("pages/sample.py").run()
    assert not at.exception, at.exception
    picker = at.selectbox(key=sample_keys.W_SAMPLE_RUN)
    assert picker.value == run_id and picker.options[0].startswith(name), picker.options
    assert any("Sampling from" in plain(c.value) and "step 20" in c.value for c in at.caption)
    assert any("mask none" in plain(w.value) and "next character" in plain(w.value) for w in at.warning)


def test_a_run_picked_on_sample_that_is_not_the_run_in_view_says_so(runs_dir):
    """Review: the sidebar named the learner's branch while Sample sampled the lecture run, picked there."""
    first, second = write_run(runs_dir), write_run(runs_dir)
    at = new_app()
    at.switch_page("pages/sample.py").run()
    picker = at.selectbox(key=sample_keys.W_SAMPLE_RUN)
    picker.set_value(second if picker.value == first else first).run()
    assert not at.exception, at.exception
    assert not any("Not the run in view" in plain(c.value) for c in at.caption)  # no run in view: nothing to say
    at.query_params["run"] = first
    at.run()
    at.selectbox(key=sample_keys.W_SAMPLE_RUN).set_value(second).run()
    assert any("Not the run in view" in plain(c.value) for c in at.caption), [c.value for c in at.caption]


def test_uploaded_text_is_decoded_or_the_problem_named():
    from tinygpt.config import ConfigError
    from tinygpt.errors import DataError

    data = settings.data_config(settings.SOURCE_UPLOAD, uploaded=b"\xef\xbb\xbfto be or not\r\n" * 20, block_size=16)
    assert data.source == "text" and data.text.startswith("to be") and "\r" not in data.text
    with pytest.raises(DataError, match="UTF-8"):
        settings.data_config(settings.SOURCE_UPLOAD, uploaded=b"caf\xe9 " * 50, block_size=16)
    with pytest.raises(ConfigError, match="choose a text file"):
        settings.data_config(settings.SOURCE_UPLOAD, uploaded=None)


def test_pages_on_a_saved_run_and_the_bundle(runs_dir):
    import io
    import zipfile

    run_a, run_b = write_run(runs_dir), write_run(runs_dir, hidden_dim=48)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.query_params["run"] = run_a  # a link (or a refresh) names the run
    at.run()
    assert not at.exception, at.exception
    assert at.session_state[state.RUN_ID] == run_a
    assert "step 20 / 20" in texts(at) and "finished" in texts(at)
    # a reattached tab shows the settings of the run it watches, not the default preset
    assert at.selectbox(key=train_keys.W_WIDTH).value == 32
    assert at.selectbox(key=train_keys.W_SOURCE).value == "Synthetic: copy"
    at.toggle(key=fonts.W_LARGE).set_value(True).run()  # projector mode: every chart in large fonts
    assert not at.exception, at.exception

    at.switch_page("pages/attention.py").run()
    assert not at.exception, at.exception
    assert "snapshot at step 20" in texts(at)
    # Play: starts from the first snapshot (the slider was at the newest), advances one snapshot per tick, stops.
    at.toggle(key=attention_keys.ATTN_PLAYING).set_value(True).run()
    assert at.session_state[attention_keys.W_ATTN_STEP] == 0 and "snapshot at step 0" in texts(at)
    at.run()  # the next tick (AppTest has no timer: a rerun runs the fragment once more)
    assert at.session_state[attention_keys.W_ATTN_STEP] == 20
    at.run()  # nothing after the newest snapshot: play switches itself off
    at.run()
    assert not at.exception, at.exception
    assert at.toggle(key=attention_keys.ATTN_PLAYING).value is False
    from tinygpt.runs.store import RunStore

    probe = at.text_area(key=attention_keys.W_PROBE)
    assert "\n" in probe.value and probe.value == RunStore(runs_dir).reader(run_a).attention_index()["probe_text"]
    probe.set_value("abc>cba").run()  # custom probe: through the checkpoint
    assert not at.exception, at.exception
    assert "checkpoint at step 20" in texts(at)
    at.text_area(key=attention_keys.W_PROBE).set_value("ABC").run()  # characters outside the vocabulary: a message
    assert not at.exception and at.warning

    at.switch_page("pages/gradients.py").run()
    assert not at.exception, at.exception
    at.segmented_control(key=gradients_keys.W_GRAD_VIEW).set_value("heatmap").run()
    assert not at.exception, at.exception

    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    at.multiselect(key=runs_keys.W_COMPARE).set_value([run_a, run_b]).run()
    assert not at.exception, at.exception
    assert "Settings that differ" in texts(at)
    assert not any("different texts" in w.value for w in at.warning)  # both on one text: no warning
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)  # a fresh tab opened on run_b
    at.query_params["run"] = run_b
    at.run()
    at.switch_page("pages/runs.py").run()
    assert at.session_state[runs_keys.W_RUNS_PICK] == run_b  # the picker starts on the tab's current run
    delete = next(b for b in at.button if b.label == "Delete…")
    assert delete.disabled  # no learner started it (a CLI-trained or prepared run): the instructor's (issue 34)
    at.session_state[people_keys.LEARNER] = Actor("i" * 16, "teacher", instructor=True)
    at.run()
    click(at, "Delete…")
    assert any("cannot be undone" in w.value for w in at.warning)
    click(at, "Yes, delete")
    assert not at.exception, at.exception
    assert not (runs_dir / run_b).exists() and (runs_dir / run_a).exists()

    from tinygpt.runs.store import RunStore
    from tinygpt.ui.charts import curves, heatmaps

    rd = RunStore(runs_dir).reader(run_a)
    figures = {
        "Loss": curves.loss_chart(rd.metrics, rd.evals, rd.events, 29),
        "Attention": heatmaps.attention_grid(rd.load_attention(20), rd.attention_index()["tokens"]),
    }
    archive = zipfile.ZipFile(io.BytesIO(bundle.make_bundle(rd.run_dir, figures)))
    names = set(archive.namelist())
    assert {"config.json", "metrics.csv", "figures.html", "figures/loss.vl.json"} <= names
    page = archive.read("figures.html").decode()
    assert "<h2>Attention</h2>" in page and "<script src=" not in page  # plotly.js embedded, nothing fetched
    assert {"checkpoint/step_00000020.safetensors", "checkpoint/step_00000020.json"} <= names
    header = archive.read("metrics.csv").decode().splitlines()[0]
    assert "loss" in header and "layer_grad_norms.L0.attn" in header


def test_the_browsers_stale_copy_of_a_widget_the_page_set_does_not_undo_a_knob_move(runs_dir):
    """One key press on the learning-rate slider moves its exact box too. A rerun request the browser sent before
    it drew the box's new value carries the old one (seen in the browser test: 0.002 -> 0.005 -> 0.002, two knob
    commands). The box is drawn anew with the new value (knob_widgets.mount): one command, both widgets agree, and
    a value typed into the new box later is the learner's and applies."""
    import json

    at = new_app()
    run_id = start_run(at, max_steps=100_000)
    rerun_until(at, lambda a: status_step(a) > 0)
    assert at.select_slider(key=knob_key(at, train_keys.W_LR)).value == 0.002
    at.select_slider(key=knob_key(at, train_keys.W_LR)).set_value(0.005).run()  # the learner's key press
    assert at.number_input(key=knob_key(at, train_keys.W_LR, "_exact")).value == 0.005

    def lr_changes(_at=None) -> list[dict]:
        lines = (runs_dir / run_id / "events.jsonl").read_text().splitlines()
        events = [json.loads(line) for line in lines if line.strip()]
        return [e for e in events if e.get("kind") == "knob" and e.get("knob") == "learning_rate"]

    rerun_until(at, lambda a: lr_changes(), timeout=30)
    time.sleep(1.0)  # a second command, if one had been sent, would be answered by now
    assert [(c["old"], c["new"]) for c in lr_changes()] == [(0.002, 0.005)]

    at.number_input(key=knob_key(at, train_keys.W_LR, "_exact")).set_value(0.002).run()  # typed back: it applies
    assert at.select_slider(key=knob_key(at, train_keys.W_LR)).value == 0.002
    rerun_until(at, lambda a: len(lr_changes()) == 2, timeout=30)
    click(at, "Stop")


def test_the_knobs_of_a_paused_run_without_a_worker_say_paused_not_ended(runs_dir):
    """A reviewer read "Live knobs · this run has ended" beside "paused: its training slot went to a queued run"
    and an enabled Resume: a run paused without its worker takes no knob change, but it has not ended."""
    from tinygpt.runs.store import RunStore

    run_id = write_run(runs_dir)
    with RunStore(runs_dir).writer(run_id) as w:
        w.write_status(state="paused", reason="its training slot went to a queued run", step=20)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception, at.exception
    said = texts(at)  # a learner watching the instructor's run: it never takes her change (a review's learner read
    assert "this run is paused and is not yours to change" in said and "has ended" not in said, said  # otherwise)
    teacher = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    teacher.session_state["learner"] = Actor("t" * 16, "teacher", True)
    teacher.query_params["run"] = run_id
    teacher.run()
    assert "this run is paused and takes no change until it resumes" in texts(teacher), texts(teacher)
    with RunStore(runs_dir).writer(run_id) as w:
        w.write_status(state="finished", reason="reached max_steps", step=20)
    at.run()
    assert "this run has ended: they set your next run" in texts(at)


def test_a_watcher_of_an_ended_run_reads_its_own_knob_values_where_the_knobs_show_others(runs_dir):
    """A review's learner watched a finished off-by-one run and read her own warmup 30, 1/√d_head and causal beside
    its curves: the knobs set her next run, and the run's own last values are said where they differ."""
    from tinygpt.runs.store import RunStore

    run_id = write_run(runs_dir)
    with RunStore(runs_dir).writer(run_id) as w:
        w.append_event({"time": 1.0, "step": 10, "kind": "knob", "knob": "mask", "ok": True, "old": "causal",
                        "new": "off_by_one", "message": "mask: causal -> off_by_one at step 10"})  # fmt: skip
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception, at.exception
    said = texts(at)
    assert "this run has ended: they set your next run" in said, said
    assert "This run's own values, where the knobs below show others: " in said, said
    assert "Mask off by one (below: causal)" in said, said


def test_a_lab_link_to_another_learners_runs_opens_nothing_of_theirs(runs_dir):
    """A reviewer opened a learner's lab runs on their own pasted text through the Experiments address (?lab=),
    samples included; a ?run= link to that learner's run was refused. The same rule now holds for both."""
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.experiments import experiments_keys

    anna, ben = Actor("a" * 16, "anna"), Actor("b" * 16, "ben")
    store = RunStore(runs_dir)
    ids = []
    for variant in EXPERIMENTS["scaling"].configs().values():  # the page's first experiment's own two runs
        config = variant.to_dict() | {"learner": {"id": anna.id, "name": "anna"}}
        with store.create(config, owner="app") as w:
            w.write_status(state="finished", step=0)
            ids.append(w.run_id)
    for viewer, opened in ((ben, False), (anna, True)):
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
        at.session_state[people_keys.LEARNER] = viewer
        at.switch_page("pages/experiments.py").run()
        at.query_params[experiments_keys.URL_LAB] = ",".join(ids)  # the address, pasted (two runs: a pair)
        at.run()
        assert not at.exception, at.exception
        known = at.session_state[experiments_keys.LAB_RUNS]
        assert (sorted(v for pair in known.values() for v in pair.values()) == sorted(ids)) is opened, known
        if not opened:  # said at once, in the same page run
            assert "another learner's runs" in texts(at), texts(at)
    # With view=1 they open read-only, as the refusal says (a review: refused by the words that said it opens them;
    # the frame drops view=1 from an address that shows no shared run before the page reads it)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.session_state[people_keys.LEARNER] = ben
    at.switch_page("pages/experiments.py").run()
    at.query_params[experiments_keys.URL_LAB], at.query_params["view"] = ",".join(ids), "1"
    at.run()
    assert not at.exception, at.exception
    known = at.session_state[experiments_keys.LAB_RUNS]
    assert sorted(v for pair in known.values() for v in pair.values()) == sorted(ids), known
    assert "another learner's runs" not in texts(at)


def test_a_lab_link_to_another_experiments_runs_is_refused_not_judged(runs_dir):
    """?lab= names two runs; the page took them as its selected experiment's pair whatever they were started for,
    and judged another pitfall's runs as this one's. Now runs without the experiment's own settings are refused,
    with the setting that differs, and the address is cleared."""
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.experiments import experiments_keys

    store = RunStore(runs_dir)
    ids = []
    for variant in EXPERIMENTS["residual"].configs().values():  # two runs, like scaling's, but of another pitfall
        with store.create(variant.to_dict(), owner="app") as w:
            w.write_status(state="finished", step=0)
            ids.append(w.run_id)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.switch_page("pages/experiments.py").run()
    at.query_params[experiments_keys.URL_LAB] = ",".join(ids)
    at.run()
    assert not at.exception, at.exception
    assert not (at.session_state[experiments_keys.LAB_RUNS] or {}).get("scaling")
    said = texts(at)
    assert "not this experiment's runs" in said and "attn_scale" in said, said
    assert experiments_keys.URL_LAB not in at.query_params


def test_a_new_tab_without_a_run_offers_the_learners_own_newest_run(runs_dir):
    """A review's learner opened Train in a new tab and read "No run yet" while her run trained: she is offered it
    by name, and the button opens it. Another learner is offered nothing of hers."""
    from tinygpt.runs.store import RunStore

    run_id = write_run(runs_dir)
    with RunStore(runs_dir).writer(run_id) as w:
        w.write_config({"learner": {"id": "a" * 16, "name": "anna"}})
    name = runlist.run_names(RunStore(runs_dir))[run_id]
    other = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    other.session_state["learner"] = Actor("b" * 16, "ben")
    other.run()
    assert "No run in view" in texts(other) and "Your newest run" not in texts(other)
    assert not [b for b in other.button if b.label == "Open your newest run"]
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.session_state["learner"] = Actor("a" * 16, "anna")
    at.run()
    assert f"Your newest run: **{name}** (finished, step 20)." in texts(at), texts(at)
    click(at, "Open your newest run")
    assert not at.exception, at.exception
    assert at.session_state[state.RUN_ID] == run_id
    assert "Your newest run" not in texts(at)


def test_a_new_tab_on_experiments_offers_the_learners_own_last_runs_of_it(runs_dir):
    """A review: a fresh tab, same learner, read "Press Run side by side" beside her finished pair; its verdict came
    back only by pasting the old ?lab= address. She is offered her runs by name; another learner is not."""
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.experiments import experiments_keys

    anna, ben = Actor("a" * 16, "anna"), Actor("b" * 16, "ben")
    store = RunStore(runs_dir)
    ids = []
    for variant in EXPERIMENTS["scaling"].configs(seed=23).values():  # the page's first experiment's own two runs
        with store.create(variant.to_dict() | {"learner": {"id": anna.id, "name": "anna"}}, owner="app") as w:
            w.write_status(state="finished", step=0)
            ids.append(w.run_id)
    pair = dict(zip(EXPERIMENTS["scaling"].variants, ids, strict=True))
    assert runlist.newest_own_experiment(store, anna, EXPERIMENTS["scaling"].variants) == pair
    assert runlist.newest_own_experiment(store, anna, EXPERIMENTS["residual"].variants) is None  # not its settings
    for viewer, offered in ((ben, False), (anna, True)):
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
        at.session_state[people_keys.LEARNER] = viewer
        at.switch_page("pages/experiments.py").run()
        assert not at.exception, at.exception
        assert ("Your last runs of this experiment" in texts(at)) is offered, texts(at)
        assert "Shown on a demo model" in texts(at)  # the Shape contracts tab's model is not the runs' (a review)
    click(at, "Open them")
    assert not at.exception, at.exception
    assert at.session_state[experiments_keys.LAB_RUNS]["scaling"] == pair


def test_train_again_beside_a_run_on_an_uploaded_text_keeps_the_files_name(runs_dir, tiny_text):
    """Review 3 (stop 52): a learner's second run on her calendar.py text was named "text d3510a": with her first
    run in view the form shows its text as a paste, and Train recorded no name."""
    import dataclasses

    from helpers import tiny_config

    from tinygpt.runs.files import read_config_json
    from tinygpt.runs.loop import run_training
    from tinygpt.runs.store import RunStore

    config = tiny_config(tiny_text, max_steps=4)
    config = dataclasses.replace(config, data=dataclasses.replace(config.data, text_name="calendar.py"))
    store = RunStore(runs_dir)
    with store.create(config.to_dict(), owner="cli") as writer:
        first = writer.run_id
    run_training(store.path(first), config)
    at = new_app()
    at.query_params["run"] = first
    at.run()
    assert at.session_state[train_keys.FORM_TEXT][0] == "calendar.py"
    at.number_input(key=train_keys.W_MAX_STEPS).set_value(6).run()
    click(at, "Train")
    assert not at.exception, at.exception
    second = at.session_state[state.RUN_ID]
    assert second != first and read_config_json(store.path(second))["data"]["text_name"] == "calendar.py"
    at.text_area(key=train_keys.W_PASTE).set_value(tiny_text + "\nedited").run()  # another text: no file's name
    assert settings.kept_text_name(tiny_text + "\nedited", at.session_state[train_keys.FORM_TEXT]) == ""


def test_the_exact_learning_rate_box_can_step_down_from_a_usual_rate(runs_dir):
    """Review 3 (stop 52): the exact box's "−" was greyed at 3.0e-3 (Streamlit's default step 0.01 would go below
    its minimum 1e-6), on Train and in the branch panel alike."""
    at = new_app()
    box = at.number_input(key=knob_key(at, train_keys.W_LR, "_exact"))
    assert box.step == settings.exact_step("learning_rate", box.value) and box.value - box.step >= box.min
    # Review 4: a fixed 1e-4 stuck at 5.0e-2 ("−" gave 0.0499, shown "5.0e-2", and stepped back from that): a tenth
    # of the value's decade, each press seen in the box's one decimal
    for rate, after in ((2e-3, "1.9e-03"), (5e-2, "4.9e-02"), (0.1, "9.0e-02"), (1e-6, "9.0e-07")):
        assert f"{rate - settings.exact_step('learning_rate', rate):.1e}" == after
    assert settings.exact_step("attn_scale_mult", 1.0) is None  # its own box keeps Streamlit's step
