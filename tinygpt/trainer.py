"""One optimisation step at a time: AdamW, warmup + cosine LR, clipping by global norm, and what it all did.

`Trainer.step()` runs forward, backward, gradient diagnostics, clipping and the AdamW update, and returns a plain
`dict` record (no tensors) that a run folder can store as one JSON line:

    step, loss, lr, grad_norm (before clipping), clipped, layer_grad_norms {group: norm},
    update_ratios {group: ||dW|| / ||W||}, tokens_per_s, step_ms, applied, nonfinite

Groups are "emb", "L0.attn", "L0.mlp", ..., "ln_f" (see `param_group_name`).

Speed matters because the product is watching training live, so diagnostics are cheap by construction: all
per-parameter gradient norms come from one `torch._foreach_norm`, are summed per group with one `index_add_`, and
reach the host together with the loss in a single `.tolist()`; the clip reuses that norm instead of computing it
again; AdamW (tinygpt/optim.py) uses the fused kernel where the device has one.

Safety: a non-finite loss or gradient is never applied. The record says which tensor went bad first, and the
parameters are left exactly as they were.

Live knobs (may change between steps, see `set_knob`): learning_rate, warmup_steps, min_lr, max_grad_norm,
weight_decay, and the model's attn_scale, attn_scale_mult, mask, window. Coupled knobs move together here, in one
place: a new learning_rate moves min_lr with it, keeping their ratio (so min_lr <= learning_rate always holds).

Precision: float32, or bfloat16 autocast on a CUDA GPU (`TrainConfig.precision`, tinygpt.device.autocast_dtype);
the weights, gradients and optimizer state stay float32 either way.

Left out: gradient accumulation, float16 with loss scaling, learning-rate finders.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

from .config import LIVE_TRAIN_KNOBS, TrainConfig, check_live_knob
from .device import autocast_dtype
from .errors import ResourceError
from .model import TinyGPT
from .optim import AdamW, Muon, OptimizerPair
from .schedule import lr_at, moved_floor

EVAL_SEED = 1_000_003  # the eval windows' seed: one set of windows for every run (see evaluate_model)


def param_group_name(name: str) -> str:
    """Which chart line a parameter belongs to: "emb", "L{i}.attn", "L{i}.mlp" or "ln_f"."""
    if name.startswith(("tok_emb", "pos_emb")):
        return "emb"
    if name.startswith("blocks."):
        layer = name.split(".")[1]
        part = "attn" if (".attn." in name or ".ln_1." in name) else "mlp"
        return f"L{layer}.{part}"
    return "ln_f"


def group_names(num_layers: int) -> list[str]:
    return ["emb", *[f"L{i}.{part}" for i in range(num_layers) for part in ("attn", "mlp")], "ln_f"]


def make_optimizer(model: TinyGPT, config: TrainConfig) -> AdamW | OptimizerPair:
    """AdamW with weight decay on matrices (>= 2-D) only: decaying biases and LayerNorm gains only hurts.

    With optimizer="muon" the blocks' weight matrices (qkv, proj, fc, mlp.proj) go to Muon instead, and AdamW
    keeps the embeddings (also the tied output head) and the gains. Every group carries `decays` so the
    weight_decay knob knows which groups it moves.
    """
    named = list(model.named_parameters())
    hidden = [p for n, p in named if config.optimizer == "muon" and n.startswith("blocks.") and p.dim() == 2]
    taken = {id(p) for p in hidden}
    decay = [p for _, p in named if p.dim() >= 2 and id(p) not in taken]
    no_decay = [p for _, p in named if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    # Built with the schedule's step-0 rate, the rate Trainer._step sets before the first update (it sets every
    # step's rate from lr_at): the value given here is the value used, not a peak overwritten before it is used.
    lr = lr_at(0, config.learning_rate, config.min_lr, config.warmup_steps, config.max_steps)
    # tinygpt.optim.AdamW uses the fused kernel where the device has one: ~8x faster than the foreach update on CPU
    # (measured: 0.7 vs 6.3 ms for 2M params).
    adamw = AdamW(groups, lr=lr, betas=(config.beta1, config.beta2))
    adamw.param_groups[0]["decays"] = True
    adamw.param_groups[1]["decays"] = False
    if not hidden:
        return adamw
    muon = Muon(hidden, lr=lr, weight_decay=config.weight_decay)
    muon.param_groups[0]["decays"] = True
    return OptimizerPair(muon, adamw)


SPLITS = ("train", "val")  # what an eval scores by default: both splits (a run's loop asks for "val" alone between)


class Trainer:
    """Owns the optimiser, the batch generator and the step counter of one model on one corpus."""

    def __init__(self, model: TinyGPT, config: TrainConfig, corpus, device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        self.model = model.to(self.device)
        # What the training step calls: the model itself, or a DistributedDataParallel wrapper around it
        # (tinygpt/runs/distributed.py) that averages gradients across ranks. Evaluation and snapshots use `model`.
        self.forward_model = self.model
        self.config = config  # shared and mutable: live knobs edit it between steps
        self.corpus = corpus
        self.optimizer = make_optimizer(model, config)
        # bfloat16 autocast on a CUDA GPU (config.precision "auto"), float32 elsewhere: tinygpt.device.
        self.autocast = autocast_dtype(self.device, config.precision)
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True  # float32 matmuls that remain use TF32 tensor cores
        self.step_count = 0  # optimisation steps taken so far
        # Its own generator (evaluation has a fixed one of its own, `evaluate_model`), so a run resumed from a
        # checkpoint (which restores `batch_generator`) sees exactly the batches it would have seen.
        self.batch_generator = torch.Generator().manual_seed(config.seed)
        self.named_params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.groups = group_names(model.config.num_layers)
        group_of = [self.groups.index(param_group_name(n)) for n, _ in self.named_params]
        self._group_index = torch.tensor(group_of, device=self.device)  # (P,) parameter -> group
        self.track_update_ratios = True  # costs one parameter copy per step; the app shows it on Gradients
        self._before: list[torch.Tensor] | None = None  # buffers for that copy, allocated on first use
        # config.weight_average > 0: a running average of the trained parameters, one tensor per entry of
        # named_params, that every eval scores (swapped in for it: `averaged_weights`). None: evals score the
        # trained weights.
        self.average: list[torch.Tensor] | None = None
        if config.weight_average > 0:
            self.average = [p.detach().clone() for _, p in self.named_params]

    # ------------------------------------------------------------------ knobs

    def set_knob(self, name: str, value: Any) -> list[tuple[str, Any, Any]]:
        """Change a live knob before the next step; returns (knob, old, new) for the knob asked for (first, even
        when the value is unchanged) and for every knob that moved with it. Validates like the config does and
        raises ConfigError (changing nothing) for a name that is not live or a value the config would refuse.

        Coupling: learning_rate carries min_lr along at the same ratio (1e-3 with min_lr 1e-4, then 2e-3 gives
        min_lr 2e-4), so the cosine still decays to the same fraction of the peak and a lower peak can never
        fall below the floor. Setting min_lr itself moves only min_lr (it must stay <= learning_rate).
        """
        check_live_knob(name)
        target = self.config if name in LIVE_TRAIN_KNOBS else self.model.config
        old = getattr(target, name)
        if type(old) is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        changes = {name: value}
        if name == "learning_rate" and value != old and isinstance(value, float) and math.isfinite(value):
            changes["min_lr"] = moved_floor(target.min_lr, old, value)
        dataclasses.replace(target, **changes)  # runs __post_init__ on the pair: raises ConfigError if invalid
        out = []
        for knob, new in changes.items():
            before = getattr(target, knob)
            if knob == name or new != before:
                out.append((knob, before, new))
            setattr(target, knob, new)
        if name == "weight_decay":
            for group in self.optimizer.param_groups:
                if group.get("decays"):
                    group["weight_decay"] = value
        return out

    # ------------------------------------------------------------------ steps

    def current_lr(self) -> float:
        c = self.config
        return lr_at(self.step_count, c.learning_rate, c.min_lr, c.warmup_steps, c.max_steps)

    def loss_on(self, x: torch.Tensor, y: torch.Tensor, model=None) -> torch.Tensor:
        logits = (self.model if model is None else model)(x)  # (B, T, V); a compiled module has no truth value
        return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))  # mean over B*T positions

    def step(self) -> dict[str, Any]:
        """One optimisation step; returns its record. Raises ResourceError on out-of-memory."""
        try:
            return self._step()
        except torch.OutOfMemoryError as exc:
            self.optimizer.zero_grad(set_to_none=True)
            raise ResourceError(
                f"the {self.device.type} device ran out of memory at step {self.step_count + 1}: "
                "lower batch_size or max_seq_len (attention memory grows with its square), or hidden_dim."
            ) from exc

    def _step(self) -> dict[str, Any]:
        started = time.perf_counter()
        model, cfg = self.model, self.config
        if not model.training:  # Module.train() walks every submodule: ~0.4 ms, 4% of a demo step
            model.train()
        lr = self.current_lr()
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        x, y = self.corpus.get_batch("train", cfg.batch_size, self.batch_generator, self.device)  # (B, T) each
        with torch.autocast(self.device.type, self.autocast or torch.bfloat16, enabled=self.autocast is not None):
            loss = self.loss_on(x, y, self.forward_model)  # matmuls in bf16 under autocast; the loss in float32
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()

        params = [p for _, p in self.named_params]
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        param_norms = torch.stack(torch._foreach_norm(grads))  # (P,) one norm per parameter tensor
        group_sq = torch.zeros(len(self.groups), device=self.device).index_add_(0, self._group_index, param_norms**2)
        total_norm = group_sq.sum().sqrt()  # the global norm that clipping looks at
        # One host sync for everything the record needs and for the finite check.
        host = torch.cat([loss.detach().float().view(1), total_norm.view(1), group_sq.sqrt()]).tolist()
        loss_value, grad_norm, layer_norms = host[0], host[1], host[2:]

        record: dict[str, Any] = {
            "step": self.step_count + 1,
            "loss": loss_value,
            "lr": lr,
            "grad_norm": grad_norm,
            "clipped": False,
            "layer_grad_norms": dict(zip(self.groups, layer_norms, strict=True)),
            "update_ratios": {},
            "applied": True,
            "nonfinite": None,
        }
        if not (math.isfinite(loss_value) and math.isfinite(grad_norm)):
            # Never apply a poisoned update: leave the parameters as they are and say where it went wrong.
            record["applied"] = False
            record["nonfinite"] = self._first_nonfinite(x, y, loss_value, param_norms)
            self.optimizer.zero_grad(set_to_none=True)
            self.step_count += 1
            return self._finish(record, started)

        if cfg.max_grad_norm > 0 and grad_norm > cfg.max_grad_norm:
            torch._foreach_mul_(grads, cfg.max_grad_norm / (grad_norm + 1e-6))  # rescale the whole gradient
            record["clipped"] = True
        if self.track_update_ratios:
            # no_grad: the buffers outlive the step, and a copy from the parameters (leaves that require grad)
            # outside it chains each step's CopyBackwards / SubBackward0 onto the last: an autograd graph that
            # grows every step and is never freed (issue 22, finding 12: the workers' memory that did not level off).
            with torch.no_grad():
                # The update is (weights before) - (weights after): copy into buffers kept between steps (no
                # allocation per step), step, subtract in place, and take all norms in two foreach calls.
                if self._before is None:
                    self._before = [torch.empty_like(p) for p in params]
                torch._foreach_copy_(self._before, params)
                self.optimizer.step()
                torch._foreach_sub_(self._before, params)  # now -(update), same norm
                delta_sq = torch.zeros(len(self.groups), device=self.device).index_add_(
                    0, self._group_index, torch.stack(torch._foreach_norm(self._before)) ** 2
                )
                weight_sq = torch.zeros(len(self.groups), device=self.device).index_add_(
                    0, self._group_index, torch.stack(torch._foreach_norm(params)) ** 2
                )
                ratios = (delta_sq.sqrt() / weight_sq.sqrt().clamp_min(1e-12)).tolist()
                record["update_ratios"] = dict(zip(self.groups, ratios, strict=True))
        else:
            self.optimizer.step()
        if self.average is not None:
            with torch.no_grad():  # average <- d * average + (1 - d) * weights, in place
                torch._foreach_lerp_(self.average, params, 1.0 - cfg.weight_average)
        self.step_count += 1
        return self._finish(record, started)

    def _finish(self, record: dict[str, Any], started: float) -> dict[str, Any]:
        elapsed = time.perf_counter() - started
        tokens = self.config.batch_size * self.model.config.max_seq_len
        record["step_ms"] = elapsed * 1000.0
        record["tokens_per_s"] = tokens / elapsed if elapsed > 0 else 0.0
        return record

    def _first_nonfinite(
        self, x: torch.Tensor, y: torch.Tensor, loss_value: float, param_norms: torch.Tensor
    ) -> dict[str, Any]:
        """Name the first tensor that went non-finite: a forward activation if the loss did; else the first module
        output whose gradient did, in the backward pass's own order (a diagnostic forward + backward of the same
        batch). The first parameter with a non-finite gradient is kept too, but it is first only in the order the
        parameters were registered: a review's softmax verdict named tok_emb.weight.grad, which every backward
        failure names, as "the first non-finite tensor"."""
        if not math.isfinite(loss_value):
            name = first_nonfinite_activation(self.model, x)
            return {"where": "forward", "tensor": name or "loss", "value": str(loss_value)}
        bad = (~torch.isfinite(param_norms)).nonzero()
        parameter = f"{self.named_params[int(bad[0])][0]}.grad" if len(bad) else "unknown"
        try:
            module = first_nonfinite_gradient(self.model, lambda: self.loss_on(x, y, self.model))
        finally:
            self.optimizer.zero_grad(set_to_none=True)  # the diagnostic's gradients are no update either
        tensor = f"the gradient of {module}" if module else parameter
        return {"where": "backward", "tensor": tensor, "parameter": parameter, "value": "non-finite"}

    def evaluate(self, batches: int | None = None, splits: tuple[str, ...] = SPLITS) -> dict[str, Any]:
        """Mean loss of each split in `splits` on the fixed eval windows, and the val batches' own losses
        (`evaluate_model`)."""
        with self.averaged_weights():
            return evaluate_model(
                self.model,
                self.corpus,
                self.config.batch_size,
                batches or self.config.eval_batches,
                self.device,
                splits,
            )

    @contextmanager
    def averaged_weights(self) -> Iterator[None]:
        """The model holds the running average of its weights inside the block (config.weight_average), and its
        trained weights again after it; without an average, nothing changes."""
        if self.average is None:
            yield
            return
        params = [p for _, p in self.named_params]
        with torch.no_grad():
            trained = [p.detach().clone() for p in params]
            torch._foreach_copy_(params, self.average)
        try:
            yield
        finally:
            with torch.no_grad():
                torch._foreach_copy_(params, trained)

    # ------------------------------------------------------------------ state for checkpoints

    def state(self) -> dict[str, Any]:
        """Everything besides the weights that a resumed run needs to continue the same curve."""
        out = {
            "step": self.step_count,
            "optimizer": self.optimizer.state_dict(),
            "batch_generator": self.batch_generator.get_state(),
        }
        if self.average is not None:
            out["average"] = self.average
        return out

    def load_state(self, state: dict[str, Any]) -> None:
        self.step_count = int(state["step"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.batch_generator.set_state(state["batch_generator"])
        if self.average is not None:  # a checkpoint from before the average was kept: it starts from these weights
            saved = state.get("average")
            if saved is not None and [t.shape for t in saved] == [t.shape for t in self.average]:
                with torch.no_grad():
                    torch._foreach_copy_(self.average, [t.to(self.device) for t in saved])
            else:
                self.average = [p.detach().clone() for _, p in self.named_params]


@torch.no_grad()
def evaluate_model(
    model: TinyGPT, corpus, batch_size: int, batches: int, device="cpu", splits: tuple[str, ...] = SPLITS
) -> dict[str, Any]:
    """Mean loss over `batches` batches of (batch_size, T) windows of each split in `splits` ("train", "val"), the
    same windows every time (a `<split>_loss` for each), and what the held-out mean's noise is computed from.

    The windows come from a generator seeded with EVAL_SEED on every call, whatever the run's seed: every eval of
    every run with the same corpus, batch size and context reads the same text. So a wiggle in the val curve is
    the model changing, not a new draw of batches, and runs in Compare (other seeds, other optimizers, the
    speedrun's recipes) are scored on identical windows.

    Returns `<split>_loss` (a float) for each split asked, and for the held-out split: val_batch_losses (`batches`
    floats, each batch's mean over its B x T predictions, in draw order: two runs' lists pair batch by batch, the same
    windows), val_tokens (the held-out split's length) and batch_shape [B, T]; train_batch_losses and train_tokens
    the same for the training split where asked. A difference of two runs' held-out losses is
    judged with these (tinygpt.lab.verdict.held_out_noise says how the overlap of windows is counted).
    """
    generator = torch.Generator().manual_seed(EVAL_SEED)
    was_training = model.training
    model.eval()
    out: dict[str, Any] = {}
    for split in SPLITS:
        total = torch.zeros((), device=device)  # a running sum: eval batches cost time, never memory
        losses = torch.zeros(batches, device=device)  # (batches,): one device-to-host copy at the end, not one a batch
        for i in range(batches):
            x, y = corpus.get_batch(split, batch_size, generator, device)  # (B, T) each
            if split not in splits:  # drawn all the same: the next split's windows stay the ones it always reads
                continue
            logits = model(x)  # (B, T, V)
            losses[i] = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)).float()  # mean of B*T
            total += losses[i]
        if split not in splits:
            continue
        out[f"{split}_loss"] = float(total) / batches
        if split == "val":
            out["val_batch_losses"] = [round(v, 6) for v in losses.tolist()]  # 1e-6 nats: far below any noise
            out["val_tokens"] = len(corpus.val_data) if hasattr(corpus, "val_data") else None
            out["batch_shape"] = [int(batch_size), int(x.shape[1])]
        else:  # the training split's too (its score's noise, where a verdict compares with it: pitfalls/mask.py)
            out["train_batch_losses"] = [round(v, 6) for v in losses.tolist()]
            out["train_tokens"] = len(corpus.train_data) if hasattr(corpus, "train_data") else None
    model.train(was_training)
    return out


@contextmanager
def _every_module_hooked(model: TinyGPT, make_hook: Callable[[str], Callable]) -> Iterator[None]:
    """A forward hook, make_hook(name), on every submodule of `model` while the block runs; all removed after."""
    handles = [module.register_forward_hook(make_hook(name)) for name, module in model.named_modules() if name]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def first_nonfinite_gradient(model: TinyGPT, loss_fn: Callable[[], torch.Tensor]) -> str | None:
    """Run `loss_fn` (a forward of `model`) and its backward with a hook on every submodule's output gradient;
    return the name of the first module, in the order the backward pass reached them (from the loss toward the
    input), whose output received a non-finite gradient: where the overflow entered the backward pass (a naive
    softmax's scores, say), not the first parameter in registration order. None if none did."""
    found: list[str] = []

    def make_hook(name: str):
        def on_grad(grad: torch.Tensor) -> None:
            if not found and grad.is_floating_point() and not torch.isfinite(grad).all():
                found.append(name)

        def hook(_module, _inputs, output):
            value = output[0] if isinstance(output, tuple) else output
            if torch.is_tensor(value) and value.requires_grad:
                value.register_hook(on_grad)

        return hook

    with _every_module_hooked(model, make_hook):
        loss_fn().backward()
    return found[0] if found else None


@torch.no_grad()
def first_nonfinite_activation(model: TinyGPT, x: torch.Tensor) -> str | None:
    """Run forward with a hook on every submodule; return the name of the first whose output is non-finite."""
    found: list[str] = []

    def make_hook(name: str):
        def hook(_module, _inputs, output):
            value = output[0] if isinstance(output, tuple) else output
            if not found and torch.is_tensor(value) and value.is_floating_point() and not torch.isfinite(value).all():
                found.append(name)

        return hook

    with _every_module_hooked(model, make_hook):
        model(x)  # every module is hooked, attention probes included: the explicit path, whose weights are seen
    return found[0] if found else None
