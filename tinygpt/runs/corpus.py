"""The run's corpus file: a pasted or uploaded text stored once per run in corpus.txt, named in config.json by
its sha256, so config.json and every checkpoint stay small; a corpus.txt edited afterwards is refused by hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from ..config import DataConfig, RunConfig
from ..errors import RunStoreError
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
