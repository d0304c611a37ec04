"""tinygpt/lab/health.py: the shape-contracts row tests the run's own model, and the loss-trend row knows the
schedule (a review read "shape contracts: pass" on the shape-bug run, and "loss still decreasing: FAIL" on a run
that had simply finished its cosine)."""

from __future__ import annotations

import math
import random

import torch

from tinygpt.config import Interventions, TransformerConfig
from tinygpt.interventions import attach, attached, contracts_on
from tinygpt.lab.health import FAIL, PASS, check_shape_contracts, check_training_metrics
from tinygpt.model import TinyGPT
from tinygpt.schedule import lr_at

SIZES = dict(vocab_size=20, hidden_dim=32, num_layers=1, num_heads=2, max_seq_len=16)


def built(**switches) -> TinyGPT:
    torch.manual_seed(0)
    model = TinyGPT(TransformerConfig(**SIZES))
    attach(model, Interventions(**switches))
    return model


def test_the_contracts_row_fails_on_a_run_with_the_silent_shape_bug_and_names_the_tensor():
    check = check_shape_contracts(built(shape_bug="softmax_dim"))
    assert check.outcome == FAIL and "softmax row sums" in check.detail and "own model" in check.detail
    plain = check_shape_contracts(built())
    assert plain.outcome == PASS and "passes every attention contract" in plain.detail
    assert "(2, 17) refused" in plain.threshold


def test_running_under_the_contracts_leaves_the_model_as_it_was():
    model = built(shape_bug="softmax_dim")
    idx = torch.zeros(1, 4, dtype=torch.long)
    before = model(idx)
    check_shape_contracts(model)
    assert attached(model) == Interventions(shape_bug="softmax_dim")
    assert torch.equal(model(idx), before)  # no contract left on: T=4 still runs the bug silently
    plain = TinyGPT(TransformerConfig(**SIZES))
    with contracts_on(plain):
        assert attached(plain).shape_contracts
    assert attached(plain) == Interventions()
    attach(plain, Interventions(detach_residual=True))  # nothing left behind that refuses a run's own switches


def _finished_run(flat_from: int, steps: int = 200, warmup: int = 30) -> list[dict]:
    """Step records of a run on a cosine to min_lr: its loss falls, then sits flat from `flat_from`."""
    rng = random.Random(0)
    records = []
    for step in range(1, steps + 1):
        loss = 4.0 - 1.5 * min(step, flat_from) / flat_from + rng.gauss(0, 0.02)
        lr = lr_at(step, 2e-3, 2e-4, warmup, steps)
        records.append({"step": step, "loss": loss, "lr": lr, "grad_norm": 0.5})
    return records


def test_a_finished_runs_flat_end_is_its_schedule_not_a_stall():
    checks = check_training_metrics(_finished_run(flat_from=140), 1.0)
    trend = {c.name: c for c in checks}["training loss still decreasing"]
    assert trend.outcome == PASS, trend
    # what the outcome rests on comes first (a review read FAIL beside "expected"), the flat end said as not judged
    assert trend.detail.startswith("judged on the steps at the higher learning rates (steps ")
    assert "is not judged" in trend.detail


def test_a_flat_loss_at_a_high_learning_rate_still_fails():
    records = _finished_run(flat_from=40)  # flat long before the decay: a stall, said as one
    trend = {c.name: c for c in check_training_metrics(records, 1.0)}["training loss still decreasing"]
    assert trend.outcome == FAIL, trend.detail
    assert trend.detail.startswith("judged on the steps at the higher learning rates"), trend.detail
    constant = [{"step": s, "loss": 2.0 + 0.01 * math.sin(s), "lr": 1e-3, "grad_norm": 0.5} for s in range(1, 80)]
    trend = {c.name: c for c in check_training_metrics(constant, 1.0)}["training loss still decreasing"]
    assert trend.outcome == FAIL and "schedule" not in trend.detail


