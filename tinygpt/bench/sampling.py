"""python -m tinygpt.bench.sampling: ms a character of TinyGPT's sampling against a cache-less reference, side by side.

The reference is what nanoGPT's `generate()` does, written here from scratch: every character it runs the whole
model on the last `max_seq_len` characters (no cache) through plain torch calls (no probes, no checks), keeps the
last position's logits, divides by the temperature, keeps the top k, softmaxes and draws one id. It reads the very
weights of the TinyGPT it races, so both compute the same function; the bench checks that their greedy texts agree.

Shape: nanoGPT's Shakespeare-char CPU recipe (4 layers, 4 heads, width 128, context 64, no bias, vocab 65).
Each round times the reference and TinyGPT's `generate` (and `stream` with the Sample page's per-token details)
back to back, the machine's load average beside each figure; the medians of the rounds are the result.

    --chars 500 --rounds 5 --threads 1 --temperature 0.8 --top-k 200
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

from ..config import TransformerConfig
from ..model import TinyGPT


def nanogpt_shape(context: int = 64) -> TransformerConfig:
    return TransformerConfig(vocab_size=65, hidden_dim=128, num_layers=4, num_heads=4, max_seq_len=context)


def reference_logits(model: TinyGPT, idx: torch.Tensor) -> torch.Tensor:
    """The next-character logits (B, V) of idx (B, T <= max_seq_len): the whole model on every position, in plain
    torch calls on the model's own weights (its Probe modules, checks and cache are not used)."""
    cfg = model.config
    B, T = idx.shape
    C, H = cfg.hidden_dim, cfg.num_heads
    x = model.tok_emb.weight[idx] + model.pos_emb.weight[:T]  # (B, T, C)
    for block in model.blocks:
        h = F.layer_norm(x, (C,), block.ln_1.weight, block.ln_1.bias)
        q, k, v = F.linear(h, block.attn.qkv.weight, block.attn.qkv.bias).split(C, dim=2)  # 3 x (B, T, C)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, D)
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, block.attn.proj.weight, block.attn.proj.bias)
        h = F.layer_norm(x, (C,), block.ln_2.weight, block.ln_2.bias)
        h = F.gelu(F.linear(h, block.mlp.fc.weight, block.mlp.fc.bias))  # (B, T, 4C)
        x = x + F.linear(h, block.mlp.proj.weight, block.mlp.proj.bias)
    last = F.layer_norm(x[:, -1], (C,), model.ln_f.weight, model.ln_f.bias)  # (B, C): only the newest predicts
    return last @ model.lm_head.weight.t()  # (B, V)


@torch.no_grad()
def reference_generate(model: TinyGPT, idx: torch.Tensor, new: int, temperature: float, top_k: int | None):
    """idx (B, T) continued by `new` ids, recomputing the cropped context each character; temperature 0 is greedy."""
    for _ in range(new):
        logits = reference_logits(model, idx[:, -model.config.max_seq_len :])  # (B, V)
        if temperature == 0:
            nxt = logits.argmax(dim=-1, keepdim=True)
        else:
            logits = logits / temperature
            if top_k is not None:
                kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, -1:]  # (B, 1)
                logits = logits.masked_fill(logits < kth, float("-inf"))
            nxt = torch.multinomial(torch.softmax(logits, dim=-1), 1)  # (B, 1)
        idx = torch.cat([idx, nxt], dim=1)
    return idx


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _timed(fn) -> tuple[float, float]:
    load = _load()
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started, load


def compare(chars: int = 500, rounds: int = 5, temperature: float = 0.8, top_k: int | None = 200) -> dict:
    torch.manual_seed(0)
    model = TinyGPT(nanogpt_shape()).eval()
    prompt = torch.zeros(1, 1, dtype=torch.long)
    # The same function: greedy texts agree (a few hundred characters on random weights, ties aside).
    same = torch.equal(reference_generate(model, prompt, 100, 0, None), model.generate(prompt, 100, temperature=0))

    def details():
        for _ in model.stream(prompt, chars, temperature, top_k, details=True):
            pass

    racers = {
        "reference (no cache)": lambda: reference_generate(model, prompt, chars, temperature, top_k),
        "tinygpt generate": lambda: model.generate(prompt, chars, temperature, top_k),
        "tinygpt stream, details": details,
    }
    for fn in racers.values():  # warm-up: first calls pay for allocations and kernels' dispatch tables
        torch.manual_seed(1)
        fn()
    rows = []
    for round_ in range(rounds):
        for name, fn in racers.items():
            torch.manual_seed(round_)
            seconds, load = _timed(fn)
            rows.append({"round": round_, "racer": name, "ms_per_char": round(seconds * 1000 / chars, 4), "load": load})
            print(json.dumps(rows[-1]), flush=True)
    medians = {name: statistics.median(r["ms_per_char"] for r in rows if r["racer"] == name) for name in racers}
    ref = medians["reference (no cache)"]
    return {"chars": chars, "threads": torch.get_num_threads(), "greedy_texts_agree": same, "medians": medians,
            "ratio_to_reference": {n: round(m / ref, 3) for n, m in medians.items()}}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.sampling", description=__doc__.split("\n")[0])
    parser.add_argument("--chars", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-k", type=int, default=200)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    result = compare(args.chars, args.rounds, args.temperature, args.top_k)
    print(json.dumps(result))
    print("\n| racer | ms a character (median) | x reference | load during the rounds |\n|---|---|---|---|")
    print(f"| ({result['chars']} characters, {result['threads']} thread(s)) | | | |")
    for name, ms in result["medians"].items():
        print(f"| {name} | {ms:.3f} | {result['ratio_to_reference'][name]:.2f} | see the JSON lines |")


if __name__ == "__main__":
    main()
