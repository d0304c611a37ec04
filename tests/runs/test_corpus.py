"""How many tokens a run's vocabulary holds before its worker has loaded the corpus (tinygpt/runs/corpus.py
known_vocab_size). Review: a learner's queued run on 30 kB of pasted text, 90 distinct characters, drew "uniform
guess ln(V)=4.17" (ln 65, config.json's default vocab_size) until its worker rewrote the config; after start 4.50."""

from __future__ import annotations

import math

from helpers import tiny_config

from tinygpt.runs.corpus import known_vocab_size, store_corpus
from tinygpt.runs.files import CONFIG_FILE, write_json_atomic
from tinygpt.tokenizer import CharTokenizer

TEXT = "".join(chr(33 + i) for i in range(90)) * 40 + "\r\n"  # 90 distinct characters, a Windows line end


def queued(tmp_path, text: str = TEXT) -> dict:
    """config.json as a queued run on `text` has it: the text in corpus.txt, no vocab, vocab_size the default."""
    config = store_corpus(tmp_path, tiny_config(text).to_dict())
    write_json_atomic(tmp_path / CONFIG_FILE, config)
    return config


def test_a_queued_run_on_its_own_text_knows_its_vocabulary_from_the_text(tmp_path):
    config = queued(tmp_path)
    assert "vocab" not in config and config["model"]["vocab_size"] == 65 and config["data"]["text"] == ""
    # the tokenizer's rule: "\r\n" reads as "\n" (data.text_from_user), so 91 tokens, not 92
    assert known_vocab_size(tmp_path, config) == len(CharTokenizer.from_text(TEXT.replace("\r\n", "\n"))) == 91
    assert f"{math.log(known_vocab_size(tmp_path, config)):.2f}" == "4.51"
    inline = tiny_config("abcab" * 20).to_dict()  # an older folder: the text in config.json itself
    assert known_vocab_size(tmp_path, inline) == 3


def test_the_workers_vocab_wins_and_a_named_corpus_waits_for_it(tmp_path):
    config = queued(tmp_path)
    assert known_vocab_size(tmp_path, {**config, "vocab": list("abc")}) == 3  # written once the worker loaded it
    named = {**tiny_config("abc").to_dict(), "data": {"source": "shakespeare"}}
    assert known_vocab_size(tmp_path, named) is None  # 65 in the config is a default, not what was loaded
    assert known_vocab_size(tmp_path, {**named, "vocab": list("xyz!")}) == 4
    missing = {**config, "data": {**config["data"], "text_sha256": "0" * 64}}
    assert known_vocab_size(tmp_path / "gone", missing) is None  # no corpus.txt to read: nothing said
