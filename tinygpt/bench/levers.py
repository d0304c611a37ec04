"""Speedrun levers, one at a time: `python -m tinygpt.bench.levers [--levers fast batch48 ...] [--target 1.925]`.

Each lever is the Fast preset with one change, trained in this process by `Trainer.step()` (per-layer gradient
norms and update ratios on, as the worker records them; no files), and scored every `--eval-tokens` training tokens
on the race's fixed windows (`evaluate_model`, 20 batches of 12 x 64). It prints, per lever, the steps and the
training seconds (evals not on the clock) to the first eval at or below `--target`, the median step time, and the
val loss at the end. Levers run one after another in one process, so every row shares the machine's state; the
load average is printed beside each.

What a lever may change: settings of the config (batch, rate, schedule length), the schedule function, the threads,
or the model through its probe points and modules (ReLU², QK-norm, an untied head, logit soft-capping), so an idea
is measured before anything is added to the library. A lever that pays is then made a real setting.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from ..interventions import model_for_run
from ..presets import preset
from ..schedule import lr_at
from ..trainer import Trainer, evaluate_model
from .speedrun import EVAL_BATCH_SIZE, EVAL_BATCHES
from .throughput import shakespeare_corpus

BASE_TOKENS_PER_STEP = 12 * 64  # the Fast preset's batch: levers with a bigger batch take fewer steps


@dataclass
class Lever:
    name: str
    why: str
    settings: dict = field(default_factory=dict)  # preset("fast", **settings)
    patch: Callable[[Trainer], None] | None = None  # changes the model, schedule or optimizer in place
    threads: int | None = None  # None: --threads
    compile: bool = False


class ReLUSquared(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x).square()


def relu_squared(trainer: Trainer) -> None:
    for block in trainer.model.blocks:
        block.mlp.act = ReLUSquared()


def qk_norm(trainer: Trainer) -> None:
    """RMS-normalise every head's query and key (B, H, T, D) at their probe points: scores stay bounded at any lr."""
    for block in trainer.model.blocks:
        for probe in (block.attn.hook_q, block.attn.hook_k):
            probe.register_forward_hook(lambda _m, _i, t: F.rms_norm(t, (t.size(-1),)))


def untied_head(trainer: Trainer) -> None:
    model = trainer.model
    head = nn.Parameter(torch.zeros_like(model.tok_emb.weight))  # (V, C), zero init as in modded-nanogpt
    model.lm_head.weight = head
    _add_param(trainer, "lm_head.weight", head, group=0)  # with the decayed matrices; charted with ln_f


def soft_cap(cap: float) -> Callable[[Trainer], None]:
    def patch(trainer: Trainer) -> None:
        trainer.model.lm_head.register_forward_hook(lambda _m, _i, logits: cap * torch.tanh(logits / cap))

    return patch


def warmup_stable_decay(decay_share: float) -> Callable[[Trainer], None]:
    """Warmup, then the peak rate held, then a linear decay to min_lr over the last `decay_share` of the run."""

    def patch(trainer: Trainer) -> None:
        def current_lr() -> float:
            c, step = trainer.config, trainer.step_count
            decay_from = int(c.max_steps * (1 - decay_share))
            if step < c.warmup_steps or step < decay_from:
                return lr_at(step, c.learning_rate, c.learning_rate, c.warmup_steps, c.max_steps)
            progress = min(1.0, (step - decay_from) / max(1, c.max_steps - decay_from))
            return c.learning_rate + progress * (c.min_lr - c.learning_rate)

        trainer.current_lr = current_lr

    return patch


def newton_schulz_steps(steps: int) -> Callable[[Trainer], None]:
    def patch(trainer: Trainer) -> None:
        from .. import optim

        muon = trainer.optimizer.optimizers[0]
        original = optim.orthogonalize

        def step() -> None:
            optim.orthogonalize = lambda m: original(m, steps)
            try:
                optim.Muon.step(muon)
            finally:
                optim.orthogonalize = original

        muon.step = step

    return patch


