"""The pitfall "Causal mask misalignment": its runs, what to look for, and its judge."""

from __future__ import annotations

from typing import Any

from ...attention import mask_rows
from ..experiment import MEMORISED, Experiment
from ..health import leak_score
from ..verdict import (
    LEAKS,
    NOISE_SIGMAS,
    Difference,
    RunResult,
    Verdict,
    clears,
    decide,
    diverged_at,
    fmt,
    gt3,
    held_out_difference,
    held_out_variance,
    loss_difference,
    say,
)

# The leaky runs' loss must end this far below causal to count as cheating: physically, a model that reads the
# token it predicts drops toward the floor of the positions with nothing to copy (the last of each window: ~1/T of
# the causal loss, ~0.15-0.25 nats at context 16), ~2 nats below causal; a mask that did not leak ends near it.
MASK_CHEAT = 0.5
MASK_FALLS_APART = 0.3  # nats above causal, predicting from the past alone (off_by_one: ~3, none: ~0.5)
# No consequence clauses (verdict.Clause): the leak score is the bug itself, the collapse is what it does to
# training, and the loss without the future is what the leaking model really learned; each is the pitfall's own
# definition, not an effect seen on some corpora only (all three held on Shakespeare, licences, code and 2,000
# characters of English: BENCHMARKS.md).
EXPECTED = (
    f"leaky masks: a held-out loss that collapses at least {MASK_CHEAT} nats below causal, the whole interval of "
    f"the gap (± {NOISE_SIGMAS} paired standard errors) past it (the training loss where no held-out loss was "
    "recorded), a leak score > 0, and a much higher loss without the future"
)


def causal_memorised(causal: RunResult) -> float | None:
    """How far causal's last held-out loss sits above its own training-split score at that eval, where over the
    lab's memorising bar (experiment.MEMORISED), else None. There the leaky runs' held-out gap to causal is widened by
    causal having learned its text by heart (or by held-out text unlike it), not by the leak alone: a review's
    1.5 kB licence read "2.85 below causal's 3.061" with causal scoring 0.838 on its training windows."""
    if causal.final_val_loss is None or causal.final_eval_train_loss is None:
        return None
    gap = causal.final_val_loss - causal.final_eval_train_loss
    return gap if gap > MEMORISED else None


def under_causal_training(causal: RunResult, leaky: RunResult) -> tuple[bool | None, str, Difference]:
    """Whether a leaky run's held-out loss lies below causal's score on its own training windows, beyond their noise:
    text it never trained on scored better than causal scores the text it learned by heart, which memorising cannot
    explain and a leak can. (ok, words of `clears`, the difference: causal's training-split score minus the leaky
    held-out loss.) Two scores on different windows: their variances add, each counting its own split's size
    (held_out_variance); a causal run from before the eval kept its training batches has the leaky run's noise
    alone, said so (a review: "clears the bar" on one side's noise, the other's unsaid)."""
    batches, shape, tokens = list(leaky.val_batch_losses), leaky.eval_batch_shape, leaky.val_tokens
    variance = held_out_variance(batches, tuple(shape), tokens) if batches and shape and tokens else None
    mean = None if leaky.final_val_loss is None else round(causal.final_eval_train_loss - leaky.final_val_loss, 3)
    own = list(causal.train_batch_losses)
    theirs = (held_out_variance(own, tuple(shape), causal.train_tokens) if own and shape and causal.train_tokens
              else None)  # fmt: skip
    if variance is not None and theirs is not None:
        variance += theirs
        basis = "the leaky run's held-out noise and causal's training-split score's, added (different windows)"
    else:
        basis = "the leaky run's held-out noise alone: causal's training-split score recorded no spread"
    difference = Difference(mean, None if variance is None else variance**0.5, len(batches), False, basis=basis)
    ok, spread = clears(difference, 0.0)
    return ok, spread, difference


