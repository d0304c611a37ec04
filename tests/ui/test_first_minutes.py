"""What a newcomer reads in the first five minutes, checked true (issue 36, items 2 and 6): the corpus caption,
the status line, the empty charts' axes, the Probe field, the Train page's sample."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt import data  # noqa: E402
from tinygpt.ui import runinfo, settings, state  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_the_corpus_caption_says_what_loading_does(monkeypatch, runs_dir):
    """Issue 36 item 2: it said "downloaded once on first use" of a copy that ships in the package."""

    def no_network(*args, **kwargs):
        raise AssertionError("Tiny Shakespeare was fetched from the network")

    monkeypatch.delenv(data.SHAKESPEARE_ENV, raising=False)
    monkeypatch.setattr(data, "urlopen", no_network)
    text = data.load_shakespeare(cache_dir=runs_dir / "no-cache")
    assert len(text.encode()) == data.SHAKESPEARE_BYTES  # what the caption's "1.1 MB" is
    assert "nothing is downloaded" in settings.SHAKESPEARE_CAPTION and "first use" not in settings.SHAKESPEARE_CAPTION
    assert f"{data.SHAKESPEARE_BYTES / 1e6:.1f} MB" in settings.SHAKESPEARE_CAPTION

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    at.selectbox(key=state.W_SOURCE).set_value(settings.SOURCE_SHAKESPEARE).run()
    assert settings.SHAKESPEARE_CAPTION in [c.value for c in at.caption]
    assert not any("downloaded once" in str(c.value) for c in at.caption)


def test_the_status_line_has_no_empty_parts():
    """Issue 36 item 6: a starting run read "ETA - · · starting"."""
    line = runinfo.status_line({"state": "starting", "step": 0, "max_steps": 300}, [])
    assert " · · " not in line and "ETA -" not in line and line.endswith("starting")