def scaled_lr(optimizer_index: int, factor: float) -> Callable[[Trainer], None]:
    """One optimizer of the Muon/AdamW pair at `factor` times the schedule's rate (0: Muon, 1: AdamW)."""

    def patch(trainer: Trainer) -> None:
        one = trainer.optimizer.optimizers[optimizer_index]
        original = one.step

        def step() -> None:
            for group in one.param_groups:
                group["lr"] *= factor
            original()

        one.step = step

    return patch


def zero_projections(trainer: Trainer) -> None:
    """Each block starts as the identity: the attention and MLP output projections (C, C), (C, 4C) begin at zero."""
    with torch.no_grad():
        for block in trainer.model.blocks:
            block.attn.proj.weight.zero_()
            block.mlp.proj.weight.zero_()


def value_residual(mix: float) -> Callable[[Trainer], None]:
    """ResFormer's value residual: every later layer's values (B, H, T, D) are mixed with the first layer's,
    v <- mix * v + (1 - mix) * v_first, so the token's own identity reaches every layer's attention output."""

    def patch(trainer: Trainer) -> None:
        first: dict[str, torch.Tensor] = {}
        blocks = trainer.model.blocks

        def keep(_m, _i, v):
            first["v"] = v
            return v

        blocks[0].attn.hook_v.register_forward_hook(keep)
        for block in blocks[1:]:
            block.attn.hook_v.register_forward_hook(lambda _m, _i, v: mix * v + (1 - mix) * first["v"])

    return patch


def _add_param(trainer: Trainer, name: str, param: nn.Parameter, group: int = 1) -> None:
    """Give a lever's new parameter to an AdamW group (1: no decay, for vectors) and to the per-group diagnostics
    (as ln_f)."""
    adamw = trainer.optimizer.optimizers[-1] if hasattr(trainer.optimizer, "optimizers") else trainer.optimizer
    adamw.param_groups[group]["params"].append(param)
    trainer.named_params.append((name, param))
    if trainer.average is not None:  # the weights' running average (train.weight_average) keeps one per parameter
        trainer.average.append(param.detach().clone())
    trainer._group_index = torch.cat([trainer._group_index, trainer._group_index[-1:]])


def _previous(x: torch.Tensor) -> torch.Tensor:
    """x (B, T, C) moved one position later: row t holds x[:, t - 1], row 0 holds zeros (nothing before it)."""
    return F.pad(x, (0, 0, 1, 0))[:, :-1]


def smear(trainer: Trainer) -> None:
    """Each position's embedding (B, T, C) plus a learned per-channel share of the previous character's:
    x_t + g * x_{t-1}, g (C,) from zero. A bigram feature from step 1, before any previous-token head forms."""
    gate = nn.Parameter(torch.zeros(trainer.model.config.hidden_dim))
    _add_param(trainer, "smear.gate", gate)
    trainer.model.blocks[0].hook_resid_pre.register_forward_hook(lambda _m, _i, x: x + gate * _previous(x))


def token_shift(parts: tuple[str, ...]) -> Callable[[Trainer], None]:
    """RWKV's token shift before every attention and MLP: the sublayer reads x_t + mu * (x_{t-1} - x_t) of its
    normalised input (B, T, C), mu (C,) per sublayer from zero, so every layer can mix in the previous character."""

    def patch(trainer: Trainer) -> None:
        for i, block in enumerate(trainer.model.blocks):
            for part, norm in (("attn", block.ln_1), ("mlp", block.ln_2)):
                if part not in parts:
                    continue
                mu = nn.Parameter(torch.zeros(trainer.model.config.hidden_dim))
                _add_param(trainer, f"shift.{i}.{part}", mu)
                norm.register_forward_hook(lambda _m, _i, x, mu=mu: torch.lerp(x, _previous(x), mu))

    return patch


