"""Memory: what one training step holds (estimated by category, with a measured CUDA peak), and the pitfall lab's
fragmentation demo (measured, never estimated).

`memory_rows()` is arithmetic: bytes of parameters, gradients, AdamW's two moments, activations and attention's
(B, H, T, T) scores and weights for a config, labelled "estimated (fp32)"; on CUDA one extra row is the measured
`torch.cuda.max_memory_allocated` of a real step.

`allocation_churn()` runs two loops over the same sequence of tensor sizes (drawn from a seed):

    fresh   every iteration allocates a new tensor of its size, and the last KEEP of them stay alive, as activations
            of varying sequence lengths do;
    reuse   KEEP buffers of the largest size are allocated once, and each iteration writes into a slice of one.

On CUDA it reads `torch.cuda.memory_stats()`: PyTorch's caching allocator keeps freed blocks *reserved* for reuse,
and a block freed by a tensor of one size can only serve requests that fit in it, so with changing sizes the
reserved memory grows past what live tensors hold (`reserved - allocated`, and the allocator's own
`inactive_split_bytes`: cached pieces of split blocks). `torch.cuda.empty_cache()` hands unused cached segments back
to the driver (what nvidia-smi and other processes see drops), but cannot move live tensors, so it does not
defragment, and the next allocations pay for cudaMalloc again. On CPU there is no caching allocator and nothing
"reserved" to fragment; what is measured there (with `torch.profiler` memory profiling) is the churn: how many
allocations and how many bytes each loop asks the system allocator for. Each number says which it is.

Left out: the CUDA allocator's settings (PYTORCH_CUDA_ALLOC_CONF expandable_segments, which avoids much of this) and
resident-set size on CPU (the system allocator's own caching makes RSS a poor measure at these sizes).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import torch

from ..errors import TinyGPTError
from ..model import TinyGPT
from ..probes import attention_forward

KEEP = 8  # tensors alive at once in each loop: enough for freed blocks to sit between live ones
ITERATIONS = 200
# Sizes in float32 elements: 4 KB to 1 MB on CPU (fast), 1 MB to 32 MB on CUDA (the allocator's large-block pool).
SIZES = {"cpu": (2**10, 2**18), "cuda": (2**18, 2**23)}


def churn_sizes(seed: int, device: str, iterations: int = ITERATIONS) -> list[int]:
    """The sequence of tensor sizes (elements) both loops use, drawn from `seed`."""
    low, high = SIZES["cuda" if device.startswith("cuda") else "cpu"]
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(low, high + 1, (iterations,), generator=generator).tolist()


def fresh_loop(sizes: list[int], device: str, on_step=None) -> None:
    """A new tensor per iteration, of that iteration's size; the last KEEP stay alive. on_step() after each."""
    alive: deque[torch.Tensor] = deque(maxlen=KEEP)
    for i, n in enumerate(sizes):
        alive.append(torch.empty(n, device=device).fill_(float(i)))  # (n,) fresh every time
        if on_step is not None:
            on_step()


def reuse_loop(sizes: list[int], device: str, on_step=None) -> None:
    """KEEP buffers of the largest size, allocated once; each iteration writes into a slice of one."""
    buffers = [torch.empty(max(sizes), device=device) for _ in range(KEEP)]  # KEEP x (max n,)
    for i, n in enumerate(sizes):
        buffers[i % KEEP][:n].fill_(float(i))  # a view: (n,) of a buffer, no allocation
        if on_step is not None:
            on_step()


