"""What a lab verdict is made of: the numbers a judge may read from a run (`RunResult`), the answer (`Verdict`), and
the clause helpers every judge uses, so a red verdict names each clause that failed and a sentence never states a
number that was not measured ("not measured", "diverged at step N" for a NaN).

Issue 33 added the rest of what a verdict stands on: a run is judged only when it took its whole step budget
(`RunResult.ran_to_the_end`, experiment.ended_early); a difference of two runs' losses is judged against the noise of
their per-step difference, paired over the steps both logged (`loss_difference`), and printed with that interval (a
held-out difference with the noise of the held-out windows themselves, `held_out_difference`); the spread decides: a
loss clause holds only when that whole interval clears its bar (`clears`, `within`), and one that straddles it is
"not enough data"; held-out loss backs every loss clause (`held_out`: a held-out loss not recorded is a clause not
measured, never dropped), and runs that learned their text by heart leave "not enough data" (`memorised`). A clause
may be a consequence of the pitfall seen on some corpora rather than the pitfall itself (`Clause`): reported, never
what the verdict turns on."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

ENDED = ("finished", "diverged", "failed")  # a run in one of these has said all it will say
SATURATED = 0.9  # an attention row whose largest weight is above this is "near one-hot"
LOSS_FIELDS = ("final_train_loss", "final_val_loss", "initial_loss", "mid_loss", "no_peek_loss", "max_loss_early",
               "final_eval_train_loss")  # fmt: skip
NOT_ENOUGH_DATA = "not enough data"  # a verdict some clause of which was not measured (none failed)
CPU_COUNTS_ONLY = "allocation counts only"  # the memory demo on CPU: churn measured, fragmentation needs CUDA


@dataclass
class RunResult:
    """What a verdict may look at, read from one run folder."""

    state: str
    steps: int
    final_train_loss: float | None  # mean of the last 20 step losses
    final_val_loss: float | None
    max_loss_early: float | None  # worst loss in the first 10% of steps
    clip_events_early: int  # clipped steps in the first 10% of steps
    mean_entropy: float | None  # mean attention entropy (nats) over heads and rows, latest snapshot
    mean_max_weight: float | None  # mean of each attention row's largest weight, latest snapshot
    layer_grad_norms: dict[str, float] = field(default_factory=dict)  # mean of the last 20 steps, per group
    first_attn_grads: tuple[tuple[int, float], ...] = ()  # (step, L0.attn gradient norm) of those 20 steps
    leak: float | None = None  # leak_score of the final model (0 = no future leak)
    diverged_step: int | None = None
    sample: str = ""
    sample_step: int | None = None  # the step of the model that wrote `sample` (0: the untrained model)
    max_steps: int = 0
    reason: str = ""  # status.json's reason: for a failed run, the error that stopped it
    initial_loss: float | None = None  # the first step's loss
    mid_loss: float | None = None  # mean loss of the steps around a third of max_steps
    mid_losses: tuple[tuple[int, float], ...] = ()  # (step, loss) of those steps: a pair's noise there (paired_error)
    max_grad_norm_early: float | None = None  # largest pre-clip gradient norm in the first 10% of steps
    saturated_rows: float | None = None  # fraction of attention rows with max weight > SATURATED, latest snapshot
    softmax_gain: float | None = None  # mean spectral norm of the softmax Jacobian per row (see softmax_gain)
    row_sum_error: float | None = None  # max |row sum - 1| of attention: the checkpoint probe's, else a snapshot's
    no_peek_loss: float | None = None  # loss when each position sees only its past (health.no_peek_loss)
    nonfinite_tensor: str = ""  # the first tensor that went NaN/inf, for a diverged run
    final_loss_std: float | None = None  # standard deviation of the last 20 step losses: the run's own noise
    final_losses: tuple[tuple[int, float], ...] = ()  # (step, loss) of the last FINAL_STEPS steps: paired, step by step
    nonfinite_loss: str = ""  # the loss that was NaN/inf (set by __post_init__): the run diverged there
    # The last eval's mean loss on the fixed training windows: against final_val_loss (the same eval, held-out
    # windows) it tells learning from memorising (`memorised`), with the run's lowest held-out loss (None: unknown)
    final_eval_train_loss: float | None = None
    best_val_loss: float | None = None
    held_out_rose: bool | None = None  # the last eval's above the best beyond their paired noise; None: unknown
    chars_read: int | None = None  # characters the run's budget reads: max_steps x batch size x context
    train_chars: int | None = None  # characters of its training split, where known (a text corpus of its own)
    # The last eval's own held-out numbers (trainer.evaluate_model): each of its batches' mean val loss, in draw order
    # (the same windows for every run of a corpus, batch size and context), the held-out split's length and the
    # eval's (B, T). `held_out_difference` computes the held-out gap's noise from them; a run folder from before the
    # eval recorded them has () / None, and the gap then borrows the training noise, saying so.
    val_batch_losses: tuple[float, ...] = ()
    val_tokens: int | None = None
    eval_batch_shape: tuple[int, int] | None = None
    train_batch_losses: tuple[float, ...] = ()  # the same of its training split (the last eval scores it), and its
    train_tokens: int | None = None  # length: the noise of final_eval_train_loss (pitfalls/mask.py)
    mid_eval: dict = field(default_factory=dict)  # the eval nearest a third of max_steps: step, val_loss, batches
    # What the attention and leak numbers were measured on, for a sentence: the latest snapshot's step and probe text's
    # length (row_sum_error, ...), the checkpoint step and held-out batch (windows, characters) of `leak`
    snapshot_step: int | None = None
    snapshot_chars: int | None = None
    probe_step: int | None = None
    leak_windows: tuple[int, int] | None = None
    rows_windows: tuple[int, int] | None = None  # set when row_sum_error is the checkpoint probe's (an ended run)

    @property
    def snapshot_input(self) -> str:
        """What row_sum_error was measured on: the checkpoint probe's windows, else the snapshot's probe text."""
        if self.rows_windows is not None:
            return held_out_windows(*self.rows_windows, self.probe_step)
        if self.snapshot_chars is None:
            return "the latest attention snapshot"
        return f"the probe text ({self.snapshot_chars} characters, attention snapshot at step {self.snapshot_step})"

    @property
    def leak_input(self) -> str:
        """ "2 held-out windows of 64 characters (checkpoint of step 200)": what `leak` was measured on."""
        if self.leak_windows is None:
            return "the last checkpoint"
        return held_out_windows(*self.leak_windows, self.probe_step)

    def __post_init__(self) -> None:
        """A NaN or infinite number was not measured: it becomes None, so no clause reads it and no sentence prints
        "nan vs 2.200". A non-finite loss means the run broke: it counts as diverged at the step it ended."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                setattr(self, f.name, None)
                if f.name in LOSS_FIELDS and not self.nonfinite_loss:
                    self.nonfinite_loss = f.name
        self.final_losses = tuple((int(s), float(v)) for s, v in self.final_losses if finite(v))
        batches = tuple(self.val_batch_losses or ())
        # One batch not finite and the rest cannot be paired batch by batch: no held-out spread, never a partial one
        self.val_batch_losses = tuple(float(v) for v in batches) if all(finite(v) for v in batches) else ()
        self.layer_grad_norms = {k: v for k, v in self.layer_grad_norms.items() if finite(v)}
        if self.nonfinite_loss and self.diverged_step is None:
            self.diverged_step = self.steps

    @property
    def ran_to_the_end(self) -> bool:
        """Whether the run took every step of its budget (a run with no budget recorded is taken at its word)."""
        return self.steps >= self.max_steps if self.max_steps else self.state == "finished"

    @property
    def attention_grad_norm(self) -> float | None:
        """Mean over layers of the attention blocks' gradient norms."""
        values = [v for k, v in self.layer_grad_norms.items() if k.endswith(".attn")]
        return sum(values) / len(values) if values else None


