"""python -m tinygpt.bench.sampling: ms a character of TinyGPT's sampling against a cache-less reference, side by side.

The reference is what nanoGPT's `generate()` does, written here from scratch: every character it runs the whole
model on the last `max_seq_len` characters (no cache) through plain torch calls (no probes, no checks), keeps the
last position's logits, divides by the temperature, keeps the top k, softmaxes and draws one id. It reads the very
weights of the TinyGPT it races, so both compute the same function; the bench checks that their greedy texts agree.

Shape: nanoGPT's Shakespeare-char CPU recipe (4 layers, 4 heads, width 128, context 64, no bias, vocab 65).
Each round times, back to back: the reference, TinyGPT's `generate` (the CLI's `sample` and the runs' samples),
and the Sample page's `stream_text` (tinygpt/inside/maps.py: per-character distributions, the last character's
attention); and each of the first two within the first window alone (63 characters after a 1-character prompt:
where TinyGPT's KV cache runs one position a character). Wall and CPU time (process_time: on a machine shared with
other jobs, the time this process computed) with the load average beside each; the medians of the rounds count.

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
from ..inside.maps import stream_text
from ..model import TinyGPT
from ..tokenizer import CharTokenizer


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


def _timed(fn) -> tuple[float, float, float]:
    """(wall s, CPU s, load average) of one call."""
    load = _load()
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu, load


def compare(chars: int = 500, rounds: int = 5, temperature: float = 0.8, top_k: int | None = 200) -> dict:
    torch.manual_seed(0)
    model = TinyGPT(nanogpt_shape()).eval()
    prompt = torch.zeros(1, 1, dtype=torch.long)
    # The same function: greedy texts agree (a few hundred characters on random weights, ties aside).
    same = torch.equal(reference_generate(model, prompt, 100, 0, None), model.generate(prompt, 100, temperature=0))

    tokenizer = CharTokenizer([chr(32 + i) for i in range(65)])
    window = model.config.max_seq_len - 1

    def page():
        for _ in stream_text(model, tokenizer, " ", chars, temperature, top_k, None, 0, {}):
            pass

    racers = {  # name: (call, characters)
        "reference (no cache)": (lambda: reference_generate(model, prompt, chars, temperature, top_k), chars),
        "tinygpt generate": (lambda: model.generate(prompt, chars, temperature, top_k), chars),
        "Sample page stream_text": (page, chars),
        "reference, first window": (lambda: reference_generate(model, prompt, window, temperature, top_k), window),
        "tinygpt generate, first window": (lambda: model.generate(prompt, window, temperature, top_k), window),
    }
    for fn, _ in racers.values():  # warm-up: first calls pay for allocations and kernels' dispatch tables
        torch.manual_seed(1)
        fn()
    rows = []
    for round_ in range(rounds):
        for name, (fn, n) in racers.items():
            torch.manual_seed(round_)
            wall, cpu, load = _timed(fn)
            row = {"round": round_, "racer": name, "wall_ms_per_char": round(wall * 1000 / n, 4),
                   "cpu_ms_per_char": round(cpu * 1000 / n, 4), "load": load}  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = {"chars": chars, "threads": torch.get_num_threads(), "greedy_texts_agree": same, "racers": {}}
    for name in racers:
        mine = [r for r in rows if r["racer"] == name]
        out["racers"][name] = {
            key: statistics.median(r[key] for r in mine) for key in ("wall_ms_per_char", "cpu_ms_per_char")
        } | {"load": f"{min(r['load'] for r in mine):g}-{max(r['load'] for r in mine):g}"}
    pairs = [("tinygpt generate", "reference (no cache)"), ("Sample page stream_text", "reference (no cache)"),
             ("tinygpt generate, first window", "reference, first window")]  # fmt: skip
    for name, against in pairs:
        mine, theirs = out["racers"][name], out["racers"][against]
        mine["cpu_x_reference"] = round(mine["cpu_ms_per_char"] / theirs["cpu_ms_per_char"], 3)
        mine["wall_x_reference"] = round(mine["wall_ms_per_char"] / theirs["wall_ms_per_char"], 3)
    return out


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
    print(f"\n{result['chars']} characters, {result['threads']} thread(s), medians of {args.rounds} rounds\n")
    print("| racer | wall ms a char | CPU ms a char | CPU x reference | load |\n|---|---|---|---|---|")
    for name, r in result["racers"].items():
        ratio = r.get("cpu_x_reference", 1.0)
        print(f"| {name} | {r['wall_ms_per_char']:.3f} | {r['cpu_ms_per_char']:.3f} | {ratio:.2f} | {r['load']} |")


if __name__ == "__main__":
    main()
