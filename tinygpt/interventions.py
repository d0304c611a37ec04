"""The pitfall lab's switches, attached to a built model from outside, at its probe points, as forward hooks.

`model.py` computes a correct transformer and nothing else. What the lab breaks on purpose is a run's
`Interventions` (tinygpt/config.py), and `attach()` wires each switch into a model that is already built, the way
TransformerLens adds hooks to a model:

    zeroed_probes    "hook_pos", ...         the probe's output becomes zeros (no positional embedding)
    detach_residual  True                     the skip path (hook_skip_attn, hook_skip_mlp) carries no gradient
    shape_bug        "softmax_dim"            attention rows are normalised over the queries, not the keys
    shape_contracts  True                     q, k, v and the softmax sums are checked against their named shapes

Two kinds of hook, told apart:
  permanent  a run's interventions: part of its definition, saved in its config (config.json, every checkpoint),
             attached by `attach()` to every model built for the run (`model_for_run`, `Checkpoint.build_model`):
             training, resume, branch, sampling. `attached(model)` says which; `detach()` takes them off.
  temporary  a probe or an ablation for one measurement (`temporary()`, probes.capture, inside.lens): removed when
             the measurement ends, leaving the model exactly as it was, its permanent hooks included.

A hook that returns a tensor replaces the probe's output; one that returns None leaves it. Attaching a hook to an
attention probe (hook_scores, hook_mask, hook_weights) moves that layer onto the explicit path, which is where the
shape bug must live anyway: it rewrites the softmax's weights at hook_weights, an honest hook (`drifted_weights`
recovers the exponentials from them), so attention needs no seam of its own for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections.abc import Callable, Iterator

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from .config import ConfigError, Interventions, RunConfig, TransformerConfig
from .model import TinyGPT
from .probes import Probe
from .shapes import expect_shape

NONE = Interventions()  # a plain run: nothing attached
# Each model's permanent interventions and the handles of their hooks. Weak: a model that is dropped takes its
# entry with it (the lab builds and drops models by the dozen).
_PERMANENT: weakref.WeakKeyDictionary[nn.Module, tuple[Interventions, list[RemovableHandle]]] = (
    weakref.WeakKeyDictionary()
)


def model_for_run(config: RunConfig) -> TinyGPT:
    """The model a run trains, resumes, branches and samples: the plain TinyGPT of `config.model`, its weights
    initialised from torch's global generator, with the run's `config.interventions` attached."""
    model = TinyGPT(config.model)
    attach(model, config.interventions)
    return model


def attach(model: TinyGPT, interventions: Interventions) -> list[RemovableHandle]:
    """Attach a run's interventions to a built model for good (see the module's docstring), and return the
    handles of the hooks. ConfigError for a zeroed probe point the model does not have; ValueError for a model that
    has its permanent interventions already (twice would detach twice, or zero twice: refused, not guessed)."""
    if model in _PERMANENT:
        raise ValueError("this model has its permanent interventions already; detach() them first.")
    handles = zero_probes(model, interventions.zeroed_probes)
    contracts = interventions.shape_contracts

    def drift(_module, _inputs, weights: torch.Tensor) -> torch.Tensor:  # weights (B, H, T, S)
        return drifted_weights(weights, contracts)

    for block in model.blocks:
        if interventions.detach_residual:
            for skip in (block.hook_skip_attn, block.hook_skip_mlp):  # (B, T, C) each
                handles.append(skip.register_forward_hook(lambda _module, _inputs, x: x.detach()))
        if interventions.shape_contracts:
            for name in ("q", "k", "v"):
                probe = getattr(block.attn, f"hook_{name}")
                handles.append(probe.register_forward_hook(_contract(name, model.config)))
        if interventions.shape_bug == "softmax_dim":
            handles.append(block.attn.hook_weights.register_forward_hook(drift))
    model.mixes_positions = interventions.shape_bug != "none"  # its weights read later queries: no KV cache
    _PERMANENT[model] = (interventions, handles)
    return handles


def attached(model: nn.Module) -> Interventions:
    """The permanent interventions `attach()` gave this model (NONE for a plain one)."""
    entry = _PERMANENT.get(model)
    return entry[0] if entry else NONE


def detach(model: nn.Module) -> None:
    """Take a model's permanent interventions off: it computes the plain transformer again."""
    _, handles = _PERMANENT.pop(model, (NONE, []))
    for handle in handles:
        handle.remove()
    if hasattr(model, "mixes_positions"):
        model.mixes_positions = False