@dataclass
class Verdict:
    """An experiment's computed answer."""

    reproduced: bool | None  # True: the pitfall showed; False: a clause failed; None: still training, or `undecided`
    expected: str  # the effect the pitfall should show, in one line
    observed: dict[str, Any]  # the numbers it was judged on, by name
    sentence: str  # what happened, in one line
    undecided: str = ""  # why a judged experiment has no answer (reproduced None): NOT_ENOUGH_DATA, CPU_COUNTS_ONLY
    not_seen: tuple[str, ...] = ()  # consequence clauses (`Clause`) measured and not seen on this text

    @property
    def status(self) -> str:
        if self.reproduced is None and self.undecided:
            return self.undecided
        return {True: "reproduced", False: "did not reproduce", None: "still training"}[self.reproduced]


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def fmt(value: float | None, digits: int = 3) -> str:
    """`value` to `digits` decimals, or to 2 significant digits when those decimals would print it as 0 (a leak of
    1e-07 fails a check that wants exactly 0: "0.0000" would hide why). A number never measured says so."""
    if value is None:
        return "not measured"
    if not math.isfinite(value):
        return "not finite"
    if value != 0 and abs(value) < 0.5 * 10**-digits:
        return f"{value:.2g}"
    return f"{value:.{digits}f}"


