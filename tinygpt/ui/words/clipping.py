"""What gradient clipping did on a run, in one sentence computed from its records (shown under the gradient-norm
chart on Train and Gradients)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tinygpt.lab.evals import (
    batch_losses,
    draw_noise,
    eval_gap,
    eval_split,
    gap_words,
    mean_variance,
    scant_held_out,
)
from tinygpt.lab.verdict import NOISE_SIGMAS, Difference, clears
from tinygpt.runs.knobs import under_leak

CLIP_WINDOW = 300  # steps the clipping caption describes: the recent past, not the warmup's first spikes
MIN_TREND_STEPS = 30  # losses needed to judge their trend: 10 a third, enough for each third's spread


def clip_caption(
    metrics: list[dict], knobs: dict, optimizer: str = "adamw", evals: list[dict] = (), leaks: list[tuple] = (),
    since: int | None = None,
    checkpoints: Sequence[int] = (),
) -> str:
    """What gradient clipping did on the run's last CLIP_WINDOW steps and what that means at this learning rate,
    from the records: the share of clipped steps, the typical scale factor (threshold / norm), and whether the
    loss fell meanwhile. Under AdamW a gradient scaled by a steady factor scales Adam's moments alike, so the
    update barely changes; under SGD the step itself shrinks by that factor. The verdict reads the loss whatever
    the share: a run whose learning rate was raised to 0.1 clipped 6% of its steps while its loss rose from 1.7 to
    3.2, and "occasional spikes: what clipping is for" called it healthy, as it did later while the loss stayed at
    3.2, flat, twice the run's best. `evals` (the run's evals.jsonl) add the held-out loss over the same steps and
    against the run's best; `leaks` (tinygpt.runs.knobs.leak_spans) are the stretches whose evals are no best: a
    model reading the next character scores 0.2. `since`: a branch's step, whose metrics up to it are its parent's
    (trained at the parent's settings): only the steps after it are read (a review's branch to LR 0.0005 at step
    500 read "at learning rate 0.0012 → 5e-05 … the loss is falling", 200 of those 300 steps its parent's).
    `checkpoints`: the steps the run keeps a checkpoint at, so that advice to resume names one it has."""
    clip = knobs.get("max_grad_norm") or 0.0
    recent = [m for m in metrics[-CLIP_WINDOW:] if isinstance(m.get("grad_norm"), (int, float))
              and not (isinstance(since, int) and int(m.get("step") or 0) <= since)]  # fmt: skip
    if not recent:
        return f"Not enough data: no step of its own since the branch at step {since:,} yet." if since else ""
    # Clipping off: the loss and held-out words all the same (a review's run over-fitted, held-out 2.141 -> 2.952,
    # with nothing said, where the same run clipped read "learning that text by heart")
    off = "Clipping is off for this run: every step uses the whole gradient." if clip <= 0 else ""
    clipped = [m for m in recent if m.get("clipped")]
    n, k = len(recent), len(clipped)
    own = isinstance(since, int) and n < CLIP_WINDOW  # a branch's own steps, fewer than the window
    steps = f"its {n} steps since the branch at step {since:,}" if own else f"the last {n} steps"
    # the step the window ends on: the caption and the status line above it redraw apart (a review read the last 300
    # steps to 4,471 under "step 4,500")
    ends = "" if own else f", to step {int(recent[-1].get('step') or 0):,}"  # a branch's: its steps since, said
    share = f"{k} of {steps} ({_percent(k, n)}{ends})"
    losses = [m["loss"] for m in recent if isinstance(m.get("loss"), (int, float)) and math.isfinite(m["loss"])]
    if leak := _leak_within(leaks, recent):
        # A review: "The loss is falling (0.953 → 0.183) … Held-out loss 2.727 → 0.223: falling." across mask none
        # from step 348: a loss under a leak measures copying, so neither its trend nor the held-out loss is judged.
        if off:
            return off + leak
        if not k:
            return f"No step was clipped in the last {n}: the gradient norm stayed under the threshold {clip:g}." + leak
        rates = [m["lr"] for m in clipped if isinstance(m.get("lr"), (int, float))]
        return f"Clipped on {share}{_rates_said(rates, knobs.get('learning_rate'))}, to the threshold {clip:g}." + leak
    rising, trend = _trend_said(losses)
    held_rising, held = _held_out_said(evals, recent[0].get("step"), recent[-1].get("step"), leaks)
    wrecked, worse = _far_above_best(evals, recent[-1].get("step"), leaks)
    if wrecked and held_rising is None:  # an undecided change from an eval before the best says nothing the best's
        held = ""  # gap does not, and beside it read as "too little text to tell" and "lost much" at once (a review)
    held += worse
    gap = _train_gap_said(losses, evals, recent[-1].get("step"), leaks)  # not beside the over-fitting words below
    if off:
        return off + trend + held + gap
    if not k:
        text = f"No step was clipped in the last {n}: the gradient norm stayed under the threshold {clip:g}."
        return text + trend + held + gap
    factors = sorted(clip / m["grad_norm"] for m in clipped if m["grad_norm"] > 0)
    factor = factors[len(factors) // 2] if factors else 1.0  # the median clipped step's scale
    rates = [m["lr"] for m in clipped if isinstance(m.get("lr"), (int, float))]
    lr = rates[-1] if rates else knobs.get("learning_rate")  # the rate now: the last clipped step's
    at_lr = _rates_said(rates, knobs.get("learning_rate"))
    # The threshold is said here, not on the chart: its label there lay under the clipped points (a review)
    text = f"Clipped on {share}{at_lr}, each clipped gradient scaled to the threshold {clip:g}, by about {factor:.2g}×."
    if (held_rising or wrecked) and not rising and over_fitting(losses, evals, recent[-1].get("step"), leaks):
        # The training loss holds or falls below anything the held-out text ever scored: the model learns its own
        # text, not a rate that is too high (a review's 1.5 kB run at lr 0.0003 read "lower the learning rate")
        return text + trend + held + (
            " The training loss is below the run's best held-out loss and not rising: over-fitting (the model "
            "memorises its training text), which clipping neither causes nor cures: more text, a smaller model, "
            "or the checkpoint at the held-out best."
        )
    if rising or held_rising or wrecked:  # whatever the share: clipping capped the steps, and training still got worse
        advice = (
            " Clipping caps each step's size but cannot stop a learning rate that is too high from undoing what the "
            "model learned: lower the learning rate (or resume from a checkpoint before the loss rose)."
        )
        if not rising and (lowered := _lowered_since_best(metrics, evals, recent, leaks, checkpoints)):
            advice = lowered  # the rate was lowered already and the loss did not come back: lowering is no advice
        return text + trend + held + gap + advice
    if k < 0.2 * n:
        return text + " Occasional spikes capped at the threshold: what clipping is for." + trend + held + gap
    if optimizer == "sgd":
        effective = f" (about {lr * factor:.2g})" if isinstance(lr, (int, float)) else ""
        text += f" Under SGD that shrinks the step itself: the effective learning rate is lower{effective}."
    else:
        text += (" Under AdamW a steady scale changes little: Adam divides each step by the gradient's running size, "
                 "so clipping this often alone does not mean the learning rate is too high.")  # fmt: skip
    return text + trend + held + gap


def _leak_within(leaks, recent: list[dict]) -> str:
    """Words for a leaking mask in force over some of the `recent` steps (leaks: (mask, a, b), steps a+1..b under it,
    ending at the newest step while in force), else "": a loss under it measures copying, not prediction, so the
    caption judges no trend across those steps and says how many of them it covers. It claims nothing about what the
    losses did: a review read "both losses fall by copying it" where both rose after a switch at step 292 of 300."""
    steps = [m["step"] for m in recent if isinstance(m.get("step"), int)]
    if not steps:
        return ""
    first, last = steps[0], steps[-1]
    spans = [(mask, a, b) for mask, a, b in leaks or () if a < last and b >= first]
    if not spans:
        return ""
    under = sum(1 for s in steps if under_leak(s, spans))
    mask, a, b = spans[-1]
    # steps a+1..b trained under it: "from step 724" as Train's note says (a review read "from step 723" here)
    when = f"from step {a + 1:,}" if b >= last else f"in steps {a + 1:,}-{b:,}"
    return (f" Mask {mask} {when} ({under} of these {len(steps)} steps) shows each position the character it must "
            "predict (a leak): a loss under it measures copying, not prediction, so no trend is judged across them.")


def _held_out_said(evals, first: object, last: object, leaks=()) -> tuple[bool | None, str]:
    """(rising?, words) of the held-out loss over the steps first..last: the last eval before them (the loss they
    started from) against the newest eval among them, judged against the two evals' batch-to-batch spread as
    _trend_said judges the training loss (evals under a leaking mask earlier left out: copying is no start). (None, "")
    without two such evals."""
    if not isinstance(first, int) or not isinstance(last, int):
        return None, ""
    scored = _scored_evals(evals, last, leaks)
    before = [e for e in scored if e["step"] < first]
    inside = [e for e in scored if first <= e["step"]]
    if not inside:
        return None, ""
    now = inside[-1]
    then = before[-1] if before else inside[0]
    if then is now:
        return None, f" Held-out loss {now['val_loss']:.3f} at step {now['step']:,}."
    difference = eval_gap(then, now)
    if difference is None:  # no batch losses (an older run): the change is said, not judged
        change = now["val_loss"] - then["val_loss"]
        steps = f"steps {then['step']:,} → {now['step']:,}"
        return None, f" Held-out loss {then['val_loss']:.3f} → {now['val_loss']:.3f} ({steps}, {change:+.3f})."
    rising, _ = clears(difference, 0.0)
    split = held_out_words(now)
    said = (f" Held-out loss {then['val_loss']:.3f} → {now['val_loss']:.3f} (steps {then['step']:,} → "
            f"{now['step']:,}, {gap_words(difference)}"
            f"{', ' + split if split else ''})")  # fmt: skip
    if rising:
        return True, said + ": rising."
    if rising is False:
        return False, said + ": falling."
    if not scant_held_out(now):
        return None, said + ": flat within noise."
    alone = draw_noise(then, now)
    widened = (f"; the batches' spread alone gives ± {NOISE_SIGMAS * math.sqrt(alone):.3f}, widened because they "
               "re-read a short held-out text" if alone is not None else "")
    return None, said + f": too little held-out text to tell whether it moved over these steps{widened}."


def held_out_words(record: dict) -> str:
    """ "on 5 batches (2,560 characters) drawn at random from 111,540 held-out characters (about 6,971 windows of
    16)": what an eval's held-out loss was measured on, and the split it was drawn from (a review: "on 111,540
    held-out characters" read as if the eval had read them all; it reads its batches, the lab's words say so too)."""
    split = eval_split(record)
    if split is None:
        return ""
    tokens, context = split
    windows = tokens // context
    of = f"{tokens:,} held-out characters (about {windows:,} window{'s' if windows != 1 else ''} of {context})"
    n = len(batch_losses(record))
    if n < 1:
        return f"on {of}"
    read = n * record["batch_shape"][0] * context
    overlapping = ", overlapping," if read >= tokens else ""  # the same text read again and again
    return f"on {n} batch{'es' if n != 1 else ''} ({read:,} characters) drawn at random{overlapping} from {of}"


