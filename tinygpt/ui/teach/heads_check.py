"""The multiple-heads step's check (lesson step 5): do the heads run's heads all learn the same pattern?

Once the run has ended it is judged on HEAD_WINDOWS held-out windows at its last checkpoint, each head's ratio with
the windows' spread as its noise (`_judged_on_windows`): a head specialised beyond its noise on a key where another
head stays under the bar beyond its noise is another pattern; two specialised heads on different keys are different
jobs. The single probe text of the snapshots called a head "first character, 3.35x" that put half the uniform share
there on held-out text (a review; BENCHMARKS.md, "The multiple-heads step"). While it trains, the snapshots' rule
below is what the pane says, as "still training".

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
from tinygpt.lab.verdict import NOISE_SIGMAS, held_out_variance
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
        return f"{self.name} {job} ({self.score:.2f} vs {self.baseline:.2f} uniform, {self.ratio:.2f}x{self.noise})"

    @property
    def noise(self) -> str:
        return ""  # one snapshot: no spread to say

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
        said = (f"the heads run {run.state} without a score to judge" if ended else
                "no attention snapshot has been scored yet, so there is no score to judge")  # fmt: skip
        return Check(None, f"Not enough data{'' if ended else ' yet'}: {said}.", settled=ended)
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
    if ended and ev.head_windows:  # judged on held-out windows, each head's spread its noise
        return _judged_on_windows(ev.head_windows, ratio)
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


@dataclass(frozen=True)
class WindowJob(HeadJob):
    """A head's role over held-out windows: HeadJob with its mean score, and the ratio's half width (NOISE_SIGMAS
    standard errors of the windows' ratios, the held-out text's own size counted)."""

    half_width: float = 0.0

    @property
    def noise(self) -> str:
        """ " ± 0.23" after the ratio: "L0H0 attends one character back (0.25 vs 0.10 uniform, 2.56x ± 0.23)" """
        return f" ± {self.half_width:.2f}"

    @property
    def short(self) -> str:
        return f"{self.name} {SHORT.get(self.role, self.role)} {self.ratio:.2f}x ± {self.half_width:.2f}"


def window_scores(windows: dict) -> dict[tuple[str, str], WindowJob]:
    """{(head, role): WindowJob} for every head and role on the held-out windows of `windows`
    (Evidence.head_windows): the mean score over the windows, and the ratio's half width from their spread."""
    out: dict[tuple[str, str], WindowJob] = {}
    shape = (1, int(windows["context"]))  # each window its own "batch" of one
    for role, per_window in (windows.get("scores") or {}).items():
        base = (windows.get("baselines") or {}).get(role)
        if not per_window or not _finite(base) or base <= 0:
            continue
        for i in range(len(per_window[0])):
            for j in range(len(per_window[0][i])):
                ratios = [w[i][j] / base for w in per_window if _finite(w[i][j])]
                variance = held_out_variance(ratios, shape, int(windows["val_tokens"]))
                if variance is not None:
                    mean = sum(ratios) / len(ratios)
                    out[f"L{i}H{j}", role] = WindowJob(f"L{i}H{j}", role, mean * base, float(base),
                                                       NOISE_SIGMAS * math.sqrt(variance))  # fmt: skip
    return out


def window_jobs(windows: dict) -> list[WindowJob]:
    """Every head's top role (by its mean ratio) on the held-out windows of `windows`."""
    best: dict[str, WindowJob] = {}
    for (name, _), job in window_scores(windows).items():
        if name not in best or job.ratio > best[name].ratio:
            best[name] = job
    return [best[k] for k in sorted(best)]


