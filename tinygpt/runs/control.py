"""Where a training loop's commands come from: the app's worker gets them over a pipe (tinygpt.runs.worker's
PipeControl), a test or notebook from another thread (`QueueControl`), the CLI from its signals
(tinygpt.runs.distributed), and a loop nobody steers from `NoControl`."""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import Any, Protocol

COMMANDS = ("pause", "resume", "step", "stop", "knob", "release")


@dataclass(frozen=True)
class KnobChange:
    """One live knob's new value, and the request id its answer carries (tinygpt.runs.knobs.knob_answer).

    One knob a command: a page sends the knob whose widget moved and nothing else, so no other widget's value (a
    browser's stale copy) can ride along. It crosses the worker's pipe as it is (pickled)."""

    name: str
    value: Any
    request: str = ""


def as_knob_change(command: Any) -> KnobChange | None:
    """The knob change a command asks for (None for any other command). Besides KnobChange itself, the spelled-out
    form {"cmd": "knob", "name", "value", "request"} that a test or notebook may put on a QueueControl is read here,
    the one place that takes it apart."""
    if isinstance(command, KnobChange):
        return command
    if isinstance(command, dict) and command.get("cmd") == "knob":
        return KnobChange(command.get("name"), command.get("value"), command.get("request") or "")
    return None


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