def over_fitting(losses: list[float], evals, last: object, leaks) -> bool:
    """Whether the training loss now (the mean of the last third of `losses`, as _trend_said reads it) is below the
    run's best held-out loss up to step `last` (evals under a leaking mask left out: their low loss is copying)."""
    if len(losses) < MIN_TREND_STEPS or not isinstance(last, int):
        return False
    held = _scored_evals(evals, last, leaks)
    third = len(losses) // 3
    return bool(held) and sum(losses[-third:]) / third < min(e["val_loss"] for e in held)


def _train_gap_said(losses: list[float], evals, last: object, leaks) -> str:
    """ " The training split scored 2.292 at step 300's eval, 0.36 nats under the held-out loss there ...": said where
    the gap is over the lab's memorising bar (experiment.MEMORISED), "" otherwise, with what the held-out loss did.
    A review's 2 kB run read only "too little held-out text to tell whether it moved" beside a training loss 0.80
    nats under it; another's 26 kB run read "it has learned that text by heart" while its held-out loss fell at every
    eval. The eval's own training-split score where it has one (one moment, one kind of batch; the last steps' mean
    of a still-falling loss is another measure); by heart only where the held-out loss rose from its best, as the
    lab reads it (experiment.OVER_FIT_RISE)."""
    from tinygpt.lab.experiment import MEMORISED, OVER_FIT_RISE

    held = _scored_evals(evals, last, leaks) if isinstance(last, int) else []
    if len(losses) < MIN_TREND_STEPS or not held:
        return ""
    now = held[-1]
    scored = now.get("train_loss")
    if isinstance(scored, (int, float)) and math.isfinite(scored):
        train, what = float(scored), f"The training split scored {scored:.3f} at step {now['step']:,}'s eval,"
    else:  # an older run's eval: the last steps' mean
        third = len(losses) // 3
        train = sum(losses[-third:]) / third
        what = f"The training loss, {train:.3f} (the last {third} steps' mean), is"
    gap = now["val_loss"] - train
    if gap <= MEMORISED:
        return ""
    said = (f" {what} {gap:.2f} nats under the held-out loss at step {now['step']:,} ({now['val_loss']:.3f}): the "
            "model scores the text it trains on far better than held-out text.")  # fmt: skip
    best = min(held, key=lambda e: e["val_loss"])
    # Risen: beyond the two evals' noise where they recorded their batches (a review: 0.059 over the best called
    # "by heart" beside "± 0.452, too little held-out text to tell"), else by the lab's OVER_FIT_RISE
    rise = eval_gap(best, now) if best is not now else None
    rose = clears(rise, 0.0)[0] is True if rise is not None else now["val_loss"] - best["val_loss"] > OVER_FIT_RISE
    if rose:
        noise = f" ({gap_words(rise)}, beyond its noise)" if rise is not None else ""
        return said + (f" Its held-out loss has risen from its best, {best['val_loss']:.3f} at step "
                       f"{best['step']:,}{noise}: it is learning that text by heart.")  # fmt: skip
    if rise is not None and rise.mean is not None and rise.standard_error is not None and rise.mean > 0:
        # Within its noise is no "no over-fitting": a review's 1.5 kB run rose at nearly every eval (+0.760 ± 0.943)
        # and read "no over-fitting shows yet" beside "too little held-out text to tell"
        return said + (f" Its held-out loss is {gap_words(rise)} above its best, {best['val_loss']:.3f} at step "
                       f"{best['step']:,}, within its noise: too little held-out text to tell whether the model is "
                       "learning its training text by heart.")  # fmt: skip
    near = "at its best so far" if best is now else "at or near its best so far"
    return said + (f" Its held-out loss is {near}, so no over-fitting shows yet: the held-out text is unlike the "
                   "training text, or the model is beginning to learn its own by heart.")


