"""Predict, then run: the answers a learner may choose for a lesson step's "Predict" question, how an answer is
graded by the step's own check, the room's answers (one small file in the runs folder, shared by every session of
the server) and the spread the instructor shows: counts per answer, the share right, the CSV to download.

Grading follows the check, never a fixed answer key: a check that saw the effect makes the answer that predicted
it right and the others wrong; a check that did not see it makes that answer wrong and the answers the step names
as its opposite right (others stay "not decided": "the loss did not rise by 0.3 nats" does not say whether it
fell); a check that ended with not enough data decides nothing. "Not sure" is never graded: it is an honest
answer, counted in the spread, not in the share right.

An answer may change until the check appears, not after. "Appears" is per viewer: the learner's own pane showed a
decided check (their session records it), or the instructor's did (the room's outcome, which closes the step for
everyone). Both are written by the server when it computes the check, so a browser that still shows the radio
cannot change a closed answer: `PredictionBook.answer` refuses it under the lock.

Pure: no Streamlit (the view is tinygpt/ui/teach/prediction_view.py).
"""

from __future__ import annotations

import csv
import io
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinygpt.errors import RunStoreError, TinyGPTError
from tinygpt.runs.files import read_json, write_json_atomic

FILE = "predictions.json"  # runs folder: {"answers": {step: {learner: record}}, "outcomes", "revealed", "checks"}
ROOM = "room"  # who set a step up, in "revealed": the instructor (for everyone), or a learner's id (for them)
NOT_SURE = "not sure"
SEEN, NOT_SEEN, UNDECIDED = "seen", "not seen", "undecided"  # a check's outcome, once it has one
RIGHT, WRONG, NOT_DECIDED = "right", "wrong", "not decided"  # an answer's grade ("not sure" is its own)
MAX_LEARNERS = 500  # per step: the file stays small whatever a misbehaving client sends
MAX_NAME = 32
MAX_CHECK = 2000  # characters of a check's words kept with the outcome it graded (a long verdict is ~600)


class AnswerClosed(TinyGPTError):
    """The step's check has appeared: its answers are final."""


@dataclass(frozen=True)
class Answers:
    """A step's choices (two to four) and which of them the check's outcome confirms: `seen` when the check saw
    the effect; `not_seen` when it did not (None: every other choice, for a yes/no question; () when "not seen"
    says only that `seen` was wrong)."""

    choices: tuple[str, ...]
    seen: str
    not_seen: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not 2 <= len(self.choices) <= 4 or len(set(self.choices)) != len(self.choices):
            raise ValueError(f"a question takes two to four different answers, not {self.choices}")
        if self.seen not in self.choices or NOT_SURE in self.choices:
            raise ValueError(f"{self.seen!r} is not one of {self.choices}, or '{NOT_SURE}' is (it is added)")
        if self.not_seen is not None and not set(self.not_seen) <= set(self.choices) - {self.seen}:
            raise ValueError(f"{self.not_seen} are not among the other answers of {self.choices}")

    @property
    def options(self) -> tuple[str, ...]:
        return (*self.choices, NOT_SURE)

    def confirmed(self, outcome: str | None) -> frozenset[str]:
        """The answers this outcome makes right."""
        if outcome == SEEN:
            return frozenset({self.seen})
        if outcome == NOT_SEEN:
            others = [c for c in self.choices if c != self.seen] if self.not_seen is None else self.not_seen
            return frozenset(others)
        return frozenset()


def outcome_of(check: Any) -> str | None:
    """A lesson Check's outcome for grading: seen, not seen, undecided (it ended with not enough data: `settled`),
    or None while it waits for data (the answers stay open)."""
    if check is None:
        return None
    if check.passed is True:
        return SEEN
    if check.passed is False:
        return NOT_SEEN
    return UNDECIDED if getattr(check, "settled", False) else None


def check_record(check: Any) -> dict | None:
    """A lesson Check as the book keeps it beside the outcome it closed answers with (its words cut to a size that
    keeps the file small), or None."""
    if check is None:
        return None
    return {"passed": check.passed, "text": str(check.text)[:MAX_CHECK], "settled": bool(getattr(check, "settled",
            False)), "headline": str(getattr(check, "headline", "") or "")[:MAX_CHECK]}  # fmt: skip


