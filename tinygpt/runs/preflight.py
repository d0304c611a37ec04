"""Checks before a run starts: the device exists, the data source is known, and the run fits in memory and on disk.

A setting that cannot work should be refused where it was typed (the CLI's flags, the Train page's button), with
the number that is too big and what to lower, not found minutes later inside a worker as "run X: failed", or
worse, as a 160 GB allocation that takes the machine down. `preflight(config)` is called by the CLI before it
creates a run folder and by `RunManager.start` before it queues one; the loop repeats the memory check once the
corpus (and so the vocabulary) is known, for resumed runs and direct callers.

Estimates are arithmetic on the config, in float32 bytes, for one training step on the explicit attention path
(the worst case: the (B, H, T, T) scores and weights are kept for backward):

    parameters P = (V + T) C + L (12 C^2 + 2 C) + C        embeddings, 4 C^2 attention + 8 C^2 MLP per layer
    held across steps  5 P                                 weights, gradients, AdamW's m and v, the update copy
    activations        L B T 17 C + B T (2 C + 2 V)        what backward needs per layer, plus logits and their grad
    attention          2 L B H T^2 + T^2 / 4               scores and weights per layer, plus the bool mask
    corpus             ~10 bytes a character               the text and its int64 tokens (synthetic: + problems)

The estimate errs high, so it refuses only what cannot fit: a run estimated above MEMORY_FRACTION of the memory
the device has free is refused. On disk a run must have space for its first checkpoint, one attention snapshot and
its corpus before it starts; a full disk later is the loop's to report.

Left out: activation checkpointing and mixed precision (this tinygpt has neither), and the allocator's overhead.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..config import RunConfig, TransformerConfig
from ..errors import ResourceError, TinyGPTError

MEMORY_FRACTION = 0.9  # refuse a run estimated above this share of the free memory: the OS and the app need some
START_DISK_MARGIN = 1 << 20  # bytes beyond the first checkpoint and snapshot: config, status and the first lines


def parameter_count(model: TransformerConfig) -> int:
    """Parameters of a TinyGPT of this shape (the LM head is tied to the token embedding)."""
    C, L, V, T = model.hidden_dim, model.num_layers, model.vocab_size, model.max_seq_len
    per_layer = 12 * C * C + (13 * C if model.bias else 0) + (4 * C if model.bias else 2 * C)
    return (V + T) * C + L * per_layer + C


def training_bytes(config: RunConfig) -> dict[str, int]:
    """Estimated float32 bytes of one training step, by part (see the module docstring)."""
    m, B = config.model, config.train.batch_size
    C, L, V, T, H = m.hidden_dim, m.num_layers, m.vocab_size, m.max_seq_len, m.num_heads
    return {
        "parameters, gradients and AdamW state": 5 * parameter_count(m) * 4,
        "activations": (L * B * T * 17 * C + B * T * (2 * C + 2 * V)) * 4,
        "attention scores": 2 * L * B * H * T * T * 4 + T * T // 4,
        "corpus": corpus_bytes(config),
    }


def corpus_bytes(config: RunConfig) -> int:
    """The corpus in memory: its text, and its tokens as int64 (8 bytes a character); a synthetic task also keeps
    its problems as Python strings (~200 bytes each)."""
    data = config.data
    if data.source == "text":
        return len(data.text) * 10
    if data.source.startswith("synthetic:"):
        per_problem = 3 * data.synthetic_digits + 4  # the longest line, "a+b=sum.\n"
        return data.synthetic_examples * (200 + 10 * per_problem)
    return 1_115_394 * 10  # Tiny Shakespeare


def free_memory_bytes(device: str) -> int | None:
    """Memory free on `device` ("cpu", "cuda", "mps"), or None where it cannot be asked."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    if device == "cpu":
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        try:
            return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    return None  # MPS shares the system memory but torch does not say how much of it it may take


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    raise AssertionError("unreachable")


