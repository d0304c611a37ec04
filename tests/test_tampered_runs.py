"""Hostile run files (issue 22, findings 5 and 6): every page reads a run folder whose files were replaced by
garbage, by values of the wrong type, or by markdown, and shows one message or the run, never a traceback, and
never renders a link or an image that came from a file.

A run folder is written by another process (a worker, the CLI, a copied folder, a curious learner with a shell):
the pages may not trust it. Each case tampers one file of a finished run and opens every page on it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import write_run  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PAGES = ["pages/train.py", "pages/attention.py", "pages/circuits.py", "pages/gradients.py", "pages/sample.py",
         "pages/runs.py"]  # fmt: skip
MARKDOWN = "[link](//evil.example/x) ![img](//evil.example/y.png) <b>bold</b>"


def _status(run_dir: Path, **fields) -> None:
    status = json.loads((run_dir / "status.json").read_text())
    (run_dir / "status.json").write_text(json.dumps({**status, **fields}))


def _append(path: Path, record) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def _scores(run_dir: Path, records: list) -> None:
    path = run_dir / "attention" / "scores.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _text_source(run_dir: Path, corpus: str | None) -> None:
    """Make the run a "text" run whose corpus.txt is gone (None) or is not the text config.json names."""
    config = json.loads((run_dir / "config.json").read_text())
    config["data"] = {**config["data"], "source": "text", "text": "", "text_sha256": "0" * 64}
    (run_dir / "config.json").write_text(json.dumps(config))
    if corpus is not None:
        (run_dir / "corpus.txt").write_text(corpus)


TAMPERS = {
    "status tokens_per_s text": lambda d: _status(d, tokens_per_s="fast"),
    "status step text": lambda d: _status(d, step="many", max_steps=[1], best_val_loss="low"),
    "status state unknown": lambda d: _status(d, state="exploded", reason=42),
    "status reason markdown": lambda d: _status(d, state="failed", reason=MARKDOWN),
    "status garbage": lambda d: (d / "status.json").write_bytes(b"\x00\xff{not json"),
    "status a list": lambda d: (d / "status.json").write_text("[1, 2]"),
    "event message markdown": lambda d: _append(d / "events.jsonl", {"step": 3, "kind": "state", "message": MARKDOWN}),
    "knob event without knob": lambda d: _append(d / "events.jsonl", {"step": 4, "kind": "knob", "old": 1, "new": 2}),
    "knob event wrong types": lambda d: _append(
        d / "events.jsonl", {"step": "x", "kind": "knob", "knob": ["mask"], "old": {}, "new": MARKDOWN}
    ),
    "knob event markdown": lambda d: _append(
        d / "events.jsonl", {"step": 6, "kind": "knob", "knob": "mask", "old": "causal", "new": MARKDOWN}
    ),
    "knob message markdown": lambda d: _append(
        d / "events.jsonl",
        {"step": 7, "kind": "knob", "knob": "learning_rate", "old": 1e-3, "new": 2e-3, "ok": True, "message": MARKDOWN},
    ),
    "diverged message markdown": lambda d: _append(
        d / "events.jsonl", {"step": 8, "kind": "nonfinite", "message": MARKDOWN}
    ),
    "metrics wrong types": lambda d: _append(
        d / "metrics.jsonl", {"step": 21, "loss": "low", "lr": [], "grad_norm": {}}
    ),
    "evals wrong types": lambda d: _append(d / "evals.jsonl", {"step": "x", "train_loss": "a", "val_loss": None}),
    "scores wrong shapes": lambda d: _scores(
        d, [{"step": 0, "roles": {"induction": [1, 2, 3]}}, {"step": 5, "roles": 7}]
    ),
    "scores absurd steps": lambda d: _scores(d, [{"step": 1e15, "roles": {}}, {"step": -3, "roles": {}}]),
    "attention index wrong types": lambda d: (d / "attention" / "index.json").write_text(
        json.dumps({"probe_text": 5, "tokens": "abc", "snapshots": [{"step": "x"}, 7]})
    ),
    "config name markdown": lambda d: (d / "config.json").write_text(
        json.dumps({**json.loads((d / "config.json").read_text()), "learner": {"id": "x" * 16, "name": MARKDOWN}})
    ),
    # Found by the reliability probe's tampered family (tests/probe_app.py): TypeError on Train and Attention,
    # KeyError 'model' on Circuits. Now the page says the config is damaged and shows no run.
    "config wrong types": lambda d: (d / "config.json").write_text(
        json.dumps({**json.loads((d / "config.json").read_text()), "model": {"num_layers": "many", "num_heads": {}}})
    ),
    "config without model": lambda d: (d / "config.json").write_text(
        json.dumps({k: v for k, v in json.loads((d / "config.json").read_text()).items() if k != "model"})
    ),
    "corpus.txt missing": lambda d: _text_source(d, None),
    "corpus.txt edited": lambda d: _text_source(d, "not the text this run learned " * 40),
    "samples wrong types": lambda d: _append(d / "samples.jsonl", {"step": "x", "prompt": 5, "text": MARKDOWN}),
}


def _rendered_markdown(at: AppTest) -> str:
    """What the page hands to Streamlit's markdown renderer (markdown, captions, messages)."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [w.value for w in at.warning] + [i.value for i in at.info]
    parts += [s.value for s in at.success]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_every_page_survives_a_tampered_run_file(runs_dir, tamper):
    run_id = write_run(runs_dir)
    TAMPERS[tamper](runs_dir / run_id)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, f"{page}: {at.exception}"
        shown = _rendered_markdown(at)
        assert "](//evil.example" not in shown, f"{page} renders a link or image from a run file"
        assert "<b>bold</b>" not in shown or "\\<b>" in shown, f"{page} renders HTML from a run file"
