"""Hostile links and inputs show as text: no markdown link, image or HTML from a URL parameter reaches the page."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.ui.host import resources  # noqa: E402
from tinygpt.ui.words.safe import md  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
LINK = "[Click here to log in](http://evil.example/login)"
IMAGE = "![](http://evil.example/pixel.png)"


def rendered(at: AppTest) -> list[str]:
    """Every string the page hands to Streamlit's markdown renderer."""
    elements = [*at.markdown, *at.caption, *at.warning, *at.error, *at.info, *at.success]
    return [str(e.value) for e in elements]


def unescaped_markup(text: str) -> bool:
    """A markdown link or image, or an HTML tag, that the renderer would turn into one."""
    import re

    return bool(re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\((?!\\)", text) or re.search(r"(?<!\\)<[a-z]", text))


def test_md_escapes_links_images_html_and_directives():
    for hostile in (LINK, IMAGE, "<img src=x onerror=alert(1)>", ":red[x] :material/lock:", "$x$", "# head\n- item"):
        escaped = md(hostile)
        assert not unescaped_markup(escaped) and "\n" not in escaped
        assert escaped.replace("\\", "") == " ".join(hostile.split())  # the same characters, shown as text


@pytest.mark.parametrize(
    "params",
    [
        {"run": LINK},
        {"run": IMAGE},
        {"preset": LINK},
        {"experiment": IMAGE},
        {IMAGE: "1"},
        {"num_heads": LINK},
        {"hide": LINK},
    ],
)
def test_hostile_link_parameters_are_shown_as_text(runs_dir, params):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    texts = rendered(at)
    assert not [t for t in texts if unescaped_markup(t)], texts
    assert any("evil" in t for t in texts), "the bad value is reported (as text), not swallowed"


def test_every_bad_value_of_a_workshop_link_is_reported_and_out_of_range_values_clamped():
    """Reproduces: only the first bad value was reported, hide=foo was ignored silently, and values outside a
    widget's range were silently replaced by its minimum (?learning_rate=100 trained at 1e-06)."""
    from tinygpt.ui.teach.workshop import parse_workshop

    shop = parse_workshop(
        {"learning_rate": "100", "max_steps": "100000000", "max_grad_norm": "5000", "hide": "foo,mask", "seed": "x"}
    )
    assert shop.overrides == {"learning_rate": 10.0, "max_steps": 1_000_000, "max_grad_norm": 1000.0}
    assert shop.hidden == {"mask"}
    joined = " | ".join(shop.errors)
    for expected in ("learning_rate=100.0 is above", "max_steps=100000000", "max_grad_norm=5000.0", "'foo'", "seed"):
        assert expected in joined
    assert len(shop.errors) == 5


def test_a_clamped_link_value_reaches_the_widget(runs_dir):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["learning_rate"] = "100"
    at.run()
    from tinygpt.ui.train import knob_widgets, train_keys

    assert at.select_slider(key=knob_widgets.widget_key(train_keys.W_LR, {})).value == 10.0
    assert any("above the largest allowed 10.0" in str(w.value).replace("\\", "") for w in at.warning)


def test_a_runs_folder_that_cannot_be_written_is_a_message_on_train(tmp_path, monkeypatch):
    """Train with a runs folder that cannot be created (here under a file: root ignores read-only permissions)
    shows what happened and what to do, not an OSError traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TINYGPT_RUNS_DIR", str(blocker / "runs"))
    from tinygpt.ui.train import train_keys

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    try:
        assert not at.exception, at.exception
        at.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
        next(b for b in at.button if b.label == "Train").click().run()
        assert not at.exception, at.exception
        said = " ".join(str(e.value).replace("\\", "") for e in at.error)
        assert "runs folder" in said and "TINYGPT_RUNS_DIR" in said, said
    finally:
        try:
            resources.manager_at(str((blocker / "runs").resolve())).shutdown()
        except Exception:
            pass
