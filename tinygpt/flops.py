"""How much arithmetic a training step is, and how much this machine can do: the "fraction of the limit" readout.

`train_flops_per_token` counts the model's matmul FLOPs from its shapes (multiply and add = 2 FLOPs). Per token,
with C = hidden_dim, T = max_seq_len, V = vocab_size, L = num_layers, forward:

    qkv        2 * C * 3C          one (C, 3C) matmul for the queries, keys and values of every head
    q k^T      2 * T * C           each position scores T keys in every head: H heads x T keys x D = T * C
    weights v  2 * T * C           and mixes T values the same way
    proj       2 * C * C           the heads' outputs back into the residual stream
    mlp        2 * C * 4C * 2      up to 4C and back down
    lm_head    2 * C * V           once, after the last block

and a backward costs two forwards (one matmul for the input's gradient, one for the weight's), so a step is 3x
the forward. The attention matmuls are counted at full T x T, as the kernels compute them (the causal mask hides
the upper triangle; it does not skip its arithmetic). Left out, as in every MFU count (PaLM, appendix B):
LayerNorm, softmax, GELU, the loss, and the optimizer (Muon's Newton-Schulz matmuls are reported on their own).

`matmul_peak` measures the dense-matmul GFLOP/s of the model's own GEMM sizes on the threads the run has: the best
the machine does on this model's arithmetic, which is the ceiling a step could reach.
"""

from __future__ import annotations

import time

import torch

from .config import TransformerConfig
from .optim import NEWTON_SCHULZ_STEPS, newton_schulz_flops

MAX_ROUNDS = 20


def forward_flops_per_token(model: TransformerConfig) -> int:
    C, T, V, L = model.hidden_dim, model.max_seq_len, model.vocab_size, model.num_layers
    per_layer = 2 * C * 3 * C + 2 * T * C + 2 * T * C + 2 * C * C + 2 * C * 4 * C * 2
    return L * per_layer + 2 * C * V


def train_flops_per_token(model: TransformerConfig) -> int:
    """Matmul FLOPs of one training token: forward + backward (2x the forward)."""
    return 3 * forward_flops_per_token(model)


def train_flops_per_step(model: TransformerConfig, batch_size: int) -> int:
    return train_flops_per_token(model) * batch_size * model.max_seq_len


def muon_flops_per_step(model: TransformerConfig, ns_steps: int = NEWTON_SCHULZ_STEPS) -> int:
    """The optimizer's own matmuls with Muon: Newton-Schulz on each block matrix, worked on as (min, max), by
    whichever of the two iterations `orthogonalize` picks for its shape. Not in the model's FLOPs."""
    C, L = model.hidden_dim, model.num_layers
    shapes = [(C, 3 * C), (C, C), (C, 4 * C), (C, 4 * C)]  # qkv, proj, fc, mlp.proj as (min, max)
    per_block = sum(min(newton_schulz_flops(m, n, ns_steps, gram) for gram in (False, True)) for m, n in shapes)
    return L * per_block


def gemm_shapes(model: TransformerConfig, batch_size: int) -> list[tuple[int, int, int]]:
    """(rows, inner, cols) of the training step's weight matmuls: rows = B * T tokens."""
    N, C, V = batch_size * model.max_seq_len, model.hidden_dim, model.vocab_size
    return [(N, C, 3 * C), (N, C, C), (N, C, 4 * C), (N, 4 * C, C), (N, C, V)]


def matmul_peak(
    shapes: list[tuple[int, int, int]],
    seconds_per_shape: float = 0.1,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
) -> dict:
    """Dense matmul GFLOP/s of each (m, k, n) on the current torch threads, in the dtype the step's matmuls use
    (bfloat16 under a GPU's autocast, else float32); `peak_gflops` is the best.

    Each shape runs in rounds of matmuls after one warm-up, for `seconds_per_shape` or MAX_ROUNDS rounds, and
    its best round is kept (a neighbour's burst lowers a round, never raises it)."""
    device = torch.device(device)
    # A generator of its own: the first run of a shape on a machine measures this before its first step, and
    # drawing from torch's global one there would give that run other dropout masks than its twin started with it
    # (same seed, same config) whose peak was already known, so the two would no longer train alike.
    generator = torch.Generator(device=device).manual_seed(0)
    rates = []
    for m, k, n in shapes:
        a = torch.randn(m, k, device=device, dtype=dtype, generator=generator)
        b = torch.randn(k, n, device=device, dtype=dtype, generator=generator)
        out = torch.empty(m, n, device=device, dtype=dtype)
        started = time.perf_counter()
        torch.matmul(a, b, out=out)  # warm-up: the first call picks kernels and touches the memory
        if device.type == "cuda":
            torch.cuda.synchronize()
        # Rounds of ten small matmuls (one call is too short to time), or of one where a call is already long (the
        # GPU preset on a CPU: ~0.1 s each), so the whole measurement stays well under a second.
        reps = 10 if 10 * (time.perf_counter() - started) < seconds_per_shape else 1
        best = 0.0
        deadline = time.perf_counter() + seconds_per_shape
        for _ in range(MAX_ROUNDS):  # a tiny model's shapes are done in milliseconds, a big one's by the deadline
            started = time.perf_counter()
            for _ in range(reps):
                torch.matmul(a, b, out=out)
            if device.type == "cuda":
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - started
            best = max(best, reps * 2 * m * k * n / elapsed / 1e9)
            if time.perf_counter() > deadline:
                break
        rates.append({"shape": [m, k, n], "gflops": round(best, 1)})
    return {
        "peak_gflops": max(r["gflops"] for r in rates),
        "shapes": rates,
        "threads": torch.get_num_threads(),
        "dtype": str(dtype).removeprefix("torch."),
    }
