"""The pitfall "Shape drift (a silent broadcasting bug)": its runs, what to look for, and its judge."""

from __future__ import annotations

import torch

from ...interventions import drifted_weights
from ...model import TinyGPT
from ..experiment import Experiment
from ..verdict import (
    LEAKS,
    RunResult,
    Verdict,
    all_of,
    decide,
    diverged_at,
    fmt,
    gt3,
    say,
    trained_clause,
    trained_margin,
)

EXPECTED = (
    "silent bug: trains to a plausible loss, but rows don't sum to 1 and it leaks the future; "
    "with contracts: stops at step 0 naming the tensor and both shapes"
)
# No consequence clauses (verdict.Clause): the plausible loss, the wrong rows and the leak are what makes the bug
# silent, and the contract stopping it is the fix under test; none is an effect seen on some corpora only.


def judge(results: dict[str, RunResult]) -> Verdict:
    good, silent, checked = results["correct"], results["silent bug"], results["bug + shape contracts"]
    observed = {
        "silent bug: state": silent.state,
        "silent bug: loss first -> last": f"{fmt(silent.initial_loss)} -> {fmt(silent.final_train_loss)}",
        "correct: loss first -> last": f"{fmt(good.initial_loss)} -> {fmt(good.final_train_loss)}",
        "silent bug: max |attention row sum - 1|": silent.row_sum_error,
        "silent bug: rows measured on": silent.snapshot_input,
        "silent bug: leak": silent.leak,
        "silent bug: leak measured on": silent.leak_input,
        "silent bug: loss without the future": silent.no_peek_loss,
        "correct: loss without the future": good.no_peek_loss,
        "correct: leak": good.leak,
        "contracts: state at step": f"{checked.state} at step {checked.steps}",
        "contracts: error": checked.reason or None,
    }
    down = gt3(silent.initial_loss, silent.final_train_loss, trained_margin(silent))  # None: a loss not measured
    plausible = down if silent.state == "finished" else False
    wrong = all_of(
        gt3(silent.row_sum_error, 0.01), gt3(silent.leak, LEAKS), None if good.leak is None else good.leak == 0.0
    )
    stopped = (
        checked.state == "failed"
        and checked.steps == 0
        and "softmax row sums" in checked.reason
        and "expected (B, H, T, 1)" in checked.reason
        and "got (" in checked.reason
    )
    trained = diverged_at(silent) or say(plausible, "to a plausible curve", "badly", "to a curve not measured")
    sentence = (
        f"The silent bug trained {trained} "
        f"({observed['silent bug: loss first -> last']}; correct {observed['correct: loss first -> last']}) "
        f"{say(wrong, 'but is wrong', 'and looks right', 'and was not fully probed')}: on {silent.snapshot_input}, "
        f"its attention weights in one row add up to as much as {fmt(silent.row_sum_error, 2)} away from 1 (the "
        "largest over every layer, head and row; a correct row adds up to exactly 1); on "
        f"{silent.leak_input}, changing the future moves earlier logits by up to "
        f"{fmt(silent.leak, 2)} (correct model: {fmt(good.leak, 2)}); and predicting from the past alone its loss "
        f"is {fmt(silent.no_peek_loss)} (correct model: {fmt(good.no_peek_loss)}). With shape contracts the same "
        "code "
        + (
            f"stopped at step 0: {checked.reason.removeprefix('failed: ').rstrip('.')}"
            if stopped
            else f"did not stop ({checked.state})"
        )
        + "."
    )
    clauses = {
        f"the silent bug finished, {trained_clause(silent)}": plausible,
        f"its attention rows adding up to over 0.01 away from 1, its leak above {LEAKS:g} and the correct model's "
        "leak exactly 0": wrong,
        "the contracts stopped it at step 0 naming the tensor and both shapes": stopped,
    }
    return decide(EXPECTED, clauses, observed, sentence)


EXPERIMENT = Experiment(
    key="shape_drift",
    title="Shape drift (a silent broadcasting bug)",
    what_to_look_for=(
        "One wrong argument: the softmax sums its exponentials over dim=-2 (the queries) instead of dim=-1 "
        "(the keys). The sums are (B, H, 1, T) where (B, H, T, 1) belongs, and because T == S they "
        "broadcast without an error. The buggy run trains to a curve that looks fine, even better than "
        "the correct one, but its attention rows no longer sum to 1 and every weight now depends on later "
        "queries: it reads the future. The same code with shape contracts on stops at step 0 and names the "
        "tensor, its expected and its actual shape."
    ),
    expected=EXPECTED,
    base=dict(max_steps=200),
    variants={
        "correct": dict(shape_bug="none"),
        "silent bug": dict(shape_bug="softmax_dim"),
        "bug + shape contracts": dict(shape_bug="softmax_dim", shape_contracts=True),
    },
    judge=judge,
    ends_early_as_pitfall=("bug + shape contracts",),
    guards={"bug + shape contracts": "the shape contract"},
    code=(drifted_weights,),
    probes=True,
)


def shape_drift_cases(model: TinyGPT) -> list[dict[str, str]]:
    """Feed mis-shaped batches; return what the contract says and what PyTorch would have said without it."""
    T = model.config.max_seq_len
    cases = [
        ("a 1-D batch (T,) instead of (B, T)", torch.zeros(T, dtype=torch.long)),
        (f"a sequence of {T + 8} > max_seq_len {T}", torch.zeros(2, T + 8, dtype=torch.long)),
        ("float token ids", torch.zeros(2, 8)),
        ("a token id outside the vocabulary", torch.full((2, 8), model.config.vocab_size)),
    ]
    rows = []
    for label, idx in cases:
        rows.append(
            {
                "case": label,
                "with contract": _error_of(lambda i=idx: model(i)),
                "without contract": _error_of(lambda i=idx: _unchecked_forward(model, i)),
            }
        )
    return rows


def _unchecked_forward(model: TinyGPT, idx: torch.Tensor):
    original = model._check_input
    model._check_input = lambda *args, **kwargs: None  # what the model would do without its door check
    try:
        return model(idx)
    finally:
        model._check_input = original


def _error_of(call) -> str:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - showing any error is the point
        return f"{type(exc).__name__}: {exc}".strip()
    return "no error (silently wrong shapes flow on)"
