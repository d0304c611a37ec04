"""The pitfall "No positional embedding": its runs, what to look for, and its judge."""

from __future__ import annotations

from ...model import TinyGPT
from ..experiment import Experiment
from ..verdict import (
    RunResult,
    Verdict,
    clears,
    decide,
    fmt,
    gt3,
    held_out,
    held_out_difference,
    loss_difference,
    never_reached,
    pair,
    reversed_gap,
    say,
)

# nats: without positions the held-out loss must end at least this much higher, the whole interval of the gap (its
# mean ± NOISE_SIGMAS standard errors, paired over the eval's shared windows: verdict.clears) above it.
# Measured on the copy task (1 layer, seeds 1-5): 1.1-1.3 nats higher; see BENCHMARKS.md.
POSITION_WORSE = 0.3
LEARNED = 1.0  # nats: the run with positions must have learned the task, its loss down at least this much
# No consequence clauses (verdict.Clause): "the task learned with positions" is the control that makes the gap
# mean anything, and the gap is the pitfall itself; the experiment runs on the copy task only.

EXPECTED = (
    f"without positions: a final held-out loss at least {POSITION_WORSE} nats higher than with them (the whole "
    "interval of the gap above it), on a task the model with positions learns"
)

NAMES = ("no positions", "learned")  # each run's number named in the sentence: verdict.pair


def judge(results: dict[str, RunResult]) -> Verdict:
    good, bad = results["learned positions"], results["no positions"]
    margin = POSITION_WORSE
    # Judged on held-out loss, paired over the eval's shared windows (scaling.py says why); training loss beside it
    difference, train = held_out_difference(bad, good), loss_difference(bad, good)
    observed = {
        "train loss, no positions": bad.final_train_loss,
        "train loss, learned positions": good.final_train_loss,
        "first loss, learned positions": good.initial_loss,
        "worse margin (nats)": margin,
        "held-out loss gap, no positions - learned (nats)": difference.interval(3),
        "training loss gap, no positions - learned (nats)": train.interval(),
    }
    claims = ["the task learned with positions", "a higher final loss without"]
    if broken := never_reached(EXPECTED, results, claims, observed):
        return broken
    learned = gt3(good.initial_loss, good.final_train_loss, LEARNED)
    worse, spread = clears(difference, margin)
    if difference.mean is None:  # never decided on training loss alone: the clause says what is missing
        spread = "held-out loss not recorded"
    no_worse = "ends lower, the other way round" if reversed_gap(difference) else "not enough higher"
    sentence = (
        f"With learned positions the loss fell from {fmt(good.initial_loss)} to {fmt(good.final_train_loss)} "
        f"({say(learned, 'the task is learned', 'the task is not learned', 'not measured')}); without them the "
        f"held-out loss ended at {pair(bad.final_val_loss, good.final_val_loss, NAMES)} "
        f"(the bar: at least {margin:.2f} higher) "
        f"({say(worse, 'it cannot tell the order', no_worse, 'not decided')}: gap "
        f"{difference.interval(3)}; {spread}). Training loss "
        f"{pair(bad.final_train_loss, good.final_train_loss, NAMES)} ({train.interval()})."
    )
    clauses = {
        f"with positions, the loss down by at least {LEARNED} nat": learned,
        f"without positions, a final held-out loss at least {margin:.2f} nats higher"
        + ("" if worse is not None else f" ({spread})"): worse,
    }
    observed["held-out loss, no positions / learned"] = held_out(bad, good, NAMES)[1]
    return decide(EXPECTED, clauses, observed, sentence)


EXPERIMENT = Experiment(
    key="position",
    title="No positional embedding",
    what_to_look_for=(
        "Attention is a weighted mean over the keys, and its weights depend on what the tokens are, not where: "
        "without a positional embedding one layer of causal attention sees its past as a bag of tokens. On the copy "
        'task ("abc>abc.") it knows which letters came but not in which order, so at each letter of the copy it '
        "can only guess among those left; with learned positions the copy is exact and only the first half, random "
        "letters, costs anything. The positional embedding here is zeroed at its probe point (hook_pos), so the "
        "model is the same in every other weight."
    ),
    expected=EXPECTED,
    # One layer: a second one can recover some order from the causal mask itself (how many keys a query sees).
    base=dict(num_layers=1, max_steps=600, learning_rate=3e-3, batch_size=32, synthetic_digits=3),
    variants={"learned positions": dict(zeroed_probes=""), "no positions": dict(zeroed_probes="hook_pos")},
    judge=judge,
    loss_claims=True,
    memorising_narrows=("learned positions",),  # the claim: the broken run ends higher held out
    source="synthetic:copy",
    code=(TinyGPT.forward,),
)
