"""Where a training loop's commands come from: the app's worker gets them over a pipe (tinygpt.runs.worker's
PipeControl), a test or notebook from another thread (`QueueControl`), the CLI from its signals
(tinygpt.runs.distributed), and a loop nobody steers from `NoControl`."""

from __future__ import annotations

import queue
from typing import Protocol

COMMANDS = ("pause", "resume", "step", "stop", "knob", "release")


class Control(Protocol):
    """Where commands come from: `poll(0)` must not block; `poll(t)` waits up to t seconds for the first one.
    A control with `interactive = False` (the CLI's) never sends resume or step, so a diverged run ends."""

    def poll(self, timeout: float) -> list[dict]: ...


class QueueControl:
    """Commands from another thread of this process (tests, notebooks): `send({"cmd": "pause"})`."""

    def __init__(self) -> None:
        self._queue: queue.Queue[dict] = queue.Queue()

    def send(self, command: dict) -> None:
        self._queue.put(command)

    def poll(self, timeout: float) -> list[dict]:
        try:
            first = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return []
        commands = [first]
        while True:
            try:
                commands.append(self._queue.get_nowait())
            except queue.Empty:
                return commands


class NoControl:
    """No commands: the loop trains to its end (the CLI without signals, the lab's runs)."""

    interactive = False  # no command but stop can ever come: a diverged run ends instead of waiting paused

    def poll(self, timeout: float) -> list[dict]:
        return []
