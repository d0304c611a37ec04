"""Model health checks: measured answers to "is this transformer wired correctly and training sanely?"

Each check returns a `Check(name, outcome, value, threshold, detail)`: one of three outcomes (pass, FAIL, or "not
enough data" when there is too little to judge, never a silent pass), the number it measured and the threshold it
was held to, so the app can show "attention rows sum to 1: 2.4e-07 (< 1e-04): pass" rather than a bare tick.
The leak detector is the interesting one: it perturbs every token after position t and measures how far the logits
at positions <= t move. Under a correct causal mask they cannot move at all (exactly 0.0); under "none" or
"off_by_one" they do. `no_peek_loss` scores a model the way generation uses it, each position seeing only its past.

Left out: checks that need a reference model (e.g. comparing with a known-good checkpoint).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..config import LEAKING_MASKS
from ..errors import ShapeError
from ..interventions import attach, attached, contracts_on
from ..model import TinyGPT
from ..probes import attention_forward
from .checks import FAIL, NOT_ENOUGH, PASS, Check, outcome_of
from .step_checks import (  # noqa: F401 (the step checks, read from here by the app and the tests)
    HELD_OUT_RISE,
    TREND_THRESHOLD,
    TREND_WINDOW,
    check_training_metrics,
    grad_clip_check,
    held_out_check,
    loss_trend_check,
    schedule_trend_check,
)


@torch.no_grad()
def leak_score(model: TinyGPT, idx: torch.Tensor, positions: list[int] | None = None, seed: int = 0) -> float:
    """Max |change| of logits at positions <= t when every token after t is replaced; 0.0 means no leak.

    idx (B, T). Averaging is wrong here: a leak through one position is still a leak, so we take the max.
    """
    was_training = model.training
    model.eval()
    try:
        B, T = idx.shape
        generator = torch.Generator().manual_seed(seed)
        positions = positions or sorted({max(0, T // 4), T // 2, max(0, T - 2)})
        base = model(idx)  # (B, T, V)
        worst = 0.0
        for t in positions:
            changed = idx.clone()
            future = changed[:, t + 1 :]
            # Shift every future token to a different id, so each one really changes.
            offset = torch.randint(1, model.config.vocab_size, future.shape, generator=generator)
            changed[:, t + 1 :] = (future + offset.to(idx.device)) % model.config.vocab_size
            moved = (model(changed)[:, : t + 1] - base[:, : t + 1]).abs().max().item()
            worst = max(worst, moved)
        return worst
    finally:
        model.train(was_training)


@torch.no_grad()
def no_peek_loss(model: TinyGPT, idx: torch.Tensor, targets: torch.Tensor) -> float:
    """Mean cross-entropy when each prediction sees only its past, as in generation: position t is predicted by
    running the model on idx[:, : t + 1] alone, so a mask (or a bug) that let training read the future cannot help.

    idx, targets (B, T). Under a correct causal mask this equals the ordinary loss; a leaking model's is far higher.
    Costs T forwards of growing length.
    """
    was_training = model.training
    model.eval()
    try:
        losses = []
        for t in range(idx.shape[1]):
            last = model(idx[:, : t + 1])[:, -1].float()  # (B, t + 1, V) -> (B, V): the newest position only
            losses.append(F.cross_entropy(last, targets[:, t], reduction="none"))  # (B,)
        return float(torch.stack(losses).mean())  # (T, B) -> scalar
    finally:
        model.train(was_training)


ROW_SUM_TOLERANCE = 1e-4  # float32 softmax rows sum to 1 within ~1e-7; 1e-4 leaves headroom for fp16 snapshots
INITIAL_LOSS_TOLERANCE = 0.3  # nats: a fresh GPT-2-style init (std 0.02) starts within ~0.1 of ln(vocab)
DEAD_GRAD = 1e-12  # a parameter whose largest gradient entry is below this received no gradient
def check_attention_rows(model: TinyGPT, idx: torch.Tensor) -> Check:
    with torch.no_grad():
        _, maps = attention_forward(model, idx)
    error = max((m.sum(-1) - 1).abs().max().item() for m in maps)
    finite = all(torch.isfinite(m).all() for m in maps)
    detail = (
        f"attention weights in a row add up to at most {error:.2e} away from 1 (a correct row adds up to exactly 1), "
        f"over every layer, head and row of a ({idx.shape[0]}, {idx.shape[1]}) batch"
    )
    if not finite:
        detail += "; some weights are NaN/inf (an unstable softmax overflowed)"
    return Check(
        "attention rows sum to 1",
        outcome_of(finite and error < ROW_SUM_TOLERANCE),
        error,
        f"< {ROW_SUM_TOLERANCE:.0e}",
        detail,
    )


def check_no_future_leak(model: TinyGPT, idx: torch.Tensor) -> Check:
    score = leak_score(model, idx)
    passed = score == 0.0
    mask = model.config.mask
    # Who lets the future in is said from the mask: under a mask that hides it, the leak is elsewhere (the silent
    # shape bug's softmax over the queries); a review read "the mask 'causal' lets positions see the future"
    cause = (f"the mask '{mask}' lets positions see the future" if mask in LEAKING_MASKS else
             f"the mask '{mask}' hides the future, so something after it mixes positions (a softmax or a sum over "
             "the wrong dimension, a reshape across time)")  # fmt: skip
    detail = (
        f"changing future tokens moved earlier logits by up to {score:.3g}: {cause}"
        if not passed
        else f"earlier logits unchanged (exactly 0) under mask '{mask}'"
    )
    return Check("no future leak", outcome_of(passed), score, "== 0 exactly (max |change| of earlier logits)", detail)


def check_gradients_reach_every_parameter(model: TinyGPT, idx: torch.Tensor, targets: torch.Tensor) -> Check:
    model.zero_grad(set_to_none=True)
    logits = model(idx)
    F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1)).backward()
    dead = [n for n, p in model.named_parameters() if p.grad is None or p.grad.abs().max().item() < DEAD_GRAD]
    model.zero_grad(set_to_none=True)
    total = sum(1 for _ in model.parameters())
    detail = (
        f"all {total} parameter tensors received a gradient"
        if not dead
        else f"{len(dead)} of {total} get no gradient: {', '.join(dead[:4])}"
    )
    return Check(
        "gradients reach every parameter",
        outcome_of(not dead),
        float(len(dead)),
        f"0 tensors with |grad| < {DEAD_GRAD:g}",
        detail,
    )


STREAM_CARRIES = 0.5  # |grad| at the stream's input / at its output: a skip path passes the gradient down whole


def check_gradient_carried_down_the_stream(model: TinyGPT, idx: torch.Tensor, targets: torch.Tensor) -> Check:
    """The residual stream's skip path hands the loss's gradient from the top of the stream to its bottom unchanged,
    and every sublayer adds its own: under a correct stream the gradient at the stream's input is about as large as
    at its output or larger (1.2-47x measured on 1-6 layers, at init and trained). Cut the skip path (a detached
    residual) and the gradient reaches the bottom only through each sublayer's Jacobian, which shrinks it layer
    after layer (1e-3 to 1e-11 measured on 4-6 layers). "Gradients reach every parameter" cannot see this: a
    gradient of 1e-8 is still a gradient (a review's detached 4-layer run passed it)."""
    grads: dict[str, torch.Tensor] = {}

    def keep(name: str):
        def hook(_module, _inputs, out: torch.Tensor) -> None:  # out (B, T, C)
            if out.requires_grad:
                out.register_hook(lambda grad: grads.__setitem__(name, grad))

        return hook

    bottom, top = model.blocks[0].hook_resid_pre, model.blocks[-1].hook_resid_post
    handles = [bottom.register_forward_hook(keep("input")), top.register_forward_hook(keep("output"))]
    try:
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(idx).flatten(0, 1), targets.flatten()).backward()  # logits (B, T, V) -> (B*T, V)
    finally:
        for handle in handles:
            handle.remove()
        model.zero_grad(set_to_none=True)
    layers = len(model.blocks)
    name = "gradient carried down the residual stream"
    bar = f"at least {STREAM_CARRIES:g} (|grad| at its input / output)"  # ">= 0.5" rendered as a quote: "= 0.5"
    if "input" not in grads or "output" not in grads:
        return Check(name, NOT_ENOUGH, None, bar, "the stream's input or output received no gradient to compare")
    top_norm, bottom_norm = float(grads["output"].norm()), float(grads["input"].norm())
    if not (math.isfinite(top_norm) and math.isfinite(bottom_norm)) or top_norm == 0.0:
        return Check(name, NOT_ENOUGH, None, bar, f"the gradient at the stream's output is {top_norm:.3g}: nothing "
                     "to compare the input's with")  # fmt: skip
    carried = bottom_norm / top_norm
    where = f"the loss's gradient at the stream's input (below block 0) is {carried:.3g} times its size at the " \
            f"output (above block {layers - 1})"  # fmt: skip
    detail = (
        f"{where}: the skip path carries it down whole and each sublayer adds its own, so a correct stream reads "
        "about 1 or more"
        if carried >= STREAM_CARRIES
        else f"{where}: it fades on the way down, so the lower layers barely learn. Something cuts the skip path "
        "(a detached residual): the gradient then reaches a layer only through the sublayers above it"
    )
    return Check(name, outcome_of(carried >= STREAM_CARRIES), carried, bar, detail)