def _scored_evals(evals, last: int, leaks) -> list[dict]:
    """The evals up to step `last` with a finite held-out loss, those under a leaking mask left out (their low loss
    is copying, no best)."""
    return [e for e in evals or () if isinstance(e.get("val_loss"), (int, float)) and isinstance(e.get("step"), int)
            and math.isfinite(e["val_loss"]) and e["step"] <= last and not under_leak(e["step"], leaks)]  # fmt: skip


def _best_and_newest(evals, last: object, leaks) -> tuple[dict, dict] | None:
    """(the best eval before the newest, the newest) of the evals up to step `last` (`_scored_evals`), or None
    with fewer than two: what far_above_best and _above_best compare."""
    if not isinstance(last, int):
        return None
    scored = _scored_evals(evals, last, leaks)
    if len(scored) < 2:
        return None
    return min(scored[:-1], key=lambda e: e["val_loss"]), scored[-1]


FAR_ABOVE_BEST = 1.25  # held-out loss this many times the run's best (and clear of the noise): it lost what it learned


def far_above_best(evals, last: object, leaks) -> tuple[dict, dict] | None:
    """(best, newest) evals when the newest eval up to step `last` is far above the run's best eval before it
    (None otherwise), evals under a leaking mask left out (their low loss is copying, and the evals after one would
    all read as far above it). Far above: at least FAR_ABOVE_BEST times the best, and the gap clears the two
    evals' batch noise. Shared with the Sample page's checkpoint notes (tinygpt.ui.words.picking)."""
    found = _best_and_newest(evals, last, leaks)
    if found is None:
        return None
    best, now = found
    if now["val_loss"] < FAR_ABOVE_BEST * best["val_loss"]:
        return None
    gap = eval_gap(best, now)
    if gap is not None and clears(gap, 0.0)[0] is not True:  # batch losses recorded: the gap must clear their noise
        return None  # (an older run's: said as it is)
    return best, now