def pair(a: float | None, b: float | None, names: tuple[str, str] = ("", ""), digits: int = 3) -> str:
    """ "2.033 unscaled vs 2.288 scaled", each run named (a review could not tell whose a bare "2.033 vs 2.288" was)."""
    return " vs ".join(f"{fmt(v, digits)}{' ' + n if n else ''}" for v, n in zip((a, b), names, strict=True))


TRAINED_SHARE = 0.1  # a run "trained" when its loss fell by at least this share of its first loss (ln V at init)


def trained_margin(run: RunResult) -> float | None:
    """How far a run's loss must fall to count as having trained: TRAINED_SHARE of its first loss, None when the
    first loss was not measured (a bar of 0 would pass any run). Scale-free: 1 nat was right for Tiny Shakespeare
    in 200 steps (4.2 -> 2.5) and wrong for the copy task, whose random first half keeps the loss near 2.7 that
    early (3.4 -> 2.7)."""
    return None if run.initial_loss is None else TRAINED_SHARE * run.initial_loss


def trained_clause(run: RunResult) -> str:
    """The words of a "loss down by a tenth" clause, with the bar it used or why there was none."""
    margin = trained_margin(run)
    if margin is None:
        return "its loss down by a tenth of its first loss (not measured: no first loss)"
    return f"its loss down by at least {margin:.2f} nats (a tenth)"


def gt3(a: float | None, b: float | None, margin: float | None = 0.0) -> bool | None:
    """a > b + margin, or None when any was not measured: a clause that could not be checked."""
    return None if not (finite(a) and finite(b) and finite(margin)) else a > b + margin


def all_of(*clauses: bool | None) -> bool | None:
    """False if any clause failed, else None if any was not measured, else True."""
    if any(c is False for c in clauses):
        return False
    return None if any(c is None for c in clauses) else True


def diverged_at(run: RunResult) -> str:
    """ "" for a run that did not diverge, else "diverged at step N": what a clause about its end says instead of
    a number the run never reached (its last losses and snapshot are from before it broke)."""
    if run.state != "diverged" and run.diverged_step is None:
        return ""
    return f"diverged at step {run.diverged_step if run.diverged_step is not None else run.steps}"


def held_out_windows(windows: int, chars: int, step: int | None = None) -> str:
    """ "4 held-out windows of 64 characters (checkpoint of step 200)": the batch a checkpoint's probe or health
    check read (corpus.get_batch("val", ...)), said, so two numbers measured on other input are not read as one."""
    at = f" (checkpoint of step {step})" if step is not None else ""
    return f"{windows} held-out window{'s' if windows != 1 else ''} of {chars} characters{at}"


def say(ok: bool | None, yes: str, no: str, unmeasured: str) -> str:
    return {True: yes, False: no, None: unmeasured}[ok]


# The corpora a consequence clause names, as a reader knows them (`Clause.seen_on` holds source keys).
CORPUS_NAMES = {"shakespeare": "Tiny Shakespeare", "synthetic:copy": "the copy task", "text": "your own text"}


@dataclass(frozen=True)
class Clause:
    """A clause whose place in the claim is not the default one. `consequence=True`: not the pitfall itself but
    something it led to on the corpora in `seen_on` (source keys, e.g. ("shakespeare",)); it is measured and
    reported, and a consequence that did not show on this text is said so ("measured: not seen on this text (it
    was on Tiny Shakespeare)"), never counted as the pitfall failing. A plain bool | None in a judge's clauses is a
    clause of the pitfall itself."""

    ok: bool | None
    consequence: bool = False
    seen_on: tuple[str, ...] = ()

    def where(self) -> str:
        """ "Tiny Shakespeare" / "Tiny Shakespeare and the copy task": where this consequence was seen."""
        names = [CORPUS_NAMES.get(s, s) for s in self.seen_on]
        return " and ".join(names) if names else "the corpora benchmarked"