def judge(results: dict[str, RunResult]) -> Verdict:
    causal = results["causal"]
    observed: dict[str, Any] = {
        "train loss, causal": causal.final_train_loss,
        "leak, causal": causal.leak,
        "loss without the future, causal": causal.no_peek_loss,
    }
    clauses: dict[str, bool | None] = {}
    parts, said_by_heart = [], False
    if diverged_at(causal):
        clauses[f"the causal run as the reference (not measured: it {diverged_at(causal)})"] = None
    for label in ("off_by_one", "none"):
        leaky = results[label]
        observed |= {
            f"train loss, {label}": leaky.final_train_loss,
            f"leak, {label}": leaky.leak,
            f"loss without the future, {label}": leaky.no_peek_loss,
        }
        margin = MASK_CHEAT
        # Held-out first: a leaky model reads the future in held-out windows too, so its loss collapses there as
        # much, while a causal run that memorised a small text is low on its training windows only (issue 33: a
        # cheat gap of 0.504 against 0.50 on 2,000 characters). Training loss where the runs recorded no held-out
        # loss. Either way the gap's interval decides (verdict.clears): the held-out one carries the noise of the
        # held-out windows, paired over the eval's batches (verdict.held_out_difference; on a 200-character split
        # ±0.4-0.5 at 3 s.e., where the training noise was ±0.05), or says it borrowed the training noise.
        held = causal.final_val_loss is not None and leaky.final_val_loss is not None
        train_difference = loss_difference(causal, leaky)
        difference = held_out_difference(causal, leaky) if held else train_difference
        observed[f"cheat margin (nats), {label}"] = margin
        broken = diverged_at(leaky) or diverged_at(causal)
        if broken:
            cheats, spread, falls_apart = None, "not measured", None
        else:
            cheats, spread = clears(difference, margin)
            falls_apart = gt3(leaky.no_peek_loss, causal.no_peek_loss, MASK_FALLS_APART)
        leaks = gt3(leaky.leak, LEAKS)
        which = "held-out" if held else "train"
        clauses |= {
            f"{label}'s {which} loss at least {margin:.2f} nats below causal"
            + ("" if cheats is not None or broken else f" ({spread})"): cheats,
            f"{label}'s leak score above {LEAKS:g}": leaks,
            f"{label}'s loss without the future at least {MASK_FALLS_APART} nats above causal's": falls_apart,
        }
        if diverged_at(leaky):
            parts.append(f"{label}: {diverged_at(leaky)}, its final loss not measured, leak {fmt(leaky.leak, 3)}")
            continue
        # Undecided is not unmeasured: the gap is printed beside it ("0.85 not compared with causal's 0.990" read as
        # if nothing had been compared, a review)
        measured = not broken and difference.mean is not None
        below = say(cheats, "below", "is not enough below", "below" if measured else "not compared with")
        observed[f"cheat gap (nats), {label}"] = train_difference.interval()
        if held:
            observed[f"held-out loss, {label}"] = leaky.final_val_loss
            observed[f"held-out cheat gap (nats), {label}"] = difference.interval()
            cheat = (
                f"held-out loss {fmt(leaky.final_val_loss)} ({difference.mean:.2f} {below} causal's "
                f"{fmt(causal.final_val_loss)}; the bar: at least {margin:.2f} below; {spread}, the gap's noise "
                f"{difference.noise()}), train loss "
                f"{fmt(leaky.final_train_loss)} ({train_difference.interval()} below)"
            )
        else:
            cheat = (
                f"train loss {fmt(leaky.final_train_loss)} ({fmt(difference.mean, 2)} {below} causal; the bar: at "
                f"least {margin:.2f} below; {spread}), the gap's noise {difference.noise()}"
            )
        if held and not broken and (by_heart := causal_memorised(causal)) is not None:
            # The gap's size is causal's memorising too: the leak is judged where memorising cannot reach
            below_own, words, under = under_causal_training(causal, leaky)
            clauses[f"{label}'s held-out loss below causal's score on its own training windows"
                    + ("" if below_own is not None else f" ({words})")] = below_own  # fmt: skip
            # said once: the second leaky run read the same 25 words again (a review, on a projector); a leaky run
            # above that score is said to be above it ("-0.04 under that score", a review)
            side = "under" if under.mean is None or under.mean >= 0 else "above"
            size = fmt(None if under.mean is None else abs(under.mean), 2)
            lead = (f" ({label}'s held-out loss is {size} {side} causal's training-split score" if said_by_heart else
                    f" (causal's held-out loss sits {by_heart:.2f} above its own training-split score "
                    f"{fmt(causal.final_eval_train_loss)}: memorising, or held-out text unlike its training text, "
                    f"widens this gap; {label}'s held-out loss is {size} {side} that score")  # fmt: skip
            cheat += f"{lead}, {words}, the noise {under.noise()})"
            said_by_heart = True
        parts.append(f"{label}: {cheat}, leak {fmt(leaky.leak, 3)}, loss without the future {fmt(leaky.no_peek_loss)}")
    clauses["causal's leak score exactly 0"] = None if causal.leak is None else causal.leak == 0.0
    parts.append(f"causal: train loss {fmt(causal.final_train_loss)}, leak {fmt(causal.leak, 4)}")
    return decide(EXPECTED, clauses, observed, "; ".join(parts) + ".")


EXPERIMENT = Experiment(
    key="mask",
    title="Causal mask misalignment",
    what_to_look_for=(
        "With an off-by-one mask each position can see the very token it must predict, and with no mask "
        "every position sees the whole window, so training loss collapses 'too well': on Tiny Shakespeare (context "
        "16, lr 5e-3, 450 steps) both leaky runs fell toward ~0.2 nats, the positions with nothing left to copy "
        "(the last of each window), while causal stayed above 2 (on a short text causal can learn its training text "
        "by heart: low on it, high on held-out text, which widens the gap; the verdict then also asks the leaky "
        "runs' held-out loss to fall below causal's score on its own training text, and says what these runs did). "
        "The no-mask run first has to learn to look one step ahead, so its collapse comes later, after a few hundred "
        "steps. The leak detector changes future tokens and measures how much earlier logits move (0 under a "
        "correct mask). At generation time there is no future to copy: the loss without the future (each position "
        "predicted from its past only) shows what the leaking models really learned."
    ),
    expected=EXPECTED,
    # Context 16: the no-mask run finds the token one step ahead within ~150-350 steps on every seed and
    # corpus measured (at context 32 and lr 2e-3 it had not in 300 steps: 0.09 below causal). 450 steps, not the
    # 600 it had: Prepare waits less, and 450 held on 4 corpora x 5 seeds where 300 missed one (BENCHMARKS.md).
    base=dict(max_seq_len=16, learning_rate=5e-3, max_steps=450),
    variants={"causal": dict(mask="causal"), "off_by_one": dict(mask="off_by_one"), "none": dict(mask="none")},
    judge=judge,
    code=(mask_rows, leak_score),
    probes=True,
    memorising_note=(
        "Where the causal run learns it by heart, its held-out loss stays high and widens the leaky runs' gap to it: "
        "the verdict then also asks each leaky run's held-out loss to fall below causal's score on its own training "
        "text, which memorising cannot explain."
    ),
)
