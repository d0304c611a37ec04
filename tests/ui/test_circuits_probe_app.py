"""The Circuits page's probe box and Head picker through AppTest: they keep their values when the learner goes to
another page and comes back (Streamlit drops an unpersisted widget's key on a page without it), and a probe the
model cannot read (empty, unknown characters, too long) is said in plain words, never a raw shape error."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import tiny_config  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.runs.loop import run_training  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.circuits import circuits_keys  # noqa: E402
from tinygpt.ui.run import in_view  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def circuits_on_a_run(runs_dir, text: str) -> tuple[AppTest, str]:
    """The Circuits page on a finished tiny 2-layer run, and that run's probe text."""
    store = RunStore(runs_dir)
    config = tiny_config(text, max_steps=20)
    with store.create(config.to_dict(), owner="cli") as writer:
        run_dir = writer.run_dir
    assert run_training(run_dir, config) == "finished"
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params[in_view.URL_RUN] = run_dir.name
    at.run()
    at.switch_page("pages/circuits.py").run()
    assert not at.exception, at.exception
    probe = store.reader(run_dir.name).attention_index().get("probe_text", "")
    assert probe
    return at, probe


def away_and_back(at: AppTest, page: str, away: str = "pages/train.py") -> None:
    """Go to another page and come back to `page`, as a learner does (Streamlit drops unpersisted widget values)."""
    at.switch_page(away).run()
    assert not at.exception, at.exception
    at.switch_page(page).run()
    assert not at.exception, at.exception


def shown(at: AppTest) -> str:
    parts = [*at.markdown, *at.caption, *at.info, *at.warning, *at.error, *at.exception]
    return "\n".join(str(p.value) for p in parts).replace("\\", "")  # safe.md's escapes


def test_the_probe_and_the_head_survive_a_visit_to_another_page(runs_dir, tiny_text):
    """Review defect: after Train or Room and back, the probe box was empty and the lens and the ablation showed
    "idx: expected shape (B, T) ... got (1, 0)"; the Head picker was back on L0H0."""
    at, probe = circuits_on_a_run(runs_dir, tiny_text)
    assert at.text_input(key=circuits_keys.W_CIRC_PROBE).value == probe
    at.selectbox(key=circuits_keys.W_CIRC_HEAD).set_value("L1H1").run()
    for page in ("pages/train.py", "pages/runs.py"):  # Room is the instructor's: the same page change
        away_and_back(at, "pages/circuits.py", away=page)
        assert at.text_input(key=circuits_keys.W_CIRC_PROBE).value == probe
        assert at.selectbox(key=circuits_keys.W_CIRC_HEAD).value == "L1H1"
        text = shown(at)
        assert "expected shape" not in text and "ShapeError" not in text
        assert "held-out characters; every head ablated in turn" in text


def test_a_typed_probe_survives_too(runs_dir, tiny_text):
    at, probe = circuits_on_a_run(runs_dir, tiny_text)
    typed = probe[:5]
    at.text_input(key=circuits_keys.W_CIRC_PROBE).set_value(typed).run()
    away_and_back(at, "pages/circuits.py")
    assert at.text_input(key=circuits_keys.W_CIRC_PROBE).value == typed


def test_an_empty_probe_is_said_in_plain_words(runs_dir, tiny_text):
    at, _ = circuits_on_a_run(runs_dir, tiny_text)
    at.text_input(key=circuits_keys.W_CIRC_PROBE).set_value("").run()
    assert not at.exception, at.exception
    text = shown(at)
    assert "Type a probe text: it is empty" in text
    assert "expected shape" not in text and "idx:" not in text


def test_a_probe_the_vocabulary_cannot_read_is_said_in_plain_words(runs_dir, tiny_text):
    at, _ = circuits_on_a_run(runs_dir, tiny_text)
    at.text_input(key=circuits_keys.W_CIRC_PROBE).set_value("€€€").run()
    assert not at.exception, at.exception
    text = shown(at)
    assert "characters the model has never seen" in text and "expected shape" not in text


def test_another_run_still_brings_its_own_probe(runs_dir, tiny_text):
    """The kept box must not keep one run's probe over the next: a newly viewed run fills it with its own."""
    at, probe = circuits_on_a_run(runs_dir, tiny_text)
    at.text_input(key=circuits_keys.W_CIRC_PROBE).set_value(probe[:3]).run()
    store = RunStore(runs_dir)
    config = tiny_config("xyz " * 200, max_steps=10)
    with store.create(config.to_dict(), owner="cli") as writer:
        other = writer.run_dir.name
    assert run_training(writer.run_dir, config) == "finished"
    at.switch_page("pages/train.py").run()
    at.query_params[in_view.URL_RUN] = other
    at.switch_page("pages/circuits.py").run()
    assert not at.exception, at.exception
    assert at.session_state[state.RUN_ID] == other
    other_probe = store.reader(other).attention_index().get("probe_text", "")
    assert other_probe and at.text_input(key=circuits_keys.W_CIRC_PROBE).value == other_probe
    assert "expected shape" not in shown(at) and "never seen" not in shown(at)


def test_the_attention_pages_probe_survives_a_visit_to_another_page(runs_dir, tiny_text):
    """The same defect on Attention (its probe box is filled once a run, by the same kind of marker): after Train
    and back it came back empty."""
    from tinygpt.ui.attention import attention_keys

    at, probe = circuits_on_a_run(runs_dir, tiny_text)
    at.switch_page("pages/attention.py").run()
    assert not at.exception, at.exception
    assert at.text_area(key=attention_keys.W_PROBE).value == probe
    away_and_back(at, "pages/attention.py")
    assert at.text_area(key=attention_keys.W_PROBE).value == probe


def test_an_emptied_attention_probe_says_whose_characters_label_the_mask(runs_dir, tiny_text):
    """Review: with the probe box emptied, the mask matrix stayed labelled with the old probe's characters."""
    from tinygpt.ui.attention import attention_keys

    at, _ = circuits_on_a_run(runs_dir, tiny_text)
    at.switch_page("pages/attention.py").run()
    at.text_area(key=attention_keys.W_PROBE).set_value("").run()
    assert not at.exception, at.exception
    assert "The probe box is empty: drawn over the run's own probe text." in shown(at)