def decide(expected: str, clauses: dict[str, bool | None | Clause], observed: dict, sentence: str) -> Verdict:
    """The verdict from named clauses: reproduced only if every clause of the pitfall held; a red one names each
    clause that failed (and any not measured); with none failed but some not measured, "not enough data", never a
    pass or a fail. A `Clause` marked `consequence` decides nothing: one that did not show (or was not measured) is
    reported as such, and the verdict stands on the pitfall's own clauses."""
    pitfall = {n: c.ok if isinstance(c, Clause) else c for n, c in clauses.items()
               if not (isinstance(c, Clause) and c.consequence)}  # fmt: skip
    consequences = {n: c for n, c in clauses.items() if isinstance(c, Clause) and c.consequence}
    failed = [name for name, ok in pitfall.items() if ok is False]
    unmeasured = [name for name, ok in pitfall.items() if ok is None]
    sentence = sentence.rstrip()
    not_seen = tuple(name for name, c in consequences.items() if c.ok is False)
    for name in not_seen:
        sentence += f" {name.capitalize()}: measured: not seen on this text (it was on {consequences[name].where()})."
    for name in (n for n, c in consequences.items() if c.ok is None):  # unmeasured, or within its noise
        said = "" if "not told apart" in name else ": not measured"  # not "(not told apart …): not told apart"
        sentence += f" {name.capitalize()} (a consequence seen on {consequences[name].where()}){said}."
    # An undecided clause was not measured, or measured with an interval across its bar, which its name then says
    # ("(not enough data: …)"): "not measured" before it contradicted the gap printed beside it (a review)
    undecided = [name if "not enough data" in name or "not measured" in name else f"{name} (not measured)"
                 for name in unmeasured]  # fmt: skip
    if failed:
        sentence += " Failed: " + "; ".join(failed) + "."
        if undecided:
            sentence += " Undecided: " + "; ".join(undecided) + "."
        return Verdict(False, expected, observed, sentence, not_seen=not_seen)
    if undecided:
        sentence += " Not enough data to judge: " + "; ".join(undecided) + "."
        return Verdict(None, expected, observed, sentence, undecided=NOT_ENOUGH_DATA, not_seen=not_seen)
    return Verdict(True, expected, observed, sentence, not_seen=not_seen)


# How wide a difference's interval is: mean ± NOISE_SIGMAS standard errors (of the paired difference). The spread
# decides (`clears`): a loss clause holds only when the whole interval clears its bar. 3 (99.7%): on Tiny
# Shakespeare at the default seed every loss gap clears its bar by many times this (BENCHMARKS.md, issue 33), so
# the stricter width costs no verdict there; 2 (95%) would be the fallback if one ever straddled.
NOISE_SIGMAS = 3

FINAL_STEPS = 20  # final_train_loss is the mean of this many step losses (results.read_result reads this)
MIN_PAIRED_STEPS = 5  # fewer shared steps than this and the paired spread is itself too noisy to use


@dataclass
class Difference:
    """a's final loss minus b's, with the standard error of that difference.

    Paired when both runs logged the same last steps: the two runs of a pair share seed, initial weights and batches,
    so a hard batch is hard for both (their last-20-step losses correlate at 0.92-0.98, issue 33); the noise of the
    difference is the spread of the per-step differences over sqrt(steps), several times smaller than the two runs'
    own spreads added as if unrelated. Independent (the old, wider estimate) when the per-step losses are missing."""

    mean: float | None
    standard_error: float | None
    steps: int  # how many step losses (or, held-out, eval batches) each side of the difference averages
    paired: bool
    basis: str = ""  # what the noise was measured on, when not the training steps (`held_out_difference`)

    def noise(self, digits: int = 2) -> str:
        """ "± 0.05 (3 s.e., paired over 20 shared steps)": the half-width the difference is judged against."""
        if self.standard_error is None:
            return "(its noise not measured)"
        kind = f"paired over {self.steps} shared steps" if self.paired else "unpaired: the runs' own noise added"
        return f"± {NOISE_SIGMAS * self.standard_error:.{digits}f} ({NOISE_SIGMAS} s.e., {self.basis or kind})"

    def interval(self, digits: int = 2) -> str:
        """ "0.30 ± 0.05 (3 s.e., paired over 20 shared steps)", or "not measured"."""
        return "not measured" if self.mean is None else f"{self.mean:.{digits}f} {self.noise(digits)}"