def check_initial_loss(
    model: TinyGPT,
    idx: torch.Tensor,
    targets: torch.Tensor,
    tolerance: float = INITIAL_LOSS_TOLERANCE,
    first_step: dict | None = None,
) -> Check:
    """The untrained model should be near-uniform: loss ~ ln(vocab). With the run's `first_step` record (step 1: its
    loss is the initialised model's, on the run's first training batch, before any update), that loss is the run's
    own evidence. Without it, a fresh model of the same config, seeded, with the same permanent interventions, is
    scored on the batch (idx, targets): a review's unseeded fresh model on 4 windows passed and FAILed the same run
    at random (4.025-4.242 against a bar of 4.154), while its own first step had scored 4.312."""
    expected = math.log(model.config.vocab_size)
    bar = f"within {tolerance:g} of ln({model.config.vocab_size}) = {expected:.3f}"
    first = (first_step or {}).get("loss")
    if (first_step or {}).get("step") == 1 and isinstance(first, (int, float)) and math.isfinite(first):
        near = outcome_of(abs(first - expected) < tolerance)
        return Check("initial loss close to ln(vocab)", near, float(first), bar,
                     f"this run's first step scored {first:.3f}: its initialised model, before any update")  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # the same fresh model every time the checklist is read
        fresh = TinyGPT(model.config)
    attach(fresh, attached(model))
    fresh = fresh.to(idx.device).eval()
    with torch.no_grad():
        logits = fresh(idx)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1)).item()
    return Check(
        "initial loss close to ln(vocab)",
        outcome_of(abs(loss - expected) < tolerance),
        loss,
        bar,
        f"a freshly initialised model of this config (seed 0) scores {loss:.3f} on the batch",
    )


