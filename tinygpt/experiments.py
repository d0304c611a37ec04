"""The pitfall lab: each classic transformer failure as a pair (or trio) of runs that differ in one setting.

An `Experiment` names the runs ("correct" first), the settings each overrides on a shared base, what to look for,
and a `verdict(results)` that reads the runs' own numbers (final losses, attention entropy, gradient norms,
states) and says what happened. The verdicts are computed, never canned: if the broken run happens to behave, the
verdict says so.

`results` given to a verdict is {label: RunResult}, built by the app (or a test) from the run folders.

Also here, because they are experiments without training: `shape_drift_cases()` (what a shape contract says next to
what PyTorch would have said without it) and `memory_rows()` (bytes of parameters, gradients, AdamW state and
activations as batch and context grow; measured on CUDA when there is one).

Left out: experiments that need more than a few minutes of CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .attention import attention_entropy
from .config import RunConfig, preset
from .errors import TinyGPTError
from .model import TinyGPT


@dataclass
class RunResult:
    """What a verdict may look at, read from one run folder."""

    state: str
    steps: int
    final_train_loss: float | None  # mean of the last 20 step losses
    final_val_loss: float | None
    max_loss_early: float | None  # worst loss in the first 10% of steps
    clip_events_early: int  # clipped steps in the first 10% of steps
    mean_entropy: float | None  # mean attention entropy (nats) over heads and rows, latest snapshot
    mean_max_weight: float | None  # mean of each attention row's largest weight, latest snapshot
    layer_grad_norms: dict[str, float] = field(default_factory=dict)  # mean of the last 20 steps, per group
    leak: float | None = None  # leak_score of the final model (0 = no future leak)
    diverged_step: int | None = None
    sample: str = ""


@dataclass
class Experiment:
    key: str
    title: str
    what_to_look_for: str
    variants: dict[str, dict[str, Any]]  # label -> overrides of the base preset; the first one is "correct"
    verdict: Callable[[dict[str, RunResult]], str]
    base: dict[str, Any] = field(default_factory=dict)

    def configs(self, seed: int = 1337, source: str = "shakespeare", text: str = "") -> dict[str, RunConfig]:
        """One RunConfig per variant: same data and seed, one setting apart."""
        out = {}
        for label, overrides in self.variants.items():
            settings = {**self.base, **overrides, "seed": seed, "source": source}
            if source == "text":
                settings["text"] = text
            out[label] = preset("demo", **settings)
        return out


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _verdict_scaling(results: dict[str, RunResult]) -> str:
    good, bad = results["scaled 1/sqrt(d_head)"], results["unscaled"]
    parts = []
    if good.mean_entropy is not None and bad.mean_entropy is not None:
        lower = bad.mean_entropy < good.mean_entropy
        parts.append(
            f"Mean attention entropy: {_fmt(bad.mean_entropy)} nats unscaled vs {_fmt(good.mean_entropy)} scaled "
            + ("— the unscaled softmax is closer to one-hot (saturated)." if lower else "— no saturation visible yet.")
        )
    if good.mean_max_weight is not None and bad.mean_max_weight is not None:
        parts.append(f"Mean max weight per row: {_fmt(bad.mean_max_weight)} vs {_fmt(good.mean_max_weight)}.")
    g_attn = _mean_attn_norm(good)
    b_attn = _mean_attn_norm(bad)
    if g_attn and b_attn:
        parts.append(f"Attention-block gradient norm: {b_attn:.3g} unscaled vs {g_attn:.3g} scaled.")
    parts.append(f"Final train loss: {_fmt(bad.final_train_loss)} unscaled vs {_fmt(good.final_train_loss)} scaled.")
    return " ".join(parts)


def _mean_attn_norm(result: RunResult) -> float | None:
    values = [v for k, v in result.layer_grad_norms.items() if k.endswith(".attn")]
    return sum(values) / len(values) if values else None


def _verdict_mask(results: dict[str, RunResult]) -> str:
    causal = results["causal"]
    parts = []
    for label in ("off_by_one", "none"):
        if label not in results:
            continue
        leaky = results[label]
        cheat = (
            leaky.final_train_loss is not None
            and causal.final_train_loss is not None
            and leaky.final_train_loss < causal.final_train_loss
        )
        parts.append(
            f"{label}: train loss {_fmt(leaky.final_train_loss)} vs causal {_fmt(causal.final_train_loss)}"
            + (" — lower, because it can read the answer." if cheat else " — not lower (yet).")
            + f" Leak detector: {_fmt(leaky.leak, 4)} (causal: {_fmt(causal.leak, 4)})."
        )
    parts.append("At generation time there is no future to peek at, so the leaking models' samples fall apart.")
    return " ".join(parts)


def _verdict_warmup(results: dict[str, RunResult]) -> str:
    good, bad = results["warmup 100 steps"], results["no warmup"]
    return (
        f"Worst loss in the first 10% of steps: {_fmt(bad.max_loss_early)} without warmup vs "
        f"{_fmt(good.max_loss_early)} with. Clipped steps early on: {bad.clip_events_early} vs "
        f"{good.clip_events_early}. Final train loss: {_fmt(bad.final_train_loss)} vs {_fmt(good.final_train_loss)}"
        + (f"; the no-warmup run {bad.state}" if bad.state in ("diverged", "failed") else "")
        + "."
    )


def _verdict_residual(results: dict[str, RunResult]) -> str:
    good, bad = results["residual"], results["detached residual"]
    first_good = good.layer_grad_norms.get("L0.attn")
    first_bad = bad.layer_grad_norms.get("L0.attn")
    ratio = (first_bad / first_good) if first_good and first_bad is not None else None
    return (
        f"First-layer attention gradient norm: {first_bad:.3g} detached vs {first_good:.3g} with the residual"
        + (f" ({ratio:.1e}x)." if ratio is not None else ".")
        + f" Final train loss: {_fmt(bad.final_train_loss)} vs {_fmt(good.final_train_loss)}."
        if first_good is not None and first_bad is not None
        else "Waiting for gradient norms."
    )


def _verdict_softmax(results: dict[str, RunResult]) -> str:
    good, bad = results["stable softmax"], results["naive softmax"]
    if bad.state == "diverged":
        return (
            f"The naive softmax overflowed: the run was paused as diverged at step {bad.diverged_step}, "
            f"with its parameters untouched. The stable softmax run is {good.state} at step {good.steps} "
            f"(train loss {_fmt(good.final_train_loss)})."
        )
    return f"The naive run has not overflowed yet (state {bad.state}, step {bad.steps}); the scores stay below ~88."


EXPERIMENTS: dict[str, Experiment] = {
    e.key: e
    for e in [
        Experiment(
            key="scaling",
            title="Unscaled attention logits",
            what_to_look_for=(
                "q·k grows with d_head, so without 1/sqrt(d_head) the scores are large and the softmax saturates: "
                "each query stares at one key (entropy falls toward 0, max weight toward 1) and gradients through the "
                "softmax shrink. A wide head (d_head 64 here) makes it bite."
            ),
            base=dict(hidden_dim=128, num_heads=2, num_layers=2, max_steps=300),
            variants={
                "scaled 1/sqrt(d_head)": dict(attn_scale="head_dim"),
                "unscaled": dict(attn_scale="none"),
                "1/sqrt(d_model)": dict(attn_scale="hidden_dim"),
            },
            verdict=_verdict_scaling,
        ),
        Experiment(
            key="mask",
            title="Causal mask misalignment",
            what_to_look_for=(
                "With an off-by-one mask each position can see the very token it must predict, so training loss falls "
                "'too well'. The leak detector changes future tokens and measures how much earlier logits move (0 "
                "under a correct mask). Samples are garbage: at generation time there is no future to copy."
            ),
            base=dict(max_steps=300),
            variants={"causal": dict(mask="causal"), "off_by_one": dict(mask="off_by_one"), "none": dict(mask="none")},
            verdict=_verdict_mask,
        ),
        Experiment(
            key="warmup",
            title="No learning-rate warmup",
            what_to_look_for=(
                "Adam's first updates use noisy second-moment estimates; at a high learning rate they kick the "
                "weights hard. Without warmup, watch the early loss spike, the gradient norm jump and clip events "
                "pile up in the first steps."
            ),
            base=dict(learning_rate=1e-2, min_lr=1e-3, max_steps=300),
            variants={"warmup 100 steps": dict(warmup_steps=100), "no warmup": dict(warmup_steps=0)},
            verdict=_verdict_warmup,
        ),
        Experiment(
            key="residual",
            title="Detached residual path",
            what_to_look_for=(
                "The residual stream is the gradient highway to the lower layers. Detach it and gradients reach a "
                "layer only through the sublayers above it, shrinking at each one: the first layer's gradient norm "
                "falls toward zero and the loss stalls."
            ),
            base=dict(num_layers=4, max_steps=300),
            variants={"residual": dict(detach_residual=False), "detached residual": dict(detach_residual=True)},
            verdict=_verdict_residual,
        ),
        Experiment(
            key="softmax",
            title="Unstable softmax",
            what_to_look_for=(
                "exp() overflows float32 above ~88. Subtracting the row max first (what torch.softmax does) changes "
                "nothing mathematically and avoids it. With large scores the naive softmax gives inf/inf = NaN; "
                "the trainer refuses the step, names the tensor, and pauses the run as diverged."
            ),
            base=dict(attn_scale="none", attn_scale_mult=8.0, max_steps=200),
            variants={"stable softmax": dict(softmax="stable"), "naive softmax": dict(softmax="naive")},
            verdict=_verdict_softmax,
        ),
    ]
}


# ---------------------------------------------------------------- shape drift


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


# ---------------------------------------------------------------- memory


def memory_rows(model_config, batch_size: int, measure: bool = True) -> list[dict[str, Any]]:
    """Bytes by category for one training step; estimated (fp32) and labelled so, or measured on CUDA."""
    c = model_config
    B, T, C, H, L, V = batch_size, c.max_seq_len, c.hidden_dim, c.num_heads, c.num_layers, c.vocab_size
    params = (V + T) * C + L * (12 * C * C + (13 * C if c.bias else 0) + (4 * C if c.bias else 2 * C)) + C
    f32 = 4
    # Saved activations per layer for backward: ~ LN in/out, qkv, attention out, proj, MLP in/act (4C each) ...
    per_layer_acts = B * T * (2 * C + 3 * C + C + C + 2 * C + 4 * C + 4 * C + C)
    attention = L * B * H * T * T * 2  # scores and weights (B, H, T, T) per layer: the T^2 term
    rows = [
        {"category": "parameters", "bytes": params * f32},
        {"category": "gradients", "bytes": params * f32},
        {"category": "optimizer state (AdamW m, v)", "bytes": 2 * params * f32},
        {"category": "activations", "bytes": (L * per_layer_acts + B * T * (2 * C + 2 * V)) * f32},
        {"category": "attention (T²)", "bytes": attention * f32},
    ]
    for row in rows:
        row["source"] = "estimated (fp32)"
    if measure and torch.cuda.is_available():
        rows.append(
            {
                "category": "measured peak (CUDA)",
                "bytes": measure_cuda_peak(model_config, batch_size),
                "source": "torch.cuda.max_memory_allocated",
            }
        )
    return rows


def measure_cuda_peak(model_config, batch_size: int) -> int:
    """Peak bytes allocated by one forward + backward + AdamW step on CUDA."""
    if not torch.cuda.is_available():
        raise TinyGPTError("no CUDA device: memory can only be estimated on this machine.")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = TinyGPT(model_config).cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    idx = torch.randint(0, model_config.vocab_size, (batch_size, model_config.max_seq_len), device="cuda")
    logits = model(idx, return_attention=True)[0]
    torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), idx.view(-1)).backward()
    optimizer.step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del model, optimizer, logits
    torch.cuda.empty_cache()
    return int(peak)


def attention_stats(weights) -> tuple[float, float]:
    """(mean entropy in nats, mean max weight) of attention weights (..., T, S), e.g. a (L, H, T, T) snapshot."""
    w = torch.as_tensor(weights, dtype=torch.float32)
    return float(attention_entropy(w).mean()), float(w.max(-1).values.mean())
