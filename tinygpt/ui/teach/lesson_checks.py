"""The lesson's checks: each a function from `Evidence` (numbers read from a step's run folders) to a `Check`,
passed True (the effect appeared, with its numbers), False (the run did not show it, with its numbers) or None
(not enough data yet, saying what is missing). Never a fixed sentence about the usual case. The steps that use
them are in tinygpt/ui/teach/lesson.py; the multiple-heads step's check is in heads_check.py. Pure: no Streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tinygpt.inside.heads import ROLE_NOUNS
from tinygpt.lab.prepare import HEADS, INDUCTION, PREPARE_ORDER  # noqa: F401 - the lesson's roles (lesson.py re-exports)
from tinygpt.lab.registry import ORDER
from tinygpt.lab.verdict import FINAL_STEPS, NOISE_SIGMAS, fmt, held_out_variance

LECTURE = "lecture"  # the role of the run the live-knob steps steer (its checks: lecture_checks.py)


# ---------------------------------------------------------------- what a check reads and says


@dataclass
class RunData:
    """What a check may read of one run folder."""

    run_id: str
    state: str = ""
    metrics: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    scores: list[dict] = field(default_factory=list)
    vocab_size: int | None = None
    evals: list[dict] = field(default_factory=list)  # held-out losses: {"step", "val_loss"}, one per eval_interval
    eval_interval: int | None = None  # the run's steps between evals (config), to say when the next one comes
    # The run's exact records between two steps (tinygpt.runs.window.metrics_between): `metrics` is the reader's
    # series, whose older part is thinned (every k-th record kept), so a window of steps there is read exactly.
    exact: Callable[[int, int], list[dict]] | None = None

    def between(self, lo: int, hi: int) -> list[dict]:
        """The metrics records with lo <= step <= hi, every one of them: from `metrics` where it holds that stretch
        at full resolution (one record a step), else from `exact`."""
        kept = [m for m in self.metrics if isinstance(m.get("step"), (int, float)) and lo <= m["step"] <= hi]
        if self.exact is None:
            return kept
        steps = [int(m["step"]) for m in kept]
        ends = [int(m["step"]) for m in self.metrics if isinstance(m.get("step"), (int, float))]
        whole = bool(steps) and all(b == a + 1 for a, b in zip(steps, steps[1:], strict=False))
        whole = whole and steps[0] in (lo, ends[0]) and steps[-1] in (hi, ends[-1])  # no step missing from the window
        return kept if whole else self.exact(lo, hi)


@dataclass
class Evidence:
    """Everything the step's check is computed from: its runs by role ("lecture", "induction"), the experiment
    verdicts by key ({"reproduced", "sentence"}), and numbers the view computed from checkpoints (health rows,
    ablation, lens hits). A missing entry means its run does not exist yet."""

    runs: dict[str, RunData] = field(default_factory=dict)
    verdicts: dict[str, dict] = field(default_factory=dict)
    health: dict[str, list[dict]] = field(default_factory=dict)  # {run label: lab.health_checks rows}
    ablation: dict | None = None  # {"head", "deltas" (L, H) nats, "step", "where", "first"}: lesson_evidence._ablation
    lens: dict | None = None  # {"names": [...], "hits": [...], "positions": n}
    # The heads run's last checkpoint on held-out windows: {"step", "windows" W, "context" T, "val_tokens", "scores":
    # {role: (W, L, H) per window}, "baselines": {role: uniform}} (lesson_evidence.head_windows)
    head_windows: dict | None = None


@dataclass(frozen=True)
class Check:
    passed: bool | None  # None: not enough data yet
    text: str
    settled: bool = False  # with passed None: the runs ended without the data to judge (predictions: undecided)
    # The verdict's point in one short line, built by the check from its own numbers (the presenter banner's line):
    # the banner used to cut `text` to its first sentence, and on the ablation step that stopped at "... at step 3000
    # …", before the claim the check is about. "" when `text` is already that short line.
    headline: str = ""
    # With passed None: the room has seen the effect (the training loss moved) and the check waits only for the
    # evidence that confirms it (the held-out eval, seconds away): the answers close now, graded when it comes. Open
    # until then, a learner could change their answer after watching the curve plunge.
    closes: bool = False
    # With passed None: all that is missing is measured by Set up itself (the memory demo), so Set up decides it at
    # once and closes every answer: it asks first, as for a check already decided (a review's step 8 never asked)
    set_up_decides: bool = False

    @property
    def status(self) -> str:
        return {True: "seen", False: "not seen", None: "not enough data yet"}[self.passed]

    @property
    def short(self) -> str:
        """The check in one line for the banner: its headline, or its text when that is already one short line."""
        return self.headline or self.text


def mean_of(values: Sequence[float]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else None


def as_shown(value: float | None) -> float | None:
    """`value` as the checks show it (2 decimals), for the differences they say between shown values."""
    return None if value is None else round(value, 2)


def no_run(role: str) -> Check:
    return Check(None, f'Not enough data yet: the {role} run has not started (press "Set up this step").')


# ---------------------------------------------------------------- the checks


def experiment_verdict(key: str, title: str) -> Callable[[Evidence], Check]:
    """An Experiments-page pitfall: its own computed verdict (tinygpt.lab.pitfalls), numbers and all."""

    def check(ev: Evidence) -> Check:
        verdict = ev.verdicts.get(key)
        if verdict is None:
            return Check(None, f"Not enough data yet: '{title}' has not been started.")
        on = _on(verdict)  # whose runs, which corpus and seed: a learner's own verdict of the same title differs
        if verdict.get("reproduced") is None:
            said = "not enough data" if verdict.get("undecided") else "not enough data yet"
            text = f"{said.capitalize()}{on}: {verdict.get('sentence', 'still training')}"
            # A short "still training" line is its own headline; a long account of what is missing is in Numbers.
            short = "" if len(text) <= HEADLINE_LIMIT else f"{title}: {said}; what is missing is under Numbers"
            return Check(None, text, settled=bool(verdict.get("undecided")), headline=short)
        return Check(bool(verdict["reproduced"]), f"{title}{on}: {verdict.get('sentence', '')}",
                     headline=verdict_headline(key, title, verdict))  # fmt: skip

    return check


HEADLINE_LIMIT = 200  # characters: a headline longer than this is not one line on the projector's banner


def _on(verdict: dict) -> str:
    """ ", on the room's runs (Tiny Shakespeare, seed 1337)": what an experiment's verdict judged (lesson_evidence
    derives it from the runs' configs); "" where that is not known."""
    return f", on {verdict['about']}" if verdict.get("about") else ""