def two_back(trainer: Trainer) -> None:
    """On top of token shift: each MLP also mixes in the input two positions back, h + nu * (h_{t-2} - h), nu (C,)
    from zero: trigram features for the MLP."""
    for i, block in enumerate(trainer.model.blocks):
        nu = nn.Parameter(torch.zeros(trainer.model.config.hidden_dim))
        _add_param(trainer, f"shift2.{i}", nu)
        block.ln_2.register_forward_hook(lambda _m, _i, h, nu=nu: torch.lerp(h, _previous(_previous(h)), nu))


def bigram_embedding(scale: float = 1.0) -> Callable[[Trainer], None]:
    """A second input table indexed by the (previous, current) character pair, added to the token embedding:
    (V + 1) x V rows of (C,), zero at the start (row V: no previous character, position 0 of a window). The model
    reads bigram identity from step 1 instead of learning it through token shift and the MLP."""

    def patch(trainer: Trainer) -> None:
        model = trainer.model
        vocab, width = model.tok_emb.weight.shape  # (V, C)
        table = nn.Parameter(torch.zeros((vocab + 1) * vocab, width))
        _add_param(trainer, "bigram_emb.weight", table, group=0)

        def add_pairs(_m, inputs, out):
            idx = inputs[0]  # (B, T)
            prev = F.pad(idx, (1, 0), value=vocab)[:, :-1]  # (B, T): the character before, or V at position 0
            return out + scale * F.embedding(prev * vocab + idx, table)  # (B, T, C)

        model.tok_emb.register_forward_hook(add_pairs)

    return patch


def weight_average(decay: float) -> Callable[[Trainer], None]:
    """The trainer's own running average of the weights (train.weight_average, tinygpt/trainer.py) at `decay`,
    started from the weights as built; `run_lever` scores every eval on it, as the app's evals do."""

    def patch(trainer: Trainer) -> None:
        trainer.config.weight_average = decay
        trainer.average = [p.detach().clone() for _, p in trainer.named_params]

    return patch


def linear_to_zero(trainer: Trainer) -> None:
    """Warmup, then a straight line from the peak to zero at max_steps (Bergsma et al. 2025: "straight to zero")."""

    def current_lr() -> float:
        c, step = trainer.config, trainer.step_count
        if step < c.warmup_steps:
            return lr_at(step, c.learning_rate, c.learning_rate, c.warmup_steps, c.max_steps)
        return c.learning_rate * max(0.0, 1 - (step - c.warmup_steps) / max(1, c.max_steps - c.warmup_steps))

    trainer.current_lr = current_lr


def muon_momentum_warmup(start: float, steps: int) -> Callable[[Trainer], None]:
    """Muon's momentum from `start` up to its 0.95 over the first `steps` steps (modded-nanogpt's ramp)."""

    def patch(trainer: Trainer) -> None:
        muon = trainer.optimizer.optimizers[0]
        original = muon.step

        def step() -> None:
            share = min(1.0, trainer.step_count / steps)
            muon.param_groups[0]["momentum"] = start + share * (0.95 - start)
            original()

        muon.step = step

    return patch


def shift_lever(back: int, steps: int, lr: float | None = None) -> Lever:
    """Token shift `back` positions with a `steps`-step cosine (and a peak rate `lr`): "shift2_350_lr0.008"."""
    settings = dict(token_shift=back, max_steps=steps) | ({"learning_rate": lr} if lr else {})
    name = f"shift{back if back > 1 else ''}_{steps}" + (f"_lr{lr:g}" if lr else "")
    rate = f" at lr {lr:g}" if lr else ""
    return Lever(name, f"token shift {back} back, a {steps}-step cosine{rate}", settings)


def ema_lever(decay: float, **settings) -> Lever:
    """The Fast preset as it is, with `settings` and the evals scored on the weights' average at `decay` (round
    three measured these against the preset of then: lr 8e-3, a 50-step warmup, no average; BENCHMARKS.md)."""
    extra = "".join(f"_{k.replace('learning_rate', 'lr').replace('max_steps', 'steps')}{v:g}" for k, v in settings.items())
    return Lever(f"fast_ema{decay:g}{extra}", f"the val scored on an average of the weights (EMA {decay:g}) {settings}",
                 settings, patch=weight_average(decay))  # fmt: skip