LOST_NATS = 0.1  # held-out loss this far above the run's best (and clear of the noise): it lost ground


def _above_best(evals, last: object, leaks) -> tuple[dict, dict] | None:
    """(best, newest) evals when the newest eval up to step `last` is at least LOST_NATS above the run's best eval
    before it, the gap clear of the two evals' paired noise; None otherwise (or without batch losses to judge
    with). Under FAR_ABOVE_BEST: a review's run lost 0.45 nats after a rate of 0.1 (1.16x its best, +0.446 ± 0.088)
    and its caption read "what clipping is for" and "flat within noise", never a word of the loss it had lost."""
    found = _best_and_newest(evals, last, leaks)
    if found is None:
        return None
    best, now = found
    gap = eval_gap(best, now)
    if gap is None or now["val_loss"] - best["val_loss"] < LOST_NATS or clears(gap, 0.0)[0] is not True:
        return None
    return best, now


def _far_above_best(evals, last: object, leaks) -> tuple[bool, str]:
    """(far above?, words) for the clipping caption: far_above_best in a sentence, or _above_best's smaller loss."""
    found = far_above_best(evals, last, leaks)
    if found is None:
        lost = _above_best(evals, last, leaks)
        if lost is None:
            return False, ""
        best, now = lost
        return True, (
            f" Held-out loss {now['val_loss']:.3f} at step {now['step']:,} is above this run's best, "
            f"{best['val_loss']:.3f} at step {best['step']:,}, {gap_words(eval_gap(best, now))}, beyond its noise: "
            f"the model has lost some of what it had learned since step {best['step']:,}."
        )
    best, now = found
    # Its own gap and noise, said: beside "too little held-out text to tell whether it moved" over the caption's
    # steps (from an eval before the best), a bare "1.4× this run's best" read as a contradiction (a review)
    gap = eval_gap(best, now)
    noise = f", {gap_words(gap)}, beyond its noise" if gap is not None else ""
    return True, (
        f" Held-out loss {now['val_loss']:.3f} at step {now['step']:,} is {now['val_loss'] / best['val_loss']:.1f}× "
        f"this run's best, {best['val_loss']:.3f} at step {best['step']:,}{noise}: the model has lost much of what "
        "it had learned."
    )


