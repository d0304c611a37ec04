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
