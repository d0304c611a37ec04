"""RunReader: how a page reads a run live, polling its folder: JSON-lines tails read by byte offset (whole lines
only), series thinned to a budget so memory stays flat at any run length, every record checked where it is read
(tinygpt/runs/check.py). One reader may serve many threads (the app shares one per run between every browser
session of a server): polling and every read of its series hold its lock, and each read returns a list of its own.
"""

from __future__ import annotations

import json
import os
import pickle
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..config import upgrade_config_dict
from ..errors import RunStoreError
from .check import clean_index, config_problem, valid_event
from .files import CONFIG_FILE, EVENT_KINDS, JSONL_FILES, list_checkpoints, read_json, record_step, snapshot_path
from .status import interrupted, read_status, trusted_status


class ThinnedSeries:
    """Records in step order in bounded memory: the last `recent` at full resolution, older ones every k-th
    record (k doubles whenever the old part fills up), the very first record always kept.

    A record whose step is not after the last one means the run was rewound (a worker resumed from an earlier
    checkpoint), so the records from that step on are dropped and the series continues from there.
    """

    def __init__(self, max_points: int = 4000, recent: int = 1000):
        if recent < 1 or max_points < recent + 2:
            raise ValueError(f"need 1 <= recent <= max_points - 2, got recent={recent}, max_points={max_points}.")
        self.max_points, self.recent = max_points, recent
        self._old: list[tuple[int, dict]] = []  # (arrival index, record), index a multiple of the stride
        self._recent: deque[tuple[int, dict]] = deque()
        self._stride = 1
        self._count = 0
        self._last_step: float | None = None

    def append(self, record: dict) -> None:
        step = record_step(record)
        if step is not None:
            if self._last_step is not None and step <= self._last_step:
                self._rewind_to(step)
            self._last_step = step
        self._recent.append((self._count, record))
        self._count += 1
        if len(self._recent) > self.recent:
            index, moved = self._recent.popleft()
            if index % self._stride == 0:
                self._old.append((index, moved))
                if len(self._old) > self.max_points - self.recent:
                    self._stride *= 2
                    self._old = [(i, r) for i, r in self._old if i % self._stride == 0]

    def _rewind_to(self, step: float) -> None:
        for part in (self._recent, self._old):
            while part and (record_step(part[-1][1]) is not None and record_step(part[-1][1]) >= step):
                part.pop()
            if part:  # the newest kept record is before `step`, so the older part is too
                return

    @property
    def records(self) -> list[dict]:
        return [r for _, r in self._old] + [r for _, r in self._recent]

    def __len__(self) -> int:
        return len(self._old) + len(self._recent)


class _JsonlTail:
    """Follows one append-only .jsonl file by byte offset, handing out complete lines only."""

    CHUNK = 1 << 22  # read at most 4 MiB at a time, so catching up on a long run keeps memory flat

    def __init__(self, path: Path):
        self.path, self.offset, self.inode, self.skipped = path, 0, None, 0

    def poll(self, on_reset: Callable[[], None], on_record: Callable[[dict], None]) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self.inode is None:
                return False
            self.offset, self.inode = 0, None
            on_reset()
            return True
        changed = False
        if st.st_ino != self.inode or st.st_size < self.offset:  # replaced or truncated: start over
            if self.inode is not None:
                on_reset()
                changed = True
            self.offset, self.inode = 0, st.st_ino
        if st.st_size == self.offset:
            return changed
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            pending = b""  # bytes from self.offset on that do not yet end in a newline
            while chunk := f.read(self.CHUNK):
                data = pending + chunk
                end = data.rfind(b"\n")
                if end < 0:
                    pending = data
                    continue
                # Decode whole lines at once (faster than per line; no UTF-8 character is cut at a newline);
                # errors='replace' confines a bad byte to its own line, which then fails to parse and is skipped.
                for line in data[:end].decode("utf-8", errors="replace").split("\n"):
                    changed |= self._parse(line, on_record)
                self.offset += end + 1
                pending = data[end + 1 :]
        return changed

    def _parse(self, line: str, on_record: Callable[[dict], None]) -> bool:
        if not line.strip():
            return False
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            self.skipped += 1
            return False
        on_record(record)
        return True


