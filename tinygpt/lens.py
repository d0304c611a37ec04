"""Reading and editing the residual stream: its norms, head ablation, and the logit lens.

Every block reads the residual stream through a LayerNorm and adds its output back (tinygpt/model.py), so the
stream is where the model's work accumulates and these three tools look at it:

- `residual_stream`: the size of the stream entering each block and of each sublayer's write into it
  (attention, then MLP), and what LayerNorm hands the next sublayer. Pre-LN: the stream may grow with depth and
  training, while LayerNorm gives every sublayer an input of the same size (about sqrt(C) times its gain).
- `head_ablation`: switch one head off and measure the loss. Zero ablation replaces the head's output (its D
  columns of `attn.hook_out`, before the output projection) by 0; mean ablation by its mean over the validation
  tokens, which keeps the average the next layers are used to and removes only the information (Olsson et al.
  2022 use both). Only layers from the ablated one up are recomputed: the stream below it is the same.
- `logit_lens`: the next-character distribution read from the stream after each layer, through the final
  LayerNorm and the tied head, as if the model stopped there (nostalgebraist 2020). The last row is the model's
  own output; the layer where the right character first tops the list is where the answer appeared.

Shape legend: N tokens' rows (batches concatenated), T positions, C hidden_dim, H heads, D head_dim, V vocab_size,
L layers. Functions the app calls on shared cached models hold inside.HOOK_LOCK while hooks are attached.
Left out: activation patching between two inputs, the tuned lens, attribution by gradients.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from .inside import HOOK_LOCK
from .model import TinyGPT
from .probes import capture

ABLATIONS = ("zero", "mean")
RESIDUAL_PROBES = ["blocks.*.hook_resid_pre", "blocks.*.hook_resid_mid", "blocks.*.hook_resid_post"]


def _mean_norm(x: torch.Tensor) -> torch.Tensor:
    return x.float().norm(dim=-1).mean(dim=-1)  # (B, T, C) -> (B, T) -> (B,): the mean L2 norm per position


def residual_stream(model: TinyGPT, idx: torch.Tensor, return_attention: bool = False):
    """(logits (B, T, V), attention maps or None, norms) of one forward of idx (B, T); norms, each a list of (B,)
    mean L2 norms over positions:

        resid  L+1   the stream entering block 0 .. L-1, then the stream the final LayerNorm reads
        attn   L     each attention sublayer's write (resid_mid - resid_pre)
        mlp    L     each MLP's write (resid_post - resid_mid)
        ln     L+1   LayerNorm's output: ln_1 of each block's input, then ln_f of the final stream

    No lock and no mode switch: callers decide (the loop owns its model; `residual_norms` locks for the app)."""
    with capture(model, RESIDUAL_PROBES) as cache:
        out = model(idx, return_attention=return_attention)
    logits, maps = out if return_attention else (out, None)
    norms: dict[str, list[torch.Tensor]] = {"resid": [], "attn": [], "mlp": [], "ln": []}
    for i, block in enumerate(model.blocks):
        pre, mid, post = (cache[f"blocks.{i}.hook_resid_{p}"] for p in ("pre", "mid", "post"))  # (B, T, C) each
        norms["resid"].append(_mean_norm(pre))
        norms["attn"].append(_mean_norm(mid - pre))
        norms["mlp"].append(_mean_norm(post - mid))
        norms["ln"].append(_mean_norm(block.ln_1(pre)))
    final = cache[f"blocks.{len(model.blocks) - 1}.hook_resid_post"]
    norms["resid"].append(_mean_norm(final))
    norms["ln"].append(_mean_norm(model.ln_f(final)))
    return logits, maps, norms


@torch.no_grad()
def residual_norms(model: TinyGPT, idx: torch.Tensor) -> dict[str, list[float]]:
    """`residual_stream`'s norms for a (1, T) probe as plain floats, for a checkpoint in the app."""
    with HOOK_LOCK:
        _, _, norms = residual_stream(model, idx)
    return {k: [float(v[0]) for v in vals] for k, vals in norms.items()}


# ---------------------------------------------------------------- head ablation


@contextlib.contextmanager
def replaced_head(model: TinyGPT, layer: int, head: int, value: torch.Tensor | None) -> Iterator[None]:
    """While inside, head `head` of layer `layer` outputs `value` ((D,) broadcast over batch and positions) or
    zeros (None) instead of what it computed: a forward hook on that layer's `attn.hook_out` (B, T, C)."""
    D = model.config.head_dim

    def hook(_module, _inputs, output):
        output = output.clone()
        output[..., head * D : (head + 1) * D] = 0.0 if value is None else value  # (B, T, D) <- (D,)
        return output

    handle = model.blocks[layer].attn.hook_out.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def _loss_from(model: TinyGPT, x: torch.Tensor, y: torch.Tensor, layer: int) -> float:
    """Loss of the model run from block `layer` up, x (N, T, C) being the stream entering that block."""
    for i in range(layer, len(model.blocks)):
        x, _ = model.blocks[i](x, False, None, i)
    logits = model.lm_head(model.ln_f(x))  # (N, T, C) @ (C, V) -> (N, T, V)
    return float(F.cross_entropy(logits.flatten(0, 1).float(), y.flatten()))


