"""Looking inside a model on given text: attention maps, one head step by step, and per-head statistics.

The training loop's attention snapshots and the app's Attention page both call these, so a heatmap drawn from a
snapshot and one drawn from a checkpoint were computed by the same code. Every number comes from the model's own
probe points (tinygpt/probes.py) and the functions of tinygpt/attention.py that the forward pass itself runs:
nothing here re-implements attention.

Shape legend: L layers, H heads, T query positions, S key positions (S == T here), D head_dim.

`stream_text` generates with the same eyes open: each character with its probabilities and where the heads looked.

Deliberately left out: drawing (tinygpt/ui/charts), caching (the app caches per checkpoint), and batches of
probes (one (1, T) probe is what a learner reads).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import torch

from ..attention import apply_mask, attention_entropy, attention_scores, mask_rows
from ..model import TinyGPT
from ..probes import attention_forward, capture
from ..tokenizer import CharTokenizer

# capture() attaches hooks to a model object, and attention_under_masks switches its mask knob for a moment; the
# app shares cached models between browser sessions, so one session's hooks or mask must never act during another
# session's forward pass.
HOOK_LOCK = threading.Lock()  # public: tinygpt.inside.lens holds it too, for its hooks on shared models


def encode_probe(model: TinyGPT, tokenizer: CharTokenizer, text: str) -> tuple[torch.Tensor, list[str]]:
    """(1, T) token ids of `text`, cropped to the model's context (its last max_seq_len characters), and the
    characters they stand for. Unknown characters raise TinyGPTError naming them; so does an empty text, which
    the model cannot read ((1, 0) ids: a raw shape error deep in the forward pass)."""
    from ..errors import TinyGPTError

    ids = tokenizer.encode(text, what="probe text")[-model.config.max_seq_len :]
    if not ids:
        raise TinyGPTError("Type a probe text: it is empty, and the model needs at least one character to read.")
    return torch.tensor([ids], dtype=torch.long), [tokenizer.vocab[i] for i in ids]


@torch.no_grad()
def attention_maps(model: TinyGPT, idx: torch.Tensor) -> np.ndarray:
    """(L, H, T, T) float32 attention weights of a (1, T) probe, through the explicit path, without dropout.

    Without dropout, train and eval mode compute the same thing, and switching walks every submodule (~0.4 ms
    each way at the demo size, paid at every snapshot), so the mode is switched only when dropout is on.
    """
    switch = model.training and model.config.dropout > 0
    with HOOK_LOCK:  # attention_under_masks switches a shared model's mask for a moment
        if switch:
            model.eval()
        try:
            _, maps = attention_forward(model, idx)  # L x (1, H, T, T)
        finally:
            if switch:
                model.train()
    return torch.stack([m[0] for m in maps]).float().cpu().numpy()  # L x (H, T, T) -> (L, H, T, T)


@torch.no_grad()
def attention_steps(model: TinyGPT, idx: torch.Tensor, layer: int, head: int) -> dict[str, Any]:
    """One head's attention on a (1, T) probe, step by step, each a (T, T) float64 array:

        qk      q k^T                        (how well each query matches each key)
        scaled  q k^T * scale                (scale = the run's attn_scale x attn_scale_mult, as configured)
        mask    True = may attend            (the mask mode in force)
        masked  scaled, -inf where masked
        weights softmax(masked)              (the weights the model really used, from its probe point)

    plus `scale`, `mask_mode`, `window` and `softmax`: what the model was configured with when this ran.
    """
    prefix = f"blocks.{layer}.attn."
    names = [prefix + n for n in ("hook_q", "hook_k", "hook_mask", "hook_weights")]
    with HOOK_LOCK, capture(model, names) as cache:
        model(idx)
    q = cache[prefix + "hook_q"][0, head].double()  # (T, D)
    k = cache[prefix + "hook_k"][0, head].double()  # (S, D)
    mask = cache[prefix + "hook_mask"].bool()  # (T, S)
    config = model.config
    qk = attention_scores(q, k, 1.0)  # (T, D) @ (D, S) -> (T, S)
    scaled = qk * config.scale
    return {
        "qk": qk.numpy(),
        "scaled": scaled.numpy(),
        "mask": mask.numpy(),
        "masked": apply_mask(scaled, mask).numpy(),
        "weights": cache[prefix + "hook_weights"][0, head].double().numpy(),
        "scale": config.scale,
        "mask_mode": config.mask,
        "window": config.window,
        "softmax": config.softmax,
    }


def head_stats(weights: np.ndarray) -> list[dict]:
    """Per head of an (L, H, T, S) snapshot: the mean row entropy in nats (attention.attention_entropy, the
    function the model's own statistics use) and the mean max weight. Rows: {layer, head, entropy, max_weight}."""
    w = torch.as_tensor(np.asarray(weights, dtype=np.float32))
    entropy = attention_entropy(w).mean(dim=-1)  # (L, H, T) -> (L, H): mean over query rows
    max_weight = w.max(dim=-1).values.mean(dim=-1)  # (L, H)
    return [
        {"layer": lay, "head": h, "entropy": float(entropy[lay, h]), "max_weight": float(max_weight[lay, h])}
        for lay in range(w.shape[0])
        for h in range(w.shape[1])
    ]


def uniform_entropy(mask: np.ndarray) -> float:
    """The mean row entropy (nats) of a head that spreads its weight evenly over the keys each query may see:
    the mean of ln(visible keys) over the rows of a (T, S) bool mask. Under the causal mask that is the mean of
    ln(t) for t = 1..T (about 2.55 at T = 32), not ln(T)."""
    visible = np.asarray(mask, dtype=bool).sum(axis=-1)
    return float(np.log(np.maximum(visible, 1)).mean())


def stream_text(
    model: TinyGPT,
    tokenizer: CharTokenizer,
    prompt: str,
    num_chars: int,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    seed: int,
    last: dict,
):
    """Yield generated characters one by one; `last` receives the final step's next-character probabilities
    (before and after temperature/top-k/top-p, (V,) each) and where each head looked for it ((L, H, S) and the S
    key characters). Raises TinyGPTError (e.g. an empty prompt or unknown characters) at the call, before anything
    is yielded or drawn: as a generator it raised at the first character, and the Sample page had already written
    "Generated (...)" above the warning that nothing was (a review)."""
    from ..errors import TinyGPTError

    ids = tokenizer.encode(prompt, what="prompt")
    if not ids:
        raise TinyGPTError("the prompt is empty: type at least one character to continue from.")
    return _streamed(model, tokenizer, ids, num_chars, temperature, top_k, top_p, seed, last)


def _streamed(model, tokenizer, ids, num_chars, temperature, top_k, top_p, seed, last):
    """stream_text's characters, its prompt checked: `ids` the prompt's token ids."""
    idx = torch.tensor([ids], dtype=torch.long)  # (1, T)
    generator = torch.Generator().manual_seed(int(seed))
    context = list(ids)  # every token so far; the model sees the last max_seq_len of them
    for _next_ids, step in model.stream(
        idx,
        num_chars,
        temperature,
        top_k or None,
        top_p,
        generator,
        use_cache=True,
        with_attention=True,
        last_attention=True,  # only the final character's attention is shown
    ):
        row = None if step.attention is None else step.attention.float().numpy()  # (L, H, S)
        keys = context[-row.shape[-1] :] if row is not None else []  # the S positions the newest query saw
        context.append(step.token)
        char = tokenizer.vocab[step.token]
        last.update(
            probs_raw=step.probs_raw.double().numpy(),
            probs=step.probs.double().numpy(),
            attention=row,
            keys=[tokenizer.vocab[i] for i in keys],
            char=char,
        )
        yield char


@torch.no_grad()
def attention_under_masks(
    model: TinyGPT, idx: torch.Tensor, layer: int, head: int, modes: tuple[str, ...], window: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{mode: ((T, T) mask, (T, T) weights of one head)} for the same checkpoint and probe under each mask mode:
    what the mask alone changes. The model's mask knob is switched for each pass and restored after (under the
    hook lock, since the app shares cached models between sessions)."""
    config = model.config
    saved = (config.mask, config.window)
    out = {}
    with HOOK_LOCK:
        try:
            for mode in modes:
                config.mask, config.window = mode, window
                _, maps = attention_forward(model, idx)  # L x (1, H, T, T)
                mask = mask_rows(mode, 0, idx.shape[1], window).numpy()
                out[mode] = (mask, maps[layer][0, head].double().numpy())
        finally:
            config.mask, config.window = saved
    return out
