"""Model health's checks on a run's records rather than its model: the step records (gradient norms finite,
clipping not hiding a rising loss, the loss still falling beyond its noise, knowing the schedule and any leak) and
the evals (the held-out loss not rising beyond its noise). tinygpt/lab/health.py runs them with the model checks."""

from __future__ import annotations

import math

from ..runs.knobs import under_leak
from .checks import FAIL, NOT_ENOUGH, PASS, Check, outcome_of
from .evals import eval_gap, mean_variance, scant_held_out, split_windows
from .verdict import NOISE_SIGMAS, finite

GRAD_WINDOW = 20  # recent steps whose pre-clip gradient norms are held to the clip
CLIP_OCCASIONAL = 0.2  # clipped on fewer than this share of them: spikes (tinygpt.ui.words.clipping says the same)
FINITE_WINDOW = 50  # recent steps whose gradient norms must all be finite
TREND_MIN_STEPS = 20  # fewer recent losses than this: "not enough data" to call a trend
TREND_WINDOW = 50  # recent step losses the trend compares, older half to newer half
TREND_SIGMAS = 2.0  # a decrease must exceed this many standard errors of the step-loss noise to count
TREND_THRESHOLD = f"newer half's mean below the older half's by > {TREND_SIGMAS:g} standard errors"


def check_training_metrics(metrics: list[dict], max_grad_norm: float, leaks=()) -> list[Check]:
    """Checks on a run's step records: gradient norms finite; clipping not hiding a rising loss; loss still falling.

    With no clipping (max_grad_norm 0) there is no clip to be under, so that check is left out. `leaks` ((mask, a, b)
    spans, runs.knobs.leak_spans): a loss under a leaking mask measures copying, so no trend is judged where the
    newest step trained under one, and the steps of an earlier leak are left out (Train and Gradients judge none
    there either; a review's checklist read a plateau FAIL on steps trained under mask none).
    """
    newest = metrics[-1].get("step") if metrics else None
    leaked = [span for span in leaks if under_leak(newest, [span])]
    if not leaked:
        metrics = [m for m in metrics if not under_leak(m.get("step"), leaks)]
    norms = [m.get("grad_norm") for m in metrics[-FINITE_WINDOW:]]
    if not norms:
        checks = [Check("gradient norm finite", NOT_ENOUGH, None, "finite on every recent step", "no steps yet")]
    else:
        bad = [n for n in norms if not (isinstance(n, (int, float)) and math.isfinite(n))]
        checks = [
            Check(
                "gradient norm finite",
                outcome_of(not bad),
                float(len(bad)),
                f"0 non-finite in the last {FINITE_WINDOW} steps",
                f"{len(bad)} of the last {len(norms)} steps had a NaN/inf gradient norm",
            )
        ]
    if max_grad_norm > 0:
        losses = _losses(metrics[-TREND_WINDOW:])
        checks.append(grad_clip_check([m.get("grad_norm") for m in metrics], max_grad_norm, losses=losses))
    if leaked:
        mask, a, _ = leaked[-1]
        checks.append(Check("training loss still decreasing", NOT_ENOUGH, None, TREND_THRESHOLD, (
            f"the newest steps trained under mask {mask} (a leak, since step {a:,}): a loss under it measures "
            "copying, so no trend is judged")))  # fmt: skip
    else:
        checks.append(_broken_trend(metrics) or schedule_trend_check(metrics))
    return checks


def _broken_trend(metrics: list[dict]) -> Check | None:
    """The training-loss trend FAILed where the newest step's loss is not finite: the run diverged there. A review's
    naive-softmax run read "pass: 3.516 → 2.972" with its NaN step 54 dropped from the trend."""
    last = metrics[-1] if metrics else {}
    loss = last.get("loss")
    if not metrics or (isinstance(loss, (int, float)) and math.isfinite(loss)):
        return None
    return Check("training loss still decreasing", FAIL, None, TREND_THRESHOLD, f"the loss is not finite at step "
                 f"{last.get('step')} (the run diverged there): no trend before it says the training is sound")


