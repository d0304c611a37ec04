"""One writer per run: whoever trains a run (a worker, the CLI, torchrun's rank 0) holds an exclusive flock on its
writer.lock for as long as it writes; a second would-be writer gets RunLockedError, and the kernel drops the lock
when its holder dies (kill -9 too), so a stale lock never blocks. Readers take no lock. Left out: locks over NFS
(flock there depends on the server).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from ..errors import RunStoreError
from .files import WRITER_LOCK, os_error_message

_HELD_LOCKS: dict[str, WriterLock] = {}  # resolved run folder -> the lock this process holds on it


class RunLockedError(RunStoreError):
    """Another process is writing this run: only one may (the message names it)."""


class WriterLock:
    """The exclusive flock on a run's writer.lock, held from `acquire_writer_lock` until `release` (or the
    holder's death: the kernel drops it with the last file descriptor, so a killed writer leaves no stale lock).
    The file holds the holder's pid, a description and the time, for the refusal message; the lock is the flock,
    not the file, which stays behind."""

    def __init__(self, run_dir: Path, fd: int):
        self.run_dir, self._fd = run_dir, fd

    def release(self) -> None:
        if self._fd is not None:
            _HELD_LOCKS.pop(str(self.run_dir.resolve()), None)
            os.close(self._fd)  # closing the only descriptor of this open file drops the flock
            self._fd = None

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def acquire_writer_lock(run_dir: str | Path, holder: str) -> WriterLock:
    """Become the one writer of a run; RunLockedError (naming who writes it) if another process is, RunStoreError
    if the folder is not writable. `holder` says who we are ("the app's training worker", ...)."""
    run_dir = Path(run_dir)
    path = run_dir / WRITER_LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunStoreError(os_error_message(exc, run_dir.parent)) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EACCES):
            raise RunLockedError(locked_message(run_dir, lock_info(path))) from None
        raise RunStoreError(os_error_message(exc, run_dir.parent)) from exc
    info = {"pid": os.getpid(), "holder": holder, "since": time.time()}
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode("utf-8"))
    except OSError:
        pass  # a full disk: the lock holds without its description
    lock = _HELD_LOCKS[str(run_dir.resolve())] = WriterLock(run_dir, fd)
    return lock


def writer_lock_holder(run_dir: str | Path) -> dict | None:
    """Who holds a run's writer lock ({"pid", "holder", "since"}, plus "this_process": True when it is us), or
    None when nobody writes the run. Takes no lock and writes nothing (works on a read-only folder)."""
    run_dir = Path(run_dir)
    path = run_dir / WRITER_LOCK
    held = _HELD_LOCKS.get(str(run_dir.resolve()))
    if held is not None:
        return {**lock_info(path), "pid": os.getpid(), "this_process": True}
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # no lock file: nobody ever wrote this run under a lock
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a shared lock is refused only while a writer holds it
    except OSError:
        return lock_info(path) or {"pid": None}
    finally:
        os.close(fd)  # also drops our shared lock at once
    return None


def lock_info(path: Path) -> dict:
    try:
        info = json.loads(path.read_bytes() or b"{}")
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def locked_message(run_dir: Path, info: dict) -> str:
    who = info.get("holder") or "another process"
    pid = f" (pid {info['pid']})" if info.get("pid") else ""
    return (
        f"run {run_dir.name} is being written by {who}{pid}: only one process may train a run at a time. "
        "Stop it there first (or wait for it to end), or start a new run."
    )


def pid_alive(pid: Any) -> bool:
    """Whether a process with this pid is alive (a zombie is not): for a writer or a server that may be gone."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited; only its entry remains
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