def combine(*patches: Callable[[Trainer], None]) -> Callable[[Trainer], None]:
    def patch(trainer: Trainer) -> None:
        for one in patches:
            one(trainer)

    return patch


LEVERS: dict[str, Lever] = {
    lever.name: lever
    for lever in [
        Lever("fast", "the Fast preset as it is"),
        Lever("threads1", "one intra-op thread instead of two", threads=1),
        Lever("batch24", "twice the batch, half the steps", dict(batch_size=24, max_steps=300, warmup_steps=25)),
        Lever("batch48", "4x the batch, a quarter of the steps", dict(batch_size=48, max_steps=150, warmup_steps=13)),
        Lever(
            "batch48_lr1e-2",
            "4x the batch at lr 1e-2",
            dict(batch_size=48, max_steps=150, warmup_steps=13, learning_rate=1e-2),
        ),  # fmt: skip
        Lever("batch96", "8x the batch, an eighth of the steps", dict(batch_size=96, max_steps=75, warmup_steps=7)),
        Lever(
            "wsd",
            "warmup-stable-decay (linear decay over the last 30%) instead of the cosine",
            patch=warmup_stable_decay(0.3),
        ),  # fmt: skip
        Lever("ns3", "3 Newton-Schulz iterations instead of 5", patch=newton_schulz_steps(3)),
        Lever("relu2", "ReLU² in the MLP instead of GELU", patch=relu_squared),
        Lever("qknorm", "QK-norm: queries and keys RMS-normalised per head", patch=qk_norm),
        Lever("untied", "an untied output head (zero init)", patch=untied_head),
        Lever("softcap", "logits soft-capped at 15 (15 tanh(z / 15))", patch=soft_cap(15.0)),
        Lever("qknorm_lr1e-2", "QK-norm at lr 1e-2", dict(learning_rate=1e-2), patch=qk_norm),
        Lever("qknorm_500", "QK-norm, a 500-step cosine", dict(max_steps=500), patch=qk_norm),
        Lever(
            "qknorm_lr1e-2_500",
            "QK-norm at lr 1e-2, a 500-step cosine",
            dict(learning_rate=1e-2, max_steps=500),
            patch=qk_norm,
        ),  # fmt: skip
        Lever("lr1e-2_500", "lr 1e-2, a 500-step cosine", dict(learning_rate=1e-2, max_steps=500)),
        Lever("qknorm_softcap", "QK-norm and logits soft-capped at 15", patch=combine(qk_norm, soft_cap(15.0))),
        Lever("warmup10", "a 10-step warmup instead of 50", dict(warmup_steps=10)),
        Lever("noclip", "no gradient clipping", dict(max_grad_norm=0.0)),
        Lever("adam3x", "AdamW (embeddings, gains) at 3x the rate", patch=scaled_lr(1, 3.0)),
        Lever("muon2x", "Muon (the blocks' matrices) at 2x the rate", patch=scaled_lr(0, 2.0)),
        Lever("zeroproj", "output projections initialised at zero", patch=zero_projections),
        Lever("cos350", "a 350-step cosine", dict(max_steps=350)),
        Lever("cos400", "a 400-step cosine", dict(max_steps=400)),
        Lever("cos450", "a 450-step cosine", dict(max_steps=450)),
        Lever("cos400_lr1e-2", "a 400-step cosine at lr 1e-2", dict(max_steps=400, learning_rate=1e-2)),
        Lever(
            "valueres",
            "value residual: later layers' values mixed 50/50 with the first layer's",
            patch=value_residual(0.5),
        ),  # fmt: skip
        Lever("batch8", "batch 8 for 900 steps (the same tokens)", dict(batch_size=8, max_steps=900, warmup_steps=75)),
        Lever(
            "batch6", "batch 6 for 1200 steps (the same tokens)", dict(batch_size=6, max_steps=1200, warmup_steps=100)
        ),
        Lever("compile", "torch.compile of the model (inductor), compile time on the clock", compile=True),
        Lever("cos_to0", "the cosine down to zero instead of lr/10", dict(min_lr=0.0)),
        Lever("cos500_to0", "a 500-step cosine down to zero", dict(max_steps=500, min_lr=0.0)),
        Lever("linear500_to0", "a 500-step linear decay to zero", dict(max_steps=500), patch=linear_to_zero),
        Lever("linear600_to0", "a 600-step linear decay to zero", patch=linear_to_zero),
        Lever("smear", "the previous character's embedding mixed into each position (learned gate)", patch=smear),
        Lever("shift_both", "token shift before every attention and MLP", patch=token_shift(("attn", "mlp"))),
        Lever("shift_attn", "token shift before every attention only", patch=token_shift(("attn",))),
        Lever("shift_mlp_hook", "token shift before every MLP only, as a hook", patch=token_shift(("mlp",))),
        Lever("shift", "token shift before every MLP (the model's token_shift)", dict(token_shift=1)),
        *(shift_lever(1, steps) for steps in (500, 450, 400, 350)),
        shift_lever(1, 400, lr=8e-3),
        Lever(
            "shift2_400_hook",
            "token shift and two back as a hook, 400 steps",
            dict(token_shift=1, max_steps=400),
            patch=two_back,
        ),  # fmt: skip
        *(shift_lever(back, 400) for back in (2, 3, 4)),
        *(shift_lever(back, steps) for back, steps in ((2, 350), (3, 350), (2, 300))),
        shift_lever(2, 350, lr=8e-3),  # the Fast preset
        Lever("betas_0.8_0.95", "AdamW betas (0.8, 0.95) for embeddings and gains", dict(beta1=0.8, beta2=0.95)),
        Lever("wd0", "no weight decay", dict(weight_decay=0.0)),
        Lever("muon_mom_warm", "Muon momentum 0.85 -> 0.95 over 300 steps", patch=muon_momentum_warmup(0.85, 300)),
        # Round three (issue 35): the Fast preset (token shift 2, lr 8e-3, 350 steps) with one change.
        Lever("fast_lr1e-2", "the Fast preset at lr 1e-2", dict(learning_rate=1e-2)),
        Lever("fast_batch16", "batch 16 for 263 steps (Fast's tokens)", dict(batch_size=16, max_steps=263, warmup_steps=38)),
        Lever("fast_300", "the Fast preset on a 300-step cosine", dict(max_steps=300)),
        Lever("fast_batch20", "batch 20 for 210 steps (Fast's tokens)", dict(batch_size=20, max_steps=210, warmup_steps=30)),
        Lever("fast_batch24", "batch 24 for 175 steps (Fast's tokens)", dict(batch_size=24, max_steps=175, warmup_steps=25)),
        Lever("fast_bigram", "a (previous, current) character-pair embedding added to the input", patch=bigram_embedding()),
        Lever("fast_bigram_300", "the pair embedding, a 300-step cosine", dict(max_steps=300), patch=bigram_embedding()),
        *(ema_lever(d) for d in (0.9, 0.95, 0.98)),
        ema_lever(0.95, learning_rate=1e-2),
        ema_lever(0.95, learning_rate=1.2e-2),
        ema_lever(0.97, learning_rate=1.2e-2),
        ema_lever(0.9, learning_rate=1e-2),
        ema_lever(0.97, learning_rate=1e-2),
        ema_lever(0.95, learning_rate=1e-2, max_steps=300),
        ema_lever(0.95, learning_rate=1e-2, warmup_steps=25),
        ema_lever(0.93, learning_rate=1e-2),
        ema_lever(0.95, learning_rate=1e-2, warmup_steps=10),
        ema_lever(0.95, learning_rate=1e-2, warmup_steps=25, max_steps=300),
        ema_lever(0.95, max_steps=300),
        Lever("fast_batch32", "batch 32 for 131 steps (Fast's tokens)", dict(batch_size=32, max_steps=131, warmup_steps=19)),
    ]
}


