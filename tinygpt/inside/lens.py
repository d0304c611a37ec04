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

from ..model import TinyGPT
from ..probes import ATTENTION_WEIGHTS, capture
from .maps import HOOK_LOCK

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
    watched = RESIDUAL_PROBES + ([ATTENTION_WEIGHTS] if return_attention else [])
    with capture(model, watched, to_cpu=False) as cache:
        logits = model(idx)
    maps = [cache[f"blocks.{i}.attn.hook_weights"] for i in range(len(model.blocks))] if return_attention else None
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


# Rows of tokens one forward piece works on. A (20 x 16, 32) validation set is 10,240 tokens: run whole, every
# sublayer allocates fresh multi-megabyte tensors (the MLP's (N, T, 4C) is 10 MB at width 64), which the allocator
# hands back to the OS and page-faults in again, and which fall out of the caches between two ops; an MLP on 10,240
# rows takes ~2.5x as long as the same MLP on ten pieces of 1,024 (measured, BENCHMARKS.md "Circuits").
PIECE_TOKENS = 2048


def _clean_pass(model: TinyGPT, idx: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, list, list]:
    """One clean forward of idx (N, T) in pieces, keeping what the ablations start from:

        window_sums (N,)        summed (float64) cross-entropy against y (N, T), one sum per window
        pre        L x (N, T, C) the stream entering each block (hook_resid_pre)
        heads      L x (N, T, C) each attention's heads, concatenated, before its output projection (attn.hook_out)

    The caller holds HOOK_LOCK (hooks are attached)."""
    L, T = len(model.blocks), idx.shape[1]
    pre, heads = [[] for _ in range(L)], [[] for _ in range(L)]
    window_sums = []
    names = ["blocks.*.hook_resid_pre", "blocks.*.attn.hook_out"]
    with capture(model, names, to_cpu=False) as cache:
        for xs, ys in zip(idx.split(max(1, PIECE_TOKENS // T)), y.split(max(1, PIECE_TOKENS // T)), strict=True):
            logits = model(xs)  # (n, T, V); the capture refills `cache` for this piece
            ce = F.cross_entropy(logits.flatten(0, 1).float(), ys.flatten(), reduction="none")  # (n T,)
            window_sums.append(ce.double().view(len(xs), T).sum(dim=1))  # (n,)
            for i in range(L):
                pre[i].append(cache[f"blocks.{i}.hook_resid_pre"])
                heads[i].append(cache[f"blocks.{i}.attn.hook_out"])
    return torch.cat(window_sums), [torch.cat(p) for p in pre], [torch.cat(h) for h in heads]


def ablated_loss_sums(
    model: TinyGPT, layer: int, pre: torch.Tensor, heads: torch.Tensor, y: torch.Tensor, values: torch.Tensor
) -> torch.Tensor:
    """Summed (float64) cross-entropy against y (N, T) with each head of `layer` in turn replaced by its row of
    `values` (H, D), one sum per window: (H, N) (the windows' own sums pair with the clean pass's, window by window,
    for the ablation's noise). The same numbers as running the whole model with `replaced_head`, with less work:

    - below `layer` nothing changes: the stream entering it, pre (N, T, C), is the clean pass's;
    - in `layer` the queries, keys, values and attention do not change either (ablation replaces the heads'
      output), and the output projection is linear: copy k's is the clean one plus (value_k - head k) through
      head k's D columns of it, a (D -> C) product, so one (C -> C) projection serves all H copies;
    - the H ablations of a layer share every op from there up: they go through it as one batch, (H n, T, C),
      piece by piece (n = PIECE_TOKENS / (H T) sequences), so each op runs once per piece instead of once per head.
    """
    H, D = values.shape
    N, T, C = pre.shape
    block = model.blocks[layer]
    n = max(1, PIECE_TOKENS // (H * T))  # sequences per piece; the piece holds H copies of them
    sums = []
    for start in range(0, N, n):
        p, h, ys = pre[start : start + n], heads[start : start + n], y[start : start + n]  # (n, T, C), (n, T)
        m = p.shape[0]
        clean = p + block.attn.proj(h)  # (n, T, C): resid_mid of the clean pass (eval: no dropout)
        change = values.view(1, 1, H, D) - h.view(m, T, H, D)  # (n, T, H, D): what ablating head k writes instead
        # Copy k's change to the stream: its head's D columns of the projection, (n, T, D) @ (D, C), for all k at
        # once: (n, T, H, D) x (C, H, D) -> (H, n, T, C), copy-major.
        delta = torch.einsum("ntkd,ckd->kntc", change, block.attn.proj.weight.view(C, H, D))
        x = (clean.unsqueeze(0) + delta).view(H * m, T, C)  # (H n, T, C): resid_mid with head k replaced
        x = x + block.mlp(block.mlp_input(x))  # the rest of `layer` (Block.forward, eval: no dropout, no detach)
        for i in range(layer + 1, len(model.blocks)):
            x = model.blocks[i](x, layer=i)  # (H n, T, C); no probe watched: the fused attention path
        logits = model.lm_head(model.ln_f(x))  # (H n, T, C) @ (C, V) -> (H n, T, V)
        targets = ys.repeat(H, 1).flatten()  # (H n T,)
        ce = F.cross_entropy(logits.flatten(0, 1).float(), targets, reduction="none")  # (H n T,)
        sums.append(ce.view(H, m, T).double().sum(dim=2))  # (H, m)
    return torch.cat(sums, dim=1)  # (H, N)


def head_ablation(
    model: TinyGPT, x: torch.Tensor, y: torch.Tensor, probe_idx: torch.Tensor | None = None, modes=ABLATIONS
) -> dict:
    """Each head ablated in turn, on validation tokens x, y (N, T) and on a (1, T) probe (its own next characters
    as targets):

        clean       {"val", "probe"}                      the loss with every head on
        <mode>      {"val": (L, H), "probe": (L, H)}      loss with that head ablated minus the clean loss
                    {"val_windows": (L, H, N)}            the same per validation window (its T predictions' mean),
                                                          paired with the clean pass window by window: the noise
        means       (L, H, D)                              each head's mean output over the validation tokens

    A positive delta means the head helped. Mean ablation uses `means`; zero ablation uses 0. The numbers are those
    of `head_ablation_reference` (the whole model run once per head, a hook replacing the head) to float rounding,
    in a third to a half of its time (see `ablated_loss_sums`; BENCHMARKS.md "Circuits")."""
    L, H, D = model.config.num_layers, model.config.num_heads, model.config.head_dim
    was_training = model.training
    model.eval()
    try:
        with HOOK_LOCK, torch.inference_mode():
            clean_windows, pre, heads = _clean_pass(model, x, y)  # (N,)
            sum_val, count = clean_windows.sum(), y.numel()
            means = torch.stack([heads[i].mean(dim=(0, 1)).view(H, D) for i in range(L)])  # (L, H, D)
            out: dict = {"clean": {"val": float(sum_val / count)}, "means": means.cpu().numpy()}
            if probe_idx is not None:
                px, py = probe_idx[:, :-1], probe_idx[:, 1:]  # (1, T-1): each position predicts the next character
                sum_probe, probe_pre, probe_heads = _clean_pass(model, px, py)
                sum_probe = sum_probe.sum()
                out["clean"]["probe"] = float(sum_probe / py.numel())
            for mode in modes:
                val, probe = np.zeros((L, H)), np.zeros((L, H))
                windows = np.zeros((L, H, y.shape[0]))  # (L, H, N)
                for layer in range(L):
                    # (H, D): what each head of the layer says instead of its output
                    values = means[layer] if mode == "mean" else torch.zeros_like(means[layer])
                    sums = ablated_loss_sums(model, layer, pre[layer], heads[layer], y, values)  # (H, N)
                    val[layer] = ((sums.sum(dim=1) - sum_val) / count).cpu().numpy()
                    windows[layer] = ((sums - clean_windows) / y.shape[1]).cpu().numpy()  # (H, N) per-window means
                    if probe_idx is not None:
                        sums = ablated_loss_sums(model, layer, probe_pre[layer], probe_heads[layer], py, values)
                        probe[layer] = ((sums.sum(dim=1) - sum_probe) / py.numel()).cpu().numpy()
                out[mode] = {"val": val, "val_windows": windows}
                if probe_idx is not None:
                    out[mode]["probe"] = probe
    finally:
        model.train(was_training)
    return out


@torch.no_grad()
def head_ablation_reference(
    model: TinyGPT, x: torch.Tensor, y: torch.Tensor, probe_idx: torch.Tensor | None = None, modes=ABLATIONS
) -> dict:
    """`head_ablation` the straightforward way, kept as its definition: for every mode and head, the whole model
    runs on all of x (N, T) with `replaced_head` in place, and the loss is compared with the clean one. The tests
    hold the fast path to it and bench_circuits times both."""
    L, H, D = model.config.num_layers, model.config.num_heads, model.config.head_dim

    def loss(idx, targets):
        return float(F.cross_entropy(model(idx).flatten(0, 1).float(), targets.flatten()))

    was_training = model.training
    model.eval()
    try:
        with HOOK_LOCK:
            with capture(model, ["blocks.*.attn.hook_out"], to_cpu=False) as cache:
                clean = {"val": loss(x, y)}
            means = torch.stack([cache[f"blocks.{i}.attn.hook_out"].mean(dim=(0, 1)).view(H, D) for i in range(L)])
            inputs = {"val": (x, y)}
            if probe_idx is not None:
                inputs["probe"] = (probe_idx[:, :-1], probe_idx[:, 1:])
                clean["probe"] = loss(*inputs["probe"])
            out: dict = {"clean": clean, "means": means.numpy()}
            for mode in modes:
                out[mode] = {name: np.zeros((L, H)) for name in inputs}
                for layer in range(L):
                    for head in range(H):
                        with replaced_head(model, layer, head, means[layer, head] if mode == "mean" else None):
                            for name, (idx, targets) in inputs.items():
                                out[mode][name][layer, head] = loss(idx, targets) - clean[name]
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
def lens_right(model: TinyGPT, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """The logit lens on windows x (W, T) with targets y (W, T): each window's share of positions whose top guess,
    read after each layer as `logit_lens` reads it, is the right next character. (L+1, W), the last row the model's
    own output: one number per window, so a change between rows has a noise (the lesson's lens step)."""
    guesses = torch.stack([model.lm_head(model.ln_f(s)).argmax(-1) for s in _streams(model, x)])  # (L+1, W, T)
    return (guesses == y.to(guesses.device)).float().mean(-1).cpu().numpy()  # (L+1, W)


def _streams(model: TinyGPT, idx: torch.Tensor) -> list[torch.Tensor]:
    """The residual stream of idx (B, T) after the embedding and after each block: L+1 tensors (B, T, C), read in
    eval mode (no dropout), the model's mode restored after."""
    was_training = model.training
    model.eval()
    try:
        with HOOK_LOCK, capture(model, ["blocks.*.hook_resid_post", "blocks.0.hook_resid_pre"], to_cpu=False) as c:
            model(idx)
        return [c["blocks.0.hook_resid_pre"]] + [c[f"blocks.{i}.hook_resid_post"] for i in range(len(model.blocks))]
    finally:
        model.train(was_training)


@torch.no_grad()
def logit_lens(model: TinyGPT, idx: torch.Tensor, k: int = 3) -> dict:
    """The next-character prediction read from the stream of a (1, T) probe after each layer:

        names       L+1 row names: "embeddings", "after layer 0", ..., the last being the model's output
        top_ids     (L+1, T, k) the k most likely next tokens at each position, best first
        top_probs   (L+1, T, k) their probabilities
        probs       (L+1, T, V) the whole distribution

    Each row is softmax(lm_head(ln_f(stream))): the final LayerNorm and the tied head, applied early."""
    stacked = torch.cat(_streams(model, idx))  # (L+1) x (1, T, C) -> (L+1, T, C)
    probs = torch.softmax(model.lm_head(model.ln_f(stacked)).float(), dim=-1)  # (L+1, T, V)
    top = probs.topk(min(k, probs.shape[-1]), dim=-1)  # (L+1, T, k) values and indices
    names = ["embeddings"] + [f"after layer {i}" for i in range(len(model.blocks))]
    return {
        "names": names,
        "top_ids": top.indices.numpy(),
        "top_probs": top.values.double().numpy(),
        "probs": probs.double().numpy(),
    }