def _number(observed: dict, name: str, digits: int = 2) -> str | None:
    value = observed.get(name)
    return fmt(value, digits) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _points(key: str, observed: dict) -> str:
    """The numbers an experiment's verdict turns on, from its `observed` (tinygpt/lab/pitfalls/*.py, induction.py),
    in a few words; "" when they were not measured (a run that never reached its end says why under Numbers).
    Printed as the verdict's sentence prints them (losses to 3 decimals, weights and scores to 2), so the line
    and the Numbers popover show the same figures."""
    n = {name: _number(observed, name, 3 if "loss" in name else 2) for name in observed}
    if key == "shape_drift" and n.get("silent bug: max |attention row sum - 1|"):
        # whatever it was measured on, said: held-out windows of the checkpoint left it unsaid (a review: "as much
        # as 14.65 away from 1", no snapshot of that run above 11.23)
        where = str(observed.get("silent bug: rows measured on") or "")
        on = "the probe text" if "probe text" in where else "held-out windows" if "held-out" in where else ""
        return f"{rows_off(n['silent bug: max |attention row sum - 1|'], on)}; {loss_fell(observed)}"
    if key == "scaling" and n.get("max weight, unscaled") and n.get("train loss, unscaled"):
        return (f"max attention weight {n['max weight, unscaled']} unscaled vs {n['max weight, scaled']}, "
                + _losses_said(observed, "unscaled / scaled", n["train loss, unscaled"], n["train loss, scaled"]))
    if key == "residual" and isinstance(observed.get("ratio"), (int, float)) and n.get("train loss, detached"):
        return (f"the first layer's gradient is {observed['ratio']:.1e}x the residual run's, "
                + _losses_said(observed, "detached / residual", n["train loss, detached"],
                               n["train loss, residual"]))  # fmt: skip
    if key == INDUCTION and n.get("best score after"):
        # The phase change's step is the snapshots' best score's, whose head can change between snapshots; a step
        # is put next to the best head's name only where it is that head's own jump (the verdict's sentence too).
        step, own = observed.get("phase change step (score)"), observed.get("best head's own score jump step")
        # The score before is the rise's onset's, its step said: "0.08 before the phase change at step 1260" read as
        # the score just before 1260, where it was 0.25 (a review); 0.08 was at step 820, and so is the copy loss's
        onset = observed.get("best score before, at step")
        at = f" at step {onset}" if onset is not None else " before the phase change"
        return (f"best snapshot score {n.get('best score before') or '?'}{at}"
                + (f", the phase change at step {step}" if step is not None else "")
                + f"; {observed.get('best head')} ends at {n['best score after']}"
                + (f" (its own jump at step {own})" if own is not None else "")
                # to 2 decimals, as the verdict keeps and says them: "4.170 → 2.060" beside "4.17 to 2.06" (a review)
                + (f", second-copy loss {_number(observed, 'second-copy loss before')} → "
                   f"{_number(observed, 'second-copy loss after')}"
                   if n.get("second-copy loss after") else ""))  # fmt: skip
    return ""