def run_lever(lever: Lever, seed: int, threads: int, target: float, eval_tokens: int, corpus) -> dict:
    torch.set_num_threads(lever.threads or threads)
    config = preset("fast", seed=seed, **lever.settings)
    config.model.vocab_size = corpus.tokenizer.vocab_size
    torch.manual_seed(seed)
    trainer = Trainer(model_for_run(config), config.train, corpus)
    if lever.patch:
        lever.patch(trainer)
    if lever.compile:
        trainer.forward_model = torch.compile(trainer.model)
    tokens_per_step = config.train.batch_size * config.model.max_seq_len
    eval_every = max(1, round(eval_tokens / tokens_per_step))
    step_seconds: list[float] = []
    evals = []
    reached = None
    crossed = None  # the step where the val curve crosses the target, linearly between evals
    for step in range(1, config.train.max_steps + 1):
        started = time.perf_counter()
        trainer.step()
        step_seconds.append(time.perf_counter() - started)
        if step % eval_every == 0 or step == config.train.max_steps:
            with trainer.averaged_weights():  # the trained weights, or their running average as the app's evals
                val = evaluate_model(trainer.model, corpus, EVAL_BATCH_SIZE, EVAL_BATCHES)["val_loss"]
            evals.append({"step": step, "train_s": round(sum(step_seconds), 2), "val_loss": round(val, 4)})
            if reached is None and val <= target:
                reached = evals[-1]
                if len(evals) > 1:
                    before = evals[-2]
                    crossed = before["step"] + (step - before["step"]) * (before["val_loss"] - target) / max(
                        1e-9, before["val_loss"] - val
                    )
    torch.set_num_threads(threads)
    return {
        "lever": lever.name,
        "why": lever.why,
        "seed": seed,
        "batch_size": config.train.batch_size,
        "steps_to_target": reached["step"] if reached else None,
        "crossing_step": round(crossed) if crossed is not None else None,
        "tokens_to_target": reached["step"] * tokens_per_step if reached else None,
        "train_s_to_target": reached["train_s"] if reached else None,
        "first_step_s": round(step_seconds[0], 2),  # compile time shows here
        "median_step_ms": round(statistics.median(step_seconds) * 1000, 1),
        "final_val_loss": evals[-1]["val_loss"],
        "load_avg_1min": round(os.getloadavg()[0], 2),
        "evals": evals,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinygpt.bench.levers", description=__doc__.split("\n")[0])
    parser.add_argument("--levers", nargs="+", default=list(LEVERS), choices=list(LEVERS))
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--target", type=float, default=1.925, help="val loss (nanoGPT's at step 2000: ~1.925)")
    parser.add_argument("--eval-tokens", type=int, default=25 * BASE_TOKENS_PER_STEP, help="tokens between evals")
    parser.add_argument("--out", default=None, help="also write the JSON lines to this file")
    args = parser.parse_args(argv)
    corpus = shakespeare_corpus(64)
    rows = []
    for name in args.levers:
        row = run_lever(LEVERS[name], args.seed, args.threads, args.target, args.eval_tokens, corpus)
        rows.append(row)
        line = json.dumps({k: v for k, v in row.items() if k != "evals"})
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as out:
                out.write(json.dumps(row) + "\n")
    best = min((r for r in rows if r["train_s_to_target"]), key=lambda r: r["train_s_to_target"], default=None)
    print(json.dumps({"fastest_to_target": best and best["lever"], "target": args.target,
                      "not_reached": [r["lever"] for r in rows if r["steps_to_target"] is None],
                      "finite": all(math.isfinite(r["final_val_loss"]) for r in rows)}))  # fmt: skip


if __name__ == "__main__":
    main()