def _judged_on_windows(windows: dict, ratio: float) -> Check:
    """heads_differ on held-out windows, each ratio with its interval (± NOISE_SIGMAS s.e. of the windows' spread).
    A head is specialised on a role when its whole interval lies at or above `ratio`. The heads learned different
    patterns when a specialised head's role finds another head whose whole interval there lies under `ratio`; two
    specialised heads on different roles are different jobs, said as such. Not seen: no head specialised, or every
    head specialised on one role. Measured on 32 held-out windows, a snapshot's one probe text called a head "first
    character, 3.35x" that put 0.5x the uniform share there on the held-out text (BENCHMARKS.md, the multiple-heads
    step)."""
    scores, jobs = window_scores(windows), window_jobs(windows)
    on = (f"on {windows['windows']} held-out windows of {windows['context']} characters at the last checkpoint "
          f"(step {windows['step']:,})")
    if len(jobs) < 2:
        return Check(None, f"Not enough data: {on}, fewer than two heads have a role score and its baseline.",
                     settled=True)  # fmt: skip
    clear = sorted((j for j in jobs if j.ratio - j.half_width >= ratio), key=lambda j: -j.ratio)
    near = sorted((j for j in jobs if j not in clear and j.ratio + j.half_width >= ratio), key=lambda j: -j.ratio)
    under = [j for j in jobs if j not in clear and j not in near]
    roles = list(dict.fromkeys(j.role for j in clear))
    lead = {role: next(j for j in clear if j.role == role) for role in roles}
    rule = (f"a role's score at least {ratio:g}x its uniform baseline, the whole ± {NOISE_SIGMAS:g} s.e. interval "
            "of the windows' spread above it")
    parts = [f"{len(clear)} of {len(jobs)} heads are specialised ({rule})" + (
        ": " + "; ".join(j.said for j in clear) if clear else "")]  # fmt: skip
    if near:
        parts.append("not told from the bar: " + "; ".join(j.said for j in near))
    if under:
        top = max(under, key=lambda j: j.ratio)
        parts.append(f"{'all' if len(under) == len(jobs) else 'the other'} {len(under)} stay under {ratio:g}x (the "
                     f"closest, {top.said})")  # fmt: skip
    text = f"{on[0].upper()}{on[1:]}: " + "; ".join(parts)
    count = f"on {windows['windows']} held-out windows"
    if len(roles) >= 2:
        return Check(True, f"{text}. The heads do different jobs.",
                     headline=_fit("The heads do different jobs: " + ", ".join(lead[r].short for r in roles)
                                   + f" (times the uniform share), {count}"))  # fmt: skip
    # One role among the specialists: another head that stays under the bar there, beyond its noise, is another
    # pattern (the step asks whether the heads all learn the same one)
    role = roles[0] if roles else None
    others = [scores[j.name, role] for j in jobs if role and j not in clear and (j.name, role) in scores
              and scores[j.name, role].ratio + scores[j.name, role].half_width < ratio]  # fmt: skip
    other = min(others, key=lambda j: j.ratio, default=None)
    if role and other is not None:
        spec = lead[role]
        return Check(True, f"{text}. The heads learned different patterns: {spec.name} puts {spec.ratio:.2f}x the "
                           f"uniform share on its key ({SHORT.get(role, role)}), where {len(others)} of the other "
                           f"{len(jobs) - 1} put under {ratio:g}x there beyond their noise (the least, {other.name}, "
                           f"{other.ratio:.2f}x ± {other.half_width:.2f}); no second job among the heads.",
                     headline=_fit(f"The heads learned different patterns: {spec.short}, {other.name} "
                                   f"{other.ratio:.2f}x ± {other.half_width:.2f} there, {count}"))  # fmt: skip
    if not clear and not near:
        return Check(False, f"{text}. No head learned a pattern of its own beyond its noise.",
                     headline=_fit(f"No head specialised beyond its noise, {count}"))  # fmt: skip
    if clear and len(clear) == len(jobs):
        return Check(False, f"{text}. Every head learned the same pattern.",
                     headline=_fit(f"All the same pattern: every head {SHORT.get(role, role)}, {count}"))  # fmt: skip
    return Check(None, f"Not enough data: {text}. The heads' intervals straddle the {ratio:g}x bar: the windows "
                       "cannot tell whether they learned different patterns.", settled=True,
                 headline=_fit(f"Not enough data: the heads straddle the {ratio:g}x bar, {count}"))  # fmt: skip


def _fit(line: str) -> str:
    """A headline cut at its last clause that fits the banner's one line (the whole sentence is under Numbers)."""
    while len(line) > HEADLINE_LIMIT and ";" in line:
        line = line.rsplit(";", 1)[0]
    while len(line) > HEADLINE_LIMIT and ", " in line:
        line = line.rsplit(", ", 1)[0]
    return line
