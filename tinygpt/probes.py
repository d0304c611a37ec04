"""Probe points: named identity modules that anyone may hook to see an activation, without changing `forward`.

The idea is TransformerLens's hook points: the model passes interesting tensors through `Probe` modules
(`blocks.0.attn.hook_weights`, `blocks.1.hook_resid_post`, ...). A probe does nothing unless someone attaches a
forward hook, so the training step pays nothing for them. `capture()` is the friendly way to attach hooks:

    with capture(model, ["blocks.*.attn.hook_weights", "blocks.0.hook_resid_post"]) as cache:
        model(idx)
    cache["blocks.0.attn.hook_weights"]  # (B, H, T, T), detached

Attention probes force the explicit attention path (the fused kernel has no weights to show).
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Iterator

import torch
from torch import nn


class Probe(nn.Identity):
    """An identity that marks a place worth looking at. `active` is True while any hook is attached."""

    @property
    def active(self) -> bool:
        return bool(self._forward_hooks)


def probe_names(model: nn.Module) -> list[str]:
    """Every probe point of a model, in forward order."""
    return [name for name, module in model.named_modules() if isinstance(module, Probe)]


@contextlib.contextmanager
def capture(model: nn.Module, patterns: list[str] | str = "*", *, to_cpu: bool = True) -> Iterator[dict]:
    """Record the output of every probe whose name matches one of the glob `patterns` into a dict."""
    if isinstance(patterns, str):
        patterns = [patterns]
    cache: dict[str, torch.Tensor] = {}
    handles = []

    def make_hook(name: str):
        def hook(_module, _inputs, output):
            value = output.detach()
            cache[name] = value.cpu() if to_cpu else value

        return hook

    for name, module in model.named_modules():
        if isinstance(module, Probe) and any(fnmatch.fnmatchcase(name, p) for p in patterns):
            handles.append(module.register_forward_hook(make_hook(name)))
    if not handles:
        raise ValueError(f"no probe matches {patterns}; available: {', '.join(probe_names(model))}")
    try:
        yield cache
    finally:
        for handle in handles:
            handle.remove()


ATTENTION_WEIGHTS = "blocks.*.attn.hook_weights"


def attention_forward(model: nn.Module, idx: torch.Tensor, **kwargs) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """(logits (B, T, V), one (B, H, T, S) attention-weights tensor per layer) of one forward of idx (B, T).

    The weights are watched at their probe points for this one call, which puts attention on the explicit path;
    they are detached and stay on the model's device."""
    with capture(model, ATTENTION_WEIGHTS, to_cpu=False) as watched:
        logits = model(idx, **kwargs)
    return logits, [watched[f"blocks.{i}.attn.hook_weights"] for i in range(len(model.blocks))]
