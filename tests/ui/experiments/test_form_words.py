"""tinygpt/ui/experiments/form_words.py: the Experiments page says what the runs it shows trained on where its
pickers (the next runs' corpus and seed) hold something else. A review read "Corpus (both runs): Tiny Shakespeare ·
Seed (both runs): 1337" above runs of her own text with seed 271, opened from a link in a new tab."""

from __future__ import annotations

from tinygpt.runs.corpus import corpus_sha256
from tinygpt.ui.experiments.form_words import picked_text, runs_unlike_form

TEXT = "def enter(self, delay, priority, action):\n    pass\n" * 40


def configs(source: str, seed: int, text: str = "") -> dict:
    data = {"source": source} | ({"text_sha256": corpus_sha256(text)} if text else {})
    return {label: {"data": data, "train": {"seed": seed}} for label in ("stable softmax", "naive softmax")}


def test_the_runs_shown_are_said_where_the_pickers_hold_another_corpus_or_seed():
    mine = configs("text", 271, TEXT)
    said = runs_unlike_form(mine, "shakespeare", None, 1337)
    assert said.startswith(f"The runs below trained on a pasted or uploaded text (sha256 {corpus_sha256(TEXT)[:8]}…), "
                           "seed 271. The corpus and seed above are for your next"), said  # fmt: skip
    assert runs_unlike_form(mine, "text", picked_text("text", TEXT.replace("\n", "\r\n")), 271) == ""  # the same
    assert "seed 271" in runs_unlike_form(mine, "text", TEXT, 1337)  # another seed alone
    assert runs_unlike_form(configs("shakespeare", 1337), "shakespeare", None, 1337) == ""
    assert picked_text("text", "") is None and picked_text("shakespeare", TEXT) is None
