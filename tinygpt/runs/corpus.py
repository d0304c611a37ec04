"""The run's corpus file: a pasted or uploaded text stored once per run in corpus.txt, named in config.json by
its sha256, so config.json and every checkpoint stay small; a corpus.txt edited afterwards is refused by hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from ..config import DataConfig, RunConfig
from ..errors import DataError, RunStoreError, TokenizerError
from ..tokenizer import CharTokenizer
from .files import CORPUS_FILE, read_config_json, write_atomic


def corpus_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def store_corpus(run_dir: str | Path, config: dict) -> dict:
    """Move a config's inline text corpus (source "text") into run_dir/corpus.txt and return the config that
    names it instead (data.text "", data.text_sha256 its hash). Other configs come back unchanged. A 20 MB upload
    used to be copied into config.json and every checkpoint's JSON (~100 MB a run) and into every reader's
    memory; now it is on disk once and configs stay a few kB."""
    data = config.get("data") if isinstance(config, dict) else None
    if not isinstance(data, dict) or data.get("source") != "text" or not data.get("text"):
        return config
    text = data["text"]
    digest = corpus_sha256(text)
    path = Path(run_dir) / CORPUS_FILE
    if not path.exists() or corpus_sha256(path.read_bytes().decode("utf-8", errors="replace")) != digest:
        encoded = text.encode("utf-8")
        write_atomic(path, lambda f: f.write(encoded))
    return {**config, "data": {**data, "text": "", "text_sha256": digest}}


def read_corpus(run_dir: str | Path, sha256: str | None = None) -> str:
    """The text a "text"-source run trains on: its corpus.txt (new runs) or the text inline in its config.json
    (older run folders); "" for other sources. With `sha256` (or the one config.json names), the text must match
    it, else RunStoreError: a corpus.txt edited after the run started is not the text its checkpoints learned."""
    run_dir = Path(run_dir)
    data = read_config_json(run_dir).get("data") or {}
    if data.get("source") != "text":
        return ""
    if data.get("text"):
        return data["text"]
    expected = sha256 or data.get("text_sha256") or None
    try:
        text = (run_dir / CORPUS_FILE).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise RunStoreError(
            f"run {run_dir.name} trains on your text, but its {CORPUS_FILE} is missing: put the file back, or "
            "start a new run with the text."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunStoreError(f"{run_dir / CORPUS_FILE} is unreadable ({exc}): start a new run with the text.") from exc
    if expected and corpus_sha256(text) != expected:
        raise RunStoreError(
            f"{run_dir / CORPUS_FILE} is not the text run {run_dir.name} was trained on (sha256 "
            f"{corpus_sha256(text)[:12]}..., expected {expected[:12]}...): put the original back, or start a new run."
        )
    return text


def corpus_config(run_dir: Path, config: RunConfig) -> DataConfig:
    """The DataConfig the training loop loads a run's corpus from, text included. A "text" corpus lives in the run
    folder's corpus.txt (store_corpus): an inline text is stored there now (a new run, or a folder from before
    corpus.txt), and `config.data` keeps only its hash, so config.json and checkpoints stay small."""
    data = config.data
    if data.source != "text":
        return data
    if data.text:
        config.data = DataConfig.from_dict(store_corpus(run_dir, {"data": data.to_dict()})["data"])
        return data
    return dataclasses.replace(data, text=read_corpus(run_dir, data.text_sha256 or None))


_TEXT_VOCAB: dict[tuple[str, str], int] = {}  # (run folder, corpus sha256) -> its vocabulary size: read once


def known_vocab_size(run_dir: str | Path, config: dict) -> int | None:
    """How many tokens a run's vocabulary holds, from what is known for sure, else None: the `vocab` the worker
    writes into config.json once it has loaded the corpus (tinygpt.runs.loop; until then the config's
    model.vocab_size is the default 65, not the corpus's), else for a run on its own text the distinct characters
    of that text by the tokenizer's own rule (data.text_from_user, then CharTokenizer.from_text). A named corpus
    (shakespeare, synthetic) is not loaded here: its vocabulary is known once the worker has written it. Review: a
    queued run on 90 distinct characters drew "uniform guess ln(V)=4.17" (ln 65) until its worker started."""
    vocab = config.get("vocab")
    if isinstance(vocab, list) and vocab:
        return len(vocab)
    data = config.get("data") or {}
    if data.get("source") != "text":
        return None
    key = (str(run_dir), str(data.get("text_sha256") or ""))
    if not data.get("text") and key in _TEXT_VOCAB:
        return _TEXT_VOCAB[key]
    from ..data import text_from_user  # here: tinygpt.data imports torch, which the store's readers never need

    try:
        text = data.get("text") or read_corpus(run_dir, data.get("text_sha256") or None)
        size = CharTokenizer.from_text(text_from_user(text)).vocab_size
    except (DataError, RunStoreError, TokenizerError):  # no text to read (yet), or none the worker would train on
        return None
    if not data.get("text") and key[1]:  # a stored corpus named by its hash never changes: remembered
        _TEXT_VOCAB[key] = size
    return size
