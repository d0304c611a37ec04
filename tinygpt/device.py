"""Which device a run trains on: "auto" picks CUDA, then Apple MPS, then the CPU.

Asking for a device this machine does not have is an error that says what is available, rather than a silent
fallback: a learner who chose "cuda" and got the CPU would wonder why training is slow.

Left out: multi-GPU selection ("cuda:1"), XLA/TPU, and memory queries.
"""

from __future__ import annotations

import torch

from .config import DEVICES, ConfigError


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def available_devices() -> list[str]:
    """Device names this machine can train on, best first; "cpu" is always last."""
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    if _mps_available():
        found.append("mps")
    return [*found, "cpu"]


def resolve_device(name: str = "auto") -> torch.device:
    """The torch.device for a TrainConfig.device value; raises ConfigError for one this machine lacks."""
    if name not in DEVICES:
        raise ConfigError(f"device must be one of {', '.join(DEVICES)}; got {name!r}.")
    available = available_devices()
    if name == "auto":
        return torch.device(available[0])
    if name not in available:
        raise ConfigError(
            f"device {name!r} is not available on this machine; available: {', '.join(available)}. "
            'Choose one of those, or "auto".'
        )
    return torch.device(name)
