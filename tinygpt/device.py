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


def autocast_dtype(device: torch.device | str, precision: str = "auto") -> torch.dtype | None:
    """The dtype the training step's autocast uses for `precision` on `device`, or None for plain float32.

    "auto" takes bfloat16 only on a CUDA GPU that supports it: there it runs matmuls on tensor cores at 2-3x the
    float32 speed, and bfloat16 has float32's exponent range, so no loss scaling is needed (float16 would need
    one). On a CPU or Apple GPU "auto" stays float32. "bf16" asks for bfloat16 anywhere torch has it (on a CPU it
    is slower unless the CPU has bf16 units, but it shows what the precision does to a run)."""
    device = torch.device(device)
    if precision == "fp32":
        return None
    if precision == "bf16":
        if device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ConfigError("this GPU has no bfloat16 support: choose precision fp32 (or auto).")
        return torch.bfloat16
    if precision == "auto":
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else None
    raise ConfigError(f"precision must be auto, fp32 or bf16; got {precision!r}.")