def _losses_said(observed: dict, pair: str, train_bad: str, train_good: str) -> str:
    """ "final held-out loss 2.522 vs 2.212 (training 2.527 vs 2.215)": a verdict's losses led by the held-out one,
    which says whether the model learned, where the runs evaluated one (the verdict's own words for it, so the line
    and Numbers show the same figures); the training loss alone, named so, where they did not."""
    held = str(observed.get(f"held-out loss, {pair}") or "")
    if held.startswith("held-out loss ") and " vs " in held:
        figures = held.removeprefix("held-out loss ").split(" (")[0]
        for name in pair.split(" / "):  # the verdict names each run's number; the headline's order says it, shorter
            figures = figures.replace(f" {name} vs", " vs").removesuffix(f" {name}")
        return f"final held-out loss {figures} (training {train_bad} vs {train_good})"
    return f"final training loss {train_bad} vs {train_good} (no held-out loss recorded)"


def rows_off(error: str, on: str = "") -> str:
    """The shape-drift bug's attention rows in plain words: each row is the share of attention a query gives every
    key and must add up to exactly 1; `error` is the largest |row sum - 1| measured, a sum of weights, on `on` (the
    probe text: the health step measures the same bug on held-out windows, another number)."""
    where = f" on {on}" if on else ""
    return (f"a row of the silent bug's attention weights{where} adds up to as much as {error} away from 1 (a correct "
            "row: 1)")  # fmt: skip


def loss_fell(observed: dict) -> str:
    """ "yet training loss fell 3.794 → 1.931 (last 20 steps)": the bug's curve looked healthy (from `observed`: step
    1's loss, then final_train_loss, the mean of the last FINAL_STEPS; a review read "fell 4.198 → 2.413" against the
    last step's own loss and found another number)."""
    first, _, last = str(observed.get("silent bug: loss first -> last") or "").partition(" -> ")
    if not last:
        return "its training loss was not measured"
    return f"yet training loss fell {first} → {last} (last {FINAL_STEPS} steps)"  # the headline's 200 characters


def verdict_headline(key: str, title: str, verdict: dict) -> str:
    """An experiment's judged verdict in one line: reproduced or not, with the numbers it turns on. A red one's
    failed clauses are named in its sentence, under Numbers: a clause is a line of its own, too long to repeat."""
    points = _points(key, verdict.get("observed") or {})
    said = f"{title} reproduced" if verdict.get("reproduced") else f"{title} did not reproduce"
    tail = (f": {points}" if points else "") + ("" if verdict.get("reproduced") else "; Numbers names what failed")
    named = f"{said}{_on(verdict)}{tail}"  # whose runs, where the one line has room for it (the pane's text has it)
    return named if len(named) <= HEADLINE_LIMIT else f"{said}{tail}"


PITFALLS = ORDER  # every pitfall the lab has, position included: the step's title and count come from here
# What "Prepare the long runs" starts, in the lesson's order: PREPARE_ORDER, from tinygpt/lab/prepare.py (the runs
# themselves are its prepared_runs(), which the app and tinygpt.bench.prepare both start).
assert {r.removeprefix("exp:") for r in PREPARE_ORDER} >= set(PITFALLS) - {"memory"}  # memory trains nothing


NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def number_word(n: int) -> str:
    """ "eight" for 8: a count in a title, from the data it counts."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else f"{n:,}"


# The two checks the health step's "Watch for" names (tinygpt/lab/health.py's check names): the shape bug mixes
# attention rows and positions, so these are the ones it must fail; a check both runs fail (the gradient clipped on
# most steps, a loss still falling) is about training, not the bug.
HEALTH_NAMED = ("attention rows sum to 1", "no future leak")
HEALTH_NUMBER = {"attention rows sum to 1": "rows off 1 by {}", "no future leak": "future moved logits {}"}
_HEALTH_JUDGED = ("pass", "FAIL")  # the other outcome, "not enough data", judges nothing


def _health_row(rows: Sequence[dict], name: str) -> dict | None:
    return next((r for r in rows if r.get("check") == name), None)


def _measured(row: dict) -> str:
    return f"{row.get('measured') or 'not measured'}, needs {row.get('threshold') or '?'}"


def health_catches(ev: Evidence, healthy: str = "correct", broken: str = "silent bug") -> Check:
    """The checklist catches the silent bug, whose loss curve looked fine: the bug FAILs both checks the step
    names (HEALTH_NAMED) and the correct run passes both, each with its measured number. Any other check (loss
    still falling, clipping not hiding a rising loss) decides nothing here: the step does not promise it."""
    rows = {label: ev.health.get(label) for label in (healthy, broken)}
    if any(r is None for r in rows.values()):
        return Check(None, "Not enough data yet: the shape-drift runs have no checkpoint to check yet.")
    found = {(label, name): _health_row(rows[label], name) for label in rows for name in HEALTH_NAMED}
    unjudged = [
        f"'{label}' {name}: {'not run' if row is None else row.get('result')}"
        for (label, name), row in found.items()
        if row is None or row.get("result") not in _HEALTH_JUDGED
    ]
    if unjudged:
        return Check(None, f"Not enough data: {'; '.join(unjudged)}.", settled=True)  # a checkpoint never changes

    def said(label: str) -> str:
        return "; ".join(f"{name} {found[label, name]['result']} ({_measured(found[label, name])})"
                         for name in HEALTH_NAMED)  # fmt: skip

    # The input each number was read from: the shape step's verdict measures the same bug on the probe text, and
    # its numbers differ (5.77 there, 14.65 here: a review read them as contradicting)
    # Each check says its own input: the rows read 4 windows, the leak 2 (a forward per position), and a review
    # read "4 held-out windows" said of both beside Model health's "2 held-out windows" for the leak
    inputs = []
    for name in HEALTH_NAMED:
        per_run = {label: found[label, name].get("measured on") or "" for label in rows}
        if per_run[broken] and per_run[broken] == per_run[healthy]:
            inputs.append(f"{name} on {per_run[broken]}")
        else:
            inputs += [f"'{label}' {name} on {per_run[label]}" for label in (broken, healthy) if per_run[label]]
    where = f"Measured {'; '.join(inputs)}. " if inputs else ""
    shared = {found[label, name].get("measured on") or "" for label in rows for name in HEALTH_NAMED}
    on = shared.pop() if len(shared) == 1 else ""  # the headline names the input only where it is one for all
    text = f"{where}'{broken}': {said(broken)}. '{healthy}': {said(healthy)}"
    bug_fails = [n for n in HEALTH_NAMED if found[broken, n]["result"] == "FAIL"]
    correct_fails = [n for n in HEALTH_NAMED if found[healthy, n]["result"] == "FAIL"]

    def fact(label: str, name: str) -> str:  # what the number is: "attention rows sum to 1 (14.65)" read as rows
        value = found[label, name].get("measured")  # summing to 14.65 (a review); "rows off 1 by 14.65"
        return HEALTH_NUMBER.get(name, "{}").format(value) if value else "not measured"

    def measured(label: str, names: list[str]) -> str:  # "no future leak (future moved logits 0.41)"
        return " and ".join(f"{n} ({fact(label, n)})" for n in names)

    def fits(line: str) -> str:  # the input too, where the banner's one line has room for it
        named = f"{line}, on {on}" if on else line
        return named if len(named) <= HEADLINE_LIMIT else line

    # The correct run's other FAILs (gradient clipped on recent steps, a loss still falling) are said with it: a
    # review read "'correct' passes both" above a table where it FAILed "gradient norm under the clip" (that check is
    # now "clipping not hiding a rising loss")
    others = [r["check"] for r in rows[healthy] if r.get("check") not in HEALTH_NAMED and r.get("result") == "FAIL"]
    also = f" (it FAILs {' and '.join(others)}: about its training, not the bug)" if others else ""
    if bug_fails == list(HEALTH_NAMED) and not correct_fails:
        return Check(True, f"{text}{also}: the checklist catches the bug the loss curve hid.",
                     headline=fits(f"The checklist catches the bug: '{broken}' fails both ("
                                   f"{', '.join(fact(broken, n) for n in bug_fails)}); '{healthy}' passes both"
                                   + (f" ({number_word(len(others))} other FAIL)" if others else "")))  # fmt: skip
    bug_passes = [n for n in HEALTH_NAMED if n not in bug_fails]
    why = [f"'{broken}' passes {' and '.join(bug_passes)}"] if bug_passes else []
    why += [f"'{healthy}' fails {' and '.join(correct_fails)}"] if correct_fails else []
    said_short = [f"'{broken}' passes {measured(broken, bug_passes)}"] if bug_passes else []
    said_short += [f"'{healthy}' fails {measured(healthy, correct_fails)}"] if correct_fails else []
    return Check(False, f"{text}: {'; '.join(why)}.",
                 headline=fits(f"The checklist misses the bug: {'; '.join(said_short)}"))  # fmt: skip


def induction_formed(ev: Evidence) -> Check:
    verdict = ev.verdicts.get(INDUCTION)
    if verdict is None:
        return Check(None, "Not enough data yet: the induction runs have not been started.")
    on = _on(verdict)
    if verdict.get("reproduced") is None:
        text = f"Not enough data yet{on}: {verdict.get('sentence', 'still training')}"
        missing = "Induction heads: not enough data yet; what is missing is under Numbers"
        short = "" if len(text) <= HEADLINE_LIMIT else missing
        return Check(None, text, headline=short)
    said = verdict.get("sentence", "")
    return Check(bool(verdict["reproduced"]), f"The induction phase change{on}: {said}" if on else said,
                 headline=verdict_headline(INDUCTION, "The induction phase change", verdict))  # fmt: skip


def ablation_hurts(ev: Evidence, min_loss: float = 0.1) -> Check:
    """Switching the induction verdict's head off raises the loss on the repeated probe's second copy by at least
    `min_loss` nats, and at least `min_loss` above the other heads' mean: the copying depends on that head, not on
    heads in general. Read from the (L, H) changes the Circuits heatmap draws in its second-copy panel
    (circuits_view.second_copy), and the sentence always names the head that panel shows largest. Another head may
    matter as much or more (in the lesson's browser run another head's effect was larger than the induction head's
    +0.671, and the old rule, "the largest of all", said "not seen": an induction circuit is more than one head, and
    switching off a head it reads from breaks the copying too); that is said, and the step's question, "which loss
    goes up when the induction head is off, and by how much", is still answered."""
    result = ev.ablation
    if result is None:
        # both runs' end, not the 2-layer run's checkpoint: a review read "no final checkpoint" of a run that had one
        return Check(None, "Not enough data yet: the check ablates the 2-layer run's last checkpoint once both "
                           "induction runs have ended.")  # fmt: skip
    head, deltas = result["head"], result["deltas"]  # deltas (L, H): nats, positive when the head helped
    named = {f"L{i}H{j}": float(v) for i, row in enumerate(deltas) for j, v in enumerate(row)}
    if head not in named or len(named) < 2:
        return Check(None, f"Not enough data: {head} is not one of {len(named)} measured heads, or none is left "
                           "to compare it with.", settled=True)  # fmt: skip
    unmeasured = [name for name, v in named.items() if not math.isfinite(v)]
    if unmeasured:  # a NaN compares false both ways: it would pass every test below
        return Check(None, f"Not enough data: ablating {', '.join(unmeasured)} gave no finite loss.", settled=True)
    others = {name: v for name, v in named.items() if name != head}
    value, mean = named[head], mean_of(list(others.values()))
    top_other = max(others, key=others.get)
    first = result.get("first")  # the same probes' first copy: random characters, which no context predicts
    on_first = (f"; on the probes' first copy, random characters no context predicts, it adds {first:+.3f}"
                if isinstance(first, (int, float)) and math.isfinite(first) else "")  # fmt: skip
    text = (f"Zero-ablating {head}, the induction verdict's head, adds {value:+.3f} nats on {result['where']} at step "
            f"{result['step']}; the other {len(others)} heads add {mean:+.3f} on average, the most {top_other} "
            f"at {others[top_other]:+.3f}{on_first}")  # fmt: skip
    jobs = result.get("jobs") or {}
    role, brief = _role_words(top_other, head, jobs)
    alike = [n for n, job in jobs.items() if n != head and job["role"] == (jobs.get(head) or {}).get("role")]
    if alike:  # a review's step 10 named three heads for one phase change: each of them scores as one
        noun = ROLE_NOUNS.get(jobs[head]["role"], f"a {jobs[head]['role']} head")
        if len(alike) > 1:  # "L1H0, L1H2 and L1H3 score as induction heads too"
            noun = f"{noun.split(' ', 1)[1]}s"
        names = ", ".join(alike[:-1]) + f" and {alike[-1]}" if len(alike) > 1 else alike[0]
        text += f"; {names} score{'s' if len(alike) == 1 else ''} as {noun} too (2x uniform or more)"
    largest = (f"{head} has the largest effect" if value >= others[top_other] else
               f"the largest effect is {top_other}'s: the copying needs that head too{role}")  # fmt: skip
    adds = f"zero-ablating it adds {value:+.3f} nats (the others {mean:+.3f} on average)"
    larger = (
        ""
        if value >= others[top_other]
        else f"; the largest is {top_other}'s {others[top_other]:+.3f}{brief}: the copying needs that head too"
    )
    if value < min_loss:
        return Check(False, f"{text}: under {min_loss} nats; {largest}.",
                     headline=f"{head} does not carry the copying: {adds}, under {min_loss}{larger}")  # fmt: skip
    if value - mean < min_loss:
        return Check(False, f"{text}: under {min_loss} nats above the others' mean, no more than a typical head; "
                            f"{largest}.",
                     headline=f"{head} is no more than a typical head: {adds}{larger}")  # fmt: skip
    if isinstance(result.get("se"), float) and isinstance(result.get("gap_se"), float):
        # its noise over the probe rows (a review: "the copying depends on L1H1" with no ±): each bar cleared by
        # the whole interval, NOISE_SIGMAS s.e. of the rows, the gap paired row by row
        half, gap_half = NOISE_SIGMAS * result["se"], NOISE_SIGMAS * result["gap_se"]
        text += (f"; over the {result['rows']} probe rows, {head}'s change is {value:+.3f} ± {half:.3f} and "
                 f"{value - mean:+.3f} ± {gap_half:.3f} above the others' mean ({NOISE_SIGMAS:g} s.e., paired row "
                 "by row)")
        if value - half < min_loss or value - mean - gap_half < min_loss:
            return Check(None, f"Not enough data: {text}: an interval straddles its bar of {min_loss} nats.",
                         settled=True, headline=f"Not enough data: {adds}, within its noise of the bar")  # fmt: skip
    # "Stands out" only where it is the largest: a reviewer read it over a heatmap whose darkest cell was L0H3's.
    said = "stands out" if value >= others[top_other] else "matters, with others"
    return Check(True, f"{text}: the copying depends on {head}; {largest}.",
                 headline=f"{head}, the induction head, {said}: {adds}{larger}")  # fmt: skip