def _interval(difference: Difference, sigmas: float, *bars: float) -> tuple[float | None, float | None, str]:
    """(low, high, "the interval 0.29-0.33") of mean ± `sigmas` standard errors; (None, None, why) when the mean or
    its noise was not measured (the words `clears` and `within` then give). An end that rounds to one of `bars` gets
    the decimals that tell them apart: "the interval 0.10-0.30 straddles the bar 0.10" read wrong (low end 0.096)."""
    if difference.mean is None:
        return None, None, "not measured"
    if difference.standard_error is None:
        return None, None, f"not enough data: the gap {difference.mean:.2f} has no measured noise"
    low, high = (difference.mean + s * sigmas * difference.standard_error for s in (-1, 1))
    shown = lambda d: {f"{e:.{d}f}" for e in (low, high)}.isdisjoint(f"{b:.{d}f}" for b in bars)  # noqa: E731
    digits = next((d for d in range(2, 6) if shown(d)), 6)  # "0.050–0.100 straddles the bar 0.10" was 0.1005
    return low, high, f"the interval {low:.{digits}f}–{high:.{digits}f}"


def clears(difference: Difference, bar: float, sigmas: float = NOISE_SIGMAS) -> tuple[bool | None, str]:
    """Whether `difference` is above `bar`, decided by its spread: True only when its interval (mean ± `sigmas`
    standard errors) lies wholly above the bar, False when wholly below, None when it straddles the bar or was not
    measured, with the words for the clause ("the interval 0.29-0.33 clears the bar 0.10", "not enough data: the
    interval 0.07-0.17 straddles the bar 0.10"). A gap of 0.12 ± 0.05 against a 0.10 bar is not a pass."""
    low, high, interval = _interval(difference, sigmas, bar)
    if low is None:
        return None, interval
    if low > bar:
        return True, f"{interval} clears the bar {bar:.2f}" + (f", by only {low - bar:.3f}" if low < 1.1 * bar else "")
    if high < bar:
        # A reversal is said as one: "not higher by enough" softened a run that ended 0.50 nats lower (a review)
        opposite = ", and below zero: the other way round" if high < 0 <= bar else ""
        return False, f"{interval} is below the bar {bar:.2f}{opposite}"
    return None, f"not enough data: {interval} straddles the bar {bar:.2f}"


def reversed_gap(difference: Difference, sigmas: float = NOISE_SIGMAS) -> bool:
    """Whether `difference`'s interval lies wholly below zero: the broken run ended better, not merely not worse by
    enough (said as such, e.g. "ends lower", not "ends not higher by enough")."""
    high = _interval(difference, sigmas)[1]
    return high is not None and high < 0


def within(difference: Difference, allowed: float, sigmas: float = NOISE_SIGMAS) -> tuple[bool | None, str]:
    """Whether `difference` is within ±`allowed`, decided by its spread as in `clears`: True when its interval lies
    inside, False when wholly outside, None when it straddles either edge or was not measured."""
    low, high, interval = _interval(difference, sigmas, allowed, -allowed)
    if low is None:
        return None, interval
    if -allowed <= low and high <= allowed:
        return True, f"{interval} lies within ±{allowed:.2f}"
    if low > allowed or high < -allowed:
        return False, f"{interval} lies outside ±{allowed:.2f}"
    return None, f"not enough data: {interval} straddles ±{allowed:.2f}"