def _lowered_since_best(metrics, evals, recent: list[dict], leaks, checkpoints: Sequence[int] = ()) -> str:
    """Advice for a run whose learning rate now (the newest of `recent`) is at most half of the highest it had after
    its best eval, "" otherwise: the rate that undid the learning has been lowered already, and a lower one does not
    bring it back (a review's branch ran at 0.001, a third of its preset's rate, its loss flat at 1.6x its best after
    the parent's stretch at 0.1, and read "lower the learning rate"; another run, lowered from 0.1 to 0.0005 96 steps
    before, read it too: "now" is the rate in force, not the window's highest)."""
    start, last = recent[0].get("step"), recent[-1].get("step")
    scored = _scored_evals(evals, start, leaks) if isinstance(start, int) else []
    now = recent[-1].get("lr")
    if not scored or not isinstance(now, (int, float)) or not isinstance(last, int):
        return ""
    best = min(scored, key=lambda e: e["val_loss"])["step"]
    since = [m for m in metrics if isinstance(m.get("lr"), (int, float)) and best < int(m.get("step") or 0) <= last]
    if not since or max(m["lr"] for m in since) < 2 * now:
        return ""
    peak = max(since, key=lambda m: m["lr"])
    # The checkpoint it keeps, named: "at or before step 1,400" sent a review to a step pruned long ago (its newest
    # before the best was 800; Sample named it)
    kept = [int(c) for c in checkpoints if int(c) <= best]
    todo = (f"resume from its checkpoint at step {max(kept):,}, the newest at or before the best" if kept else
            f"resume from a checkpoint at or before step {best:,}" if not checkpoints else
            f"it keeps no checkpoint at or before step {best:,} to resume from: start a new run")  # fmt: skip
    return (f" The learning rate is lower already: it reached {peak['lr']:.3g} at step {peak['step']:,}, after the "
            f"best held-out loss (step {best:,}), and is {now:.3g} now, yet the loss has not come back down. A lower "
            f"rate does not undo the damage: {todo}.")