def test_a_loss_that_went_non_finite_fails_the_trend_not_passes_it_without_that_step():
    """A review: a naive-softmax run whose step 54 had loss null read "loss still decreasing: pass 3.516 → 2.972"."""
    records = [{"step": s, "loss": 4.0 - s * 0.02, "lr": 2e-3, "grad_norm": 0.5} for s in range(1, 54)]
    records.append({"step": 54, "loss": None, "lr": 2e-3, "grad_norm": None})
    trend = {c.name: c for c in check_training_metrics(records, 1.0)}["training loss still decreasing"]
    assert trend.outcome == FAIL and "not finite at step 54" in trend.detail, trend


def test_the_held_out_check_fails_a_rise_beyond_its_noise_and_admits_a_rise_within_it():
    """A review: the checklist passed every check on a run the lab's verdict called memorised (held-out 2.611 at its
    best, 2.696 at the end): the two read different evidence. The checklist now reads the held-out loss too."""
    from tinygpt.lab.health import NOT_ENOUGH, held_out_check

    def ev(step: int, loss: float, spread: float, tokens: int = 111_540) -> dict:
        batches = [loss + spread * d for d in (-2, -1, 0, 1, 2)]
        return {"step": step, "val_loss": loss, "val_batch_losses": batches, "val_tokens": tokens,
                "batch_shape": [16, 32]}  # fmt: skip

    rose = held_out_check([ev(100, 2.9, 0.01), ev(200, 2.611, 0.01), ev(300, 2.696, 0.012)])
    assert rose.outcome == FAIL and "2.696 at step 300 against the best, 2.611 at step 200" in rose.detail, rose
    assert "over-fitting" in rose.detail
    # A review: a rise across a live change (mask sliding_window -> causal at step 382) read "over-fitting, or a
    # learning rate undid what it had learned"; the change is named as the likelier cause
    changes = ((50, "LR 0.002→0.003 @50"), (250, "mask sliding_window→causal @250"))
    changed = held_out_check([ev(100, 2.9, 0.01), ev(200, 2.611, 0.01), ev(300, 2.696, 0.012)], changes=changes)
    assert changed.outcome == FAIL and changed.detail.endswith(
        "beyond its noise: live changes between those evals (mask sliding_window→causal @250) may be why, not "
        "over-fitting"), changed  # fmt: skip
    assert held_out_check([ev(100, 2.9, 0.01), ev(200, 2.611, 0.01), ev(300, 2.62, 0.01)]).outcome == PASS
    short = held_out_check([ev(100, 2.9, 0.05, 300), ev(200, 2.611, 0.05, 300), ev(300, 2.696, 0.3, 300)])
    assert short.outcome == NOT_ENOUGH and "within the held-out noise" in short.detail, short  # 300 characters
    # A review: Train read "too little held-out text to tell whether it moved" of 200 held-out characters, and the
    # checklist "pass" on the same evals (1.139 → 1.124)
    tiny = held_out_check([ev(100, 1.5, 0.05, 200), ev(200, 1.124, 0.05, 200), ev(300, 1.139, 0.05, 200)])
    assert tiny.outcome == NOT_ENOUGH and "about 6 windows of 32: too little held-out text" in tiny.detail, tiny
    newest_best = held_out_check([ev(150, 2.4323, 0.01), ev(200, 2.384, 0.01)])  # a review: "against the best"
    assert newest_best.outcome == PASS and newest_best.detail == (
        "2.384 at step 200 (the run's best so far; the best before it, 2.432 at step 150): not rising"
    ), newest_best
    # A review: "0 eval(s) so far; need 2" of an off_by_one run with 9 evals, all under the leak
    leaked = held_out_check([], 9, "off_by_one")
    assert leaked.outcome == NOT_ENOUGH and leaked.detail.startswith("9 eval(s) were taken under mask off_by_one")
    # On a scant split a newest eval that is the run's lowest is not rising (a review: "too little held-out text")
    lowest = held_out_check([ev(100, 3.101, 0.05, 250), ev(300, 3.084, 0.05, 250)])
    assert lowest.outcome == PASS and "the run's best so far" in lowest.detail, lowest
    assert held_out_check([ev(100, 2.9, 0.01)]).outcome == NOT_ENOUGH
    # A diverged run: "0 eval(s) so far" beside an eval whose held-out loss was not finite (a review)
    nan = {"step": 50, "val_loss": None, "val_batch_losses": [None, 2.97, 2.70, 2.87, None]}
    said = held_out_check([nan]).detail
    assert said == ("0 eval(s) so far; need 2; the eval at step 50 has no finite held-out loss (2 of its 5 batches "
                    "not finite)")
    assert ("(a larger rise within its noise, 3 s.e., or any rise on a held-out split too small to tell: not enough "
            "data)") in held_out_check([nan]).threshold
    assert held_out_check([{"step": 1, "val_loss": 3.0}, {"step": 2, "val_loss": 3.5}]).outcome == NOT_ENOUGH