def grade(answers: Answers, answer: str | None, outcome: str | None) -> str | None:
    """right / wrong / not decided / not sure, or None (no answer, or no outcome yet)."""
    if answer is None or outcome is None:
        return None
    if answer == NOT_SURE:
        return NOT_SURE
    if outcome == UNDECIDED:
        return NOT_DECIDED
    if answer in answers.confirmed(outcome):
        return RIGHT
    if answer == answers.seen or outcome == SEEN:  # "seen" decides every answer; "not seen" refutes the effect
        return WRONG
    return NOT_DECIDED


# ---------------------------------------------------------------- the room's answers (a file, one lock per server)

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    """One lock per file for the whole server process: every browser session is a thread of it."""
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(str(path.resolve()), threading.Lock())


class PredictionBook:
    """The room's answers, keyed by step and learner id: {"name", "answer", "at", "outcome"}. A record with
    answer None marks a learner who saw the check before answering (they may not answer after)."""

    def __init__(self, root: str | Path):
        self.path = Path(root) / FILE
        self._lock = _lock_for(self.path)

    def _read(self) -> dict:
        try:
            data = read_json(self.path, default=None)
        except RunStoreError:  # torn or hand-edited: an empty book rather than an error on every refresh
            data = None
        data = data if isinstance(data, dict) else {}
        answers = data.get("answers") if isinstance(data.get("answers"), dict) else {}
        outcomes = data.get("outcomes") if isinstance(data.get("outcomes"), dict) else {}
        revealed = data.get("revealed") if isinstance(data.get("revealed"), dict) else {}
        checks = data.get("checks") if isinstance(data.get("checks"), dict) else {}
        closed = data.get("closed") if isinstance(data.get("closed"), dict) else {}
        return {"answers": {k: dict(v) for k, v in answers.items() if isinstance(v, dict)},
                "closed": {k: dict(v) for k, v in closed.items() if isinstance(v, dict)},
                "outcomes": {k: v for k, v in outcomes.items() if v in (SEEN, NOT_SEEN, UNDECIDED)},
                "revealed": {k: dict(v) for k, v in revealed.items() if isinstance(v, dict)},
                "checks": {k: dict(v) for k, v in checks.items() if isinstance(v, dict)}}  # fmt: skip

    def _write(self, data: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, data)

    @staticmethod
    def _closed(data: dict, step: str, learner: str) -> bool:
        record = data["answers"].get(step, {}).get(learner) or {}
        closed = data["closed"].get(step, {})
        # Revealed (Set up pressed): the check has appeared, answers are final, as the pane says. They had stayed
        # open until the training loss moved, and a review's learner changed step 1's answer 3 s after Set up, with
        # the first loss on screen, and was graded right
        shown = data["revealed"].get(step, {})
        return (step in data["outcomes"] or record.get("outcome") is not None or ROOM in closed or learner in closed
                or ROOM in shown or learner in shown)  # fmt: skip

    def answer(self, step: str, learner: str, name: str, choice: str, answers: Answers) -> None:
        """Record (or change) a learner's answer; AnswerClosed once the check has appeared to them or the room."""
        if choice not in answers.options:
            raise TinyGPTError(f"'{choice}' is not one of this question's answers: {', '.join(answers.options)}.")
        with self._lock:
            data = self._read()
            if self._closed(data, step, learner):
                raise AnswerClosed("The answers to this step have closed (the check appeared, or the room saw the "
                                   "effect): they are final.")  # fmt: skip
            book = data["answers"].setdefault(step, {})
            if learner not in book and len(book) >= MAX_LEARNERS:
                raise TinyGPTError(f"This step already has {MAX_LEARNERS} answers, the most one room keeps.")
            book[learner] = {"name": str(name)[:MAX_NAME], "answer": choice, "at": time.time()}
            self._write(data)

    def settle(self, step: str, outcome: str | None, learner: str | None = None, check: Any = None) -> bool:
        """The check appeared with `outcome`: to one learner (their answer closes, graded by it), or to the room
        (learner None: every answer to the step closes). The first outcome stays (an answer is graded by what the
        check said when it closed), and with it the check itself (`check_record`), which the pane shows beside the
        grade wherever the runs now read otherwise (`graded`); written only on a change: every pane calls this on
        every refresh."""
        if outcome is None:
            if getattr(check, "closes", False):  # seen by the room, its confirmation seconds away: closed now
                self._close(step, learner)
            return False
        kept = check_record(check)
        with self._lock:
            data = self._read()
            if learner is None:
                if step in data["outcomes"]:
                    return False
                data["outcomes"][step] = outcome
                if kept:
                    data["checks"][step] = kept
            else:
                book = data["answers"].setdefault(step, {})
                record = book.get(learner)
                if record is not None and record.get("outcome") is not None:
                    return False
                if record is None and len(book) >= MAX_LEARNERS:
                    return False
                book[learner] = {**(record or {"name": "", "answer": None, "at": time.time()}), "outcome": outcome}
                if kept:
                    book[learner]["check"] = kept
            self._write(data)
            return True

    def graded(self, step: str, learner: str | None = None) -> tuple[str | None, dict | None]:
        """(the outcome that grades this viewer's answer, the check it was graded on, or None where it was not
        kept): a learner's own, else the room's (`learner_outcome`)."""
        data = self._read()
        record = (data["answers"].get(step, {}).get(learner) or {}) if learner is not None else {}
        if record.get("outcome"):
            return record["outcome"], record.get("check")
        return data["outcomes"].get(step), data["checks"].get(step)

    def reveal(self, step: str, learner: str | None = None) -> None:
        """The step was set up: by the instructor (learner None: its check may appear to everyone) or by a learner
        for themselves. Until then a check that is already decided (its runs were prepared before class) waits,
        so that the room predicts before it sees."""
        self._mark("revealed", step, learner)

    def _close(self, step: str, learner: str | None) -> None:
        """The answers close before the outcome grades them (Check.closes): to one learner, or to the room."""
        self._mark("closed", step, learner)

    def _mark(self, part: str, step: str, learner: str | None) -> None:
        """{step: {who: time}} in `part` ("revealed", "closed"): the room (learner None) or one learner, once."""
        with self._lock:
            data = self._read()
            who = data[part].setdefault(step, {})
            if (learner or ROOM) in who or len(who) > MAX_LEARNERS:
                return
            who[learner or ROOM] = time.time()
            self._write(data)

    def revealed(self, step: str, learner: str | None = None) -> bool:
        who = self._read()["revealed"].get(step, {})
        return ROOM in who or (learner is not None and learner in who)

    def closed(self, step: str, learner: str) -> bool:
        return self._closed(self._read(), step, learner)

    def step(self, step: str) -> tuple[dict[str, dict], str | None]:
        """(the step's records by learner id, the room's outcome or None)."""
        data = self._read()
        return data["answers"].get(step, {}), data["outcomes"].get(step)

    def clear(self) -> None:
        """A new class: every answer and outcome forgotten."""
        with self._lock:
            self._write({"answers": {}, "outcomes": {}, "revealed": {}, "checks": {}, "closed": {}})