def _percent(k: int, n: int) -> str:
    """ "8%", never "100%" or "0%" for a share that is not all or none ("299 of the last 300 steps (100%)")."""
    if 0 < k < n:
        return f"{min(max(100 * k / n, 1), 99):.0f}%" if round(100 * k / n) in (0, 100) else f"{100 * k / n:.0f}%"
    return f"{100 * k / n:.0f}%"


def _rates_said(rates: list[float], set_rate: object) -> str:
    """ " at learning rate 0.00037 → 0.0003": the rates the clipped steps' own records had (the schedule's, not the
    peak setting), first to last when they moved one way, their range otherwise; the set rate only for records
    that carry none (older runs)."""
    if not rates:
        return f" at the set learning rate {set_rate:g}" if isinstance(set_rate, (int, float)) else ""
    first, last, low, high = rates[0], rates[-1], min(rates), max(rates)
    if f"{low:.2g}" == f"{high:.2g}":
        return f" at learning rate {last:.2g}"
    steps = list(zip(rates, rates[1:], strict=False))
    if all(b <= a for a, b in steps) or all(b >= a for a, b in steps):
        return f" at learning rate {first:.2g} → {last:.2g} (the schedule's, on these steps)"
    return f" at learning rates between {low:.2g} and {high:.2g}"


def _trend_said(losses: list[float]) -> tuple[bool | None, str]:
    """Whether the loss fell over these steps, judged against the steps' own noise: the mean of the last third
    minus the mean of the first third, with the standard errors of the two means (each third's spread over
    sqrt(n), a trend inside a third only widening it) added, decided as the lab decides a gap
    (tinygpt.lab.verdict.clears: the interval mean ± NOISE_SIGMAS s.e. wholly below zero is falling, wholly
    above is rising, straddling zero is flat within noise): (rising?, words). (None, "") below MIN_TREND_STEPS
    losses."""
    if len(losses) < MIN_TREND_STEPS:
        return None, ""
    third = len(losses) // 3
    early, late = losses[:third], losses[-third:]
    means = [sum(part) / third for part in (early, late)]
    variances = [mean_variance(part) for part in (early, late)]
    shown = [round(mean, 3) for mean in means]  # the change said is the one between the means as shown
    change = Difference(shown[1] - shown[0], math.sqrt(sum(variances)), third, paired=False)
    rising, _ = clears(change, 0.0)
    said = (
        # "of these N steps": "the first and last 100 steps" read as the run's first 100 (a review)
        f"{shown[0]:.3f} → {shown[1]:.3f}, the means of the first and last {third} of these {len(losses)} steps, "
        "a change of "
        f"{change.mean:+.3f} ± {NOISE_SIGMAS * change.standard_error:.3f} ({NOISE_SIGMAS} s.e. from each third's "
        "own spread)"
    )
    if rising is False:
        return False, f" The loss is falling ({said})."
    if rising:
        return True, f" The loss is rising ({said})."
    return None, f" The loss is flat within noise over these steps ({said})."
