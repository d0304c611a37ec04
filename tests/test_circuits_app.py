"""The Circuits page through AppTest: it renders without a run, and on a finished tiny run it shows the head
table, the ablation and the logit lens, and refuses the live head switch for a run that is not training."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import tiny_config  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.loop import run_training  # noqa: E402
from tinygpt.runstore import RunStore  # noqa: E402
from tinygpt.ui import state  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def app() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def test_the_page_renders_without_a_run(runs_dir):
    at = app()
    at.switch_page("pages/circuits.py").run()
    assert not at.exception, at.exception
    assert "No run selected" in texts(at)
    assert any(b.label == "Start the experiment" for b in at.button)


def test_the_page_shows_heads_ablation_and_lens_of_a_run(runs_dir, tiny_text):
    store = RunStore(runs_dir)
    config = tiny_config(tiny_text, max_steps=30)
    with store.create(config.to_dict(), owner="cli") as writer:
        run_dir = writer.run_dir
    assert run_training(run_dir, config) == "finished"
    at = app()
    at.query_params["run"] = run_dir.name
    at.run()
    at.switch_page("pages/circuits.py").run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert "Heads at step 30" in shown
    assert "validation tokens, every head ablated in turn" in shown
    assert "Top guess right, by where the stream is read" in shown
    assert "The switch needs a run that is training now." in shown
    [table] = [d for d in at.dataframe if "role" in d.value.columns]
    assert list(table.value["head"]) == ["L0H0", "L0H1", "L1H0", "L1H1"]
    at.selectbox(key=state.W_CIRC_HEAD).set_value("L1H1").run()
    at.segmented_control(key=state.W_CIRC_MODE).set_value("mean").run()
    assert not at.exception, at.exception


def test_the_experiments_page_links_the_induction_runs_to_circuits_and_back(runs_dir, tiny_text):
    store = RunStore(runs_dir)
    ids = []
    for layers in (2, 1):  # stand-ins for the experiment's two runs (labels in circuits.INDUCTION_VARIANTS)
        config = tiny_config(tiny_text, max_steps=10, num_layers=layers)
        with store.create(config.to_dict(), owner="cli") as writer:
            ids.append(writer.run_dir.name)
        assert run_training(writer.run_dir, config) == "finished"
    at = app()
    at.switch_page("pages/experiments.py").run()
    assert not at.exception, at.exception
    [link] = [e for e in at.get("page_link") if "Run it on Circuits" in e.proto.label]
    assert link.proto.page.endswith("circuits")
    at.query_params[state.URL_CIRC] = ",".join(ids)  # a session that started the experiment (or a link to it)
    at.run()
    assert not at.exception, at.exception
    [link] = [e for e in at.get("page_link") if "on Circuits" in e.proto.label]
    assert "See its phase change" in link.proto.label
    assert link.proto.query_string == f"{state.URL_RUN}={ids[0]}&{state.URL_CIRC}={ids[0]}%2C{ids[1]}"
    assert "Did not reproduce." in texts(at)  # 10 steps: the verdict is computed, and honest
    at.switch_page("pages/circuits.py").run()
    assert not at.exception, at.exception
    assert any("pitfall lab" in e.proto.label for e in at.get("page_link"))
