"""Shape contracts: check a tensor's rank, sizes and dtype at a module's entry point.

A transformer bug is usually a shape bug that surfaces three matmuls later as an unreadable message.
`expect_shape` fails at the door instead, naming the tensor, what was expected and what arrived:

    ShapeError: idx: expected shape (B, T) with T <= max_seq_len=64, got (2, 80)

Dimensions are given as ints (must match), names (bind on first use, must agree afterwards), or None (any size).
"""

from __future__ import annotations

import torch

from .errors import ShapeError


def _fmt(spec: tuple) -> str:
    return "(" + ", ".join("*" if d is None else str(d) for d in spec) + ")"


def expect_shape(
    name: str,
    tensor: torch.Tensor,
    spec: tuple,
    *,
    dtype: torch.dtype | tuple[torch.dtype, ...] | None = None,
    sizes: dict[str, int] | None = None,
    hint: str = "",
) -> dict[str, int]:
    """Check `tensor` against `spec`; return the named sizes it bound (e.g. {"B": 2, "T": 8})."""
    if not isinstance(tensor, torch.Tensor):
        raise ShapeError(f"{name}: expected a tensor of shape {_fmt(spec)}, got {type(tensor).__name__}.")
    actual = tuple(tensor.shape)
    bound = dict(sizes or {})
    suffix = f" {hint}" if hint else ""
    if len(actual) != len(spec):
        raise ShapeError(
            f"{name}: expected {len(spec)}-D shape {_fmt(spec)}, got {len(actual)}-D shape {actual}.{suffix}"
        )
    for dim, (want, got) in enumerate(zip(spec, actual, strict=True)):
        if want is None:
            continue
        if isinstance(want, str):
            if want in bound and bound[want] != got:
                raise ShapeError(
                    f"{name}: dimension {dim} ({want}) should be {bound[want]}, got {got}; "
                    f"expected {_fmt(spec)} with {want}={bound[want]}, got {actual}.{suffix}"
                )
            bound[want] = got
        elif want != got:
            raise ShapeError(
                f"{name}: dimension {dim} should be {want}, got {got}; expected {_fmt(spec)}, got {actual}.{suffix}"
            )
    if dtype is not None:
        allowed = dtype if isinstance(dtype, tuple) else (dtype,)
        if tensor.dtype not in allowed:
            # torch.long is torch.int64: name each dtype once
            names = " or ".join(dict.fromkeys(str(d).replace("torch.", "") for d in allowed))
            raise ShapeError(f"{name}: expected dtype {names}, got {str(tensor.dtype).replace('torch.', '')}.{suffix}")
    return bound