class RunReader:
    """A live, incremental view of one run folder. Call `poll()` often; it reads only what is new."""

    EVENTS_RECENT = 2000
    EVENTS_KEPT_KINDS = ("knob", "nonfinite", "diverged", "state")  # rare and meaningful: kept even when old
    EVENTS_KEPT_MAX = 10_000  # a cap so even a pathological run cannot grow memory without bound
    SAMPLES_RECENT = 200

    def __init__(self, run_dir: str | Path, max_points: int = 4000):
        self.run_dir = Path(run_dir)
        self.run_id = self.run_dir.name
        self.max_points = max_points
        self.version = 0
        self.attention_version = 0
        self._tails = {name: _JsonlTail(self.run_dir / f"{name}.jsonl") for name in JSONL_FILES}
        self._signatures: dict[str, tuple | None] = {}
        self._config: dict = {}
        self._status: dict = {}
        self._attn_index: dict = {}
        self._lock = threading.RLock()  # poll() appends to the series that the properties below copy
        for name in JSONL_FILES:
            self._reset(name)
        self.poll()

    def _reset(self, name: str) -> None:
        if name == "metrics":
            self._metrics = ThinnedSeries(self.max_points, min(1000, self.max_points // 4))
        elif name == "evals":
            self._evals = ThinnedSeries(self.max_points, min(1000, self.max_points // 4))
        elif name == "events":
            self._event_seq = 0
            self._events_recent: deque = deque(maxlen=self.EVENTS_RECENT)
            self._events_kept: deque = deque(maxlen=self.EVENTS_KEPT_MAX)
        else:
            self._samples: deque = deque(maxlen=self.SAMPLES_RECENT)

    def _add_event(self, record: dict) -> None:
        if not valid_event(record, EVENT_KINDS):  # damaged: skipped like a torn line (tinygpt.runs.check)
            return
        item = (self._event_seq, record)
        self._event_seq += 1
        self._events_recent.append(item)
        if record.get("kind") in self.EVENTS_KEPT_KINDS:
            self._events_kept.append(item)

    def poll(self) -> bool:
        """Read what was appended or replaced since the last poll; True (and `version` + 1) if anything was."""
        with self._lock:
            return self._poll()

    def _poll(self) -> bool:
        changed = False
        sinks = {
            "metrics": lambda r: self._metrics.append(r),
            "evals": lambda r: self._evals.append(r),
            "events": self._add_event,
            "samples": lambda r: self._samples.append(r),
        }
        for name, tail in self._tails.items():
            changed |= tail.poll(lambda name=name: self._reset(name), sinks[name])
        for name, attr in ((CONFIG_FILE, "_config"), ("status.json", "_status")):
            if self._refresh(self.run_dir / name, attr):
                changed = True
        if self._refresh(self.run_dir / "attention" / "index.json", "_attn_index"):
            self.attention_version += 1
        if changed:
            self.version += 1
        return changed

    def _refresh(self, path: Path, attr: str) -> bool:
        """Re-read an atomically replaced JSON file when its (inode, mtime, size) changed."""
        try:
            st = os.stat(path)
            signature = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            signature = None
        known = str(path) in self._signatures
        if known and signature == self._signatures[str(path)]:
            return False
        if not known and signature is None and attr != "_status":  # not there yet: nothing changed
            self._signatures[str(path)] = None
            return False
        try:
            value = read_json(path, {})
        except RunStoreError:
            if attr != "_status" or self._status:
                return False  # keep what we had; the next rewrite will fix it
            value = None
        self._signatures[str(path)] = signature
        if attr == "_status" and (signature is None or not isinstance(value, dict) or not value):
            value = read_status(self.run_dir)  # no status.json: what the folder itself says (read_status)
        if attr == "_status" and isinstance(value, dict):
            value = trusted_status(self.run_dir, value)
        elif attr == "_config" and self._config and not config_problem(self._config) and config_problem(value):
            return False  # damaged after a good read: keep the config every page was drawn with
        elif attr == "_config":
            value = upgrade_config_dict(value)  # an older file's lab switches, under "model", where they live now
        elif attr == "_attn_index":
            value = clean_index(value)
        setattr(self, attr, value if isinstance(value, dict) else {})
        return True

    @property
    def skipped_lines(self) -> int:
        return sum(t.skipped for t in self._tails.values())

    def config(self) -> dict:
        return self._config

    def status(self) -> dict:
        status = interrupted(self.run_dir, self._status)  # a killed writer leaves "running" in its file
        if status.get("state") == "stopped" and self._status.get("state") == "running":
            # Or the writer ended cleanly since our last poll: its final status written, then its lock released (a
            # 200-step lab run ends within a page's refresh, and its verdict read "the run was stopped"). Read the
            # file again before calling the run interrupted.
            with self._lock:
                if self._refresh(self.run_dir / "status.json", "_status"):
                    self.version += 1
            status = interrupted(self.run_dir, self._status)
        return status

    @property
    def metrics(self) -> list[dict]:
        with self._lock:
            return self._metrics.records

    @property
    def evals(self) -> list[dict]:
        with self._lock:
            return self._evals.records

    @property
    def events(self) -> list[dict]:
        with self._lock:
            merged = dict(self._events_kept)
            merged.update(self._events_recent)
        return [merged[seq] for seq in sorted(merged)]

    @property
    def samples(self) -> list[dict]:
        with self._lock:
            return list(self._samples)

    def attention_index(self) -> dict:
        return self._attn_index

    def load_attention(self, step: int) -> np.ndarray:
        # The file name is built from the step, never taken from the index, so a bad index cannot point elsewhere.
        path = snapshot_path(self.run_dir, step)
        try:
            array = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise RunStoreError(f"no attention snapshot for step {step} (it may have been thinned out).") from None
        except (ValueError, OSError, EOFError, pickle.UnpicklingError) as exc:  # pickled, truncated, not .npy
            raise RunStoreError(
                f"the attention snapshot of step {step} is damaged ({type(exc).__name__}: {exc}); pick another step."
            ) from None
        if not isinstance(array, np.ndarray) or array.ndim != 4:
            raise RunStoreError(f"the attention snapshot of step {step} is not (L, H, T, T); pick another step.")
        return array.astype(np.float32)

    def checkpoints(self) -> list[int]:
        """Steps with a complete checkpoint (see `list_checkpoints`)."""
        return list_checkpoints(self.run_dir)