# ---------------------------------------------------------------- the spread


def learner_outcome(record: Mapping, room_outcome: str | None) -> str | None:
    """What grades a learner's answer: the check their own pane showed, else the room's."""
    return record.get("outcome") or room_outcome


def tally(answers: Answers, records: Mapping[str, Mapping], room_outcome: str | None) -> dict:
    """{"answered", "counts": {option: n}, "decided", "right", "not_decided", "share_right", "rows"}: the spread
    of one step. share_right is right / `of`, the answers graded: right or wrong; "not sure" is counted, never
    graded, so it is in neither (None before the check, when it decided nothing, or with no answer but "not sure":
    a review read "1 right of 2 (50%)" where the one graded answer was right); rows are (name, answer, grade), for
    the instructor's eyes only."""
    counts = dict.fromkeys(answers.options, 0)
    grades: dict[str | None, int] = {}
    rows = []
    for record in records.values():
        answer = record.get("answer")
        if answer not in counts:  # no answer (closed before one), or a choice this step no longer offers
            continue
        counts[answer] += 1
        given = grade(answers, answer, learner_outcome(record, room_outcome))
        grades[given] = grades.get(given, 0) + 1
        rows.append({"learner": record.get("name") or "?", "answer": answer, "grade": given or "open"})
    right, wrong = grades.get(RIGHT, 0), grades.get(WRONG, 0)
    decided = bool(right + wrong)  # a check that decided nothing (or none yet) gives no share
    share = right / (right + wrong) if decided else None
    rows.sort(key=lambda r: (answers.options.index(r["answer"]), r["learner"].lower()))
    return {"answered": sum(counts.values()), "counts": counts, "decided": decided, "right": right,
            "not_sure": grades.get(NOT_SURE, 0), "of": right + wrong,
            "not_decided": grades.get(NOT_DECIDED, 0), "share_right": share, "rows": rows}  # fmt: skip