def _losses(records: list[dict]) -> list[float]:
    return [m["loss"] for m in records if isinstance(m.get("loss"), (int, float))]


def schedule_trend_check(metrics: list[dict], window: int = TREND_WINDOW) -> Check:
    """loss_trend_check on the last `window` steps, knowing the schedule: where those steps ran at less than half
    the run's peak learning rate (the cosine decay's tail, min_lr at its end), a flat loss is what the schedule
    does, not a stall. A run that simply finished its 200 steps read "training loss still decreasing: FAIL". It is then
    judged on the last `window` steps at the higher learning rates (half the peak or more), and says so; and a loss
    that fell from those steps to the newest ones beyond their noise passes (each window alone may be flat)."""
    recent = metrics[-window:]
    check = loss_trend_check(_losses(recent))
    lrs = [m.get("lr") for m in metrics]
    if check.outcome != FAIL or not all(isinstance(lr, (int, float)) for lr in lrs) or not lrs:
        return check
    half = max(lrs) / 2
    if sum(m["lr"] for m in recent) / len(recent) >= half:
        return check  # at a high learning rate: a flat loss is a stall
    before = [m for m in metrics if m["lr"] >= half][-window:]
    earlier = loss_trend_check(_losses(before))
    steps = f"steps {before[0].get('step')}-{before[-1].get('step')}" if before else "no steps"
    if before and isinstance(before[0].get("step"), int) and before[-1]["step"] - before[0]["step"] + 1 > len(before):
        steps += f", {len(before)} of them evenly spaced"  # a thinned history says so: not "those 50 steps"
    # Fell from those steps to the newest ones as the rate decayed: still decreasing, whatever each window alone
    # says. A review's detached-residual run read "FAIL (plateau): 3.077 → 3.113 over those 50 steps" (steps
    # 126-175) beside Gradients' "The loss is falling", and it fell 3.113 → 2.878 from there to steps 251-275.
    apart = bool(before) and before[-1] is not recent[-1] and before[-1].get("step", 0) < recent[0].get("step", 0)
    if apart and earlier.outcome == FAIL:
        fell, words, change = _fell_between(_losses(before), _losses(recent))
        if fell:  # the value and threshold are this test's: a review read "pass · +0.003" beside "> 2 s.e."
            return Check(check.name, PASS, change, "the newest steps' mean below the higher-rate steps' by > "
                         f"{TREND_SIGMAS:g} standard errors", (
                f"fell from the steps at the higher learning rates ({steps}) to the newest {len(recent)}: {words}; "
                f"each window alone is flat within its noise (the earlier: {earlier.detail.split(': ', 1)[-1]}; the "
                f"newest, as the learning rate decays to {lrs[-1]:.2g} from a peak of {max(lrs):.2g}: "
                f"{check.detail.split(': ', 1)[-1]})"))  # fmt: skip
    # The part the outcome rests on first: a review read FAIL beside "expected" and could not tell which was judged
    said = (f"judged on the steps at the higher learning rates ({steps}, at half the peak rate or more): "
            f"{earlier.detail.replace(' over the last ', ' over those ')}. The flat end is not judged: the learning "
            f"rate decays to {lrs[-1]:.2g} from a peak of {max(lrs):.2g}, and a flat loss there is expected "
            f"({check.detail.split(': ', 1)[-1]})")  # fmt: skip
    return Check(check.name, earlier.outcome, earlier.value, check.threshold, said)