@contextlib.contextmanager
def temporary(model: nn.Module, hooks: dict[str, Callable]) -> Iterator[list[RemovableHandle]]:
    """Forward hooks at the named probe points ({"blocks.0.attn.hook_out": hook}) for one measurement: attached on
    entry, removed on exit whatever happens, so the model leaves exactly as it came (its permanent hooks stay).
    KeyError for a name that is no probe point."""
    probes = {name: module for name, module in model.named_modules() if isinstance(module, Probe)}
    missing = [name for name in hooks if name not in probes]
    if missing:
        raise KeyError(f"no probe point named {', '.join(missing)}; see probes.probe_names(model)")
    handles = [probes[name].register_forward_hook(hook) for name, hook in hooks.items()]
    try:
        yield handles
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def contracts_on(model: TinyGPT) -> Iterator[TinyGPT]:
    """The model with its permanent interventions as they are, plus the shape contracts (q, k, v and the softmax's
    row sums checked every forward), for one measurement: on exit it has exactly its own again. The health check
    runs a run's own model under them, so a run with a silent shape bug is caught, not only a too-long input."""
    own = _PERMANENT.get(model)
    interventions = own[0] if own else NONE
    if interventions.shape_contracts:
        yield model
        return
    detach(model)
    attach(model, dataclasses.replace(interventions, shape_contracts=True))
    try:
        yield model
    finally:
        detach(model)
        if own is not None:
            attach(model, interventions)


def zero_probes(model: nn.Module, names: str) -> list[RemovableHandle]:
    """Replace the output of each named probe point ("hook_pos,blocks.0.attn.hook_out") by zeros: the ablation
    `zeroed_probes` asks for. Gradients stop there too. ConfigError for a name the model has no probe point for."""
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    probes = {name: module for name, module in model.named_modules() if isinstance(module, Probe)}
    for name in wanted:
        if name not in probes:
            raise ConfigError(f"zeroed_probes names {name!r}, which is no probe point of this model; try hook_pos.")
    return [
        probes[name].register_forward_hook(lambda _module, _inputs, output: torch.zeros_like(output)) for name in wanted
    ]


def _contract(name: str, config: TransformerConfig):
    def hook(_module, _inputs, t: torch.Tensor) -> None:  # t (B, H, T or S, D)
        B = t.shape[0]
        expect_shape(name, t, ("B", "H", None, "D"), sizes={"B": B, "H": config.num_heads, "D": config.head_dim})

    return hook


def drifted_weights(weights: torch.Tensor, contracts: bool = False) -> torch.Tensor:
    """The shape drift experiment's bug: softmax rows normalised over the queries (dim -2) instead of the keys.

    weights (B, H, T, S) are a correct softmax, exp(score - row max) / row sum; dividing each row by its largest
    weight gives back exp(score - row max), every entry in [0, 1]. The bug then sums those over dim -2: (B, H, 1, S)
    where (B, H, T, 1) belongs. Training has T == S, so the division broadcasts without a sound: rows no longer sum
    to 1 and each weight depends on later queries (a future leak). `contracts` checks the sums' shape and stops.
    """
    B, H, T, _ = weights.shape
    exps = weights / weights.amax(dim=-1, keepdim=True)  # (B, H, T, S) = exp(score - row max)
    sums = exps.sum(dim=-2, keepdim=True)  # the bug: (B, H, 1, S); dim=-1 would give (B, H, T, 1)
    if contracts:
        expect_shape("softmax row sums", sums, ("B", "H", "T", 1), sizes={"B": B, "H": H, "T": T})
    return exps / sums  # (B, H, T, S) / (B, H, 1, S) -> (B, H, T, S): broadcasting hides the drift
