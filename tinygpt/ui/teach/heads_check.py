"""The multiple-heads step's check (lesson step 5): do the heads run's heads do different jobs?

A head is *specialised* on a role when, in the run's last attention snapshot, its score for that role is at least
SPECIALIST_RATIO times the role's uniform baseline from the same record (tinygpt.inside.heads: the share a head
spreading its weight evenly over the keys it may see puts there). "The heads do different jobs" needs two such heads
whose roles differ. One specialist beside near-uniform heads is not that: the old rule (one role's score 0.2 apart
across heads) read L0H0's first-token 0.29 (2.9x uniform) beside seven heads within 1.6x of uniform as "different
jobs". Why 2x, and why the run is 1,000 steps: BENCHMARKS.md, "The multiple-heads step: when do heads specialise?".
Judged only when the run has ended: in the measured runs the rule held, lapsed and held again as the heads trained.
Pure: no Streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tinygpt.inside.heads import ROLE_RATIO
from tinygpt.lab.prepare import HEADS
from tinygpt.ui.teach.lesson_checks import HEADLINE_LIMIT, ROLE_JOBS, Check, Evidence, no_run, number_word

SPECIALIST_RATIO = ROLE_RATIO  # at least twice the uniform share on its role's key: Circuits' head table's rule too
ENDED = ("finished", "stopped", "diverged", "failed")
JOB = ROLE_JOBS  # what a head of each role does, in words: one table with the ablation step's
SHORT = {"previous": "one back", "first": "first character", "self": "itself", "induction": "induction"}


@dataclass(frozen=True)
class HeadJob:
    """A head's top role in one score record: the role whose score is the most times its uniform baseline."""

    name: str  # "L0H0"
    role: str
    score: float
    baseline: float

    @property
    def ratio(self) -> float:
        return self.score / self.baseline

    @property
    def said(self) -> str:
        """ "L0H0 attends to the first character (0.29 vs 0.10 uniform, 2.91x)" """
        job = JOB.get(self.role, f"scores highest on {self.role}")
        return f"{self.name} {job} ({self.score:.2f} vs {self.baseline:.2f} uniform, {self.ratio:.2f}x)"

    @property
    def short(self) -> str:
        """ "L0H0 first character 0.29 vs 0.10 uniform" """
        return f"{self.name} {SHORT.get(self.role, self.role)} {self.score:.2f} vs {self.baseline:.2f} uniform"


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def head_jobs(record: dict) -> list[HeadJob]:
    """Every head's top role in a scores.jsonl record ({"roles": {role: [[score per head] per layer]}, "baselines":
    {role: uniform score}}), by ratio to its baseline; a role without a positive baseline, or a score that is not a
    number, is left out (a head with none left is too)."""
    roles, baselines = record.get("roles") or {}, record.get("baselines") or {}
    best: dict[tuple[int, int], HeadJob] = {}
    for role, layers in roles.items():
        base = baselines.get(role)
        if not layers or not _finite(base) or base <= 0:
            continue
        for i, row in enumerate(layers):
            for j, score in enumerate(row or ()):
                if not _finite(score):
                    continue
                job = HeadJob(f"L{i}H{j}", role, float(score), float(base))
                if (i, j) not in best or job.ratio > best[i, j].ratio:
                    best[i, j] = job
    return [best[k] for k in sorted(best)]


def roles_at(records: list[dict], step: int, ratio: float = SPECIALIST_RATIO) -> dict[str, dict]:
    """{head: {"role", "score", "baseline", "step"}} for the heads playing a role (`ratio` x uniform or more) in the
    last scores record at or before `step` (the ablation step's checkpoint): a review's room heard "L1H1, the
    induction head" and then "the largest is L0H3's", no word of what L0H3 does. {} with no record then."""
    scored = [r for r in records if isinstance(r.get("step"), int) and r["step"] <= step]
    if not scored:
        return {}
    at = scored[-1]
    return {j.name: {"role": j.role, "score": j.score, "baseline": j.baseline, "step": at["step"]}
            for j in head_jobs(at) if j.ratio >= ratio}  # fmt: skip


