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
import threading
from collections.abc import Iterator

import torch
from torch import nn
from torch.nn.modules import module as _module


class Probe(nn.Identity):
    """An identity that marks a place worth looking at. `active` is True while any hook is attached."""

    @property
    def active(self) -> bool:
        return bool(self._forward_hooks)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        # Unhooked, a probe is the identity without nn.Module's call machinery: ~1.5 us a call, and a sampled
        # character passes 40 probes of a 4-layer model (issue 35). Any hook, its own or a global one, takes the
        # ordinary path, so hooks fire exactly as before.
        if (
            self._forward_hooks
            or self._forward_pre_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
            or _module._global_forward_hooks
            or _module._global_forward_pre_hooks
            or _module._global_backward_hooks
            or _module._global_backward_pre_hooks
        ):
            return super().__call__(x)
        return x


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
    # Only this thread's forwards: the app's sessions share cached models, and another session's batched forward
    # while these hooks were on overwrote a probe's tensor (a review's logit lens: "zip() argument 2 is longer")
    mine = threading.get_ident()

    def make_hook(name: str):
        def hook(_module, _inputs, output):
            if threading.get_ident() != mine:
                return
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
    watched: list[torch.Tensor] = []
    # The blocks' probes directly, not capture()'s glob over every module's name: the Sample page asks this for
    # a character, and the walk cost more than the forward (issue 35).
    mine = threading.get_ident()  # this thread's forward only, as capture()'s hooks
    handles = [
        block.attn.hook_weights.register_forward_hook(
            lambda _m, _i, out: watched.append(out.detach()) if threading.get_ident() == mine else None
        )
        for block in model.blocks
    ]
    try:
        logits = model(idx, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return logits, watched
