"""The pitfall "Memory fragmentation": its runs, what to look for, and its judge."""

from __future__ import annotations

from typing import Any

from ..experiment import Experiment
from ..memory import allocation_churn, cuda_allocations, fresh_loop, reuse_loop
from ..verdict import CPU_COUNTS_ONLY, Verdict, decide

EXPECTED = (
    "on CUDA, fresh tensors: reserved memory well above allocated and one allocation per "
    "iteration; reused buffers: 8 allocations in all (on CPU only the allocations are counted, not judged)"
)


def judge(results: dict[str, dict[str, Any]]) -> Verdict:
    fresh, reuse = results["fresh tensors"], results["reused buffers"]
    device = fresh.get("device", "cpu")
    observed: dict[str, Any] = {
        "device": device,
        "iterations": fresh.get("iterations"),
        "allocations, fresh / reused": f"{fresh['allocations']} / {reuse['allocations']}",
        "MB allocated, fresh": fresh["bytes_allocated"] / 1e6,
        "MB allocated, reused": reuse["bytes_allocated"] / 1e6,
    }
    churn = fresh["allocations"] >= fresh.get("iterations", 1) and reuse["allocations"] <= reuse.get("keep", 8)
    if device.startswith("cuda"):
        observed |= {
            "peak reserved - allocated MB, fresh": fresh["peak_gap_bytes"] / 1e6,
            "peak reserved - allocated MB, reused": reuse["peak_gap_bytes"] / 1e6,
            "reserved MB after free, fresh": fresh["reserved_after_free_bytes"] / 1e6,
            "reserved MB after empty_cache, fresh": fresh["reserved_after_empty_cache_bytes"] / 1e6,
        }
        fragmented = fresh["peak_gap_bytes"] > max(2 * reuse["peak_gap_bytes"], 2**20)
        sentence = (
            f"On CUDA, fresh tensors of changing sizes left up to {fresh['peak_gap_bytes'] / 1e6:.1f} MB reserved but "
            f"unused (fragmentation), reused buffers {reuse['peak_gap_bytes'] / 1e6:.1f} MB; {fresh['allocations']} vs "
            f"{reuse['allocations']} allocations. empty_cache() took reserved memory from "
            f"{fresh['reserved_after_free_bytes'] / 1e6:.1f} MB to "
            f"{fresh['reserved_after_empty_cache_bytes'] / 1e6:.1f} MB."
        )
        clauses = {
            "one allocation per iteration fresh, the buffers once reused": churn,
            "fresh tensors leaving over twice the reused loop's reserved-but-unused memory (and over 1 MB)": fragmented,
        }
        return decide(EXPECTED, clauses, observed, sentence)
    observed |= {
        "peak live MB, fresh": fresh["peak_live_bytes"] / 1e6,
        "peak live MB, reused": reuse["peak_live_bytes"] / 1e6,
    }
    # Counting allocations measures churn, not fragmentation (memory reserved but unusable): with no caching
    # allocator there is nothing reserved to fragment, so this is shown as counts and never counted as reproduced.
    sentence = (
        f"Allocation counts on CPU, not fragmentation (no caching allocator, so nothing reserved to fragment; "
        f"measured by torch.profiler): fresh tensors made {fresh['allocations']} allocations, "
        f"{fresh['bytes_allocated'] / 1e6:.1f} MB in all; reused buffers {reuse['allocations']}, "
        f"{reuse['bytes_allocated'] / 1e6:.1f} MB, holding {reuse['peak_live_bytes'] / 1e6:.1f} MB at peak against "
        f"{fresh['peak_live_bytes'] / 1e6:.1f} MB. Fragmentation itself needs CUDA: not judged here."
    )
    return Verdict(None, EXPECTED, observed, sentence, undecided=CPU_COUNTS_ONLY)


EXPERIMENT = Experiment(
    key="memory",
    title="Memory fragmentation",
    what_to_look_for=(
        "Two loops over the same 200 tensor sizes: one allocates a fresh tensor each time (the last 8 stay "
        "alive), one writes into 8 buffers allocated once. On CUDA, PyTorch's caching allocator keeps freed "
        "blocks reserved, and a block freed by one size only serves requests that fit in it, so changing "
        "sizes leave memory reserved but unused (reserved > allocated). empty_cache() returns unused cached "
        "blocks to the driver (other processes see it) but cannot move live tensors, so it does not "
        "defragment. On CPU there is no caching allocator: what is measured there is the churn of "
        "allocations, labelled so."
    ),
    expected=EXPECTED,
    variants={"fresh tensors": {}, "reused buffers": {}},
    judge=judge,
    code=(fresh_loop, reuse_loop, cuda_allocations),
    measure=lambda seed: allocation_churn(seed),
)
