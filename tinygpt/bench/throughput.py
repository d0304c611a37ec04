"""Benchmarks: `python -m tinygpt.bench [--quality] [--threads N]` prints one JSON object.

Everything is measured side by side in one process and interleaved in rounds, because the machines this runs on are
shared and noisy: a number only means something next to its reference measured a moment apart.

Sections
- `train_speed`: tokens/s and ms/step at nanoGPT's README CPU configuration (4 layers, 4 heads, width 128,
  context 64, batch 12) for
    * `nanogpt_style`: a reference loop written the way nanoGPT's train.py does it (bias-free model, SDPA causal,
      AdamW foreach, `clip_grad_norm_`, `loss.item()` each step);
    * `tinygpt_bare`: `Trainer.step()` (per-layer grad norms always on: they are part of the record);
    * `tinygpt_inspect`: the same plus update/weight ratios every step and an attention snapshot of a probe text
      every 50 steps (what the app shows live).
- `sampling`: tokens/s generating 255 tokens to fill a context of 256, with and without the KV cache.
- `quality` (with --quality): val loss after 2000 steps on Tiny Shakespeare for several seeds, nanoGPT's recipe
  (lr 1e-3 warmup 100 cosine to 1e-4, betas (0.9, 0.99), dropout 0), val loss averaged over 200 batches.
- `worker` (with --worker): the worker process publishing everything vs the bare loop, start latency, reader memory.

The reference model is written here from the published recipe, not copied; it exists only to be a yardstick.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from ..config import TrainConfig, TransformerConfig
from ..data import Corpus, load_shakespeare
from ..interventions import model_for_run
from ..model import TinyGPT
from ..presets import preset
from ..probes import attention_forward
from ..schedule import lr_at
from ..trainer import Trainer

# ---------------------------------------------------------------- a nanoGPT-style yardstick


class _RefBlock(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float = 0.0):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.ln_1 = nn.LayerNorm(width, bias=False)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width, bias=False)
        self.ln_2 = nn.LayerNorm(width, bias=False)
        self.fc = nn.Linear(width, 4 * width, bias=False)
        self.fc_out = nn.Linear(4 * width, width, bias=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (
            t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in self.qkv(self.ln_1(x)).split(C, 2)
        )
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        x = x + self.drop(self.proj(y.transpose(1, 2).contiguous().view(B, T, C)))
        return x + self.drop(self.fc_out(F.gelu(self.fc(self.ln_2(x)))))


class _RefGPT(nn.Module):
    def __init__(self, vocab: int, width: int, layers: int, heads: int, context: int, dropout: float = 0.0):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(_RefBlock(width, heads, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, bias=False)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight
        for module in self.modules():  # GPT-2 / nanoGPT initialisation
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
        for block in self.blocks:
            for proj in (block.proj, block.fc_out):
                nn.init.normal_(proj.weight, std=0.02 / (2 * layers) ** 0.5)

    def forward(self, idx):
        x = self.drop(self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device)))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def reference_stepper(corpus: Corpus, mc: TransformerConfig, tc: TrainConfig, device="cpu", autocast=None):
    """A nanoGPT-style training step (returns its loss) and its model, for side-by-side comparisons. On a GPU pass
    autocast=torch.bfloat16, as nanoGPT's train.py does there."""
    torch.manual_seed(tc.seed)
    model = _RefGPT(mc.vocab_size, mc.hidden_dim, mc.num_layers, mc.num_heads, mc.max_seq_len, mc.dropout)
    model.to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": tc.weight_decay}, {"params": rest, "weight_decay": 0.0}],
        lr=tc.learning_rate,
        betas=(tc.beta1, tc.beta2),
        foreach=True,
    )
    gen = torch.Generator().manual_seed(tc.seed)
    counter = [0]
    device_type = torch.device(device).type

    def step():
        for group in opt.param_groups:
            group["lr"] = lr_at(counter[0], tc.learning_rate, tc.min_lr, tc.warmup_steps, tc.max_steps)
        x, y = corpus.get_batch("train", tc.batch_size, gen, device)
        with torch.autocast(device_type, autocast or torch.bfloat16, enabled=autocast is not None):
            loss = F.cross_entropy(model(x).view(-1, mc.vocab_size), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc.max_grad_norm)
        opt.step()
        counter[0] += 1
        return loss.item()

    step.model = model
    return step


# ---------------------------------------------------------------- sections


