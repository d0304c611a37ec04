"""The pitfall "Unstable softmax": its runs, what to look for, and its judge."""

from __future__ import annotations

from ...attention import scores_to_weights
from ...trainer import first_nonfinite_activation
from ..experiment import Experiment
from ..verdict import (
    FINAL_STEPS,
    RunResult,
    Verdict,
    decide,
    diverged_at,
    fmt,
    gt3,
    say,
    trained_clause,
    trained_margin,
)

EXPECTED = "naive: NaN at a named step and tensor, run diverged; stable: trains to the end"
# No consequence clauses (verdict.Clause): the overflow is the pitfall and the stable run training on is its
# control. Its "trained" clause compares one run's first and last loss (a tenth of the first), not two runs, so
# there is no paired interval to judge it by.


def judge(results: dict[str, RunResult]) -> Verdict:
    good, bad = results["stable softmax"], results["naive softmax"]
    observed = {
        "naive: state": bad.state,
        "naive: diverged at step": bad.diverged_step,
        "naive: first non-finite tensor": bad.nonfinite_tensor or None,
        "stable: state": good.state,
        "stable: loss first -> last": f"{fmt(good.initial_loss)} -> {fmt(good.final_train_loss)}",
    }
    overflowed = bad.state == "diverged" and bad.diverged_step is not None and bool(bad.nonfinite_tensor)
    down = gt3(good.initial_loss, good.final_train_loss, trained_margin(good))  # None: a loss not measured
    trains_on = False if good.state != "finished" or good.diverged_step is not None else down
    if overflowed:
        sentence = (
            f"The naive softmax overflowed at step {bad.diverged_step}: the first non-finite tensor was "
            f"{bad.nonfinite_tensor}; the update was not applied and the run ended diverged. "
        )
    else:
        sentence = f"The naive softmax did not overflow (state {bad.state} at step {bad.steps}). "
    if diverged_at(good):
        sentence += f"The stable softmax, same settings, {diverged_at(good)} too."
    else:
        sentence += (
            f"The stable softmax, same settings, "
            f"{say(trains_on, 'trained on', 'did not train on cleanly', 'ran')} to step "
            f"{good.steps} (loss {fmt(good.initial_loss)} at step 1 -> {fmt(good.final_train_loss)}, the mean of its "
            f"last {FINAL_STEPS} steps)."
        )
    clauses = {
        "the naive run diverged at a named step and tensor": overflowed,
        f"the stable run finished, {trained_clause(good)}": trains_on,
    }
    return decide(EXPECTED, clauses, observed, sentence)


EXPERIMENT = Experiment(
    key="softmax",
    title="Unstable softmax",
    what_to_look_for=(
        "exp() overflows float32 above ~88. Subtracting the row max first (what torch.softmax does) changes "
        "nothing mathematically and avoids it. Here the scores are unscaled and multiplied by 24, so they "
        "pass 88 within the first ~100 steps: the naive softmax gives inf/inf = NaN, the trainer refuses "
        "the step, names the tensor and the run ends diverged. The stable one, same settings, trains on."
    ),
    expected=EXPECTED,
    base=dict(attn_scale="none", attn_scale_mult=24.0, max_steps=200),
    variants={"stable softmax": dict(softmax="stable"), "naive softmax": dict(softmax="naive")},
    judge=judge,
    ends_early_as_pitfall=("naive softmax",),
    code=(scores_to_weights, first_nonfinite_activation),
)
