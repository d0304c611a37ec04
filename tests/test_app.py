"""The Streamlit app through streamlit.testing.v1.AppTest: every page renders, settings give valid configs,
bad settings give messages (not tracebacks), and a real (tiny) run trains behind the Train page.

Offline: runs use a synthetic corpus or pasted text, never Tiny Shakespeare.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.config import RunConfig  # noqa: E402
from tinygpt.ui import app_support as sup  # noqa: E402
from tinygpt.ui import state  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYGPT_RUNS_DIR", str(tmp_path / "runs"))
    yield tmp_path / "runs"
    try:  # stop this test's workers; the manager is cached per runs folder
        sup._manager_at(str((tmp_path / "runs").resolve())).shutdown()
    except Exception:
        pass


def new_app() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [w.value for w in at.warning] + [i.value for i in at.info]
    parts += [s.value for s in at.success]
    return "\n".join(str(p) for p in parts)


def click(at: AppTest, label: str) -> AppTest:
    [button] = [b for b in at.button if b.label == label]
    return button.click().run()


def start_run(at: AppTest, max_steps: int = 40, source: str = "Synthetic: copy") -> str:
    at.selectbox(key=state.W_SOURCE).set_value(source).run()
    at.number_input(key=state.W_MAX_STEPS).set_value(max_steps).run()
    click(at, "Train")
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    run_id = at.session_state[state.RUN_ID]
    assert at.query_params["run"] == [run_id] or at.query_params["run"] == run_id
    return run_id


def wait_for(at: AppTest, predicate, timeout: float = 60) -> AppTest:
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
        if value.startswith("**step "):
            return int(value.removeprefix("**step ").split(" ", 1)[0].replace(",", ""))
    return -1


# ---------------------------------------------------------------- pure helpers


@pytest.mark.parametrize("label", list(sup.PRESET_LABELS))
def test_every_preset_gives_a_valid_config(label):
    values = sup.preset_values(label)
    config = sup.build_config(label, values, sup.data_config("Synthetic: add"))
    assert isinstance(config, RunConfig)
    assert config.model.hidden_dim % config.model.num_heads == 0
    assert RunConfig.from_dict(config.to_dict()) == config


def test_heads_options_divide_the_width():
    assert sup.heads_options(64) == [1, 2, 4, 8, 16]
    assert sup.heads_options(48) == [1, 2, 3, 4, 6, 8, 12, 16]
    assert all(384 % h == 0 for h in sup.heads_options(384))


def test_status_line_and_eta():
    metrics = [{"step": s, "time": 100.0 + s * 0.1} for s in range(1, 51)]
    line = sup.status_line({"state": "running", "step": 50, "max_steps": 150, "tokens_per_s": 12345.6}, metrics)
    assert line.startswith("step 50 / 150 · 12,346 tokens/s · ETA 10 s · running")


def test_lr_schedule_warms_up_then_decays():
    config = {"train": {"max_steps": 100, "learning_rate": 1e-3, "min_lr": 1e-4, "warmup_steps": 10}}
    sched = sup.lr_schedule(config, {})
    lrs = dict(sched)
    assert lrs[10] == pytest.approx(1e-3) and lrs[1] < lrs[10] and lrs[100] < lrs[50]


# ---------------------------------------------------------------- pages


def test_train_page_renders_with_presets_and_only_valid_heads(runs_dir):
    at = new_app()
    assert "tinygpt" in at.title[0].value
    heads = at.selectbox(key=state.W_HEADS)
    width = at.selectbox(key=state.W_WIDTH).value
    offered = [int(str(o).split()[0]) for o in heads.options]
    assert offered and all(width % h == 0 for h in offered)
    at.selectbox(key=state.W_WIDTH).set_value(48).run()
    assert not at.exception
    assert [int(str(o).split()[0]) for o in at.selectbox(key=state.W_HEADS).options] == sup.heads_options(48)
    at.selectbox(key=state.W_PRESET).set_value("nanoGPT CPU").run()
    assert at.selectbox(key=state.W_WIDTH).value == 128
    assert at.number_input(key=state.W_MAX_STEPS).value == 2000


@pytest.mark.parametrize("page", ["pages/attention.py", "pages/gradients.py", "pages/sample.py", "pages/runs.py"])
def test_every_page_renders_without_a_run(runs_dir, page):
    at = new_app()
    at.switch_page(page).run()
    assert not at.exception, at.exception


def test_invalid_settings_show_an_error_not_a_traceback(runs_dir):
    at = new_app()
    at.selectbox(key=state.W_SOURCE).set_value(sup.SOURCE_PASTE).run()
    at.text_area(key=state.W_PASTE).set_value("too short").run()
    click(at, "Train")
    assert not at.exception
    assert at.error and "characters" in at.error[0].value
    at.selectbox(key=state.W_SOURCE).set_value("Synthetic: sort").run()
    at.selectbox(key=state.W_MASK).set_value("sliding_window").run()
    at.number_input(key=state.W_WINDOW).set_value(500).run()
    click(at, "Train")
    assert not at.exception
    assert at.error and "window" in at.error[0].value
    assert state.RUN_ID not in at.session_state


def test_bad_run_id_in_the_url_is_a_message(runs_dir):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.query_params["run"] = "../../etc"
    at.run()
    assert not at.exception
    assert any("Ignored the run" in w.value for w in at.warning)


def test_train_then_steps_update_status_and_every_page_renders(runs_dir):
    at = new_app()
    run_id = start_run(at, max_steps=100_000)  # long enough that the pause below always lands mid-run
    wait_for(at, lambda a: status_step(a) > 0, timeout=60)
    # Pause, then Step 5: exactly five more steps; Resume trains on; Stop checkpoints and ends the run.
    click(at, "Pause")
    wait_for(at, lambda a: "· paused" in texts(a), timeout=30)
    paused_at = status_step(at)
    at.number_input(key=state.W_STEP_N).set_value(5).run()
    click(at, "Step")
    wait_for(at, lambda a: status_step(a) == paused_at + 5 and "· paused" in texts(a), timeout=30)
    click(at, "Resume")
    wait_for(at, lambda a: status_step(a) > paused_at + 30, timeout=60)
    click(at, "Stop")
    wait_for(at, lambda a: "· stopped" in texts(a), timeout=30)

    at.switch_page("pages/attention.py").run()
    assert not at.exception, at.exception
    assert not at.warning, [w.value for w in at.warning]
    at.switch_page("pages/gradients.py").run()
    assert not at.exception, at.exception

    at.switch_page("pages/sample.py").run()
    assert not at.exception, at.exception
    at.text_area(key=state.W_PROMPT).set_value("abc>").run()
    at.number_input(key=state.W_NUM_CHARS).set_value(20).run()
    click(at, "Generate")
    assert not at.exception, at.exception
    last = at.session_state[state.LAST_SAMPLE]
    assert len(last["text"]) == 20 and last["run"] == run_id
    at.text_area(key=state.W_PROMPT).set_value("ABC€").run()
    click(at, "Generate")
    assert not at.exception
    assert at.warning and "'€'" in at.warning[0].value

    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    assert run_id in texts(at) or any(run_id in str(o) for o in at.selectbox(key="w_runs_pick").options)
