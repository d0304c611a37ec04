"""A learner's pasted text, kept on the server until they train on it: a reload, a closed tab or a new session
(the form starts from the run in view, or the preset) no longer loses 30 kB of pasted text.

The draft lives in the runs folder, `.drafts/<learner>.json` (the dot keeps it out of the run list: run ids never
start with one), one file a learner, written whenever the text box reports a change and read when a session's
form has no text yet. Only the learner's own browser reads it back (their id comes from their cookie). A run
started on the text keeps its own copy (corpus.txt); the draft stays the last text pasted, to train on again.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from tinygpt.errors import TinyGPTError
from tinygpt.runs.files import read_json, write_json_atomic
from tinygpt.runs.owners import Actor

FOLDER = ".drafts"


def _path(root: str | Path, learner: Actor) -> Path:
    # The id as a file name: hashed, so no id can name a path outside the folder
    name = hashlib.sha256(learner.id.encode("utf-8")).hexdigest()[:32]
    return Path(root) / FOLDER / f"{name}.json"


def save(root: str | Path, learner: Actor, text: str) -> None:
    """Keep `text` as the learner's draft (an empty text removes it). Errors of the disk are the caller's to say."""
    path = _path(root, learner)
    if not text:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"text": text, "saved": time.time()})


def load(root: str | Path, learner: Actor) -> str:
    """The learner's draft, or "" when there is none (or its file cannot be read: a draft is a convenience)."""
    try:
        record = read_json(_path(root, learner), None)
    except (OSError, TinyGPTError):  # a damaged draft: the box starts empty, as it did before drafts were kept
        return ""
    text = record.get("text") if isinstance(record, dict) else None
    return text if isinstance(text, str) else ""
