"""The pitfall lab: each experiment's measurable claim, its structured verdict, and the health checks' three outcomes.

Fast tests use tiny models and fake RunResults; the `slow` ones run every experiment to the end on Tiny Shakespeare
(skipped without a local copy) for three seeds and check that the pitfall reproduced.
"""

import dataclasses
import math
import multiprocessing
import os
import random
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
import torch

from tinygpt.attention import attention
from tinygpt.config import INTERVENTION_FIELDS, DataConfig, Interventions, RunConfig, TrainConfig, TransformerConfig
from tinygpt.data import Corpus
from tinygpt.errors import ShapeError
from tinygpt.interventions import attach, drifted_weights
from tinygpt.lab.health import (
    FAIL,
    NOT_ENOUGH,
    PASS,
    check_attention_rows,
    check_gradient_carried_down_the_stream,
    check_gradients_reach_every_parameter,
    check_initial_loss,
    check_no_future_leak,
    check_shape_contracts,
    check_training_metrics,
    grad_clip_check,
    leak_score,
    loss_trend_check,
    no_peek_loss,
    run_health_checks,
)
from tinygpt.lab.memory import allocation_churn, memory_rows
from tinygpt.lab.pitfalls.scaling import GRADIENTS
from tinygpt.lab.pitfalls.shape_drift import shape_drift_cases
from tinygpt.lab.registry import EXPERIMENTS
from tinygpt.lab.results import attention_stats, softmax_gain
from tinygpt.lab.verdict import RunResult, Verdict
from tinygpt.model import TinyGPT
from tinygpt.probes import attention_forward
from tinygpt.trainer import Trainer


@pytest.fixture(scope="module")
def random_text() -> str:
    """Characters drawn at random: nothing to learn from the past, everything to gain from peeking ahead."""
    rng = random.Random(7)
    return "".join(rng.choice("abcdefghij") for _ in range(4000))


def built(sizes: dict, **switches) -> TinyGPT:
    """A model of `sizes` with the lab's `switches` attached from outside, as every run's model has its own."""
    model = TinyGPT(TransformerConfig(**sizes))
    attach(model, Interventions(**switches))
    return model


def train(text, steps, seed=0, train_kw=None, **model_kw):
    corpus = Corpus.from_text(text, block_size=32)
    torch.manual_seed(seed)
    base = dict(vocab_size=corpus.tokenizer.vocab_size, hidden_dim=32, num_layers=2, num_heads=2, max_seq_len=32)
    lab = {name: model_kw.pop(name) for name in INTERVENTION_FIELDS if name in model_kw}
    model = built({**base, **model_kw}, **lab)
    config = TrainConfig(
        **{
            "batch_size": 8,
            "max_steps": steps,
            "warmup_steps": 10,
            "learning_rate": 3e-3,
            "min_lr": 3e-4,
            **(train_kw or {}),
        }
    )
    trainer = Trainer(model, config, corpus)
    records = [trainer.step() for _ in range(steps)]
    return trainer, records


def probe_attention(trainer):
    idx = torch.tensor([trainer.corpus.tokenizer.encode(trainer.corpus.probe_text(32))])
    with torch.no_grad():
        _, maps = attention_forward(trainer.model, idx)
    return torch.stack(maps)[:, 0]  # (L, H, T, T)


def result(state="finished", steps=300, **fields) -> RunResult:
    """A RunResult with only the fields a test cares about set."""
    base = dict(
        final_train_loss=None,
        final_val_loss=None,
        max_loss_early=None,
        clip_events_early=0,
        mean_entropy=None,
        mean_max_weight=None,
    )
    return RunResult(state, steps, **{**base, **fields}, max_steps=steps)


# ---------------------------------------------------------------- the mechanisms, on tiny models


def test_no_scaling_gives_lower_attention_entropy(tiny_text):
    entropy = {}
    for scale in ("head_dim", "none"):
        trainer, _ = train(tiny_text, 100, hidden_dim=64, num_layers=1, num_heads=1, attn_scale=scale)
        entropy[scale], _ = attention_stats(probe_attention(trainer))
    assert entropy["none"] < entropy["head_dim"]


def test_softmax_gain_is_half_for_two_even_keys_and_small_when_saturated():
    assert softmax_gain(torch.tensor([[0.5, 0.5]])) == pytest.approx(0.5)
    assert softmax_gain(torch.tensor([[0.99, 0.01, 0.0]])) < 2 * 0.01 + 1e-9  # ||J|| <= 2 (1 - max weight)
    assert softmax_gain(torch.full((1, 4), 0.25)) == pytest.approx(0.25)  # uniform over n keys: 1/n


def test_off_by_one_cheats_and_only_leaky_masks_leak(random_text):
    final, leaks, honest = {}, {}, {}
    for mask in ("causal", "off_by_one", "none"):
        trainer, records = train(random_text, 120, num_layers=1, mask=mask)
        final[mask] = sum(r["loss"] for r in records[-20:]) / 20
        x, y = trainer.corpus.get_batch("val", 2, torch.Generator().manual_seed(0))
        leaks[mask] = leak_score(trainer.model, x)
        honest[mask] = no_peek_loss(trainer.model, x, y)
    assert final["off_by_one"] < final["causal"] - 0.3  # it reads the answer; causal cannot beat ln(10) here
    assert leaks["causal"] == 0.0
    assert leaks["off_by_one"] > 1e-3 and leaks["none"] > 1e-3
    assert honest["off_by_one"] > math.log(10) > final["off_by_one"]  # without the future: worse than guessing


