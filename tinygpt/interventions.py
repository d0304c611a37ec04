"""The lab's switches, wired into the model through its probe points instead of branches in `forward`.

`model.py` computes a correct transformer and nothing else. Each switch below changes what one probe point passes
on, with a forward hook that `install()` attaches when the model is built (the config asks for it):

    zeroed_probes    "hook_pos", ...         the probe's output becomes zeros (no positional embedding)
    ablated_heads    "L0H1,L1H2" (live)       a switched-off head writes nothing: its columns of attn.hook_out are 0
    detach_residual  True                     the skip path (hook_skip_attn, hook_skip_mlp) carries no gradient
    shape_bug        "softmax_dim"            attention rows are normalised over the queries, not the keys
    shape_contracts  True                     q, k, v and the softmax sums are checked against their named shapes

A hook that returns a tensor replaces the probe's output; one that returns None leaves it. Attaching a hook to an
attention probe (hook_scores, hook_mask, hook_weights) moves that layer onto the explicit path, which is where the
shape bug must live anyway.
"""

from __future__ import annotations

import torch
from torch import nn

from .config import ConfigError, TransformerConfig, parse_heads
from .probes import Probe
from .shapes import expect_shape


def install(model: nn.Module, config: TransformerConfig) -> None:
    """Attach every hook the config asks for. Called once, by TinyGPT.__init__."""
    zero_probes(model, config.zeroed_probes)
    for layer, block in enumerate(model.blocks):
        # ablated_heads is a live knob (the Circuits page switches heads off mid-run), so its hook is always there
        # and reads the shared config at every forward; with no head off it returns None and changes nothing.
        block.attn.hook_out.register_forward_hook(_head_ablation(config, layer))
        if config.detach_residual:
            for skip in (block.hook_skip_attn, block.hook_skip_mlp):
                skip.register_forward_hook(lambda _module, _inputs, x: x.detach())
        if config.shape_contracts:
            for name in ("q", "k", "v"):
                getattr(block.attn, f"hook_{name}").register_forward_hook(_contract(name, config))
        if config.shape_bug == "softmax_dim":
            block.attn.hook_weights.register_forward_hook(
                lambda _module, _inputs, weights: drifted_weights(weights, config.shape_contracts)
            )


def zero_probes(model: nn.Module, names: str) -> None:
    """Replace the output of each named probe point ("hook_pos,blocks.0.attn.hook_out") by zeros for good: an
    ablation the config asks for (`zeroed_probes`). Gradients stop there too. ConfigError for a name the model has
    no probe point for."""
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    probes = {name: module for name, module in model.named_modules() if isinstance(module, Probe)}
    for name in wanted:
        if name not in probes:
            raise ConfigError(f"zeroed_probes names {name!r}, which is no probe point of this model; try hook_pos.")
        probes[name].register_forward_hook(lambda _module, _inputs, output: torch.zeros_like(output))


def _head_ablation(config: TransformerConfig, layer: int):
    def hook(_module, _inputs, out: torch.Tensor) -> torch.Tensor | None:  # out (B, T, C), heads side by side
        off = [h for lay, h in parse_heads(config.ablated_heads) if lay == layer] if config.ablated_heads else []
        if not off:
            return None
        keep = torch.ones(config.num_heads, config.head_dim, device=out.device, dtype=out.dtype)
        keep[off] = 0.0  # (H, D): head h owns columns h*D .. (h+1)*D - 1 of the concatenation
        return out * keep.view(-1)  # (B, T, C) * (C,): a switched-off head writes nothing, so learns nothing

    return hook


def _contract(name: str, config: TransformerConfig):
    def hook(_module, _inputs, t: torch.Tensor) -> None:
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