def shakespeare_corpus(block_size: int) -> Corpus:
    return Corpus.from_text(load_shakespeare(), block_size, name="Tiny Shakespeare")


def bench_train_speed(rounds: int = 5, steps_per_round: int = 40) -> dict:
    rc = preset("nanogpt-cpu")
    corpus = shakespeare_corpus(rc.model.max_seq_len)
    rc.model.vocab_size = corpus.tokenizer.vocab_size
    tokens_per_step = rc.train.batch_size * rc.model.max_seq_len

    torch.manual_seed(rc.train.seed)
    bare = Trainer(TinyGPT(TransformerConfig(**rc.model.to_dict())), TrainConfig(**rc.train.to_dict()), corpus)
    bare.track_update_ratios = False
    torch.manual_seed(rc.train.seed)
    inspect = Trainer(TinyGPT(TransformerConfig(**rc.model.to_dict())), TrainConfig(**rc.train.to_dict()), corpus)
    probe = torch.tensor([corpus.tokenizer.encode(corpus.probe_text(rc.model.max_seq_len))])  # (1, T)

    def inspect_step():
        record = inspect.step()
        if record["step"] % 50 == 0:
            with torch.no_grad():
                _, maps = attention_forward(inspect.model, probe)
                torch.stack(maps)[:, 0].to(torch.float16).numpy()  # (L, H, T, T) as the run folder stores it
        return record

    steppers = {
        "nanogpt_style": reference_stepper(corpus, rc.model, rc.train),
        "tinygpt_bare": bare.step,
        "tinygpt_inspect": inspect_step,
    }
    times: dict[str, list[float]] = {name: [] for name in steppers}
    for step in steppers.values():  # warm up allocators and kernels
        for _ in range(5):
            step()
    for _ in range(rounds):
        for name, step in steppers.items():
            started = time.perf_counter()
            for _ in range(steps_per_round):
                step()
            times[name].append((time.perf_counter() - started) / steps_per_round)
    out = {}
    for name, samples in times.items():
        best = statistics.median(samples)
        out[name] = {"ms_per_step": round(best * 1000, 2), "tokens_per_s": round(tokens_per_step / best)}
    ref = out["nanogpt_style"]["tokens_per_s"]
    out["speedup_vs_nanogpt_style"] = round(out["tinygpt_inspect"]["tokens_per_s"] / ref, 3)
    out["inspection_overhead_pct"] = round(
        100 * (out["tinygpt_inspect"]["ms_per_step"] / out["tinygpt_bare"]["ms_per_step"] - 1), 2
    )
    return out


def bench_sampling(context: int = 256, repeats: int = 3) -> dict:
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=65, hidden_dim=128, num_layers=4, num_heads=4, max_seq_len=context)
    model = TinyGPT(config).eval()
    prompt = torch.zeros(1, 1, dtype=torch.long)
    new_tokens = context - 1
    out = {"context": context, "new_tokens": new_tokens}
    results: dict[str, list[float]] = {"kv_cache": [], "recompute": []}
    for _ in range(repeats):
        for name, use_cache in (("kv_cache", True), ("recompute", False)):
            started = time.perf_counter()
            model.generate(prompt, new_tokens, temperature=0, use_cache=use_cache)
            results[name].append(new_tokens / (time.perf_counter() - started))
    for name, samples in results.items():
        out[f"{name}_tokens_per_s"] = round(statistics.median(samples), 1)
    out["kv_cache_speedup"] = round(out["kv_cache_tokens_per_s"] / out["recompute_tokens_per_s"], 2)
    return out


RECIPES = {
    # nanoGPT's README CPU command for shakespeare_char, as the issue pins it.
    "nanogpt": {},
    # Same model, data and token budget; a 2x higher peak LR suits a model this small.
    "tuned": {"learning_rate": 2e-3, "min_lr": 2e-4},
}


@torch.no_grad()
def _val_loss(model: nn.Module, corpus: Corpus, seed: int, batches: int, batch_size: int = 12) -> float:
    """Mean val loss over `batches` windows drawn from a fixed generator: every model sees the same batches."""
    model.eval()
    generator = torch.Generator().manual_seed(seed + 1)
    total = 0.0
    for _ in range(batches):
        x, y = corpus.get_batch("val", batch_size, generator)
        logits = model(x)
        total += F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)).item()
    model.train()
    return total / batches