def _rest(others: list[HeadJob], ratio: float, total: int, short: bool = False) -> str:
    """ "the other 7 stay under 2x uniform; the closest, L1H0 attends one character back (0.16 vs 0.10 uniform,
    1.61x)", or in short "the other 7 stay under 2x uniform (the closest L1H0, 1.61x)"; "" when there are none."""
    if not others:
        return ""
    top = max(others, key=lambda j: j.ratio)
    who = f"all {total} heads" if len(others) == total else f"the other {len(others)}"
    if short:
        return f"{who} stay under {ratio:g}x uniform (the closest {top.name}, {top.ratio:.2f}x)"
    return f"{who} stay under {ratio:g}x uniform; the closest, {top.said}"


def heads_differ(ev: Evidence, ratio: float = SPECIALIST_RATIO) -> Check:
    """The heads do different jobs: when the heads run has ended, its last snapshot has at least two specialised
    heads (a role's score >= `ratio` x that role's uniform baseline) whose roles differ. Not seen otherwise, saying
    what was seen (no specialist, one, or several on one job); not enough data while it trains."""
    run = ev.runs.get(HEADS)
    if run is None:
        return no_run("heads")
    ended = run.state in ENDED
    if not run.scores:
        said = f"the heads run {run.state} without" if ended else "no attention snapshot has been scored yet, so"
        return Check(None, f"Not enough data{'' if ended else ' yet'}: {said} a score to judge.", settled=ended)
    record = run.scores[-1]
    jobs = head_jobs(record)
    if len(jobs) < 2:
        said = f"the snapshot at step {record.get('step')} has fewer than two heads with a role score and its baseline"
        return Check(None, f"Not enough data{'' if ended else ' yet'}: {said}.", settled=ended)
    specialists = sorted((j for j in jobs if j.ratio >= ratio), key=lambda j: -j.ratio)
    others = [j for j in jobs if j.ratio < ratio]
    roles = list(dict.fromkeys(j.role for j in specialists))  # by each role's best head, best first
    lead = {role: next(j for j in specialists if j.role == role) for role in roles}
    rest, brief = _rest(others, ratio, len(jobs)), _rest(others, ratio, len(jobs), short=True)
    rule = f"a role's score at least {ratio:g}x its uniform baseline"
    if not specialists:
        seen_said = f"no head is specialised ({rule}): {rest}"
        short = f"No head specialised: {rest}"
    elif len(specialists) == 1:
        seen_said = f"one head is specialised ({rule}): {specialists[0].said}; {rest}"
        short = f"One head specialised: {specialists[0].said}; {brief}"
    else:
        each = "; ".join(j.said for j in specialists)
        jobs_said = f"on {number_word(len(roles))} different jobs" if len(roles) > 1 else "all on one job"
        seen_said = f"{len(specialists)} of {len(jobs)} heads are specialised ({rule}), {jobs_said}: {each}"
        seen_said += f"; {rest}" if rest else ""
        short = (
            f"{number_word(len(specialists)).capitalize()} heads specialised, {jobs_said}: "
            + ", ".join(lead[r].short for r in roles)
            + (f"; {brief}" if brief else "")
        )
    text = f"at step {record.get('step')}, {seen_said}"
    if not ended:  # the heads' jobs come and go as the run trains: judged on its last snapshot
        return Check(
            None,
            f"Not enough data yet: {text}. Still training, judged when the run ends.",
            headline=_fit(f"Still training (step {record.get('step')}): {short[0].lower()}{short[1:]}"),
        )
    text = text[0].upper() + text[1:]
    if len(roles) >= 2:
        return Check(True, f"{text}. The heads do different jobs.",
                     headline=_fit("The heads do different jobs: " + ", ".join(lead[r].short for r in roles)
                                   + (f"; {brief}" if brief else "")))  # fmt: skip
    return Check(False, f"{text}. The run did not show two heads doing different jobs.", headline=_fit(short))


def _fit(line: str) -> str:
    """A headline cut at its last clause that fits the banner's one line (the whole sentence is under Numbers)."""
    while len(line) > HEADLINE_LIMIT and ";" in line:
        line = line.rsplit(";", 1)[0]
    while len(line) > HEADLINE_LIMIT and ", " in line:
        line = line.rsplit(", ", 1)[0]
    return line