def check_memory(config: RunConfig, device: str, free: int | None = None) -> None:
    """ResourceError if one training step of `config` is estimated not to fit in `device`'s free memory."""
    free = free_memory_bytes(device) if free is None else free
    if free is None:
        return
    parts = training_bytes(config)
    need = sum(parts.values())
    if need <= MEMORY_FRACTION * free:
        return
    biggest = max(parts, key=parts.get)
    m, t = config.model, config.train
    alone = f"the {biggest} alone take {human_bytes(parts[biggest])}"
    if biggest == "attention scores":
        why = (
            f"{alone} ({m.num_layers} layers x batch {t.batch_size} x {m.num_heads} heads x {m.max_seq_len:,}^2 "
            "positions); lower max_seq_len (they grow with its square) or batch_size"
        )
    elif biggest == "activations":
        why = f"{alone}; lower batch_size, max_seq_len or hidden_dim"
    elif biggest == "corpus":
        why = f"{alone}; lower synthetic_examples or synthetic_digits, or use a shorter text"
    else:
        why = f"{alone} ({parameter_count(m):,} parameters); lower hidden_dim (they grow with its square) or num_layers"
    raise ResourceError(
        f"this run needs about {human_bytes(need)} of memory to train, but the {device} has {human_bytes(free)} "
        f"free: {why}."
    )


def start_disk_bytes(config: RunConfig) -> int:
    """Bytes a new run writes before its first step: a checkpoint (weights, m, v), a snapshot, the corpus."""
    m = config.model
    checkpoint = 3 * parameter_count(m) * 4
    snapshot = m.num_layers * m.num_heads * m.max_seq_len**2 * 2  # float16
    corpus = len(config.data.text.encode("utf-8")) if config.data.source == "text" else 0
    return checkpoint + snapshot + corpus + START_DISK_MARGIN


def check_disk(folder: str | Path, config: RunConfig) -> None:
    """ResourceError if the disk holding `folder` (a runs folder, or the nearest existing parent) lacks the space
    a new run needs to start."""
    folder = Path(folder)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        return  # nothing to measure: creating the folder will say what is wrong
    if usage.total == 0:
        return  # a pseudo file system (/proc): creating the folder will say it cannot be written
    free = usage.free
    need = start_disk_bytes(config)
    if free < need:
        raise ResourceError(
            f"the disk holding the runs folder {folder} is full: {human_bytes(free)} free, and a new run needs "
            f"about {human_bytes(need)} to start (its first checkpoint and snapshot): free some space (delete old "
            "runs), or set TINYGPT_RUNS_DIR to a folder on another disk."
        )


def check_threads(threads: object) -> None:
    """Threads for torch.set_num_threads: 1 to the machine's core count (OpenMP crashes with a segmentation
    fault asked for 271412, and more threads than cores only spin)."""
    cores = os.cpu_count() or 1
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= cores):
        raise TinyGPTError(
            f"threads must be a whole number from 1 to {cores} (this machine's cores), got {threads!r}: try 1, "
            "or leave it out."
        )


def check_source(config: RunConfig) -> None:
    """DataError for a data source that does not exist or a text too short for the context, before any run."""
    from ..data import DataError, data_sources, min_corpus_chars, text_from_user

    data = config.data
    if data.source not in data_sources():
        raise DataError(f"unknown data source {data.source!r}; choose one of {', '.join(data_sources())}.")
    if data.source == "text" and not data.text_sha256:  # a stored corpus (corpus.txt) was checked when stored
        text_from_user(data.text, min_chars=min_corpus_chars(config.model.max_seq_len))


CPU_BUILD_PARAMS = 5_000_000  # a model this small is built for the check on the CPU (milliseconds, a few MB)


def check_model_builds(config: RunConfig) -> None:
    """ConfigError for a model the config describes but cannot build (a zeroed probe point the model has no
    such name for), before a run folder exists, not from inside its worker. A small model is built on the CPU; a
    larger one on torch's meta device, which allocates nothing. Not the meta device for all: its first weight
    initialisation in a process loads torch's reference implementations, 5.9 s on this machine at load 10 (Prepare,
    whose residual pitfall zeroes a probe point, held the instructor's page 45 s at load 15; a review)."""
    import torch

    from ..interventions import model_for_run

    small = parameter_count(config.model) <= CPU_BUILD_PARAMS
    with torch.random.fork_rng(devices=[]), torch.device("cpu" if small else "meta"):  # the caller's RNG untouched
        model_for_run(config)


def preflight(config: RunConfig, runs_root: str | Path | None = None, threads: object = None) -> None:
    """Every check a run can pass before it exists: threads, device, data source, memory, and (given the runs
    folder) disk. Raises the TinyGPTError of the first that fails."""
    from ..device import resolve_device

    check_threads(threads)
    device = resolve_device(config.train.device)  # ConfigError naming the devices this machine has
    check_source(config)
    if config.interventions.zeroed_probes:  # the one setting whose names only the built model knows
        check_model_builds(config)
    check_memory(config, str(device))
    if runs_root is not None:
        check_disk(runs_root, config)