def grad_clip_check(norms: list, max_grad_norm: float, window: int = GRAD_WINDOW, losses: list | None = None) -> Check:
    """Clipping and the loss together, as the Train and Gradients pages' clipping caption reads them: clipping on
    fewer than CLIP_OCCASIONAL of the last `window` steps is a spike now and then, what clipping is for; clipping as
    a rule is a FAIL only while the loss rises (`losses`: the recent step losses, older half against newer half, as
    loss_trend_check compares them), for clipping caps each step but cannot hold a learning rate that is too high.
    Clipping as a rule with a loss that is not rising passes: under AdamW a steady scale changes little, Adam
    dividing each step by the gradient's running size. It FAILed a review's correct run for "20 of the last 20 steps
    clipped" beside the Gradients page's "clipping this often alone does not mean the learning rate is too high"."""
    name = "clipping not hiding a rising loss"
    # In steps, as the measured value counts them: "20" beside "20% or more" read as a run on the bar (a review)
    # A pass condition, as the other rows' are: "FAIL: … on 4 or more" beside "pass" and a measured 4 read as a
    # contradiction (a review); the pass it was rests on the loss, which the words now put first.
    few = math.ceil(CLIP_OCCASIONAL * window)
    threshold = (f"the loss not rising, or the pre-clip norm above max_grad_norm {max_grad_norm:g} on fewer than "
                 f"{few} of the last {window} steps ({CLIP_OCCASIONAL:.0%})")  # fmt: skip
    recent = [n for n in norms[-window:] if isinstance(n, (int, float)) and math.isfinite(n)]
    if len(recent) < min(window, 5):
        return Check(name, NOT_ENOUGH, None, threshold, f"{len(recent)} finite step(s) so far; need {min(window, 5)}")
    worst, clipped = max(recent), sum(1 for n in recent if n > max_grad_norm)
    detail = (
        f"largest pre-clip norm {worst:.3g}, last {recent[-1]:.3g}; {clipped} of the last {len(recent)} steps clipped"
    )
    if not clipped:  # "0 of the last 20 steps clipped: spikes now and then" (a review): there were none
        return Check(name, PASS, 0.0, threshold, f"{detail}: the gradient stayed under the clip")
    if clipped < CLIP_OCCASIONAL * len(recent):
        return Check(name, PASS, float(clipped), threshold, f"{detail}: spikes now and then, what clipping is for")
    trend = loss_trend_check(losses or [])
    # Clipped as a rule, the outcome rests on the loss: the measured cell says both ("20" alone beside "pass" broke
    # the threshold's second clause, the loss its first (a review))
    counted = f"{clipped} of {len(recent)} clipped"
    if trend.outcome == NOT_ENOUGH:
        return Check(name, NOT_ENOUGH, float(clipped), threshold,
                     f"{detail}, as a rule; whether the loss rises meanwhile: {trend.detail}",
                     shown=f"{counted}; the loss: not enough data")  # fmt: skip
    if trend.detail.startswith("rising"):
        return Check(name, FAIL, float(clipped), threshold, (
            f"{detail} while the loss rises ({trend.detail.removeprefix('rising: ')}): clipping caps each step but "
            "cannot hold a learning rate that is too high; lower it"), shown=f"{counted}; the loss rising")  # fmt: skip
    return Check(name, PASS, float(clipped), threshold, (
        f"{detail}, as a rule, and the loss is not rising ({trend.detail.split(': ', 1)[-1]}): under AdamW a steady "
        "scale changes little, as Adam divides each step by the gradient's running size"),
        shown=f"{counted}; the loss not rising")  # fmt: skip


def _two_means(older: list[float], newer: list[float]) -> tuple[float, float, float, float]:
    """(older mean, newer mean, their change, the change's standard error, each mean's from its own spread)."""
    old_mean, new_mean = sum(older) / len(older), sum(newer) / len(newer)
    return old_mean, new_mean, new_mean - old_mean, math.sqrt(mean_variance(older) + mean_variance(newer))


def _change_words(old_mean: float, new_mean: float, change: float, noise: float) -> tuple[str, str]:
    """("3.272 -> 3.235", "(change -0.037 ± 0.042, 2 s.e.)"): the interval judged, not one standard error ("change
    -0.037, noise ±0.021" read as a fall beyond the noise called a plateau, a review)."""
    interval = f"(change {change:+.3f} ± {TREND_SIGMAS * noise:.3f}, {TREND_SIGMAS:g} s.e.)"
    return f"{old_mean:.3f} -> {new_mean:.3f}", interval