def test_no_peek_loss_equals_the_ordinary_loss_under_a_causal_mask(tiny_text):
    trainer, _ = train(tiny_text, 5)
    x, y = trainer.corpus.get_batch("val", 2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        ordinary = trainer.loss_on(x, y).item()
    assert no_peek_loss(trainer.model, x, y) == pytest.approx(ordinary, abs=1e-5)


def test_naive_softmax_run_is_paused_as_diverged_with_the_step_recorded(tmp_runs, tiny_text):
    from tinygpt.runs.loop import run_training
    from tinygpt.runs.reader import RunReader
    from tinygpt.runs.store import RunStore

    config = RunConfig(
        model=TransformerConfig(
            hidden_dim=32,
            num_layers=1,
            num_heads=1,
            max_seq_len=16,
            attn_scale="none",
            attn_scale_mult=50.0,
            softmax="naive",
        ),
        train=TrainConfig(batch_size=4, max_steps=100, warmup_steps=0, learning_rate=1e-2, eval_interval=50),
        data=DataConfig(source="text", text=tiny_text),
        attention_every=10,
        sample_every=1000,
        checkpoint_every=1000,
    )
    store = RunStore(tmp_runs)
    with store.create(config.to_dict(), owner="app") as writer:
        run_dir = writer.run_dir
    state = run_training(run_dir, config)
    assert state == "diverged"
    reader = RunReader(run_dir)
    reader.poll()
    status = reader.status()
    assert status["state"] == "diverged" and status["step"] >= 1
    nonfinite = [e for e in reader.events if e["kind"] == "nonfinite"]
    assert nonfinite and "step" in nonfinite[0] and "hook_weights" in nonfinite[0]["message"]


def test_detached_residual_first_layer_gradient_is_near_zero(tiny_text):
    norms = {}
    for detach in (False, True):
        _, records = train(tiny_text, 20, num_layers=4, detach_residual=detach)
        norms[detach] = sum(r["layer_grad_norms"]["L0.attn"] for r in records[-5:]) / 5
    assert norms[True] < 1e-2 * norms[False]


def test_the_drifted_softmax_broadcasts_silently_and_the_contract_names_it():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 8, 4) for _ in range(3))  # (B, H, T, D)
    mask = torch.ones(8, 8).tril().bool()
    _, correct = attention(q, k, v, mask, 0.5)  # (B, H, T, S), rows sum to 1
    weights = drifted_weights(correct)
    assert weights.shape == (2, 2, 8, 8)  # nothing downstream can tell
    assert (weights.sum(-1) - 1).abs().max() > 0.1  # but rows no longer sum to 1
    # The bug written out (sums over the queries of exp(score - row max)) gives the same weights.
    scores = ((q @ k.transpose(-2, -1)) * 0.5).masked_fill(~mask, float("-inf"))
    exps = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    assert torch.allclose(weights, exps / exps.sum(dim=-2, keepdim=True), atol=1e-6)
    with pytest.raises(ShapeError) as info:
        drifted_weights(correct, contracts=True)
    message = str(info.value)
    assert "softmax row sums" in message and "expected (B, H, T, 1)" in message and "got (2, 2, 1, 8)" in message


