"""A run's exact metrics records between two steps, read from its metrics.jsonl: what a number said about a few
steps of an old stretch of a run rests on. RunReader keeps a long run's older records thinned (ThinnedSeries: every
k-th record), so "the mean of 20 steps" taken from it averaged 20 kept records spanning hundreds of steps, and the
same stretch's mean changed as the thinning went on.

`metrics_between(run_dir, lo, hi)` keeps, per (file, lo, hi), only the records in the window and the byte offset
read so far: each call reads just what was appended since (in bounded chunks), so a pane refreshing every few
seconds costs a stat and a few new lines, and memory holds the window, never the file. Rewinds follow RunReader's
rule: a record whose step is not after the one before means a worker resumed from an earlier checkpoint, and the
kept records from that step on are dropped (the re-trained steps replace them). Pure engine: no Streamlit.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from .files import record_step

CHUNK = 1 << 22  # bytes read at a time: catching up on a long run's file keeps memory flat
WINDOWS_KEPT = 64  # windows remembered across calls (a lesson reads a few per run); the oldest is dropped first
_STEP = re.compile(rb'"step":\s*(-?\d+(?:\.\d+)?)')  # the step, found without parsing a line outside the window


@dataclass
class _Window:
    lo: float
    hi: float
    inode: int | None = None
    offset: int = 0
    last: float | None = None  # the step of the last record read, whether kept or not: what a rewind is seen by
    kept: dict[float, dict] = field(default_factory=dict)

    def take(self, line: bytes) -> None:
        found = _STEP.search(line)
        step = float(found.group(1)) if found else None
        record = None
        if step is None or self.lo <= step <= self.hi:  # a line without the pattern: parse it to be sure
            try:
                record = json.loads(line)
            except ValueError:
                return  # torn or damaged: skipped, as every reader of these files does
            step = record_step(record) if isinstance(record, dict) else None
            if step is None:
                return
        if self.last is not None and step <= self.last:  # a rewind: the re-trained steps replace the old ones
            for old in [s for s in self.kept if s >= step]:
                del self.kept[old]
        self.last = step
        if record is not None and self.lo <= step <= self.hi:
            self.kept[step] = record


_WINDOWS: OrderedDict[tuple[str, float, float], _Window] = OrderedDict()
_LOCK = threading.Lock()  # each browser session is a thread of one server: they share the windows


def metrics_between(run_dir: str | Path, lo: float, hi: float) -> list[dict]:
    """Every metrics record of the run with lo <= step <= hi, in step order, exactly as the worker wrote it (the
    latest copy of a re-trained step); [] when the file is not there."""
    path = Path(run_dir) / "metrics.jsonl"
    key = (str(path), float(lo), float(hi))
    with _LOCK:
        window = _WINDOWS.pop(key, None) or _Window(float(lo), float(hi))
        _WINDOWS[key] = window  # the most recently used last
        while len(_WINDOWS) > WINDOWS_KEPT:
            _WINDOWS.popitem(last=False)
        _catch_up(path, window)
        return [window.kept[s] for s in sorted(window.kept)]


def _catch_up(path: Path, window: _Window) -> None:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        window.inode, window.offset, window.last, window.kept = None, 0, None, {}
        return
    if st.st_ino != window.inode or st.st_size < window.offset:  # replaced or truncated: read it again
        window.inode, window.offset, window.last, window.kept = st.st_ino, 0, None, {}
    with open(path, "rb") as f:
        f.seek(window.offset)
        while window.offset < st.st_size:
            chunk = f.read(min(CHUNK, st.st_size - window.offset))
            if not chunk:
                return
            end = chunk.rfind(b"\n")
            if end < 0:  # no complete line yet (or one longer than a chunk, which no metrics record is)
                return
            for line in chunk[:end].split(b"\n"):
                if line.strip():
                    window.take(line)
            window.offset += end + 1
            f.seek(window.offset)
