"""AdamW written out: decoupled weight decay, bias-corrected first and second moments, one fused kernel call.

Why not `torch.optim.AdamW`: its constructor wraps `add_param_group` in `torch._disable_dynamo`, which imports
`torch._dynamo` on first use: 1.2-1.3 s on this 2-core machine, as long as importing torch itself, paid by every
fresh training process (the CLI, torchrun ranks, and the app's worker server at start-up). This class keeps the
same update, the same kernel where the device has one (`torch._fused_adamw_`, the kernel `fused=True` calls) and
the same state layout, so checkpoints written with either load into the other. Tested equal to
`torch.optim.AdamW(fused=True)` bit for bit on CPU, and the explicit path equal to it within float rounding.

The update for each parameter p with gradient g, at step t (1-based), learning rate lr, weight decay wd:

    p   <- p * (1 - lr * wd)                  decoupled decay: shrink the weights, not the gradient
    m   <- beta1 * m + (1 - beta1) * g        first moment (momentum)
    v   <- beta2 * v + (1 - beta2) * g^2      second moment (per-weight scale)
    m^  =  m / (1 - beta1^t)                  bias corrections: m and v start at 0
    v^  =  v / (1 - beta2^t)
    p   <- p - lr * m^ / (sqrt(v^) + eps)

Left out: amsgrad, maximize, sparse gradients, per-parameter-group betas changing mid-run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch

# Devices whose PyTorch build has the fused AdamW kernel for float32 (CPU since 2.4, CUDA since 2.0). MPS gained
# one later, so it takes the explicit path rather than depend on the build.
FUSED_DEVICES = ("cpu", "cuda")


class AdamW:
    """AdamW over parameter groups, with the `torch.optim` interface the trainer and checkpoints use:
    `param_groups` (lr and weight_decay may change between steps), `zero_grad`, `step`, `state_dict`,
    `load_state_dict`."""

    def __init__(
        self,
        groups: Iterable[dict[str, Any]],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        fused: bool | None = None,
    ):
        self.param_groups: list[dict[str, Any]] = []
        for group in groups:
            params = list(group["params"])
            if not params:
                continue
            self.param_groups.append(
                {
                    "params": params,
                    "lr": lr,
                    "betas": tuple(betas),
                    "eps": eps,
                    "weight_decay": group.get("weight_decay", weight_decay),
                }
            )
        # state[p] = {"step": () float32, "exp_avg": like p, "exp_avg_sq": like p}, created on the first step.
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}
        device = self.param_groups[0]["params"][0].device if self.param_groups else torch.device("cpu")
        self.fused = (device.type in FUSED_DEVICES and hasattr(torch, "_fused_adamw_")) if fused is None else fused

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()

    def _slots(self, p: torch.Tensor) -> dict[str, torch.Tensor]:
        slots = self.state.get(p)
        if slots is None:
            slots = {
                "step": torch.zeros((), dtype=torch.float32, device=p.device),
                "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
            }
            self.state[p] = slots
        return slots

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            slots = [self._slots(p) for p in params]
            grads = [p.grad for p in params]
            exp_avgs = [s["exp_avg"] for s in slots]
            exp_avg_sqs = [s["exp_avg_sq"] for s in slots]
            steps = [s["step"] for s in slots]
            beta1, beta2 = group["betas"]
            torch._foreach_add_(steps, 1)
            if self.fused:
                # One pass over memory for all of the update above (the kernel reads t from `steps`).
                torch._fused_adamw_(
                    params, grads, exp_avgs, exp_avg_sqs, [], steps,
                    lr=group["lr"], beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"],
                    eps=group["eps"], amsgrad=False, maximize=False,
                )  # fmt: skip
            else:
                self._explicit_step(params, grads, exp_avgs, exp_avg_sqs, steps, group)

    @staticmethod
    def _explicit_step(params, grads, exp_avgs, exp_avg_sqs, steps, group) -> None:
        """The update of the module docstring, line by line, with foreach ops (a few kernels per line)."""
        lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        t = float(steps[0])  # every parameter of a group steps together: one host read per group
        if wd != 0:
            torch._foreach_mul_(params, 1 - lr * wd)
        torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)  # m <- beta1 m + (1 - beta1) g
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)  # v <- beta2 v + (1 - beta2) g^2
        bias1, bias2 = 1 - beta1**t, 1 - beta2**t
        denom = torch._foreach_sqrt(exp_avg_sqs)
        torch._foreach_div_(denom, math.sqrt(bias2))
        torch._foreach_add_(denom, eps)  # sqrt(v^) + eps
        torch._foreach_addcdiv_(params, exp_avgs, denom, -lr / bias1)

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """The `torch.optim` layout: parameters numbered across groups in order; state keyed by those numbers."""
        state: dict[int, dict[str, torch.Tensor]] = {}
        groups = []
        index = 0
        for group in self.param_groups:
            numbers = []
            for p in group["params"]:
                if p in self.state:
                    state[index] = dict(self.state[p])
                numbers.append(index)
                index += 1
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": numbers})
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups) or any(
            len(saved["params"]) != len(group["params"])
            for saved, group in zip(saved_groups, self.param_groups, strict=True)
        ):
            raise ValueError("the saved optimizer state has different parameter groups than this model")
        saved_state = {int(k): v for k, v in state_dict["state"].items()}
        self.state = {}
        for saved, group in zip(saved_groups, self.param_groups, strict=True):
            for key in ("lr", "eps", "weight_decay"):
                if key in saved:
                    group[key] = saved[key]
            if "betas" in saved:
                group["betas"] = tuple(saved["betas"])
            for number, p in zip(saved["params"], group["params"], strict=True):
                if number in saved_state:
                    slots = saved_state[number]
                    self.state[p] = {
                        "step": torch.as_tensor(slots["step"], dtype=torch.float32).to(p.device).reshape(()),
                        "exp_avg": slots["exp_avg"].to(device=p.device, dtype=p.dtype).clone(),
                        "exp_avg_sq": slots["exp_avg_sq"].to(device=p.device, dtype=p.dtype).clone(),
                    }


# ---------------------------------------------------------------- Muon

# The quintic Newton-Schulz iteration's coefficients (Jordan et al. 2024, "Muon: An optimizer for hidden layers").
# They are tuned so that five steps push every singular value of a norm-1 matrix into roughly [0.7, 1.2] as fast
# as possible, rather than to converge exactly to 1: an update whose singular values are all ~1 is what matters.
NEWTON_SCHULZ_COEFFS = (3.4445, -4.7750, 2.0315)
NEWTON_SCHULZ_STEPS = 5
MUON_RMS_MATCH = 0.2  # a Muon step's RMS is this times lr: about an AdamW step's RMS (see Muon)


def orthogonalize(matrix: torch.Tensor, steps: int = NEWTON_SCHULZ_STEPS) -> torch.Tensor:
    """Approximately U V^T for matrix = U S V^T (its nearest semi-orthogonal matrix), without an SVD.

    Newton-Schulz: after scaling the matrix to Frobenius norm 1 (so every singular value is <= 1), each step maps
    X -> a X + (b A + c A^2) X with A = X X^T. On the SVD that is s -> a s + b s^3 + c s^5 applied to every singular
    value s at once while U and V stay put: small singular values grow, large ones settle near 1. Only matmuls,
    so it costs a few small GEMMs per weight matrix.
    Shapes: matrix (m, n), or a stack (G, m, n) of same-shaped matrices done together (one batched GEMM per line
    instead of G small ones: the optimizer stacks a model's matrices by shape). Worked on as (min, max), so
    A = X X^T is the small (min, min) Gram matrix. A wide matrix (an MLP's (128, 512)) takes the same iteration
    on its Gram matrix alone (`_gram_newton_schulz`), which does the same arithmetic in fewer FLOPs.
    """
    x = matrix.float()
    tall = x.size(-2) > x.size(-1)
    if tall:
        x = x.mT  # (..., n, m) with n < m
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + 1e-7)  # every singular value now <= 1: inside the basin
    m, n = x.size(-2), x.size(-1)
    if newton_schulz_flops(m, n, steps, gram=True) < newton_schulz_flops(m, n, steps, gram=False):
        x = _gram_newton_schulz(x, steps)
    else:
        x = _newton_schulz(x, steps)
    return (x.mT if tall else x).to(matrix.dtype)


def _mm(x: torch.Tensor, y: torch.Tensor, add: torch.Tensor | None = None, beta: float = 1, alpha: float = 1):
    """beta * add + alpha * x @ y for a matrix or a stack: one kernel either way."""
    if add is None:
        return x @ y
    return torch.baddbmm(add, x, y, beta=beta, alpha=alpha) if x.dim() == 3 else torch.addmm(add, x, y, beta=beta,
                                                                                            alpha=alpha)  # fmt: skip


def _newton_schulz(x: torch.Tensor, steps: int) -> torch.Tensor:
    """The iteration as written: x (..., m, n), m <= n, norm <= 1."""
    a, b, c = NEWTON_SCHULZ_COEFFS
    for _ in range(steps):
        gram = x @ x.mT  # (..., m, m)
        poly = _mm(gram, gram, gram, beta=b, alpha=c)  # b A + c A^2
        x = _mm(poly, x, x, beta=a)  # a X + poly X
    return x


def _gram_newton_schulz(x: torch.Tensor, steps: int) -> torch.Tensor:
    """The same iteration carried out on m x m matrices only, for x (..., m, n) with n well above m.

    Every X_k is Q_k X_0 with Q_k a polynomial in A_0 = X_0 X_0^T, so the (m, n) matrix need not be touched until
    the end: with M_k = a I + b A_k + c A_k^2 (symmetric, and commuting with A_k),

        X_{k+1} = M_k X_k          so  Q_{k+1} = M_k Q_k            (m, m)
        A_{k+1} = X_{k+1} X_{k+1}^T = M_k A_k M_k                    (m, m)

    and the result is Q_steps X_0: two (m, n) matmuls in all instead of two per step. For the MLP's (128, 512)
    that is ~45% fewer FLOPs (newton_schulz_flops), the same numbers to float rounding (tests/test_optim.py)."""
    a, b, c = NEWTON_SCHULZ_COEFFS
    eye = torch.eye(x.size(-2), dtype=x.dtype, device=x.device)
    gram = x @ x.mT  # A_0 (..., m, m)
    q = None
    for k in range(steps):
        poly = _mm(gram, gram, gram, beta=b, alpha=c)  # b A + c A^2
        poly = poly + a * eye  # M_k
        q = poly if q is None else poly @ q  # Q_{k+1} = M_k Q_k (Q_0 = I)
        if k < steps - 1:  # the last A is never read
            gram = poly @ gram @ poly  # A_{k+1} = M_k A_k M_k
    return q @ x  # (..., m, m) @ (..., m, n)


def newton_schulz_flops(m: int, n: int, steps: int = NEWTON_SCHULZ_STEPS, gram: bool = False) -> int:
    """Matmul FLOPs of orthogonalizing one (m, n) matrix, m <= n: as written (per step X X^T, A^2 and poly X) or
    on the Gram matrix (A_0 and Q X once; per step A^2, and M Q and M A M but for the first Q and last A)."""
    if not gram:
        return steps * (2 * m * m * n + 2 * m**3 + 2 * m * m * n)
    return 2 * (2 * m * m * n) + 2 * m**3 * (steps + (steps - 1) + 2 * (steps - 1))


class Muon:
    """Muon for the hidden 2-D weights: SGD momentum whose update is orthogonalized before it is applied.

    For each matrix W (m, n) with gradient G, at learning rate lr, momentum mu, weight decay wd:

        B  <- mu * B + G                         momentum buffer
        M  =  G + mu * B                         Nesterov look-ahead
        O  =  orthogonalize(M)                   ~U V^T of M: every direction of the update gets the same size
        W  <- W * (1 - lr * wd) - lr * 0.2 * sqrt(max(m, n)) * O

    Why it trains faster than AdamW on these matrices: a raw gradient (and Adam's update) of a weight matrix is
    nearly low-rank, dominated by a few directions, so most directions barely move. Orthogonalizing gives every
    singular direction of the update the same step, so rare directions learn as fast as common ones.

    The 0.2 * sqrt(max(m, n)) factor (Liu et al. 2025, "Muon is scalable for LLM training"): O has entries of
    RMS 1 / sqrt(max(m, n)), so the step's RMS is 0.2 * lr, about the RMS of an AdamW step at the same lr. One
    learning rate (and one live knob, one schedule) then drives both optimizers of a run.

    Only for >= 2-D hidden weights: embeddings, the (tied) output head and LayerNorm gains stay with AdamW,
    as in the original recipe (an embedding row is a lookup, not a linear map whose directions should be equalized).
    Same interface as `AdamW` above (param_groups with a changing lr, zero_grad, step, state_dict, load_state_dict).
    """

    def __init__(self, params: Iterable[torch.Tensor], lr: float, momentum: float = 0.95, weight_decay: float = 0.0):
        params = list(params)
        if any(p.dim() != 2 for p in params):
            raise ValueError("Muon is for 2-D weight matrices only; give embeddings and gains to AdamW")
        self.param_groups: list[dict[str, Any]] = [
            {"params": params, "lr": lr, "momentum": momentum, "weight_decay": weight_decay}
        ]
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}  # state[p] = {"momentum_buffer": like p}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.param_groups[0]["params"]:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            buffers = [self.state.setdefault(p, {"momentum_buffer": torch.zeros_like(p)})["momentum_buffer"]
                       for p in params]  # fmt: skip
            torch._foreach_mul_(buffers, mu)
            torch._foreach_add_(buffers, grads)  # B <- mu B + G
            looks = torch._foreach_add(grads, buffers, alpha=mu)  # M = G + mu B, the Nesterov look-ahead
            if wd:
                torch._foreach_mul_(params, 1 - lr * wd)
            # Same-shaped matrices (as (min, max): a (512, 128) fc and a (128, 512) proj are one shape) are
            # orthogonalized as one stack: 3 batched iterations for a model's 16 matrices instead of 16.
            by_shape: dict[tuple[int, int], list[int]] = {}
            for i, p in enumerate(params):
                by_shape.setdefault((min(p.shape), max(p.shape)), []).append(i)
            for (_, longest), members in by_shape.items():
                stack = torch.stack([looks[i] if looks[i].size(0) <= looks[i].size(1) else looks[i].mT
                                     for i in members])  # (G, min, max)  # fmt: skip
                updates = orthogonalize(stack).mul_(-lr * MUON_RMS_MATCH * longest**0.5)  # (G, min, max)
                for update, i in zip(updates, members, strict=True):
                    p = params[i]
                    p.add_(update if p.size(0) <= p.size(1) else update.mT)

    def state_dict(self) -> dict[str, Any]:
        """The `torch.optim` layout, like AdamW's."""
        group = self.param_groups[0]
        state = {i: dict(self.state[p]) for i, p in enumerate(group["params"]) if p in self.state}
        meta = {k: v for k, v in group.items() if k != "params"}
        return {"state": state, "param_groups": [{**meta, "params": list(range(len(group["params"])))}]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        (saved,) = state_dict["param_groups"]
        group = self.param_groups[0]
        if len(saved["params"]) != len(group["params"]):
            raise ValueError("the saved Muon state has a different number of matrices than this model")
        for key in ("lr", "momentum", "weight_decay"):
            if key in saved:
                group[key] = saved[key]
        saved_state = {int(k): v for k, v in state_dict["state"].items()}
        self.state = {
            p: {"momentum_buffer": saved_state[i]["momentum_buffer"].to(device=p.device, dtype=p.dtype).clone()}
            for i, p in enumerate(group["params"])
            if i in saved_state
        }


class OptimizerPair:
    """Two optimizers stepped as one (Muon on the hidden matrices, AdamW on the rest): the trainer sets the lr of
    every group in `param_groups` each step, so one schedule and one learning-rate knob drive both."""

    def __init__(self, *optimizers):
        self.optimizers = optimizers
        self.param_groups = [group for optimizer in optimizers for group in optimizer.param_groups]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none)

    def step(self) -> None:
        for optimizer in self.optimizers:
            optimizer.step()

    def state_dict(self) -> dict[str, Any]:
        """One `torch.optim` layout for both (what checkpoints store): parameters numbered across the optimizers'
        groups in order, each group tagged with its optimizer's class name."""
        state: dict[int, dict[str, torch.Tensor]] = {}
        groups: list[dict[str, Any]] = []
        offset = 0
        for optimizer in self.optimizers:
            inner = optimizer.state_dict()
            for index, slots in inner["state"].items():
                state[int(index) + offset] = slots
            for group in inner["param_groups"]:
                groups.append({**group, "optimizer": type(optimizer).__name__,
                               "params": [i + offset for i in group["params"]]})  # fmt: skip
            offset += sum(len(group["params"]) for group in optimizer.param_groups)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved_groups = list(state_dict["param_groups"])
        saved_state = {int(k): v for k, v in state_dict["state"].items()}
        names = [g.get("optimizer") for g in saved_groups]
        expected = [type(o).__name__ for o in self.optimizers for _ in o.param_groups]
        if names != expected:
            raise ValueError(f"the saved optimizer state is for {names}, this run uses {expected}")
        offset = 0
        for optimizer in self.optimizers:
            count = len(optimizer.param_groups)
            mine, saved_groups = saved_groups[:count], saved_groups[count:]
            size = sum(len(group["params"]) for group in mine)
            optimizer.load_state_dict(
                {
                    "state": {i - offset: v for i, v in saved_state.items() if offset <= i < offset + size},
                    "param_groups": [{**g, "params": [i - offset for i in g["params"]]} for g in mine],
                }
            )
            offset += size