@torch.no_grad()
def head_ablation(
    model: TinyGPT, x: torch.Tensor, y: torch.Tensor, probe_idx: torch.Tensor | None = None, modes=ABLATIONS
) -> dict:
    """Each head ablated in turn, on validation tokens x, y (N, T) and on a (1, T) probe (its own next characters
    as targets):

        clean       {"val", "probe"}                      the loss with every head on
        <mode>      {"val": (L, H), "probe": (L, H)}      loss with that head ablated minus the clean loss
        means       (L, H, D)                              each head's mean output over the validation tokens

    A positive delta means the head helped. Mean ablation uses `means`; zero ablation uses 0."""
    L, H, D = model.config.num_layers, model.config.num_heads, model.config.head_dim
    was_training = model.training
    model.eval()
    try:
        with HOOK_LOCK:
            names = ["blocks.*.hook_resid_pre", "blocks.*.attn.hook_out"]
            with capture(model, names, to_cpu=False) as cache:
                clean_val = float(F.cross_entropy(model(x).flatten(0, 1).float(), y.flatten()))
            pre = [cache[f"blocks.{i}.hook_resid_pre"] for i in range(L)]  # L x (N, T, C)
            means = torch.stack([cache[f"blocks.{i}.attn.hook_out"].mean(dim=(0, 1)).view(H, D) for i in range(L)])
            if probe_idx is not None:
                px, py = probe_idx[:, :-1], probe_idx[:, 1:]  # (1, T-1): each position predicts the next character
                with capture(model, ["blocks.*.hook_resid_pre"], to_cpu=False) as probe_cache:
                    clean_probe = float(F.cross_entropy(model(px).flatten(0, 1).float(), py.flatten()))
            out: dict = {"clean": {"val": clean_val}, "means": means.cpu().numpy()}
            if probe_idx is not None:
                out["clean"]["probe"] = clean_probe
            for mode in modes:
                val, probe = np.zeros((L, H)), np.zeros((L, H))
                for layer in range(L):
                    for head in range(H):
                        value = means[layer, head] if mode == "mean" else None
                        with replaced_head(model, layer, head, value):
                            val[layer, head] = _loss_from(model, pre[layer], y, layer) - clean_val
                            if probe_idx is not None:
                                stream = probe_cache[f"blocks.{layer}.hook_resid_pre"]
                                probe[layer, head] = _loss_from(model, stream, py, layer) - clean_probe
                out[mode] = {"val": val, "probe": probe} if probe_idx is not None else {"val": val}
    finally:
        model.train(was_training)
    return out


@torch.no_grad()
def ablated_probs(
    model: TinyGPT, idx: torch.Tensor, layer: int, head: int, value: torch.Tensor | np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Next-character probabilities (T, V) of a (1, T) probe, clean and with one head ablated (to `value`, (D,),
    or to zero)."""
    was_training = model.training
    model.eval()
    try:
        with HOOK_LOCK:
            clean = torch.softmax(model(idx)[0].float(), dim=-1)  # (T, V)
            value = None if value is None else torch.as_tensor(value, dtype=torch.float32)
            with replaced_head(model, layer, head, value):
                ablated = torch.softmax(model(idx)[0].float(), dim=-1)  # (T, V)
    finally:
        model.train(was_training)
    return clean.double().numpy(), ablated.double().numpy()


# ---------------------------------------------------------------- logit lens


@torch.no_grad()
def logit_lens(model: TinyGPT, idx: torch.Tensor, k: int = 3) -> dict:
    """The next-character prediction read from the stream of a (1, T) probe after each layer:

        names       L+1 row names: "embeddings", "after layer 0", ..., the last being the model's output
        top_ids     (L+1, T, k) the k most likely next tokens at each position, best first
        top_probs   (L+1, T, k) their probabilities
        probs       (L+1, T, V) the whole distribution

    Each row is softmax(lm_head(ln_f(stream))): the final LayerNorm and the tied head, applied early."""
    was_training = model.training
    model.eval()
    try:
        with HOOK_LOCK, capture(model, ["blocks.*.hook_resid_post", "blocks.0.hook_resid_pre"], to_cpu=False) as c:
            model(idx)
        streams = [c["blocks.0.hook_resid_pre"]] + [c[f"blocks.{i}.hook_resid_post"] for i in range(len(model.blocks))]
        stacked = torch.cat(streams)  # (L+1) x (1, T, C) -> (L+1, T, C)
        probs = torch.softmax(model.lm_head(model.ln_f(stacked)).float(), dim=-1)  # (L+1, T, V)
    finally:
        model.train(was_training)
    top = probs.topk(min(k, probs.shape[-1]), dim=-1)  # (L+1, T, k) values and indices
    names = ["embeddings"] + [f"after layer {i}" for i in range(len(model.blocks))]
    return {
        "names": names,
        "top_ids": top.indices.numpy(),
        "top_probs": top.values.double().numpy(),
        "probs": probs.double().numpy(),
    }
