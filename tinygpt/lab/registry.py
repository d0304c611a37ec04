"""The pitfall lab's one list: every page, benchmark and lesson step reads its experiments from here. A new pitfall
is one module in tinygpt/lab/pitfalls/ (its settings, text, judge and code) and its name in ORDER below."""

from __future__ import annotations

from importlib import import_module

from .experiment import Experiment

# The modules of tinygpt/lab/pitfalls/, in the order the Experiments page lists them.
ORDER = ("scaling", "mask", "warmup", "residual", "softmax", "shape_drift", "memory", "position")

EXPERIMENTS: dict[str, Experiment] = {
    e.key: e for e in (import_module(f"{__package__}.pitfalls.{name}").EXPERIMENT for name in ORDER)
}
