"""The Train page's live charts (tinygpt/ui/train/train_view.py): the loss chart's uniform-guess line comes from
the run's real vocabulary or is not drawn. Review: a queued run on pasted text of 90 distinct characters drew
"uniform guess ln(V)=4.17" (config.json's default vocab_size 65) until its worker loaded the corpus."""

from __future__ import annotations

from types import SimpleNamespace

from helpers import tiny_config

from tinygpt.runs.corpus import store_corpus
from tinygpt.runs.files import CONFIG_FILE, write_json_atomic
from tinygpt.ui.charts import curves
from tinygpt.ui.train import train_view

TEXT = "".join(chr(33 + i) for i in range(90)) * 40  # 90 distinct characters


def drawn_vocab(monkeypatch, run_dir, config: dict) -> int | None:
    """The vocab_size the Train page hands the loss chart for a queued run (no metrics, no events yet)."""
    seen, real = [], curves.loss_chart

    def loss_chart(metrics, evals, events, vocab_size, **kw):
        seen.append(vocab_size)
        return real(metrics, evals, events, vocab_size, **kw)

    monkeypatch.setattr(train_view.curves, "loss_chart", loss_chart)
    rd = SimpleNamespace(run_dir=run_dir, metrics=[], evals=[], events=[], checkpoints=list)
    train_view._figures(rd, None, config, {"step": 0}, (False, None, 0.0, "steps"))
    return seen[0]


def test_a_queued_run_on_pasted_text_draws_ln_of_its_own_vocabulary(monkeypatch, tmp_path):
    config = store_corpus(tmp_path, tiny_config(TEXT).to_dict())
    write_json_atomic(tmp_path / CONFIG_FILE, config)
    assert config["model"]["vocab_size"] == 65 and "vocab" not in config  # what config.json says while queued
    assert drawn_vocab(monkeypatch, tmp_path, config) == 90


def test_a_queued_run_on_a_named_corpus_draws_no_line_until_its_worker_wrote_the_vocab(monkeypatch, tmp_path):
    config = {**tiny_config("abc").to_dict(), "data": {"source": "shakespeare"}}
    assert drawn_vocab(monkeypatch, tmp_path, config) is None
    assert drawn_vocab(monkeypatch, tmp_path, {**config, "vocab": list("abcd")}) == 4


def test_the_queue_notes_advice_is_for_the_runs_owner_alone(monkeypatch):
    """A review: the instructor projecting a learner's queued run was told to "open the instructor's run", and a
    learner watching a neighbour's queued run, to open a neighbour's. Others read whose run waits."""
    from tinygpt.runs.owners import Actor

    shown = []
    monkeypatch.setattr(train_view.st, "info", shown.append)
    monkeypatch.setattr(train_view.resources, "queue_forecast", lambda run_id: None)
    monkeypatch.setattr(train_view.runinfo, "queue_words", lambda forecast: "Queued: 2 ahead of it")
    ada, bob = Actor("a" * 16, "ada"), Actor("b" * 16, "bob")
    config = {"learner": {"id": ada.id, "name": ada.name}}
    train_view.queue_note("r1", config, ada)
    train_view.queue_note("r1", config, bob)
    train_view.queue_note("r1", config, Actor("boss", "Teacher", instructor=True))
    assert "Meanwhile, open the instructor's or a neighbour's run" in shown[0]
    assert shown[1] == shown[2] == "Queued: 2 ahead of it. This is ada's run: it trains once it leaves the queue."