ROLE_JOBS = {"previous": "attends one character back", "first": "attends to the first character",
             "self": "attends to itself",
             "induction": "attends to the character after the current one's earlier copy"}  # fmt: skip


def _role_words(name: str, head: str, jobs: dict) -> tuple[str, str]:
    """What the head that matters more than the induction head does, from the run's own role scores (`jobs`, the
    heads at 2x uniform or more: lesson_evidence._ablation): (". In the snapshot at step 3000 L0H3 attends one
    character back, 0.87 vs 0.10 uniform (8.8x); a previous-token head in an earlier layer is an induction head's
    usual partner (Olsson et al. 2022): ...", ", a previous-token head"); ("", "") with no role."""
    job = jobs.get(name)
    if not job or not job.get("baseline"):
        return "", ""
    doing = ROLE_JOBS.get(job["role"], f"scores highest on {job['role']}")
    noun = ROLE_NOUNS.get(job["role"], f"a {job['role']} head")
    ratio = job["score"] / job["baseline"]
    said = (f". In the snapshot at step {job['step']} {name} {doing}, {job['score']:.2f} vs {job['baseline']:.2f} "
            f"uniform ({ratio:.1f}x)")  # fmt: skip
    earlier = int(name[1:].split("H")[0]) < int(head[1:].split("H")[0])  # "L0H3" is in layer 0
    if job["role"] == "previous" and earlier:
        said += ("; a previous-token head in an earlier layer is an induction head's usual partner (Olsson et al. "
                 "2022): it tells each position which character came before it")  # fmt: skip
    return said, f", {noun}"  # the banner's line is short: the numbers are in the text