def test_a_model_with_the_shape_bug_leaks_the_future_and_the_contract_stops_it():
    config = dict(vocab_size=10, hidden_dim=16, num_layers=1, num_heads=2, max_seq_len=8)
    idx = torch.randint(0, 10, (2, 8), generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    assert leak_score(built(config, shape_bug="softmax_dim"), idx) > 0
    torch.manual_seed(0)
    assert leak_score(TinyGPT(TransformerConfig(**config)), idx) == 0.0
    checked = built(config, shape_bug="softmax_dim", shape_contracts=True)
    with pytest.raises(ShapeError, match="softmax row sums"):
        checked(idx)
    built(config, shape_contracts=True)(idx)  # contracts on correct code: no complaint


def test_memory_churn_is_measured_on_cpu_not_estimated():
    measured = allocation_churn(1337, device="cpu")
    fresh, reused = measured["fresh tensors"], measured["reused buffers"]
    assert fresh["allocations"] >= fresh["iterations"] == 200  # one fresh tensor per iteration
    assert reused["allocations"] == reused["keep"] == 8  # the buffers, once
    assert fresh["bytes_allocated"] > 5 * reused["bytes_allocated"]
    assert "torch.profiler" in fresh["source"] and "CPU" in fresh["source"]
    verdict = EXPERIMENTS["memory"].verdict(measured)
    assert verdict.reproduced is None and "CPU" in verdict.sentence and "nothing reserved" in verdict.sentence


@pytest.mark.skipif(not torch.cuda.is_available(), reason="fragmentation (reserved vs allocated) needs CUDA")
def test_memory_fragmentation_on_cuda_reserves_more_than_it_allocates():
    measured = allocation_churn(1337, device="cuda")
    assert measured["fresh tensors"]["peak_gap_bytes"] > measured["reused buffers"]["peak_gap_bytes"]
    assert EXPERIMENTS["memory"].verdict(measured).reproduced is True


# ---------------------------------------------------------------- verdicts: structured, honest, pending while training


def test_every_training_experiment_is_one_setting_apart():
    for experiment in EXPERIMENTS.values():
        if experiment.measure is not None:
            continue
        configs = list(experiment.configs(source="synthetic:copy").values())
        assert len(configs) >= 2
        # Each broken run against its reference: warmup has two regimes (pairs), the others a chain.
        pairs = [(0, 1), (2, 3)] if experiment.key == "warmup" else [(i, i + 1) for i in range(len(configs) - 1)]
        for i, j in pairs:
            a, b = configs[i].to_dict(), configs[j].to_dict()
            changed = {
                k
                for section in ("model", "train", "interventions")
                for k, v in a[section].items()
                if v != b[section][k]
            }
            assert len(changed) == 1, (experiment.key, i, j, changed)


def test_a_verdict_is_pending_until_every_run_has_ended():
    for experiment in EXPERIMENTS.values():
        if experiment.measure is not None:
            assert experiment.verdict({}).reproduced is None
            continue
        labels = list(experiment.variants)
        running = {label: result("running", 120) for label in labels}
        verdict = experiment.verdict(running)
        assert verdict.reproduced is None and verdict.status == "still training"
        assert "Still training" in verdict.sentence
        # Runs that wait for a slot are not said to train (a review read "Still training … step 0 of 200 (queued)")
        queued = experiment.verdict({label: result("queued", 0) for label in labels})
        assert queued.reproduced is None and queued.sentence.startswith("Waiting for a training slot: "), queued
        assert experiment.verdict({labels[0]: result()}).reproduced is None  # a run missing
        stopped = {**running, labels[0]: result("stopped", 40)}
        stopped |= {label: result() for label in labels[1:]}
        assert experiment.verdict(stopped).reproduced is None


def saturated_but_better() -> tuple[RunResult, RunResult]:
    """(scaled, unscaled) results where the unscaled run's entropy collapses (0.66 vs 2.15) but it ends lower (2.169
    vs 2.281) with larger attention gradients (0.453 vs 0.337): the saturation clause holds, the others fail."""
    scaled = result(mean_entropy=2.15, mean_max_weight=0.3, softmax_gain=0.2, final_train_loss=2.281,
                    final_loss_std=0.03, final_val_loss=2.30)  # fmt: skip
    scaled.layer_grad_norms = {"L0.attn": 0.337}
    unscaled = result(mean_entropy=0.66, mean_max_weight=0.92, softmax_gain=0.05, final_train_loss=2.169,
                      final_loss_std=0.03, final_val_loss=2.20)  # fmt: skip
    unscaled.layer_grad_norms = {"L0.attn": 0.453}
    return scaled, unscaled


def test_unscaled_logits_that_saturate_but_train_better_is_not_called_reproduced():
    # The numbers: entropy collapses (0.66 vs 2.15) but the unscaled model ends lower (2.169 vs 2.281) with
    # larger attention gradients (0.453 vs 0.337). The old verdict listed them as if the blurb held.
    scaled, unscaled = saturated_but_better()
    verdict = EXPERIMENTS["scaling"].verdict({"scaled 1/sqrt(d_head)": scaled, "unscaled": unscaled})
    assert isinstance(verdict, Verdict) and verdict.reproduced is False
    assert "not smaller" in verdict.sentence, verdict.sentence
    # a reversal said as one (a review: "ends not higher by enough" for a run that ended 0.50 nats lower)
    assert "the held-out loss ends lower unscaled, the other way round" in verdict.sentence, verdict.sentence
    assert "below zero: the other way round" in verdict.sentence
    assert verdict.observed["train loss, unscaled"] == 2.169 and verdict.expected


def test_warmup_verdict_says_the_claim_failed_when_no_warmup_does_not_hurt():
    # The issue: early clipped steps 5 (no warmup) vs 19 (warmup), and no harm done; the old verdict listed numbers.
    runs = {
        label: result(
            mid_loss=2.7, final_train_loss=2.4, final_loss_std=0.05, final_val_loss=2.45, clip_events_early=19
        )
        for label in EXPERIMENTS["warmup"].variants
    }
    runs["no warmup, lr 1e-2"] = result(
        mid_loss=2.7, final_train_loss=2.4, final_loss_std=0.05, final_val_loss=2.45, clip_events_early=5
    )
    verdict = EXPERIMENTS["warmup"].verdict(runs)
    assert verdict.reproduced is False and "does not stall" in verdict.sentence
    assert verdict.observed["early clipped steps, lr 1e-2, no warmup / warmup"] == "5 / 19"


def warmup_runs(high: tuple[float, float], demo: tuple[float, float], std: float) -> dict[str, RunResult]:
    """The warmup experiment's four runs: (no warmup, warmup) final losses at lr 1e-2 and at lr 2e-3, the loss a
    third in 0.3 above the final one, every run with step-to-step spread `std`."""
    finals = {"no warmup, lr 1e-2": high[0], "warmup, lr 1e-2": high[1]}
    finals.update({"no warmup, lr 2e-3": demo[0], "warmup, lr 2e-3": demo[1]})
    return {
        label: result(mid_loss=final + 0.3, final_train_loss=final, final_loss_std=std, final_val_loss=final + 0.05)
        for label, final in finals.items()
    }


def test_the_warmup_margins_come_from_the_runs_own_noise_and_are_shown():
    """Issue 23 finding 1: the thresholds were chosen on Shakespeare. A gap of 0.15 clears 0.1 on quiet runs but not
    on runs whose step losses spread 0.2 (3 standard errors of the difference: 0.19): its interval, a third in and
    at the end, straddles the bar, and the verdict says "not enough data" with both intervals."""
    quiet = EXPERIMENTS["warmup"].verdict(warmup_runs((2.55, 2.40), (2.42, 2.42), std=0.05))
    assert quiet.reproduced is True and quiet.observed["margin at lr 1e-2 (nats)"] == 0.1, quiet.sentence
    noisy = EXPERIMENTS["warmup"].verdict(warmup_runs((2.55, 2.40), (2.42, 2.42), std=0.2))
    assert noisy.reproduced is None and noisy.status == "not enough data"
    said = noisy.sentence
    assert said.count("not enough data: the interval -0.04–0.34 straddles the bar 0.10") == 2, said  # both, once
    assert "(not enough data a third in and at the end: each interval above straddles the bar)" in said, said


def test_warmup_at_the_demo_lr_is_judged_against_the_gap_it_makes_at_the_high_lr():
    """Issue 23 finding 1, on English prose that is not Shakespeare: at lr 2e-3 no warmup ended 0.07 worse (2.506
    vs 2.437), over the fixed 0.05, while at lr 1e-2 it ended ~0.3 worse: warmup matters far less at the demo's rate,
    which is the lesson; the red verdict said it "does make a difference". A gap as large as the high LR's is red."""
    # std 0.02: the noise of a gap of two runs' means of 20 step losses, 3 s.e. ~0.02 (paired runs: under 0.01)
    verdict = EXPERIMENTS["warmup"].verdict(warmup_runs((2.74, 2.44), (2.506, 2.437), std=0.02))
    assert verdict.reproduced is True and "matters far less" in verdict.sentence, verdict.sentence
    assert verdict.observed["allowed gap at lr 2e-3 (nats)"] == 0.1  # a third of 0.3
    same = EXPERIMENTS["warmup"].verdict(warmup_runs((2.74, 2.44), (2.75, 2.45), std=0.02))
    assert same.reproduced is False and "matters as much" in same.sentence


def test_a_no_mask_run_that_ends_a_hair_below_causal_is_not_called_cheating():
    """Issue 20 finding 9: the mask experiment's "none" run ended only 0.09 below causal (2.316 vs 2.410), curves
    overlapping, and the verdict was green (it asked for 0.05). A leak that visibly cheats collapses toward the
    copy floor: the verdict now asks for MASK_CHEAT nats, or 3 standard errors of the difference (issue 23)."""
    from tinygpt.lab.pitfalls.mask import MASK_CHEAT

    causal = result(final_train_loss=2.410, leak=0.0, no_peek_loss=2.322, final_loss_std=0.04)
    off = result(final_train_loss=0.253, leak=10.26, no_peek_loss=5.653, final_loss_std=0.05)
    none = result(final_train_loss=2.316, leak=5.63, no_peek_loss=2.844, final_loss_std=0.04)
    verdict = EXPERIMENTS["mask"].verdict({"causal": causal, "off_by_one": off, "none": none})
    assert verdict.reproduced is False, verdict.sentence
    said = "none: train loss 2.316 (0.09 is not enough below causal; the bar: at least 0.50 below; the interval"
    assert said in verdict.sentence
    assert verdict.observed["cheat margin (nats), none"] == MASK_CHEAT
    collapsed = result(final_train_loss=0.19, leak=6.0, no_peek_loss=3.1, final_loss_std=0.03)
    verdict = EXPERIMENTS["mask"].verdict({"causal": causal, "off_by_one": off, "none": collapsed})
    said = "none: train loss 0.190 (2.22 below causal; the bar: at least 0.50 below;"
    assert verdict.reproduced is True and said in verdict.sentence
    # Runs noisier than the gap: 3 standard errors of the difference of their means of 20 losses, 3 x sqrt((0.04^2
    # + 1.5^2) / 20) = 1.006, so the gap of 0.81 is an interval -0.20-1.82 across the 0.50 bar: not enough data.
    noisy = result(final_train_loss=1.6, leak=6.0, no_peek_loss=3.1, final_loss_std=1.5)
    verdict = EXPERIMENTS["mask"].verdict({"causal": causal, "off_by_one": off, "none": noisy})
    assert verdict.observed["cheat margin (nats), none"] == MASK_CHEAT
    assert verdict.reproduced is None and "the interval -0.20–1.82 straddles the bar 0.50" in verdict.sentence


def test_the_scaling_verdict_asks_for_a_gap_above_the_runs_noise():
    # "Ends higher": the whole interval of the held-out gap above SCALING_WORSE. These runs' evals recorded no
    # batches, so the training noise stands in (and says so): 3 standard errors of the difference of the runs' means
    # of their last 20 losses: 0.45 (2.70 - 2.25) ± 3 x sqrt(1.0^2 / 20) = 0.45 ± 0.67.
    from tinygpt.lab.pitfalls.scaling import SCALING_WORSE

    scaled = result(mean_entropy=1.9, mean_max_weight=0.4, softmax_gain=0.24, final_train_loss=2.20, final_loss_std=1.0,
                    final_val_loss=2.25)  # fmt: skip
    scaled.layer_grad_norms = {"L0.attn": 0.7}
    unscaled = result(mean_entropy=0.05, mean_max_weight=0.98, softmax_gain=0.03, final_train_loss=2.62,
                      final_val_loss=2.70)  # fmt: skip
    unscaled.layer_grad_norms = {"L0.attn": 0.3}
    verdict = EXPERIMENTS["scaling"].verdict({"scaled 1/sqrt(d_head)": scaled, "unscaled": unscaled})
    assert verdict.observed["worse margin (nats)"] == SCALING_WORSE and verdict.reproduced is None
    assert "the interval -0.22–1.12 straddles the bar 0.10" in verdict.sentence
    scaled.final_loss_std = 0.02
    verdict = EXPERIMENTS["scaling"].verdict({"scaled 1/sqrt(d_head)": scaled, "unscaled": unscaled})
    assert verdict.reproduced is True and verdict.observed["worse margin (nats)"] == SCALING_WORSE


def test_the_scaling_and_residual_verdicts_rest_on_the_held_out_gap_and_its_paired_noise():
    """Review: steps 3 and 6 judged the bar and its interval on training loss, held-out loss an aside. A training
    gap far above the bar no longer decides: the held-out gap, paired over the eval's shared windows, must clear it."""
    batches, shape, tokens = (-0.3, 0.0, 0.3, -0.2, 0.2), (8, 32), 2_500  # a short text's eval: noisy windows

    def pair(worse_val: float, **common):
        good = result(final_train_loss=2.20, final_val_loss=2.25, val_batch_losses=tuple(2.25 + b for b in batches),
                      val_tokens=tokens, eval_batch_shape=shape, final_loss_std=0.02, **common)  # fmt: skip
        bad = result(final_train_loss=2.62, final_val_loss=worse_val, final_loss_std=0.02, val_tokens=tokens,
                     val_batch_losses=tuple(worse_val + b * 1.5 for b in batches), eval_batch_shape=shape,
                     **common)  # fmt: skip
        return good, bad

    attention = dict(mean_entropy=1.9, mean_max_weight=0.98, softmax_gain=0.03)
    good, bad = pair(2.36, **attention)  # training 0.42 higher, held-out only 0.11: within its noise
    good.mean_max_weight, good.softmax_gain = 0.4, 0.24
    bad.mean_entropy = 0.05
    good.layer_grad_norms, bad.layer_grad_norms = {"L0.attn": 0.7}, {"L0.attn": 0.3}
    verdict = EXPERIMENTS["scaling"].verdict({"scaled 1/sqrt(d_head)": good, "unscaled": bad})
    said = verdict.sentence
    assert verdict.reproduced is None and "the held-out loss gap is not decided (2.360 unscaled vs 2.250 scaled" in said
    assert "paired over 5 held-out batches" in said and "training loss 2.620 unscaled vs 2.200 scaled" in said
    good, bad = pair(2.36)
    good.layer_grad_norms, bad.layer_grad_norms = {"L0.attn": 0.7}, {"L0.attn": 1e-5}
    verdict = EXPERIMENTS["residual"].verdict({"residual": good, "detached residual": bad})
    assert verdict.reproduced is None and "final held-out loss 2.360 detached vs 2.250 residual" in verdict.sentence


def test_the_mask_experiment_runs_at_a_context_where_no_mask_learns_to_copy():
    # At the demo's context 32 and lr 2e-3 the no-mask run had not found the next token in 300 steps; at context 16
    # and lr 5e-3 it collapses within ~150-350 steps on every seed and corpus measured, so 450 steps leave it room
    # (at 300 the no-mask run on the licence texts, seed 7, had not collapsed yet: BENCHMARKS.md, issue 35).
    for config in EXPERIMENTS["mask"].configs(seed=7).values():
        assert (config.model.max_seq_len, config.train.learning_rate, config.train.max_steps) == (16, 5e-3, 450)


def test_softmax_verdict_without_an_overflow_is_not_reproduced():
    # The issue: the naive run never overflowed, and the box was green.
    runs = {"stable softmax": result(initial_loss=4.2, final_train_loss=2.5), "naive softmax": result(initial_loss=4.2)}
    verdict = EXPERIMENTS["softmax"].verdict(runs)
    assert verdict.reproduced is False and "did not overflow" in verdict.sentence


# ---------------------------------------------------------------- the static shape table and the memory estimate


def test_shape_drift_shows_both_messages():
    model = TinyGPT(TransformerConfig(vocab_size=10, hidden_dim=16, num_layers=1, num_heads=2, max_seq_len=8))
    rows = shape_drift_cases(model)
    assert len(rows) == 4
    assert all(row["with contract"].startswith("ShapeError: idx") for row in rows)
    assert "max_seq_len=8" in rows[1]["with contract"]
    assert not any(row["without contract"].startswith("ShapeError") for row in rows)


def test_memory_rows_grow_with_the_square_of_the_context():
    small = {r["category"]: r["bytes"] for r in memory_rows(TransformerConfig(max_seq_len=64), 12, measure=False)}
    large = {r["category"]: r["bytes"] for r in memory_rows(TransformerConfig(max_seq_len=128), 12, measure=False)}
    assert large["attention (T²)"] == 4 * small["attention (T²)"]
    assert large["optimizer state (AdamW m, v)"] > small["optimizer state (AdamW m, v)"]  # position table grows
    assert {r["source"] for r in memory_rows(TransformerConfig(), 12, measure=False)} == {"estimated (fp32)"}


# ---------------------------------------------------------------- health checks: pass, FAIL, not enough data


@pytest.fixture(scope="module")
def trained(tiny_text):
    trainer, records = train(tiny_text, 30)
    x, y = trainer.corpus.get_batch("val", 2, torch.Generator().manual_seed(0))
    return trainer, records, x, y


def test_health_checks_pass_on_a_correct_model_and_say_what_they_measured(trained):
    trainer, records, x, y = trained
    checks = {c.name: c for c in run_health_checks(trainer.model, x, y, records, 1.0)}
    for name in (
        "attention rows sum to 1",
        "no future leak",
        "gradients reach every parameter",
        "gradient carried down the residual stream",
        "initial loss close to ln(vocab)",
        "shape contracts",
        "gradient norm finite",
    ):
        assert checks[name].outcome == PASS, (name, checks[name])
    assert checks["no future leak"].value == 0.0
    assert all(c.threshold and c.detail for c in checks.values())


def test_attention_rows_check_fails_when_rows_do_not_sum_to_one(trained):
    _, _, x, _ = trained
    torch.manual_seed(0)
    vocab = trained[0].model.config.vocab_size
    sizes = dict(vocab_size=vocab, hidden_dim=32, num_layers=1, num_heads=2, max_seq_len=32)
    assert check_attention_rows(TinyGPT(TransformerConfig(**sizes)), x).outcome == PASS
    drifted = built(sizes, shape_bug="softmax_dim")  # the bug attached to the built model, as a run's is
    check = check_attention_rows(drifted, x)
    assert check.outcome == FAIL and check.value > 1e-4


def test_leak_check_fails_under_a_leaky_mask(trained):
    trainer, _, x, _ = trained
    trainer.model.config.mask = "off_by_one"
    try:
        assert check_no_future_leak(trainer.model, x).outcome == FAIL
    finally:
        trainer.model.config.mask = "causal"


def test_gradient_reach_check_fails_for_a_frozen_parameter(trained):
    trainer, _, x, y = trained
    weight = trainer.model.blocks[0].attn.qkv.weight
    weight.requires_grad_(False)
    try:
        check = check_gradients_reach_every_parameter(trainer.model, x, y)
    finally:
        weight.requires_grad_(True)
    assert check.outcome == FAIL and "blocks.0.attn.qkv.weight" in check.detail


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_detached_residual_fails_the_stream_check_which_every_parameter_still_passes(seed):
    # A review's detached 4-layer run passed "gradients reach every parameter": its lowest gradient, ~1e-8, is still
    # one. The stream check compares the gradient at the stream's bottom with its top: ~1 or more when the skip
    # path carries it, orders of magnitude less when it is cut.
    torch.manual_seed(seed)
    sizes = dict(vocab_size=40, hidden_dim=32, num_layers=4, num_heads=2, max_seq_len=16)
    x, y = torch.randint(0, 40, (4, 16)), torch.randint(0, 40, (4, 16))
    healthy = check_gradient_carried_down_the_stream(built(sizes), x, y)
    assert healthy.outcome == PASS and healthy.value >= 1.0, healthy
    detached = built(sizes, detach_residual=True)
    assert check_gradients_reach_every_parameter(detached, x, y).outcome == PASS  # what it could not see
    cut = check_gradient_carried_down_the_stream(detached, x, y)
    assert cut.outcome == FAIL and cut.value < 1e-2 and "detached residual" in cut.detail, cut
    assert all(p.grad is None for p in detached.parameters())  # the check leaves no gradient behind


def test_initial_loss_check_fails_outside_its_tolerance(trained):
    trainer, _, x, y = trained
    assert check_initial_loss(trainer.model, x, y).outcome == PASS
    assert check_initial_loss(trainer.model, x, y, tolerance=1e-6).outcome == FAIL


def test_shape_contract_check_fails_without_the_door_check(trained, monkeypatch):
    trainer, _, _, _ = trained
    monkeypatch.setattr(trainer.model, "_check_input", lambda *a, **k: None)
    monkeypatch.setattr(trainer.model.config, "max_seq_len", 31)  # a longer input then fits the position table
    assert check_shape_contracts(trainer.model).outcome == FAIL


def test_gradient_norm_checks_fail_on_clipping_that_hides_a_rising_loss_and_on_nan_and_wait_for_data():
    # An earlier issue: "finite and under the clip: pass" with a last pre-clip norm of 1.74 against a clip of 1. A
    # spike now and then passes (the lesson's correct model FAILed for 2 clipped steps of 20); clipping as a rule
    # FAILs only while the loss rises (a review: "20 of the last 20 steps clipped: FAIL" on a correct run whose
    # Gradients page said clipping this often under AdamW does not mean the rate is too high).
    records = [{"grad_norm": 0.6, "loss": 2.0}] * 19 + [{"grad_norm": 1.74, "loss": 2.0}]
    check = grad_clip_check([r["grad_norm"] for r in records], 1.0)
    assert check.name == "clipping not hiding a rising loss"
    assert check.outcome == PASS and "largest pre-clip norm 1.74" in check.detail and "1 of the last 20" in check.detail
    rng = random.Random(1)
    falling = [3.0 - 0.02 * i + rng.gauss(0, 0.01) for i in range(50)]
    often = grad_clip_check([0.6] * 16 + [1.74] * 4, 1.0, losses=falling)
    assert often.outcome == PASS and often.value == 4 and "4 of the last 20 steps clipped, as a rule" in often.detail
    rising = grad_clip_check([0.6] * 16 + [1.74] * 4, 1.0, losses=falling[::-1])
    assert rising.outcome == FAIL and "while the loss rises" in rising.detail, rising.detail
    assert grad_clip_check([1.74] * 20, 1.0, losses=falling[:5]).outcome == NOT_ENOUGH  # the loss not yet judged
    assert grad_clip_check([0.5] * 20, 1.0).outcome == PASS
    assert grad_clip_check([0.5] * 20, 1.0).detail.endswith("the gradient stayed under the clip")  # no spikes said
    assert grad_clip_check([0.5] * 2, 1.0).outcome == NOT_ENOUGH
    finite = {c.name: c for c in check_training_metrics([{"grad_norm": math.nan, "loss": 2.0}] * 30, 1.0)}
    assert finite["gradient norm finite"].outcome == FAIL
    assert check_training_metrics([], 1.0)[0].outcome == NOT_ENOUGH
    assert "clipping not hiding a rising loss" not in {c.name for c in check_training_metrics(records, 0.0)}


def test_loss_trend_passes_only_a_decrease_beyond_the_noise():
    rng = random.Random(0)
    noisy = [rng.gauss(0, 0.03) for _ in range(50)]
    # The issue: "loss still decreasing: pass" for 1.778 -> 1.802.
    rising_a_little = [1.778 + n for n in noisy[:25]] + [1.802 + n for n in noisy[25:]]
    check = loss_trend_check(rising_a_little)
    assert check.outcome == FAIL and check.value > 0
    assert loss_trend_check([3.0 - 0.01 * i + n for i, n in enumerate(noisy)]).outcome == PASS
    assert loss_trend_check([1.0 + 0.05 * i for i in range(40)]).outcome == FAIL
    assert "plateau" in loss_trend_check([2.0 + n for n in noisy]).detail
    assert loss_trend_check([3.0, 2.9, 2.8]).outcome == NOT_ENOUGH


# ---------------------------------------------------------------- every pitfall reproduces (slow)


# Where a pitfall shows early, shorter runs than the app's (BENCHMARKS.md measures the app's settings on 5 seeds);
# scaling, mask, warmup and residual need the app's full length (at 100-150 the "none" mask has not learned to cheat,
# the warmup plateau is still forming, and the detached first layer's gradient has not yet fallen to ~1e-7).
# About 40 s of CPU per seed, ~2 minutes for all, on one thread.
TEST_OVERRIDES = {
    "scaling": {},  # at 100 steps the gap (0.15 on seed 7) is still inside 3 sigma of the runs' noise (0.19)
    "mask": {},
    "warmup": {},
    "residual": {},
    "softmax": dict(max_steps=120),
    "shape_drift": dict(max_steps=100),
    "memory": {},
}
TEST_SEEDS = (1337, 7, 1)


def judge_seed(job: tuple[str, int, str, str]) -> tuple[int, bool | None, str, str, str]:
    """One seed of one pitfall, in a worker process: (seed, reproduced, expected, observed, sentence)."""
    from tinygpt.lab.results import run_experiment

    key, seed, folder, shakespeare = job
    os.environ["TINYGPT_SHAKESPEARE"] = shakespeare
    _, verdict = run_experiment(EXPERIMENTS[key], seed, Path(folder), overrides=TEST_OVERRIDES.get(key, {}))
    return seed, verdict.reproduced, verdict.expected, verdict.observed, verdict.sentence


@pytest.fixture(scope="module")
def pitfall_seeds(shakespeare_path, tmp_path_factory):
    """{(key, seed): future} of every pitfall's seeds, all queued at once on one pool of two processes (one thread
    each, run_experiment's), the longest first. A pool per pitfall ran its three seeds in two rounds, the third
    alone on one core: 7 pitfalls x 2 rounds. Spawned, not forked: a fork of a process whose OpenMP threads ran
    can hang. Queued when the first of these tests asks, so `-m "not slow"` never starts it."""
    keys = [k for k in EXPERIMENTS if k != "memory" or torch.cuda.is_available()]
    order = ("scaling", "warmup", "mask", "position", "residual", "shape_drift", "softmax")  # measured, longest first
    keys.sort(key=lambda k: order.index(k) if k in order else len(order))
    root = tmp_path_factory.mktemp("pitfall_seeds")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield {(key, seed): pool.submit(judge_seed, (key, seed, str(root / key / str(seed)), str(shakespeare_path)))
               for key in keys for seed in TEST_SEEDS}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("key", list(EXPERIMENTS))
def test_every_pitfall_reproduces_on_three_seeds(key, pitfall_seeds):
    if key == "memory" and not torch.cuda.is_available():
        pytest.skip("on CPU the memory demo is allocation counts, never judged (test_the_cpu_memory_demo_...)")
    for seed, reproduced, expected, observed, sentence in (pitfall_seeds[key, s].result() for s in TEST_SEEDS):
        assert reproduced is True, (key, seed, sentence, observed)
        assert expected and observed and sentence


def test_a_lab_experiment_runs_and_is_probed_on_the_users_own_text(tmp_path):
    """Issue 23 finding 2, the part the mask experiment needs on a second corpus: `checkpoint_probe` failed on any
    source="text" run with "the text is empty" (its reloaded config names the corpus by hash, in corpus.txt)."""
    from tinygpt.lab.results import run_experiment

    text = "the quick brown fox jumps over the lazy dog, and then it sleeps. " * 40
    results, verdict = run_experiment(
        EXPERIMENTS["mask"], 3, tmp_path, source="text", text=text, overrides=dict(max_steps=12)
    )
    assert all(r.leak is not None and r.no_peek_loss is not None for r in results.values())
    assert results["causal"].leak == 0.0 and results["none"].leak > 0
    assert verdict.reproduced is not None and verdict.sentence


# ---------------------------------------------------------------- issue 23, finding 7: red verdicts that hold up


def test_a_no_warmup_run_that_diverges_is_the_pitfall_not_a_run_that_does_not_stall():
    """Issue 23 finding 7: no warmup at lr 1e-2 diverging at step 50 got "no warmup does not stall ... Diverged:
    no warmup, lr 1e-2". Diverging is the strongest form of the pitfall; its final loss is not measured."""
    runs = {label: result(mid_loss=2.7, final_train_loss=2.4, final_loss_std=0.02, final_val_loss=2.45)
            for label in EXPERIMENTS["warmup"].variants}  # fmt: skip
    runs["no warmup, lr 1e-2"] = result("diverged", 50, final_train_loss=3.9, diverged_step=50)
    verdict = EXPERIMENTS["warmup"].verdict(runs)
    assert verdict.reproduced is True, verdict.sentence
    assert "does not stall" not in verdict.sentence and "diverged at step 50" in verdict.sentence
    assert "3.900" not in verdict.sentence  # the loss from before it broke is not "the end"
    # The control diverging at the demo lr: red, and the sentence names the clause that failed.
    runs["no warmup, lr 2e-3"] = result("diverged", 80, final_train_loss=2.9, diverged_step=80)
    verdict = EXPERIMENTS["warmup"].verdict(runs)
    assert verdict.reproduced is False
    assert "Failed: at lr 2e-3, the two final held-out losses within 0.05 nats" in verdict.sentence
    assert "no warmup diverged at step 80" in verdict.sentence and "makes no difference" not in verdict.sentence


def test_a_causal_leak_of_1e_7_is_printed_with_the_digits_that_make_it_red():
    """Issue 23 finding 7: causal leak 1e-7 failed "leak == 0" while the sentence printed "leak 0.0000"."""
    causal = result(final_train_loss=2.4, leak=1e-7, no_peek_loss=2.3, final_loss_std=0.04)
    off = result(final_train_loss=0.25, leak=10.0, no_peek_loss=5.6, final_loss_std=0.05)
    none = result(final_train_loss=0.19, leak=6.0, no_peek_loss=3.1, final_loss_std=0.03)
    verdict = EXPERIMENTS["mask"].verdict({"causal": causal, "off_by_one": off, "none": none})
    assert verdict.reproduced is False
    assert "leak 1e-07" in verdict.sentence and "0.0000" not in verdict.sentence
    assert "Failed: causal's leak score exactly 0." in verdict.sentence


def test_a_diverged_unscaled_run_makes_no_claim_about_attention_it_never_measured():
    """Issue 23 finding 7: an unscaled run that went NaN got "is not near one-hot (max weight n/a)"."""
    scaled = result(mean_entropy=2.1, mean_max_weight=0.3, softmax_gain=0.2, final_train_loss=2.3)
    scaled.layer_grad_norms = {"L0.attn": 0.3}
    unscaled = result("diverged", 40, diverged_step=40, nonfinite_tensor="L0.attn.weights")
    verdict = EXPERIMENTS["scaling"].verdict({"scaled 1/sqrt(d_head)": scaled, "unscaled": unscaled})
    assert "n/a" not in verdict.sentence and "is not near one-hot" not in verdict.sentence
    assert "not measured: the unscaled run diverged at step 40" in verdict.sentence
    assert verdict.reproduced is None and verdict.status == "not enough data"


def test_every_red_verdict_names_the_clause_that_failed():
    scaled, unscaled = saturated_but_better()
    verdict = EXPERIMENTS["scaling"].verdict({"scaled 1/sqrt(d_head)": scaled, "unscaled": unscaled})
    failed = verdict.sentence.split("Failed: ")[1]
    assert "final held-out loss at least 0.10 nats higher" in failed and "near one-hot" not in failed  # it held
    # larger attention gradients unscaled: a consequence seen on Shakespeare, measured and not seen, not a failure
    assert "smaller attention gradients unscaled" not in failed and verdict.not_seen == (GRADIENTS,)
    assert "Smaller attention gradients unscaled: measured: not seen on this text (it was on Tiny Shakespeare)" in (
        verdict.sentence
    )
    runs = {"stable softmax": result(initial_loss=4.2, final_train_loss=2.5), "naive softmax": result(initial_loss=4.2)}
    verdict = EXPERIMENTS["softmax"].verdict(runs)
    assert "Failed: the naive run diverged at a named step and tensor" in verdict.sentence
    good = result(final_train_loss=2.3, final_val_loss=2.3, final_loss_std=0.03, layer_grad_norms={"L0.attn": 0.5})
    bad = result(final_train_loss=2.35, final_val_loss=2.35, final_loss_std=0.03, layer_grad_norms={"L0.attn": 1e-5})
    verdict = EXPERIMENTS["residual"].verdict({"residual": good, "detached residual": bad})
    assert verdict.reproduced is False and "Failed: a final held-out loss at least 0.10 nats higher detached" in (
        verdict.sentence
    )
    noisy = result(final_train_loss=2.6, final_val_loss=2.6, final_loss_std=0.5, layer_grad_norms={"L0.attn": 1e-5})
    verdict = EXPERIMENTS["residual"].verdict({"residual": good, "detached residual": noisy})  # 0.3 worse, noisy
    assert verdict.reproduced is None and "the interval -0.04–0.64 straddles the bar 0.10" in verdict.sentence


def test_the_cpu_memory_demo_is_allocation_counts_never_a_reproduced_pitfall():
    """Issue 23 finding 6: on CPU the demo counts fresh allocations against reused buffers (churn), which says
    nothing about fragmentation; it is labelled as counts and not counted as reproduced."""
    from tinygpt.lab.verdict import CPU_COUNTS_ONLY
    from tinygpt.ui.teach import pitfall_checks as lesson
    from tinygpt.ui.teach.lesson_checks import Evidence

    verdict = EXPERIMENTS["memory"].verdict(allocation_churn(1337, device="cpu"))
    assert verdict.reproduced is None and verdict.status == CPU_COUNTS_ONLY
    assert verdict.sentence.startswith("Allocation counts on CPU, not fragmentation")
    # each side named (a review read "holding 8.4 MB at peak against 7.2 MB")
    assert re.search(r"at most [\d.]+ MB live at once, against [\d.]+ MB for the fresh tensors", verdict.sentence)
    verdicts = {k: {"reproduced": True, "sentence": ""} for k in lesson.PITFALLS}
    verdicts["memory"] = {"reproduced": None, "sentence": verdict.sentence, "undecided": verdict.undecided}
    check = lesson.all_pitfalls(Evidence(verdicts=verdicts))
    said = "; the eighth, Memory fragmentation, is measured, not trained: allocation counts only on CPU, not judged."
    assert check.passed is True and check.text.startswith("7 of the 7 trained pitfalls reproduced: Unscaled")
    assert f"No positional embedding{said}" in check.text  # the titles belong to the count, not to "not judged"
    verdicts["scaling"] = {"reproduced": None, "sentence": "", "undecided": "not enough data"}
    assert lesson.all_pitfalls(Evidence(verdicts=verdicts)).passed is None


# ---------------------------------------------------------------- issue 23, finding 2: the lab on the user's own text


OWN_TEXT = "the quick brown fox jumps over the lazy dog, and then it sleeps. " * 40


def test_every_lab_path_that_reloads_a_text_run_gets_its_text_back(tmp_runs):
    """Issue 23 finding 2: a "text" run's reloaded config names its corpus by hash (the text is in corpus.txt), and
    the health checklist and the induction-head ablation built their corpus from it: "the text is empty"."""
    from helpers import tiny_config

    from tinygpt.lab import induction
    from tinygpt.runs.loop import run_training
    from tinygpt.runs.reader import RunReader
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.experiments import lab

    config = tiny_config(OWN_TEXT)
    with RunStore(tmp_runs).create(config.to_dict(), owner="app") as writer:
        run_dir = writer.run_dir
    assert run_training(run_dir, config) == "finished"
    reader = RunReader(run_dir)
    reader.poll()
    assert reader.config()["data"]["text"] == ""  # the corpus lives in corpus.txt
    rows = {r["check"]: r for r in lab.health_rows(str(run_dir), reader.checkpoints()[-1], reader.metrics)}
    assert rows["no future leak"]["result"] == "pass"
    ablation = induction.induction_ablation(run_dir, "L1H0")
    assert all(isinstance(v, float) and math.isfinite(v) for v in ablation.values()), ablation


def test_bench_pitfalls_takes_a_text_file_and_refuses_a_bad_one_in_one_line(tmp_path, capsys, monkeypatch):
    from tinygpt.bench import pitfalls as bench_pitfalls

    seen = []
    monkeypatch.setattr(bench_pitfalls, "measure", lambda e, seeds, source, text="": seen.append((source, text)) or [])
    monkeypatch.setattr(bench_pitfalls, "table", lambda rows: "")
    own = tmp_path / "own.txt"
    own.write_text(OWN_TEXT, encoding="utf-8")
    bench_pitfalls.main(["--experiments", "mask", "--seeds", "1", "--text-file", str(own)])
    assert seen == [("text", OWN_TEXT)]
    capsys.readouterr()
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    (tmp_path / "empty.txt").write_text("")
    for name, said in [
        ("missing.txt", "No such file or directory"),
        ("latin1.txt", "is not UTF-8 text (byte 0xe9 at offset 3)"),
        ("empty.txt", "cannot train the mask experiment: the text is empty"),
    ]:
        assert bench_pitfalls.main(["--experiments", "mask", "--text-file", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "Traceback" not in err, err


# ---------------------------------------------------------------- no positional embedding (the worked example)


def test_no_positions_is_reproduced_only_when_the_reference_learned_and_the_held_out_gap_clears_the_noise():
    """Judged on the held-out gap paired over the eval's shared windows (as steps 3 and 6), training loss beside."""
    judge, shape, tokens = EXPERIMENTS["position"].judge, (32, 32), 3_600
    batches = (-0.02, 0.0, 0.02, -0.01, 0.01)

    def run(train: float, val: float, spread: float = 1.0, **fields) -> RunResult:
        windows = tuple(val + b * spread for b in batches)
        held = dict(val_tokens=tokens, val_batch_losses=windows, eval_batch_shape=shape)
        return result(final_train_loss=train, final_loss_std=0.02, final_val_loss=val, **held, **fields)

    good = run(1.25, 1.30, initial_loss=3.4)
    verdict = judge({"learned positions": good, "no positions": run(2.45, 2.50, spread=1.5)})
    assert verdict.reproduced is True, verdict.sentence
    said = verdict.sentence
    assert "held-out loss ended at 2.500 no positions vs 1.300 learned (the bar: at least 0.30 higher)" in said
    assert "paired over 5 held-out batches" in said and "Training loss 2.450 no positions vs 1.250 learned" in said

    # The sceptic's case: training 1.2 nats apart, held-out only 0.10: the training gap no longer decides
    close = judge({"learned positions": good, "no positions": run(2.45, 1.40, spread=1.5)})
    assert close.reproduced is False, close.sentence
    assert "Failed: without positions, a final held-out loss at least 0.30" in close.sentence

    noisy = judge({"learned positions": good, "no positions": run(2.45, 1.70, spread=40.0)})
    assert noisy.reproduced is None and "straddles the bar 0.30" in noisy.sentence

    unrecorded = judge({"learned positions": result(initial_loss=3.4, final_train_loss=1.25, final_loss_std=0.01),
                        "no positions": result(final_train_loss=2.45, final_loss_std=0.01)})  # fmt: skip
    assert unrecorded.reproduced is None and "held-out loss not recorded" in unrecorded.sentence

    untrained = run(3.0, 3.0, initial_loss=3.4)
    verdict = judge({"learned positions": untrained, "no positions": run(3.5, 3.6)})
    assert verdict.reproduced is False and "the task is not learned" in verdict.sentence


def test_a_held_out_clause_is_decided_by_its_paired_noise_not_by_its_sign():
    """Review: the warmup and position verdicts' held-out clause was "gap > 0": a held-out gap of +0.01 on a short
    text counted as the held-out loss showing the pitfall. Now its interval must lie above 0."""
    from tinygpt.lab.verdict import held_out

    shape, tokens, batches = (8, 32), 2_500, (-0.3, 0.0, 0.3, -0.2, 0.2)

    def run(val: float, spread: float) -> RunResult:
        return result(final_val_loss=val, val_tokens=tokens, eval_batch_shape=shape,
                      val_batch_losses=tuple(val + b * spread for b in batches))  # fmt: skip

    shown, words = held_out(run(2.26, 1.5), run(2.25, 1.0))
    assert shown is None and "straddles zero" in words and words.startswith("held-out loss 2.260 vs 2.250")
    shown, words = held_out(run(2.90, 1.5), run(2.25, 1.0))
    assert shown is True and "clears zero: the order only, the verdict judges its own bar)" in words
    assert held_out(run(2.0, 1.5), run(2.25, 1.0))[0] is False
    assert held_out(result(), run(2.25, 1.0)) == (None, "held-out loss not recorded")


def test_the_no_positions_experiment_runs_on_a_task_that_needs_order_whatever_corpus_is_asked():
    configs = EXPERIMENTS["position"].configs(seed=3, source="shakespeare")
    assert {c.data.source for c in configs.values()} == {"synthetic:copy"}
    assert [c.interventions.zeroed_probes for c in configs.values()] == ["", "hook_pos"]


def test_trained_is_a_share_of_the_first_loss_so_the_copy_task_counts_too():
    """Issue 23 (the corpora x seeds matrix): on the copy task the stable softmax ran cleanly from 3.405 to 2.740 in
    200 steps (its random first half keeps the loss high that early) and the verdict said it "did not train on
    cleanly", because "trained" meant 1 nat down, a number from Tiny Shakespeare (4.2 -> 2.5)."""
    stable = result(initial_loss=3.405, final_train_loss=2.740, steps=200)
    naive = result("diverged", 68, diverged_step=68, nonfinite_tensor="blocks.1.attn.hook_weights")
    verdict = EXPERIMENTS["softmax"].verdict({"stable softmax": stable, "naive softmax": naive})
    assert verdict.reproduced is True and "trained on to step 200" in verdict.sentence
    stuck = result(initial_loss=3.405, final_train_loss=3.2, steps=200)  # 0.2 down: under a tenth of 3.405
    verdict = EXPERIMENTS["softmax"].verdict({"stable softmax": stuck, "naive softmax": naive})
    assert verdict.reproduced is False and "its loss down by at least 0.34 nats (a tenth)" in verdict.sentence


def test_the_initial_loss_check_builds_its_fresh_model_with_the_same_interventions():
    sizes = dict(vocab_size=10, hidden_dim=16, num_layers=1, num_heads=2, max_seq_len=8)
    idx = torch.randint(0, 10, (2, 8), generator=torch.Generator().manual_seed(0))
    checked = built(sizes, shape_bug="softmax_dim", shape_contracts=True)
    with pytest.raises(ShapeError, match="softmax row sums"):  # the fresh copy has the bug and its contract too
        check_initial_loss(checked, idx, idx)


def test_an_experiment_knows_its_own_runs_by_their_variant_settings():
    from tinygpt.lab.registry import EXPERIMENTS

    scaling, residual = EXPERIMENTS["scaling"], EXPERIMENTS["residual"]
    own = {label: c.to_dict() for label, c in scaling.configs(seed=7, overrides={"max_steps": 30}).items()}
    assert scaling.not_its_runs(own) is None  # another seed and length: still its runs
    others = {label: c.to_dict() for label, c in zip(scaling.variants, residual.configs().values(), strict=True)}
    assert "attn_scale" in scaling.not_its_runs(others)
    swapped = dict(zip(own, reversed(own.values()), strict=True))  # its runs in the wrong order
    assert scaling.not_its_runs(swapped) is not None
    assert scaling.not_its_runs({}) is None  # nothing known against them: the page says what is missing


def test_warmup_that_falls_behind_early_and_catches_up_is_said_so_not_does_not_stall():
    """Reviews: "no warmup does not stall" beside a third-of-the-way gap (0.42-0.51) that had cleared its bar, then
    "was not compared" of two runs compared, and "catches up" would have been said of a run that ended better."""
    from tinygpt.lab.pitfalls.warmup import _stall_words

    assert _stall_words(True, False) == "falls behind a third of the way in, then catches up by the end"
    assert _stall_words(True, None) == "falls behind a third of the way in; the end is not decided"
    assert _stall_words(True, False, ended_better=True) == (
        "falls behind a third of the way in, then ends better, the other way round")  # fmt: skip
    assert _stall_words(False, True) == "keeps up a third of the way in, then ends worse"
    assert _stall_words(False, False) == "does not stall" and _stall_words(True, True).startswith("stalls")
    assert _stall_words(None, None) == "is not decided a third of the way in; the end is not decided"


def test_a_memorised_pair_says_its_unmet_clauses_without_a_failed_verdict():
    """A review: "Not enough data: no verdict" above "... Failed: a final held-out loss at least 0.10 nats higher"."""
    scaled, unscaled = saturated_but_better()
    # the scaled run's held-out loss rose 0.5 from its best and ended 1.0 above its training loss: memorised
    scaled = dataclasses.replace(scaled, best_val_loss=scaled.final_val_loss - 0.5, final_eval_train_loss=1.3)
    verdict = EXPERIMENTS["scaling"].verdict({"scaled 1/sqrt(d_head)": scaled, "unscaled": unscaled})
    assert verdict.reproduced is None and verdict.sentence.startswith("Not enough data to judge"), verdict.sentence
    assert " Failed: " not in verdict.sentence and "Not met on these runs (not judged, as said): " in verdict.sentence