def _fell_between(before: list[float], recent: list[float]) -> tuple[bool, str, float]:
    """Whether the newest steps' mean loss lies below an earlier window's beyond TREND_SIGMAS standard errors of
    the two means (each from its own spread), and the words for it."""
    if len(before) < 2 or len(recent) < 2:
        return False, "", math.nan
    old_mean, new_mean, change, noise = _two_means(before, recent)
    means, interval = _change_words(old_mean, new_mean, change, noise)
    return change < -TREND_SIGMAS * noise, f"{means} {interval}", change


def loss_trend_check(losses: list[float]) -> Check:
    """Is the loss still falling? The older and newer half of recent step losses, compared with the noise of
    step losses (standard error of the difference of the two means): only a decrease beyond TREND_SIGMAS of it
    passes. A flat or rising loss fails; fewer than TREND_MIN_STEPS losses is "not enough data"."""
    # "training": the held-out row is its own, and a review read a bare "loss still decreasing: pass" as the model
    # learning, on a run whose held-out loss rose
    name = "training loss still decreasing"
    threshold = TREND_THRESHOLD
    losses = [x for x in losses if math.isfinite(x)]
    if len(losses) < TREND_MIN_STEPS:
        return Check(name, NOT_ENOUGH, None, threshold, f"{len(losses)} step losses; need {TREND_MIN_STEPS}")
    half = len(losses) // 2
    mean_old, mean_new, change, noise = _two_means(losses[:half], losses[half:])
    means, interval = _change_words(mean_old, mean_new, change, noise)
    detail = f"training loss {means} over the last {len(losses)} steps {interval}"  # the held-out row is its own
    if change < -TREND_SIGMAS * noise and change < 0:
        return Check(name, PASS, change, threshold, detail)
    verdict = "rising" if change > TREND_SIGMAS * noise else "not falling beyond the noise (plateau)"
    return Check(name, FAIL, change, threshold, f"{verdict}: {detail}")


HELD_OUT_RISE = 0.05  # nats above the run's best eval: the lab's over-fitting bar (experiment.OVER_FIT_RISE)