def train_to_val_loss(
    seed: int, impl: str = "tinygpt", recipe: str = "nanogpt", steps: int = 2000, eval_batches: int = 200
) -> dict:
    rc = preset("nanogpt-cpu", seed=seed, max_steps=steps, **RECIPES[recipe])
    corpus = shakespeare_corpus(rc.model.max_seq_len)
    rc.model.vocab_size = corpus.tokenizer.vocab_size
    started = time.perf_counter()
    if impl == "tinygpt":
        torch.manual_seed(seed)
        trainer = Trainer(model_for_run(rc), rc.train, corpus)
        trainer.track_update_ratios = False
        for _ in range(steps):
            trainer.step()
        model = trainer.model
    else:
        step = reference_stepper(corpus, rc.model, rc.train)
        for _ in range(steps):
            step()
        model = step.model
    elapsed = time.perf_counter() - started
    return {
        "impl": impl,
        "recipe": recipe,
        "seed": seed,
        "seconds": round(elapsed, 1),
        "val_loss": round(_val_loss(model, corpus, seed, eval_batches), 4),
    }


def bench_quality(seeds: list[int], steps: int = 2000) -> dict:
    """Val loss after `steps` for tinygpt and the nanoGPT-style reference (nanoGPT recipe), and tinygpt tuned."""
    out: dict = {"steps": steps, "eval": "mean over 200 val batches of 12 x 64, the same batches for every model"}
    for impl, recipe in (("tinygpt", "nanogpt"), ("nanogpt_style", "nanogpt"), ("tinygpt", "tuned")):
        runs = [train_to_val_loss(seed, impl, recipe, steps) for seed in seeds]
        out[f"{impl}/{recipe}"] = {
            "runs": runs,
            "mean_val_loss": round(statistics.mean(r["val_loss"] for r in runs), 4),
        }
    return out


def bench_reader_memory(steps: int = 20_000, chunk: int = 500) -> dict:
    """RSS growth of a RunReader following a run's metrics for `steps` steps, polled every `chunk` records.

    The records are written in the same shape a 4-layer run writes (per-layer norms and ratios), so the byte
    volume is realistic; the reader must keep memory flat (thinned history), not grow a list per step.
    """
    import resource
    import tempfile

    from ..runs.reader import RunReader
    from ..runs.writer import RunWriter
    from ..trainer import group_names

    def rss_mb() -> float:
        with open("/proc/self/statm") as f:  # current resident set (ru_maxrss is a peak, not a level)
            return int(f.read().split()[1]) * resource.getpagesize() / 1e6

    groups = group_names(4)
    with tempfile.TemporaryDirectory() as tmp:
        writer = RunWriter(tmp)
        reader = RunReader(tmp)
        reader.poll()
        start = rss_mb()
        for step in range(1, steps + 1):
            writer.append_metric(
                {
                    "step": step,
                    "loss": 2.0,
                    "lr": 1e-3,
                    "grad_norm": 0.5,
                    "clipped": False,
                    "layer_grad_norms": dict.fromkeys(groups, 0.1),
                    "update_ratios": dict.fromkeys(groups, 1e-3),
                    "tokens_per_s": 20000.0,
                }
            )
            if step % chunk == 0:
                reader.poll()
        reader.poll()
        end = rss_mb()
        kept = len(reader.metrics)
        writer.close()
    return {"steps": steps, "rss_growth_mb": round(end - start, 2), "points_kept": kept}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="torch threads")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds for the speed comparison")
    parser.add_argument("--quality", action="store_true", help="also train 2000 steps per seed and report val loss")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1337, 1338, 1339], help="seeds for --quality")
    parser.add_argument("--worker", action="store_true", help="also measure the worker process (publishing, start)")
    parser.add_argument("--skip-speed", action="store_true", help="skip train_speed and sampling")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    report: dict = {
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": args.threads,
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
        },
    }
    if not args.skip_speed:
        report["train_speed"] = bench_train_speed(args.rounds)
        print(json.dumps({"train_speed": report["train_speed"]}), flush=True)
        report["sampling"] = bench_sampling()
    if args.worker:
        from .worker import benchmark_worker

        report["worker"] = {
            "demo": benchmark_worker(preset("demo"), rounds=args.rounds),
            "nanogpt_cpu_300_steps": benchmark_worker(preset("nanogpt-cpu", max_steps=300), rounds=args.rounds),
        }
        report["reader_memory"] = bench_reader_memory()
    if args.quality:
        report["quality"] = bench_quality(args.seeds)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