def check_shape_contracts(model: TinyGPT) -> Check:
    """The run's own model (its weights and its interventions, a shape bug included) under the shape contracts:
    a forward + backward of the right shape passes every attention contract, and a too-long input is refused at
    the door. It used to test only the door, and read "pass" on the shape-bug run the contracts exist to catch."""
    T = model.config.max_seq_len
    device = next(model.parameters()).device
    idx = torch.randint(0, model.config.vocab_size, (2, T), device=device)
    rule = f"(2, {T}) passes the attention contracts; (2, {T + 1}) refused"
    try:
        with contracts_on(model):
            logits = model(idx)
            logits.float().mean().backward()
    except ShapeError as exc:
        return Check("shape contracts", FAIL, None, rule,
                     f"this run's own model, with the shape contracts on, is refused at (2, {T}): {exc}")  # fmt: skip
    finally:
        model.zero_grad(set_to_none=True)
    try:
        model(torch.zeros(2, T + 1, dtype=torch.long, device=device))
    except ShapeError as exc:
        return Check("shape contracts", PASS, None, rule, f"this run's own model passes every attention contract "
                     f"(q, k, v, the softmax's row sums) at (2, {T}); (2, {T + 1}) is refused: {exc}")  # fmt: skip
    return Check("shape contracts", FAIL, None, rule, f"a sequence of {T + 1} > max_seq_len was not refused")


def run_health_checks(
    model: TinyGPT,
    idx: torch.Tensor,
    targets: torch.Tensor,
    metrics: list[dict] | None = None,
    max_grad_norm: float = 1.0,
    leak_idx: torch.Tensor | None = None,
    first_step: dict | None = None,
) -> list[Check]:
    """All checks on a model and a batch (idx, targets) of shape (B, T); metrics from its run if available. The
    leak is measured on `leak_idx` (B', T) where given (a forward per changed position: fewer windows), else idx;
    the initial loss on the run's `first_step` record where given (check_initial_loss)."""
    checks = [
        check_attention_rows(model, idx),
        check_no_future_leak(model, idx if leak_idx is None else leak_idx),
        check_gradients_reach_every_parameter(model, idx, targets),
        check_gradient_carried_down_the_stream(model, idx, targets),
        check_initial_loss(model, idx, targets, first_step=first_step),
        check_shape_contracts(model),
    ]
    if metrics is not None:
        checks += check_training_metrics(metrics, max_grad_norm)
    return checks