def lens_sharpens(ev: Evidence, min_gain: int = 3) -> Check:
    """The logit lens: the top guess read at the last layer is right at more positions than read after the
    embedding. Judged on held-out windows where the evidence has them (`_lens_on_windows`), else on the probe."""
    lens = ev.lens
    if lens is None:
        return Check(None, "Not enough data yet: the check reads the 2-layer run's last checkpoint with the lens "
                           "once both induction runs have ended.")  # fmt: skip
    names, hits, n = lens["names"], lens["hits"], lens["positions"]
    text = "Top guess right, by where the stream is read: " + ", ".join(
        f"{name} {hit}/{n}" for name, hit in zip(names, hits, strict=True))  # fmt: skip
    if lens.get("windows"):
        return _lens_on_windows(lens["windows"], names, f"On the probe text: {text[0].lower()}{text[1:]}.")
    ends = f"right at {hits[0]}/{n} after the embedding, {hits[-1]}/{n} at the last layer"
    if hits[-1] - hits[0] >= min_gain:
        return Check(True, f"{text}: the prediction forms in the layers.",
                     headline=f"The prediction forms in the layers: the top guess is {ends}")  # fmt: skip
    return Check(False, f"{text}: the last layer gains fewer than {min_gain} positions on the embedding.",
                 headline=f"The last layer gains under {min_gain} positions: the top guess is {ends}")  # fmt: skip


