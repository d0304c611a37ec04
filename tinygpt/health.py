"""Model health checks: measured pass/fail answers to "is this transformer wired correctly and training sanely?"

Each check returns a `Check(name, passed, value, detail)` with the number it measured, so the app can show
"attention rows sum to 1: max error 2.4e-07 (pass)" rather than a bare tick. The leak detector is the interesting
one: it perturbs every token after position t and measures how far the logits at positions <= t move. Under a
correct causal mask they cannot move at all (exactly 0.0); under "none" or "off_by_one" they do.

Left out: checks that need a reference model (e.g. comparing with a known-good checkpoint).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .errors import ShapeError
from .model import TinyGPT


@dataclass
class Check:
    name: str
    passed: bool
    value: float | None
    detail: str


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


def check_attention_rows(model: TinyGPT, idx: torch.Tensor) -> Check:
    with torch.no_grad():
        _, maps = model(idx, return_attention=True)
    error = max((m.sum(-1) - 1).abs().max().item() for m in maps)
    finite = all(torch.isfinite(m).all() for m in maps)
    passed = finite and error < 1e-4
    return Check(
        "attention rows sum to 1",
        passed,
        error,
        f"max |row sum - 1| = {error:.2e}"
        + ("" if finite else "; some weights are NaN/inf (an unstable softmax overflowed)"),
    )


def check_no_future_leak(model: TinyGPT, idx: torch.Tensor) -> Check:
    score = leak_score(model, idx)
    passed = score == 0.0
    detail = (
        f"changing future tokens moved earlier logits by up to {score:.3g}: the mask "
        f"'{model.config.mask}' lets positions see the future"
        if not passed
        else f"earlier logits unchanged (exactly 0) under mask '{model.config.mask}'"
    )
    return Check("no future leak", passed, score, detail)


def check_gradients_reach_every_parameter(model: TinyGPT, idx: torch.Tensor, targets: torch.Tensor) -> Check:
    model.zero_grad(set_to_none=True)
    logits = model(idx)
    F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1)).backward()
    dead = [n for n, p in model.named_parameters() if p.grad is None or p.grad.abs().max().item() < 1e-12]
    model.zero_grad(set_to_none=True)
    passed = not dead
    detail = "every parameter received a gradient" if passed else f"{len(dead)} get no gradient: {', '.join(dead[:4])}"
    return Check("gradients reach every parameter", passed, float(len(dead)), detail)


def check_initial_loss(model: TinyGPT, idx: torch.Tensor, targets: torch.Tensor, tolerance: float = 0.3) -> Check:
    """A fresh model of the same config should be near-uniform: loss ~ ln(vocab)."""
    fresh = TinyGPT(model.config).to(idx.device).eval()
    with torch.no_grad():
        logits = fresh(idx)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1)).item()
    expected = math.log(model.config.vocab_size)
    passed = abs(loss - expected) < tolerance
    return Check(
        "initial loss close to ln(vocab)",
        passed,
        loss,
        f"initial loss {loss:.3f} vs ln({model.config.vocab_size}) = {expected:.3f}",
    )


def check_shape_contracts(model: TinyGPT) -> Check:
    """A forward + backward on random data of the right shape passes; a wrong one is refused by the contract."""
    T = model.config.max_seq_len
    device = next(model.parameters()).device
    idx = torch.randint(0, model.config.vocab_size, (2, T), device=device)
    try:
        logits = model(idx)
        logits.float().mean().backward()
        model.zero_grad(set_to_none=True)
    except ShapeError as exc:
        return Check("shape contracts", False, None, str(exc))
    try:
        model(torch.zeros(2, T + 1, dtype=torch.long, device=device))
    except ShapeError:
        return Check("shape contracts", True, None, f"(2, {T}) passes; (2, {T + 1}) is refused with a clear message")
    return Check("shape contracts", False, None, f"a sequence of {T + 1} > max_seq_len was not refused")


def check_training_metrics(metrics: list[dict], max_grad_norm: float) -> list[Check]:
    """Checks on a run's recent step records: finite grad norm under the clip; loss still falling."""
    checks = []
    recent = [m for m in metrics[-50:] if m.get("loss") is not None]
    norms = [m.get("grad_norm") for m in metrics[-50:]]
    if not metrics:
        return [Check("gradient norm finite", False, None, "no steps yet")]
    finite = all(isinstance(n, (int, float)) and math.isfinite(n) for n in norms)
    last_norm = norms[-1] if finite else None
    under = finite and (max_grad_norm <= 0 or last_norm <= max_grad_norm * 10)
    checks.append(
        Check(
            "gradient norm finite and under the clip",
            finite and under,
            last_norm,
            "non-finite gradient norms in the last 50 steps"
            if not finite
            else f"last pre-clip norm {last_norm:.3g} (clip at {max_grad_norm:g})",
        )
    )
    checks.append(loss_trend_check([m["loss"] for m in recent]))
    return checks


def loss_trend_check(losses: list[float]) -> Check:
    """Compare the mean of the older and the newer half of recent losses: falling, plateau, or diverging."""
    if len(losses) < 10:
        return Check("loss still decreasing", True, None, "too few steps to judge yet")
    half = len(losses) // 2
    older, newer = sum(losses[:half]) / half, sum(losses[half:]) / (len(losses) - half)
    change = newer - older
    if change > 0.05 * max(older, 1e-8):
        return Check("loss still decreasing", False, change, f"loss rising: {older:.3f} -> {newer:.3f} (diverging?)")
    if abs(change) < 0.002 * max(older, 1e-8):
        return Check("loss still decreasing", False, change, f"plateau: {older:.3f} -> {newer:.3f}")
    return Check("loss still decreasing", True, change, f"{older:.3f} -> {newer:.3f} over the last {len(losses)} steps")


def run_health_checks(
    model: TinyGPT,
    idx: torch.Tensor,
    targets: torch.Tensor,
    metrics: list[dict] | None = None,
    max_grad_norm: float = 1.0,
) -> list[Check]:
    """All checks on a model and a batch (idx, targets) of shape (B, T); metrics from its run if available."""
    checks = [
        check_attention_rows(model, idx),
        check_no_future_leak(model, idx),
        check_gradients_reach_every_parameter(model, idx, targets),
        check_initial_loss(model, idx, targets),
        check_shape_contracts(model),
    ]
    if metrics is not None:
        checks += check_training_metrics(metrics, max_grad_norm)
    return checks