def held_out_variance(batch_losses: list[float], batch_shape: tuple[int, int], val_tokens: int) -> float | None:
    """The variance of an eval's held-out mean (or of a paired difference of two, given the per-batch differences)
    as an estimate of the loss on text of its kind: None for fewer than two batches.

    Shapes: `batch_losses` (n,), each the mean over a batch of B windows x T predictions; the windows are drawn at
    random, with replacement, from the held-out split's N - T overlapping windows (data.Corpus.get_batch).

    Two noises add. (1) The eval's own draw: the batches' spread s over sqrt(n), the naive standard error; s^2 x B is
    one window's variance. (2) The held-out text itself, a sample of its kind, and on a short text by far the larger:
    the n x B windows read overlap (neighbours share T - 1 of their T characters), so they are not n x B pieces of
    evidence; the N - 1 characters predicted hold about (N - 1) / T windows that do not overlap, and that is the
    sample size counted here. So var = s^2 x (1 / n + B x T / (N - 1)). On the 2,000-character text (N = 200,
    B = T = 16, the lab's n = 5) that is s^2 x 1.49 where the naive s^2 / n is s^2 x 0.2, 2.7 times the width: the
    mask's gaps then print ±0.37-0.55 at 3 s.e., as a block bootstrap over every held-out window gave (±0.38-0.53,
    BENCHMARKS.md), where the training noise it borrowed before gave ±0.04-0.06. On Tiny Shakespeare (N = 111,540)
    1 / n dominates: the eval's own draw. Recomputing batches over non-overlapping windows instead would have
    changed every run's val_loss (its curve, its best), and a 200-character split holds only 12 such windows of 16.
    Left out: s from n = 5 batches has 4 degrees of freedom, so the width itself is uncertain by about a third."""
    n = len(batch_losses)
    if n < 2 or val_tokens is None or val_tokens < 2:
        return None
    centre = sum(batch_losses) / n
    spread2 = sum((v - centre) ** 2 for v in batch_losses) / (n - 1)  # s^2: the variance of one batch's mean
    windows_per_batch, context = batch_shape
    return spread2 * (1 / n + windows_per_batch * context / (val_tokens - 1))


def _draw_part(diffs: list[float], variance: float | None) -> str:
    """What the batches' spread alone gives, said beside the whole (held_out_variance adds the held-out text's own
    sampling): a review recomputed ±0.083 from 5 paired batches and read ±0.126 on screen. On a long held-out text
    the widening is under the last digit: said so (a review read "± 0.058 … alone gives ± 0.058, widened")."""
    n = len(diffs)
    centre = sum(diffs) / n
    alone = NOISE_SIGMAS * (sum((d - centre) ** 2 for d in diffs) / (n - 1) / n) ** 0.5
    whole = None if variance is None else NOISE_SIGMAS * variance**0.5
    if whole is not None and f"{whole:.3f}" == f"{alone:.3f}":
        return "; the batches' spread alone gives it: the held-out text's own sampling adds under 0.001 here"
    return f"; the batches' spread alone gives ± {alone:.3f}, widened for the held-out text's own sampling"


def _held_out_sides(run: RunResult) -> tuple[tuple[int, int], int] | None:
    """(batch shape, held-out length) of a run whose last eval recorded its batches, else None."""
    if len(run.val_batch_losses) < 2 or not run.eval_batch_shape or not run.val_tokens:
        return None
    return tuple(run.eval_batch_shape), int(run.val_tokens)


def held_out_difference(a: RunResult, b: RunResult) -> Difference:
    """a's held-out loss minus b's, with the held-out noise of the last eval (`held_out_variance`): paired batch by
    batch when both runs scored the same windows (the same batch shape, split and number of batches: the eval's
    windows are seeded with EVAL_SEED), a hard passage being hard for both; else each run's own noise added. A run
    folder from before the eval recorded its batches: the pair's training noise (`loss_difference`) stands in, and
    its words say so (on a 200-character held-out split it was 7-10 times too narrow). Mean None when either held-out
    loss was not recorded."""
    mean = None if a.final_val_loss is None or b.final_val_loss is None else a.final_val_loss - b.final_val_loss
    sides = [_held_out_sides(r) for r in (a, b)]
    if sides[0] is None or sides[1] is None:
        train = loss_difference(a, b)
        kind = f"paired over {train.steps} shared steps" if train.paired else "the runs' own step noise added"
        basis = (
            f"the training noise, {kind}: the eval recorded no held-out spread (a run from before it did), so "
            "on a small held-out split this is too narrow"
        )
        return Difference(mean, train.standard_error, train.steps, train.paired, basis=basis)
    (shape, tokens), n = sides[0], len(a.val_batch_losses)
    # What was scored, apart from the split it was drawn from at random (windows overlap, so 2,560 may come from 2,500)
    scored = f"{n} held-out batches of {shape[0]} windows of {shape[1]} ({n * shape[0] * shape[1]:,} characters)"
    where = f"drawn at random, overlapping, from {tokens:,} held-out characters (about {tokens // shape[1]:,} windows)"
    if sides[0] == sides[1] and len(b.val_batch_losses) == n:
        diffs = [x - y for x, y in zip(a.val_batch_losses, b.val_batch_losses, strict=True)]
        variance = held_out_variance(diffs, shape, tokens)
        basis = f"paired over {scored}, the same windows, {where}" + _draw_part(diffs, variance)
        return Difference(mean, None if variance is None else variance**0.5, n, True, basis=basis)
    variances = [held_out_variance(list(r.val_batch_losses), *side) for r, side in zip((a, b), sides, strict=True)]
    error = None if None in variances else sum(variances) ** 0.5
    basis = "unpaired: the runs' evals read different held-out windows, each one's held-out noise added"
    return Difference(mean, error, n, False, basis=basis)