def test_a_loss_that_fell_from_before_the_decay_to_the_newest_steps_is_still_decreasing():
    """A review's detached-residual run (300 steps): "loss still decreasing: FAIL (plateau): 3.077 → 3.113 over
    those 50 steps" (steps 126-175) beside Gradients' "The loss is falling", and it fell to 2.878 by steps 251-275:
    each 50-step window is flat within the step noise, the fall between them is not."""
    from tinygpt.lab.health import loss_trend_check

    rng = random.Random(3)
    records = [{"step": s, "loss": 3.4 - 0.002 * s + rng.gauss(0, 0.13), "lr": lr_at(s, 2e-3, 2e-4, 30, 300),
                "grad_norm": 0.5} for s in range(1, 301)]  # fmt: skip
    assert loss_trend_check([r["loss"] for r in records[-50:]]).outcome == FAIL  # the newest window alone: flat
    trend = {c.name: c for c in check_training_metrics(records, 1.0)}["training loss still decreasing"]
    assert trend.outcome == PASS, trend
    assert trend.detail.startswith("fell from the steps at the higher learning rates (steps "), trend
    assert trend.value < 0 and "higher-rate steps'" in trend.threshold  # the value and bar of the test it passed
    flat = [dict(r, loss=2.5 + rng.gauss(0, 0.13)) for r in records]  # the same schedule, no fall: still a FAIL
    assert {c.name: c for c in check_training_metrics(flat, 1.0)}["training loss still decreasing"].outcome == FAIL


def test_the_clipping_rows_bar_counts_steps_as_its_value_does():
    """A review: measured "20" beside a bar of "20% or more of the last 20 steps" read as a run on the bar."""
    from tinygpt.lab.health import grad_clip_check

    check = grad_clip_check([2.0] * 20, 1.0, losses=[2.0 - 0.01 * i for i in range(40)])
    assert check.value == 20.0 and "on fewer than 4 of the last 20 steps (20%)" in check.threshold, check
    # a pass condition, as every row's: "FAIL: … on 4 or more" beside "pass" and a measured 4 read as a contradiction
    assert check.outcome == "pass" and check.threshold.startswith("the loss not rising, or ")
    # Clipped as a rule, the pass rests on the loss: the measured cell says both (a review read "20" beside "pass"
    # and a bar of "fewer than 4")
    assert check.shown == "20 of 20 clipped; the loss not rising", check
    rising = grad_clip_check([2.0] * 20, 1.0, losses=[2.0 + 0.01 * i for i in range(40)])
    assert rising.outcome == "FAIL" and rising.shown == "20 of 20 clipped; the loss rising", rising
    assert grad_clip_check([0.5] * 20, 1.0).shown == ""  # never clipped: the count alone says it


def test_the_trend_row_says_it_reads_the_training_loss():
    """A review's memorising run read "loss still decreasing: pass (1.062 → 0.936 ...)" beside a held-out loss that
    rose: the row measures the training loss and now says so (the held-out row judges the held-out loss)."""
    from tinygpt.lab.step_checks import loss_trend_check

    check = loss_trend_check([1.1 - 0.004 * i for i in range(50)])
    assert check.outcome == "pass" and check.detail.startswith("training loss "), check.detail