def no_share_words(spread: dict, outcome: str | None) -> str:
    """Why the Room shows no share right: no check yet, a check that decided nothing, or a decided check whose
    answers were all "not sure" (a review's Room read "The check decided nothing" beside grades right and wrong)."""
    if outcome is None:
        return "The share right appears with the check."
    if outcome == UNDECIDED:
        return "The check decided nothing: no share right."
    if spread["not_sure"]:
        return f'No share right: all {spread["not_sure"]} answer(s) were "not sure", which is never graded.'
    return "No answers to grade: no share right."


def spread_line(spread: dict, graded: bool = True, zeros: bool = True) -> str:
    """The spread in one line, naming no learner: what the projector shows; `graded` False (the room's check not
    shown yet) leaves out how many were right; `zeros` False leaves out the answers nobody chose (the banner's line,
    where every line counts at 1280x720)."""
    if not spread["answered"]:
        return "No answers yet."
    # "between 3 and 5: 3", not "between 3 and 5 3": an answer may hold numbers of its own. Each answer without its
    # parenthesis where the short forms stay apart: "most of them (more than half): 1" ran the projector's banner to
    # a fourth line at 1280x720 (a review); the learners' panes say each answer whole
    short = {answer: answer.split(" (")[0] for answer in spread["counts"]}
    names = short if len(set(short.values())) == len(short) else {answer: answer for answer in short}
    parts = " · ".join(f"{names[answer]}: {n}" for answer, n in spread["counts"].items() if n or zeros)
    line = f"{spread['answered']} answered: {parts}"
    if spread["share_right"] is not None and graded:
        # "Not sure" is counted (its count is in the line above), never graded (docs/TEACHING.md): the share is of
        # the graded answers, and says so ("1 right of 2 (50%; 1 of the 2 not sure)" read as a grade of "not sure")
        line += f" · {spread['right']} right of {spread['of']} graded ({spread['share_right']:.0%})"
    return line


# "graded": right or wrong, the share's denominator ("not sure" is counted in "answered", never graded): a review could
# not recompute share_right from the file without it
CSV_COLUMNS = ("step", "key", "question", "outcome", "answer", "learners", "grade", "answered", "graded", "right",
               "share_right")  # fmt: skip


def spread_csv(steps: Iterable[Any], book: PredictionBook) -> str:
    """The room's spread per step (steps: objects with .key, .predict, .answers), one row per answer: counts and
    grades, no names (the file leaves the instructor's screen)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for number, step in enumerate(steps, start=1):
        records, outcome = book.step(step.key)
        spread = tally(step.answers, records, outcome)
        share = "" if spread["share_right"] is None else f"{spread['share_right']:.3f}"
        for answer, count in spread["counts"].items():
            given = grade(step.answers, answer, outcome) or ""
            writer.writerow((number, step.key, step.predict, outcome or "", answer, count, given,
                             spread["answered"], spread["of"], spread["right"], share))  # fmt: skip
    return out.getvalue()