def held_out_check(evals: list[dict], leaked: int = 0, mask: str = "", changes: tuple = ()) -> Check:
    """The held-out loss not rising: the newest eval against the run's best before it, the rise judged against the
    two evals' held-out noise, paired batch by batch where both scored the same windows (evals.eval_gap, 3 standard
    errors). The training-loss checks passed a review's run that the lab's verdict had called memorised
    (held-out 2.611 at its best, 2.696 at the end, the training loss still falling): the two pages disagreed.
    `evals`: the run's evals, those under a leaking mask left out by the caller (their low loss is copying):
    `leaked` of them, under `mask`, said where too few are left (a review read "0 eval(s) so far" of 9). `changes`:
    (step, words) of the run's live changes; a rise across one is said beside it (a review's run rose 0.077 after
    its mask went sliding_window -> causal, and read "over-fitting, or a learning rate undid what it had learned")."""
    name = "held-out loss not rising"
    # The bar a pass needs, and when it is "not enough data" (a review read "or within its noise" as met by a rise
    # that was within its noise, and judged not enough data; another read +0.007 on 150 held-out characters as a
    # pass the threshold promised)
    threshold = (f"newest eval at most {HELD_OUT_RISE} nats above the run's best (a larger rise within its noise, "
                 "3 s.e., or any rise on a held-out split too small to tell: not enough data)")  # fmt: skip
    scored = [e for e in evals if isinstance(e.get("val_loss"), (int, float)) and math.isfinite(e["val_loss"])
              and isinstance(e.get("step"), int)]  # fmt: skip
    if len(scored) < 2:
        left_out = (f"{leaked} eval(s) were taken under mask {mask or 'a leaking one'} (a leak: a held-out loss "
                    "under it measures copying, not prediction); outside it, ") if leaked else ""  # fmt: skip
        # An eval whose held-out loss was not finite is said, not dropped: a diverged run read "0 eval(s) so far"
        # beside an eval at step 50 with 2 of its 5 batches non-finite (a review)
        broken = [e for e in evals if isinstance(e.get("step"), int) and e not in scored]
        bad = "".join(f"; the eval at step {e['step']:,} has no finite held-out loss"
                      + (f" ({sum(1 for b in e['val_batch_losses'] if not finite(b))} of its "
                         f"{len(e['val_batch_losses'])} batches not finite)" if e.get("val_batch_losses") else "")
                      for e in broken)  # fmt: skip
        return Check(name, NOT_ENOUGH, None, threshold, f"{left_out}{len(scored)} eval(s) so far; need 2{bad}")
    now = scored[-1]
    best = min(scored[:-1], key=lambda e: e["val_loss"])
    rise = now["val_loss"] - best["val_loss"]
    # The newest eval can be the best itself: "2.384 at step 200 against the best, 2.432 at step 150" (a review)
    role = "the run's best so far; the best before it" if rise <= 0 else "against the best"
    said = (f"{now['val_loss']:.3f} at step {now['step']:,} {'(' if rise <= 0 else ''}{role}, "
            f"{best['val_loss']:.3f} at step {best['step']:,}{')' if rise <= 0 else ''}")  # fmt: skip
    if 0 < rise <= HELD_OUT_RISE and scant_held_out(now):  # as Train's caption: "too little held-out text to tell"
        windows = "{:,} windows of {:,}".format(*split_windows(now))
        return Check(name, NOT_ENOUGH, rise, threshold, f"{said} ({rise:+.3f}), on a held-out split of about "
                     f"{windows}: too little held-out text to tell whether it moved")  # fmt: skip
    if rise <= HELD_OUT_RISE:
        return Check(name, PASS, rise, threshold, f"{said}: not rising")
    gap = eval_gap(best, now)  # the pages' captions judge two evals by the same noise
    error = None if gap is None else gap.standard_error
    if error is None:
        return Check(name, NOT_ENOUGH, rise, threshold, f"{said}: {rise:+.3f}, and the evals recorded no batches to "
                     "judge it against their noise")  # fmt: skip
    if rise - NOISE_SIGMAS * error <= 0:
        return Check(name, NOT_ENOUGH, rise, threshold, f"{said}: {rise:+.3f} ± {NOISE_SIGMAS * error:.3f}, within "
                     "the held-out noise: too little held-out text to tell")  # fmt: skip
    across = [words for step, words in changes if best["step"] <= step < now["step"]]
    why = (f"live changes between those evals ({'; '.join(across)}) may be why, not over-fitting" if across else
           "the model learns its training text rather than what carries over (over-fitting), or a learning rate "
           "undid what it had learned")  # fmt: skip
    return Check(name, FAIL, rise, threshold, f"{said}: {rise:+.3f} ± {NOISE_SIGMAS * error:.3f}, beyond its noise: "
                 f"{why}")  # fmt: skip


LOSS_ROWS = ("training loss still decreasing", "held-out loss not rising")
MODEL_LEAK = (
    "the checkpoint's own check finds the model leaking the future under a mask that hides it (the \"no future "
    "leak\" row: something after the mask mixes positions): a loss of a model that sees what it predicts measures "
    "copying, so none is judged"
)


def unjudged_under_a_model_leak(checks: list[Check]) -> list[Check]:
    """`checks` with the loss rows "not enough data", for a model whose checkpoint leaks the future although its mask
    does not (the silent shape bug: a softmax over the queries). Its losses measure copying as a leaking mask's do,
    and those are not judged (check_training_metrics, held_out_check); a review's checklist read "pass" on both
    beside "no future leak: FAIL 1.65", its loss without the future 2.988 against the correct run's 2.729."""
    return [Check(c.name, NOT_ENOUGH, None, c.threshold, MODEL_LEAK) if c.name in LOSS_ROWS else c for c in checks]