def loss_difference(a: RunResult, b: RunResult) -> Difference:
    """a.final_train_loss - b.final_train_loss and its noise: paired over the steps both logged (see Difference)."""
    mean = None if a.final_train_loss is None or b.final_train_loss is None else a.final_train_loss - b.final_train_loss
    if (paired := paired_error(a.final_losses, b.final_losses)) is not None:
        return Difference(mean, *paired, paired=True)
    spreads = [r.final_loss_std for r in (a, b) if r.final_loss_std is not None]  # a run without one adds nothing
    error = (sum(s**2 for s in spreads) / FINAL_STEPS) ** 0.5 if spreads else None
    return Difference(mean, error, FINAL_STEPS, paired=False)


def paired_error(mine: tuple | list, theirs: tuple | list) -> tuple[float, int] | None:
    """(the standard error of the mean step-by-step difference, the steps shared) of two runs' (step, loss) pairs
    that share seed and batches; None under MIN_PAIRED_STEPS shared steps."""
    other = dict(theirs)
    diffs = [loss - other[step] for step, loss in mine if step in other]
    if len(diffs) < MIN_PAIRED_STEPS:
        return None
    centre = sum(diffs) / len(diffs)
    return (sum((d - centre) ** 2 for d in diffs) / (len(diffs) - 1) / len(diffs)) ** 0.5, len(diffs)


def difference_margin(threshold: float, a: RunResult, b: RunResult) -> float:
    """The margin a difference of two runs' losses (each a mean of about FINAL_STEPS step losses) must clear: the
    physical `threshold`, or NOISE_SIGMAS standard errors of that difference when the runs are noisier. Paired over
    the steps both runs logged (`loss_difference`); without per-step losses, each run's step-to-step spread
    (final_loss_std) over sqrt(FINAL_STEPS) is taken as the noise of its mean and the two are added as if unrelated:
    on Tiny Shakespeare the final loss of the same settings spread 0.013 across seeds, its step spread 0.06 /
    sqrt(20) = 0.013."""
    error = loss_difference(a, b).standard_error
    return max(threshold, NOISE_SIGMAS * (error or 0.0))


LEAKS = 1e-3  # a leak score above this is a leak (a correct mask scores exactly 0)


def never_reached(expected: str, runs: dict[str, RunResult], claims: list[str], observed: dict) -> Verdict | None:
    """The verdict when a run diverged: its last snapshot and losses are from before it broke, so every claim about
    the end of training is "not measured" (never a pass or a fail); None when every run reached its end. `runs`:
    {label: result}, the label as the sentence names the run."""
    broken = [f"the {label} run {diverged_at(r)}" for label, r in runs.items() if diverged_at(r)]
    if not broken:
        return None
    why = f"not measured: {' and '.join(broken)}"
    sentence = f"{'; '.join(broken).capitalize()}, so the end of training was never reached."
    return decide(expected, {f"{claim} ({why})": None for claim in claims}, observed, sentence)


def held_out(worse: RunResult, better: RunResult, names: tuple[str, str] = ("", "")) -> tuple[bool | None, str]:
    """(whether the held-out loss orders the runs beyond its noise: `clears` 0 on the paired gap, +0.01 is "not
    enough data"; words, said against zero: "the bar 0.00" read as a clash with the verdict's 0.10, a review). "held-out
    loss not recorded" when either has none: never green on training loss alone."""
    if worse.final_val_loss is None or better.final_val_loss is None:
        return None, "held-out loss not recorded"
    difference = held_out_difference(worse, better)
    shown, spread = clears(difference, 0.0)
    spread = spread.replace("below the bar 0.00, and below zero:", "below zero:").replace("the bar 0.00", "zero")
    return shown, (
        f"held-out loss {pair(worse.final_val_loss, better.final_val_loss, names)} (gap {difference.interval(3)}: "
        f"{spread}: the order only, the verdict judges its own bar)"
    )
