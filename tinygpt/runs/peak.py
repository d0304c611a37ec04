"""This machine's matmul peak for a run's GEMM sizes, measured once and kept beside the runs (`.matmul-peak.json`).

A run's speed readout ("57 GFLOP/s, 31% of this machine's matmul peak") needs the ceiling its step could reach:
`tinygpt.flops.matmul_peak` on the model's own GEMM shapes, on the run's threads. Measuring costs ~0.5 s, so the
first run of a shape on a machine pays it before its first step and every later one reads the file. The key names
the machine (processor, cores, device), torch, the threads and the shapes: another model, thread count or device is
measured anew. The load average when it was measured is kept beside it, so a peak taken on a busy machine says so.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import torch

from ..config import RunConfig
from ..device import autocast_dtype
from ..flops import gemm_shapes, matmul_peak

PEAK_FILE = ".matmul-peak.json"


def peak_key(config: RunConfig, device: torch.device) -> str:
    shapes = gemm_shapes(config.model, config.train.batch_size)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    dtype = autocast_dtype(device, config.train.precision) or torch.float32
    return (
        f"{where}|{os.cpu_count()} cores|{device.type}|{dtype}|torch {torch.__version__}|"
        f"{torch.get_num_threads()} threads|{shapes}"
    )


def machine_peak(runs_root: Path, config: RunConfig, device: torch.device) -> dict | None:
    """{"peak_gflops", "load_avg_1min", ...} for this run's shapes here, measured now if not known. None on MPS
    (no synchronous timing) and when the measurement fails: the readout then says tokens/s only."""
    if device.type not in ("cpu", "cuda"):
        return None
    path = Path(runs_root) / PEAK_FILE
    key = peak_key(config, device)
    try:
        known = json.loads(path.read_text())
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    entry = known.get(key)
    if isinstance(entry, dict) and isinstance(entry.get("peak_gflops"), (int, float)):
        return entry
    dtype = autocast_dtype(device, config.train.precision) or torch.float32
    try:
        entry = {**matmul_peak(gemm_shapes(config.model, config.train.batch_size), device=device, dtype=dtype),
                 "load_avg_1min": round(os.getloadavg()[0], 2)}  # fmt: skip
    except (RuntimeError, torch.OutOfMemoryError):
        return None
    known[key] = entry
    try:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1))
        os.replace(tmp, path)  # atomic: two workers measuring at once each leave a whole file
    except OSError:
        pass  # a read-only runs folder: measured again next time, nothing lost
    return entry