def _lens_on_windows(windows: dict, names: Sequence[str], probe: str) -> Check:
    """The lens step on held-out windows: each window's share of right top guesses at the last layer against after
    the embedding, paired window by window, its noise NOISE_SIGMAS s.e. with the held-out text's size counted
    (verdict.held_out_variance). Seen where the whole interval of the gain lies above 0. One 32-character probe,
    a 3-position gain and no noise had judged it (a review: "the right character tops the list" at 14/31)."""
    right, context = windows["right"], int(windows["context"])  # (L+1, W)
    count = len(right[0])
    gains = [last - first for first, last in zip(right[0], right[-1], strict=True)]  # (W,)
    variance = held_out_variance(gains, (1, context), int(windows["val_tokens"]))
    shares = ", ".join(f"{name} {sum(row) / count:.0%}" for name, row in zip(names, right, strict=True))
    on = f"{count} held-out windows ({count * context:,} positions)"
    if variance is None:
        return Check(None, f"Not enough data: the lens read {on}. {probe}")
    gain, half = sum(gains) / count, NOISE_SIGMAS * math.sqrt(variance)
    first, last = sum(right[0]) / count, sum(right[-1]) / count
    said = (f"Top guess right on {on}, by where the stream is read: {shares}. The last layer's share is "
            f"{100 * gain:.0f} points above the embedding's, ± {100 * half:.0f} ({NOISE_SIGMAS:g} s.e. over the "
            f"windows, the held-out text's size counted). {probe}")  # fmt: skip
    ends = f"right at {first:.0%} of {count * context:,} held-out positions after the embedding, {last:.0%} at the " \
           f"last layer (± {100 * half:.0f} points)"  # fmt: skip
    if gain - half > 0:
        return Check(True, said, headline=f"The prediction forms in the layers: the top guess is {ends}")
    return Check(False, said, headline=f"The last layer gains nothing beyond noise: the top guess is {ends}")
