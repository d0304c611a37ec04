"""TinyGPT: a decoder-only transformer for characters, written so it can be read top to bottom.

    idx (B, T) token ids
      -> tok_emb(idx) + pos_emb(0..T-1)                  (B, T, C)   C = hidden_dim
      -> num_layers x Block:                             (B, T, C)
             x = x + attn(ln_1(x))     tokens talk to each other (masked multi-head attention)
             x = x + mlp(ln_2(x))      each token thinks on its own (4x wide GELU MLP); with token_shift K
                                       it also reads ln_2 of the K positions before it (Block.mlp_input)
      -> ln_f -> lm_head (tied to tok_emb)               (B, T, V)   V = vocab_size

Shape legend: B batch, T positions, C hidden_dim, H num_heads, D head_dim = C / H, V vocab_size, L num_layers.

Pre-LayerNorm (GPT-2): each sublayer sees a normalised copy of the residual stream, and the stream itself is only
ever added to, which keeps gradients flowing to the first layer. Initialisation follows GPT-2: N(0, 0.02) everywhere,
with the two projections that write into the residual stream scaled by 1/sqrt(2 * num_layers), so the stream's
variance does not grow with depth.

The attention knobs (scale, mask, softmax, ablated heads) are read from the shared config at every forward, so a
trainer can change them between steps (see `LIVE_MODEL_KNOBS` in config.py). What the pitfall lab breaks on purpose
(a detached residual, a zeroed probe point, the shape bug, shape contracts) is not here: interventions.py attaches it
to a built model from outside, as hooks at its probe points. This file computes a correct transformer only.

References: Vaswani et al. 2017; Radford et al. 2019 (GPT-2); karpathy/nanoGPT model.py; harvardnlp's
annotated-transformer. Left out: biases-free variants, weight sharing beyond the tied head, rotary embeddings,
mixed precision (the trainer may autocast).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .attention import apply_mask, attention_scores, fused_attention, mask_rows, scores_to_weights
from .config import TransformerConfig, parse_heads
from .errors import ShapeError
from .probes import Probe, attention_forward
from .sampling import next_token_probs, sample_next_token
from .shapes import expect_shape


def _dropout(p: float) -> nn.Module:
    # Dropout(0) still launches its kernel in training mode; an identity costs nothing. In eval dropout is the
    # identity either way, and the forwards skip the module's call (sampling pays per call: issue 35).
    return nn.Dropout(p) if p > 0 else nn.Identity()


class KVCache:
    """Keys and values of the positions seen so far, one preallocated (2, B, H, max_seq_len, D) buffer per layer
    (keys, then values: one copy a layer stores a new position's both).

    With a cache, generating one token runs the model on one position instead of the whole context.
    """

    def __init__(self, config: TransformerConfig, batch_size: int, device, dtype=torch.float32):
        shape = (2, batch_size, config.num_heads, config.max_seq_len, config.head_dim)
        self.kv = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(config.num_layers)]
        self.length = 0  # positions filled so far, the same for every layer
        # Token shift: each layer's last K MLP inputs (B, K, C), the next tokens' previous positions (Block.mlp_input).
        self.last_inputs: dict[int, torch.Tensor] = {}

    def append(self, layer: int, kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the new positions' keys and values kv (2, B, H, T_new, D); return all keys and values so far,
        2 x (B, H, S, D)."""
        end = self.length + kv.shape[-2]
        buffer = self.kv[layer]
        buffer[:, :, :, self.length : end] = kv
        keys, values = buffer[:, :, :, :end].unbind(0)
        return keys, values


class MultiHeadAttention(nn.Module):
    def __init__(self, config: TransformerConfig, layer: int = 0):
        super().__init__()
        self.config = config  # shared, not copied: live knobs (scale, mask) take effect at the next forward
        self.layer = layer  # which block it sits in: the heads of `ablated_heads` are named by layer
        self.qkv = nn.Linear(
            config.hidden_dim, 3 * config.hidden_dim, bias=config.bias
        )  # q, k, v for all heads in one matmul
        self.proj = nn.Linear(
            config.hidden_dim, config.hidden_dim, bias=config.bias
        )  # writes back into the residual stream
        self.resid_dropout = _dropout(config.dropout)
        self.hook_q = Probe()  # (B, H, T, D) queries, split into heads
        self.hook_k = Probe()  # (B, H, S, D) keys (cached ones included)
        self.hook_v = Probe()  # (B, H, S, D) values (cached ones included)
        self.hook_scores = Probe()  # (B, H, T, S) q.k * scale, before masking
        self.hook_mask = Probe()  # (T, S) bool, True = may attend
        self.hook_weights = Probe()  # (B, H, T, S) softmax weights, rows sum to 1
        self.hook_out = Probe()  # (B, T, C) heads concatenated, before the output projection

    def explicit(self) -> bool:
        """Take the written-out path? Only it has weights to show, a naive softmax, or an unfused kernel."""
        cfg = self.config
        watched = any(p.active for p in (self.hook_scores, self.hook_mask, self.hook_weights))
        return watched or cfg.softmax != "stable" or not cfg.fused_attention

    def forward(
        self, x: torch.Tensor, cache: KVCache | None = None, layer: int = 0, keep: int | None = None
    ) -> torch.Tensor:
        """(B, T, C) -> (B, T, C); with `keep`, only the last `keep` positions query: (B, keep, C) (every position
        still gives its key and value)."""
        cfg = self.config
        B, T, C = x.shape
        # q, k, v for all heads, the width split into H heads of D, in two ops (a sampled character is mostly
        # small ops' overhead): (B, T, 3C) -> (B, T, 3, H, D) -> (3, B, H, T, D)
        qkv = self.qkv(x).view(B, T, 3, cfg.num_heads, cfg.head_dim).permute(2, 0, 3, 1, 4)
        past = 0
        if cache is not None:
            past = cache.length
            q = qkv[0]  # (B, H, T, D)
            k, v = cache.append(layer, qkv[1:])  # (B, H, S, D) with S = past + T
        else:
            q, k, v = qkv.unbind(0)  # 3 x (B, H, T, D)
        if keep is not None and keep < T:
            q = q[:, :, -keep:]  # (B, H, keep, D): the positions before them query as if cached
            past, T = past + T - keep, keep
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        dropout_p = cfg.dropout if self.training else 0.0
        if self.explicit():
            mask = self.hook_mask(mask_rows(cfg.mask, past, T, cfg.window, x.device))  # (T, S), True = may attend
            scores = self.hook_scores(attention_scores(q, k, cfg.scale))  # (B, H, T, S)
            weights = self.hook_weights(scores_to_weights(apply_mask(scores, mask), cfg.softmax))  # rows sum to 1
            dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights  # the heatmaps show `weights`
            y = dropped @ v  # (B, H, T, S) @ (B, H, S, D) -> (B, H, T, D)
        else:
            y = fused_attention(q, k, v, cfg.mask, cfg.scale, cfg.window, dropout_p)  # (B, H, T, D)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, H, T, D) -> (B, T, H, D) -> (B, T, C)
        out = self.proj(self.hook_out(self.zero_ablated(y)))  # (B, T, C)
        return self.resid_dropout(out) if self.training else out

    def zero_ablated(self, y: torch.Tensor) -> torch.Tensor:
        """y (B, T, C), the heads' outputs side by side, with the heads the live knob `ablated_heads` switches off in
        this layer zeroed (zero ablation): such a head writes nothing into the stream, so it learns nothing either."""
        cfg = self.config
        off = [h for lay, h in parse_heads(cfg.ablated_heads) if lay == self.layer] if cfg.ablated_heads else []
        if not off:
            return y
        keep = torch.ones(cfg.num_heads, cfg.head_dim, device=y.device, dtype=y.dtype)
        keep[off] = 0.0  # (H, D): head h owns columns h*D .. (h+1)*D - 1 of the concatenation
        return y * keep.view(-1)  # (B, T, C) * (C,)


class MLP(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.fc = nn.Linear(config.hidden_dim, 4 * config.hidden_dim, bias=config.bias)  # 4x wider, as in GPT-2
        self.act = nn.GELU()
        self.hook_act = Probe()  # (B, T, 4C) activations after GELU
        self.proj = nn.Linear(
            4 * config.hidden_dim, config.hidden_dim, bias=config.bias
        )  # writes back into the residual stream
        self.dropout = _dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.proj(self.hook_act(self.act(self.fc(x))))  # (B, T, C)
        return self.dropout(out) if self.training else out


class Block(nn.Module):
    """One pre-LayerNorm decoder block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, config: TransformerConfig, layer: int = 0):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.hidden_dim, bias=config.bias)
        self.attn = MultiHeadAttention(config, layer)
        self.ln_2 = nn.LayerNorm(config.hidden_dim, bias=config.bias)
        self.mlp = MLP(config)
        self.hook_resid_pre = Probe()  # (B, T, C) the residual stream entering the block
        self.hook_skip_attn = Probe()  # (B, T, C) the stream carried past attention (the skip path)
        self.hook_resid_mid = Probe()  # (B, T, C) after attention added its part
        self.hook_skip_mlp = Probe()  # (B, T, C) the stream carried past the MLP
        self.hook_resid_post = Probe()  # (B, T, C) after the MLP added its part
        # Token shift (config.token_shift = K): mu_j (C,) for j = 1..K, how much of the input j positions back the
        # MLP mixes in, per channel, from zero (the plain block). Vectors: AdamW without decay, like the gains.
        self.shift_mlp = nn.ParameterList(
            nn.Parameter(torch.zeros(config.hidden_dim)) for _ in range(config.token_shift)
        )

    def mlp_input(self, x: torch.Tensor, cache: KVCache | None = None, layer: int = 0) -> torch.Tensor:
        """What the MLP reads of the stream x (B, T, C): h = ln_2(x), and with token shift K each row t becomes
        h_t + sum_j mu_j * (h_{t-j} - h_t), j = 1..K. Positions before the window's first are zeros (as in
        training, where every window starts fresh), unless a KV cache holds the ones before it."""
        h = self.ln_2(x)  # (B, T, C)
        K = len(self.shift_mlp)
        if K == 0:
            return h
        T = h.shape[1]
        before = cache.last_inputs.get(layer) if cache is not None and cache.length else None  # (B, K, C)
        # (B, K + T, C): row K + t holds h_t; the K rows before are the cached inputs, or zeros
        padded = F.pad(h, (0, 0, K, 0)) if before is None else torch.cat([before, h], dim=1)
        if cache is not None:
            cache.last_inputs[layer] = padded[:, -K:]  # (B, K, C): the next tokens' previous positions
        out = h
        for j, mix in enumerate(self.shift_mlp, start=1):
            out = out + mix * (padded[:, K - j : K - j + T] - h)  # (C,) * (B, T, C): row t reads h_{t-j}
        return out

    def forward(
        self, x: torch.Tensor, cache: KVCache | None = None, layer: int = 0, keep: int | None = None
    ) -> torch.Tensor:
        """(B, T, C) -> (B, T, C); with `keep`, the last `keep` positions' outputs alone, (B, keep, C): the last
        block of a forward that needs only the newest position's logits (attention and MLP of 1 row, not T)."""
        x = self.hook_resid_pre(x)
        if keep is not None and keep < x.shape[1]:
            attended = self.attn(self.ln_1(x), cache, layer, keep)  # (B, keep, C)
            x = self.hook_resid_mid(self.hook_skip_attn(x[:, -keep:]) + attended)
            return self.hook_resid_post(self.hook_skip_mlp(x) + self.mlp(self.mlp_input(x, cache, layer)))
        # The skip path carries x past each sublayer unchanged, and gradients straight back down with it: cut it
        # (the residual experiment detaches it at these probes) and lower layers learn only through the
        # sublayers' own Jacobians, which shrink the gradient layer after layer.
        x = self.hook_resid_mid(self.hook_skip_attn(x) + self.attn(self.ln_1(x), cache, layer))
        return self.hook_resid_post(self.hook_skip_mlp(x) + self.mlp(self.mlp_input(x, cache, layer)))


@dataclass
class GenerationStep:
    """One generated token, for the Sample page to draw as it streams."""

    token: int  # the id chosen (for batch element 0)
    probs_raw: torch.Tensor  # (V,) softmax of the logits at temperature 1, before any filtering
    probs: torch.Tensor  # (V,) the distribution actually sampled from
    attention: torch.Tensor | None  # (L, H, S) attention row of the newest position, if asked for


class TinyGPT(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.hidden_dim)  # token id -> vector
        self.pos_emb = nn.Embedding(config.max_seq_len, config.hidden_dim)  # position -> vector (learned)
        self.hook_pos = Probe()  # (T, C) the positional embeddings added to the tokens
        self.drop = _dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config, layer) for layer in range(config.num_layers))
        self.ln_f = nn.LayerNorm(config.hidden_dim, bias=config.bias)
        self.lm_head = nn.Linear(config.hidden_dim, config.vocab_size, bias=False)
        # An attached intervention that makes earlier positions depend on later ones (the shape bug normalises over
        # the queries) leaves no KV cache exact, whatever the mask: whoever attaches one sets it
        self.mixes_positions = False
        # Tied head (Press & Wolf 2017): the same matrix reads tokens in and scores them out; fewer parameters.
        self.lm_head.weight = self.tok_emb.weight
        self.apply(self._init_weights)
        residual_std = 0.02 / math.sqrt(2 * config.num_layers)  # GPT-2: two residual writes per block
        for block in self.blocks:
            nn.init.normal_(block.attn.proj.weight, mean=0.0, std=residual_std)
            nn.init.normal_(block.mlp.proj.weight, mean=0.0, std=residual_std)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())  # the tied matrix is counted once

    def _check_input(self, idx: torch.Tensor, past: int) -> None:
        expect_shape("idx", idx, ("B", "T"), dtype=(torch.long, torch.int32, torch.int64))
        limit = self.config.max_seq_len - past
        if idx.shape[1] > limit or idx.shape[1] == 0:
            raise_len = f"T <= max_seq_len={self.config.max_seq_len}" + (f" - {past} cached" if past else "")
            raise ShapeError(
                f"idx: expected shape (B, T) with 1 <= {raise_len}, got {tuple(idx.shape)}. "
                "Crop the sequence to the last max_seq_len tokens or raise max_seq_len."
            )
        if idx.device.type == "cpu":  # a value check costs a host sync on accelerators: CPU only
            low, high = int(idx.min()), int(idx.max())
            if low < 0 or high >= self.config.vocab_size:
                raise ShapeError(
                    f"idx: token ids must be in [0, vocab_size={self.config.vocab_size}), "
                    f"got values from {low} to {high}."
                )

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None, last_only: bool = False) -> torch.Tensor:
        """Logits (B, T, V) for every position; with `last_only`, (B, 1, V) for the newest one alone (sampling:
        the others' head and final norm are not computed). The attention weights: `attention_forward` (probes.py)."""
        self._check_input(idx, cache.length if cache is not None else 0)
        return self._logits(idx, cache, last_only, last_only and self._last_block_rowwise())

    def _last_block_rowwise(self) -> bool:
        """May the last block run on the newest rows alone? Only while no hook in it could read across positions
        (one on hook_out, the heads side by side at one position, is taken as per position, as a head's ablation
        is; a hook on the weights, e.g. one that normalises over the queries, or on a norm that mixes in earlier
        rows, is not)."""
        block = self.blocks[-1]
        return all(
            not (module._forward_hooks or module._forward_pre_hooks)
            for module in block.modules()
            if module is not block.attn.hook_out
        )

    def _logits(self, idx: torch.Tensor, cache: KVCache | None, last_only: bool, trim: bool) -> torch.Tensor:
        """forward without its input checks: for `stream`, whose ids after the prompt are its own samples.
        `trim`: the last block runs on the rows the newest position's logits need (see _last_block_rowwise)."""
        past = cache.length if cache is not None else 0
        B, T = idx.shape
        positions = torch.arange(past, past + T, device=idx.device)  # (T,)
        x = self.tok_emb(idx) + self.hook_pos(self.pos_emb(positions))  # (B, T, C) + (T, C) -> (B, T, C)
        x = self.drop(x) if self.training else x
        # The newest position's logits need every position's keys and values in every layer, but in the last
        # layer only its own query, attention output and MLP: 1 row instead of T there (a quarter of a 4-layer
        # model's work, exact). With token shift K its MLP also reads the K rows before it, so K + 1 rows stay.
        keep = 1 + self.config.token_shift if trim else None
        last = len(self.blocks) - 1
        for layer, block in enumerate(self.blocks):
            x = block(x, cache, layer, keep if layer == last else None)
        if cache is not None:
            cache.length += T
        if last_only:
            x = x[:, -1:]  # (B, 1, C)
        return self.lm_head(self.ln_f(x))  # (B, T, C) @ (C, V) -> (B, T, V)

    # ---------------------------------------------------------------- generation

    def _use_cache(self, use_cache: bool) -> bool:
        # A cache is exact only if a position's keys never depend on later positions: true for causal and
        # sliding-window masks. Under "none" or "off_by_one" earlier positions change as text grows, so we recompute.
        # An intervention that mixes positions (the shape bug) breaks it too: a review's silent-bug samples were
        # the cache's artefact, "dst)))))))))" where the model itself writes "dst)".
        return use_cache and self.config.mask in ("causal", "sliding_window") and not self.mixes_positions

    @torch.no_grad()
    def stream(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
        with_attention: bool = False,
        details: bool = True,
        last_attention: bool = False,
    ) -> Iterator[tuple[torch.Tensor, GenerationStep | None]]:
        """Yield (next ids (B, 1), step details) one token at a time. Context beyond max_seq_len is cropped left.

        `details=False` skips the per-token distributions (None is yielded instead) for plain generation.
        `last_attention`: only the last token's step carries the attention row (the Sample page shows that one);
        the others take the fused path, ~3x cheaper a token than the explicit one with its probes watched.

        The cache serves the first window: each new token runs one position. Once the text is longer than
        max_seq_len every position of the window moves (learned absolute positions), so every key changes and
        each token runs the whole cropped window, as a cache-less generate does; the cache is dropped then, not
        refilled each token (its copies cost a tenth of a character's time; issue 35).
        """
        expect_shape("idx", idx, ("B", None), dtype=(torch.long, torch.int32, torch.int64))
        if idx.shape[1] == 0:
            raise ShapeError("idx: the prompt is empty; give at least one character to continue from.")
        was_training = self.training
        self.eval()
        try:
            context = idx[:, -self.config.max_seq_len :]  # (B, T <= max_seq_len)
            trim = self._last_block_rowwise()
            cache = None
            if self._use_cache(use_cache):
                cache = KVCache(self.config, idx.shape[0], idx.device, self.tok_emb.weight.dtype)
            self._check_input(context, 0)  # once: the ids after the prompt are the model's own samples
            pending = context  # the positions not yet run through the model
            for i in range(max_new_tokens):
                if cache is not None and cache.length + pending.shape[1] > self.config.max_seq_len:
                    # Positions are absolute (learned embeddings), so once the window slides every cached key
                    # is at the wrong position, and stays so for every later token: recompute from now on.
                    cache = None
                if cache is None:
                    pending = context[:, -self.config.max_seq_len :]
                if with_attention and (not last_attention or i == max_new_tokens - 1):
                    # Its hooks on the weights keep the last block whole for this token (_last_block_rowwise).
                    logits, maps = attention_forward(self, pending, cache=cache, last_only=True)  # L x (B, H, T, S)
                else:
                    logits, maps = self._logits(pending, cache, True, trim), None  # (B, 1, V)
                last = logits[:, -1, :].float()  # (B, V) only the newest position predicts the next token
                step, probs = None, None
                if details:  # the distribution sampled from, computed once for the draw and the page
                    probs = next_token_probs(last, temperature, top_k, top_p) if temperature != 0 else None
                next_ids = sample_next_token(last, temperature, top_k, top_p, generator, probs)  # (B, 1)
                if details:
                    attn_row = None
                    if maps is not None:
                        attn_row = torch.stack([m[0, :, -1, :] for m in maps])  # L x (H, S) -> (L, H, S)
                    if probs is None:
                        probs = next_token_probs(last[:1], temperature, top_k, top_p)
                    step = GenerationStep(
                        token=int(next_ids[0, 0]),
                        probs_raw=torch.softmax(last[0], dim=-1),
                        probs=probs[0],
                        attention=attn_row,
                    )
                context = torch.cat([context, next_ids], dim=1)[:, -self.config.max_seq_len - 1 :]
                pending = next_ids if cache is not None else context
                yield next_ids, step
        finally:
            self.train(was_training)

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Continue each row of idx (B, T) by max_new_tokens -> (B, T + max_new_tokens). Temperature 0 is greedy."""
        pieces = [idx]
        steps = self.stream(idx, max_new_tokens, temperature, top_k, top_p, generator, use_cache, details=False)
        for next_ids, _ in steps:
            pieces.append(next_ids)
        return torch.cat(pieces, dim=1)
