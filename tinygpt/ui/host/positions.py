"""Where each learner is, as their own pages last said: their lesson step and the run in their view (issue 37, "Where
everyone is"). A learner's lesson step lives in their browser session; the Room page belongs to another session, so
each page load (and the sidebar's keep-alive, every 30 s at most) reports it here, one record per learner, shared by
the server's sessions. The Room table then shows, on each of a learner's rows, their step and which run they have in
view. A learner not heard from for WINDOW_S is shown as not seen (a closed tab), never with a step they left long ago.

Pure apart from the clock: no Streamlit (tinygpt/ui/host/resources.py keeps the server's one instance).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

WINDOW_S = 90.0  # three keep-alives: a learner whose tab is open reports at least every 30 s


class Position(NamedTuple):
    step: int | None  # the lesson step shown on their pane (0-based), None outside the lesson
    run_id: str | None  # the run in their view
    at: float  # time.monotonic() of the report
    name: str = ""  # the learner's name, for a learner the table has no row for (no run of their own)


class Positions:
    """The last report of each learner (by their public id). Thread-safe: every session's script thread reports."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, Position] = {}

    def saw(
        self, learner_id: str, step: int | None, run_id: str | None, now: float | None = None, name: str = ""
    ) -> None:
        if not learner_id:
            return
        with self._lock:
            self._seen[learner_id] = Position(step, run_id, time.monotonic() if now is None else now, name)

    def forget(self, learner_id: str) -> None:
        """No longer a learner here (the session gave the instructor key): its last report as one leaves the counts."""
        with self._lock:
            self._seen.pop(learner_id, None)

    def present(self, now: float | None = None, window_s: float = WINDOW_S) -> dict[str, Position]:
        """{learner id: last report} of every learner heard from within `window_s`."""
        now = time.monotonic() if now is None else now
        with self._lock:
            return {lid: p for lid, p in self._seen.items() if now - p.at <= window_s}

    def of(self, learner_id: str | None, now: float | None = None, window_s: float = WINDOW_S) -> Position | None:
        """The learner's last report, or None when there is none within `window_s`."""
        with self._lock:
            position = self._seen.get(learner_id or "")
        now = time.monotonic() if now is None else now
        return position if position is not None and now - position.at <= window_s else None


def with_positions(
    rows: Sequence[dict],
    learners: Mapping[str, str],
    positions: Positions,
    steps: int,
    now: float | None = None,
) -> list[dict]:
    """The Room table's rows (one per run) with "lesson step" and "in view" after the run's name (the learner and
    the run lead, as in every table of runs): `learners` maps a run
    id to its learner's id. "step 3/12" on every row of a learner whose pane shows step 3, "not in the lesson" when
    their pages report no step, "not seen" when none reported lately, "" for runs no learner owns. "in view" says
    "yes" on the run that learner has in view now."""
    out = []
    for row in rows:
        learner = learners.get(row.get("run"))
        position = positions.of(learner, now) if learner else None
        if not learner:
            where, in_view = "", ""
        elif position is None:
            where, in_view = "not seen", ""
        else:
            where = "not in the lesson" if position.step is None else f"step {position.step + 1}/{steps}"
            in_view = "yes" if position.run_id == row.get("run") else ""
        cells = list(row.items())
        at = next((i + 1 for i, (key, _) in enumerate(cells) if key == "name"), 0)
        out.append(dict([*cells[:at], ("lesson step", where), ("in view", in_view), *cells[at:]]))
    return out


def without_runs(
    positions: Positions,
    learners: Mapping[str, str],
    names: Mapping[str, str],
    steps: int,
    now: float | None = None,
    named: bool = False,
) -> str:
    """ "Here without a run of their own: 3 learners at step 4/12, watching Ada's run; 1 not in the lesson." for the
    learners heard from lately who own none of the table's runs (`learners`: run id -> learner id; `names`: run id
    -> whose run it is), "" when there are none: a review's learner who only watched had no row, and the
    instructor could not see she was there, nor where. Counted, never named: the Room is the page on the projector,
    and names appear there only on the instructor's toggle (the predictions' "Name the learners": `named`, a
    review's instructor could not find who was here). "Here" is a pane heard from within WINDOW_S: a closed tab
    leaves the count that long later, and the line says so."""
    owners = set(learners.values())
    groups: Counter[tuple[str, str]] = Counter()
    who = []
    for learner_id, position in positions.present(now).items():
        if learner_id in owners:
            continue
        who.append(position.name or "?")
        where = "not in the lesson" if position.step is None else f"at step {position.step + 1}/{steps}"
        groups[where, f", watching {names[position.run_id]}" if position.run_id in names else ""] += 1
    if not groups:
        return ""
    total = sum(groups.values())
    said = [f"{n} {where}{watching}" for (where, watching), n in sorted(groups.items(), key=lambda g: -g[1])]
    names_said = f": {', '.join(sorted(who, key=str.lower))}" if named else ""
    seen = f" (a pane seen in the last {WINDOW_S:.0f} s{names_said})"
    if len(said) == 1:  # "6 learners at step 1/12": the count once
        plural = "s" if total > 1 else ""
        return f"Here without a run of their own: {total} learner{plural} {said[0].split(' ', 1)[1]}{seen}."
    return f"Here without a run of their own: {total} learners; {'; '.join(said)}{seen}."


def in_lesson(positions: Positions, now: float | None = None) -> dict[str, Position]:
    """{learner id: last report} of the learners heard from lately whose pane is on a lesson step."""
    return {lid: p for lid, p in positions.present(now).items() if p.step is not None}


def not_answered(here: Mapping[str, Position], answered: set[str], named: bool = False) -> str:
    """ "4 of 5 learners in the lesson (a pane seen in the last 90 s) have answered; not yet: Fay." (names only when
    `named`), "" when no learner is in the lesson: the spread's "4 answered" alone hid one who had not (a review)."""
    if not here:
        return ""
    waiting = sorted((p.name or "?" for lid, p in here.items() if lid not in answered), key=str.lower)
    done, total = len(here) - len(waiting), len(here)
    line = (f"{done} of {total} learner{'s' if total > 1 else ''} in the lesson (a pane seen in the last "
            f"{WINDOW_S:.0f} s) {'has' if 1 in (done, total) else 'have'} answered")  # fmt: skip
    if waiting and named:
        line += f"; not yet: {', '.join(waiting)}"
    return line + "."
