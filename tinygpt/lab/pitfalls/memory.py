"""The pitfall "Memory fragmentation": its runs, what to look for, and its judge."""

from __future__ import annotations

from typing import Any

from ..experiment import Experiment
from ..memory import allocation_churn, cuda_allocations, fresh_loop, reuse_loop
from ..verdict import CPU_COUNTS_ONLY, Verdict, decide, finite

EXPECTED = (
    "on CUDA, fresh tensors: reserved memory well above allocated and one allocation per "
    "iteration; reused buffers: 8 allocations in all (on CPU only the allocations are counted, not judged)"
)


def _mb(numbers: dict[str, Any], key: str) -> float | None:
    value = numbers.get(key)
    return value / 1e6 if finite(value) else None


def _text(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.1f} MB"


def judge(results: dict[str, dict[str, Any]]) -> Verdict:
    fresh, reuse = results["fresh tensors"], results["reused buffers"]
    device = str(fresh.get("device", "cpu"))
    allocations = (fresh.get("allocations"), reuse.get("allocations"))
    observed: dict[str, Any] = {
        "device": device,
        "iterations": fresh.get("iterations"),
        "allocations, fresh / reused": " / ".join("not measured" if a is None else str(a) for a in allocations),
        "MB allocated, fresh": _mb(fresh, "bytes_allocated"),
        "MB allocated, reused": _mb(reuse, "bytes_allocated"),
    }
    churn = (
        None
        if None in allocations
        else allocations[0] >= fresh.get("iterations", 1) and allocations[1] <= reuse.get("keep", 8)
    )
    if device.startswith("cuda"):
        gap_fresh, gap_reuse = _mb(fresh, "peak_gap_bytes"), _mb(reuse, "peak_gap_bytes")
        after_free, after_empty = (
            _mb(fresh, "reserved_after_free_bytes"),
            _mb(fresh, "reserved_after_empty_cache_bytes"),
        )
        observed |= {
            "peak reserved - allocated MB, fresh": gap_fresh,
            "peak reserved - allocated MB, reused": gap_reuse,
            "reserved MB after free, fresh": after_free,
            "reserved MB after empty_cache, fresh": after_empty,
        }
        # A measurement without a number (an older result, a CUDA build without those stats) is "not measured".
        fragmented = None if None in (gap_fresh, gap_reuse) else gap_fresh > max(2 * gap_reuse, 2**20 / 1e6)
        sentence = (
            f"On CUDA, fresh tensors of changing sizes left up to {_text(gap_fresh)} reserved but unused "
            f"(fragmentation), reused buffers {_text(gap_reuse)}; {observed['allocations, fresh / reused']} "
            f"allocations. empty_cache() took reserved memory from {_text(after_free)} to {_text(after_empty)}."
        )
        clauses = {
            "one allocation per iteration fresh, the buffers once reused": churn,
            "fresh tensors leaving over twice the reused loop's reserved-but-unused memory (and over 1 MB)": fragmented,
        }
        return decide(EXPECTED, clauses, observed, sentence)
    live_fresh, live_reuse = _mb(fresh, "peak_live_bytes"), _mb(reuse, "peak_live_bytes")
    observed |= {"peak live MB, fresh": live_fresh, "peak live MB, reused": live_reuse}
    # Counting allocations measures churn, not fragmentation (memory reserved but unusable): with no caching
    # allocator there is nothing reserved to fragment, so this is shown as counts and never counted as reproduced.
    made_fresh, made_reused = observed["allocations, fresh / reused"].split(" / ")
    peak = (
        "peak live memory not measured"
        if None in (live_fresh, live_reuse)
        else f"at most {_text(live_reuse)} live at once, against {_text(live_fresh)} for the fresh tensors"
    )
    sentence = (
        f"Allocation counts on CPU, not fragmentation (no caching allocator, so nothing reserved to fragment; "
        f"measured by torch.profiler): fresh tensors made {made_fresh} allocations, "
        f"{_text(observed['MB allocated, fresh'])} in all; reused buffers {made_reused}, "
        f"{_text(observed['MB allocated, reused'])}, {peak}. Fragmentation itself needs CUDA: not judged here."
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