def cpu_allocations(loop, sizes: list[int]) -> dict[str, Any]:
    """Allocation count, bytes allocated and peak live bytes of `loop` on CPU, from torch.profiler's memory events."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loop(sizes, "cpu")
    # Each allocation and each free is one "[memory]" event: nbytes > 0 allocates, < 0 frees.
    deltas = [e.nbytes() for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for d in deltas:
        live += d
        peak = max(peak, live)
    allocs = [d for d in deltas if d > 0]
    return {
        "allocations": len(allocs),
        "bytes_allocated": int(sum(allocs)),
        "peak_live_bytes": int(peak),
        "source": "torch.profiler memory events (CPU)",
    }


def cuda_allocations(loop, sizes: list[int], device: str = "cuda") -> dict[str, Any]:
    """Allocated vs reserved bytes of `loop` on CUDA (torch.cuda.memory_stats), and what empty_cache gives back."""
    if not torch.cuda.is_available():
        raise TinyGPTError("no CUDA device: fragmentation (reserved vs allocated) can only be measured on CUDA.")
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # start from an empty cache, so both loops are measured alike
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_stats()
    gap = [0]

    def track_gap() -> None:  # reserved - allocated while the loop's tensors are alive (host-side counters: cheap)
        gap[0] = max(gap[0], torch.cuda.memory_reserved() - torch.cuda.memory_allocated())

    loop(sizes, device, track_gap)
    torch.cuda.synchronize()
    during = torch.cuda.memory_stats()  # the loop has returned: its tensors are freed, their blocks still cached
    reserved_after_free = torch.cuda.memory_reserved()
    torch.cuda.empty_cache()
    return {
        "allocations": during["allocation.all.allocated"] - before["allocation.all.allocated"],
        "bytes_allocated": during["allocated_bytes.all.allocated"] - before["allocated_bytes.all.allocated"],
        "peak_allocated_bytes": during["allocated_bytes.all.peak"],
        "peak_reserved_bytes": during["reserved_bytes.all.peak"],
        "peak_gap_bytes": int(gap[0]),  # the most reserved - allocated reached while the loop ran
        "inactive_split_bytes_peak": during["inactive_split_bytes.all.peak"],
        "reserved_after_free_bytes": reserved_after_free,  # tensors gone, blocks still cached
        "reserved_after_empty_cache_bytes": torch.cuda.memory_reserved(),
        "source": "torch.cuda.memory_stats (CUDA)",
    }


def allocation_churn(seed: int = 1337, device: str | None = None) -> dict[str, dict[str, Any]]:
    """{"fresh tensors": numbers, "reused buffers": numbers} for the same seeded sizes, measured on `device`
    (default: CUDA if there is one, else CPU). Every number is measured; the "source" field says by what."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    sizes = churn_sizes(seed, device)
    out = {}
    for label, loop in (("fresh tensors", fresh_loop), ("reused buffers", reuse_loop)):
        numbers = cuda_allocations(loop, sizes, device) if device.startswith("cuda") else cpu_allocations(loop, sizes)
        out[label] = {**numbers, "device": device, "iterations": len(sizes), "keep": KEEP}
    return out


# ---------------------------------------------------------------- bytes per training step


def memory_rows(model_config, batch_size: int, measure: bool = True) -> list[dict[str, Any]]:
    """Bytes by category for one training step; estimated (fp32) and labelled so, or measured on CUDA."""
    c = model_config
    B, T, C, H, L, V = batch_size, c.max_seq_len, c.hidden_dim, c.num_heads, c.num_layers, c.vocab_size
    params = (V + T) * C + L * (12 * C * C + (13 * C if c.bias else 0) + (4 * C if c.bias else 2 * C)) + C
    f32 = 4
    # Saved activations per layer for backward: ~ LN in/out, qkv, attention out, proj, MLP in/act (4C each) ...
    per_layer_acts = B * T * (2 * C + 3 * C + C + C + 2 * C + 4 * C + 4 * C + C)
    attention = L * B * H * T * T * 2  # scores and weights (B, H, T, T) per layer: the T^2 term
    rows = [
        {"category": "parameters", "bytes": params * f32},
        {"category": "gradients", "bytes": params * f32},
        {"category": "optimizer state (AdamW m, v)", "bytes": 2 * params * f32},
        {"category": "activations", "bytes": (L * per_layer_acts + B * T * (2 * C + 2 * V)) * f32},
        {"category": "attention (T²)", "bytes": attention * f32},
    ]
    for row in rows:
        row["source"] = "estimated (fp32)"
    if measure and torch.cuda.is_available():
        rows.append(
            {
                "category": "measured peak (CUDA)",
                "bytes": measure_cuda_peak(model_config, batch_size),
                "source": "torch.cuda.max_memory_allocated",
            }
        )
    return rows


def measure_cuda_peak(model_config, batch_size: int) -> int:
    """Peak bytes allocated by one forward + backward + AdamW step on CUDA."""
    if not torch.cuda.is_available():
        raise TinyGPTError("no CUDA device: memory can only be estimated on this machine.")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = TinyGPT(model_config).cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    idx = torch.randint(0, model_config.vocab_size, (batch_size, model_config.max_seq_len), device="cuda")
    logits = attention_forward(model, idx)[0]
    torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), idx.view(-1)).backward()
    optimizer.step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del model, optimizer, logits
    torch.cuda.empty_cache()
    return int(peak)
