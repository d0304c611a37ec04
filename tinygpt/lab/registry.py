"""The pitfall lab's one list: every page, benchmark and lesson step reads its experiments from here. A new pitfall
is one module in tinygpt/lab/pitfalls/ (its settings, text and judge) and one line below."""

from __future__ import annotations

from .experiment import Experiment
from .pitfalls import mask, memory, residual, scaling, shape_drift, softmax, warmup

EXPERIMENTS: dict[str, Experiment] = {
    e.key: e
    for e in (
        scaling.EXPERIMENT,
        mask.EXPERIMENT,
        warmup.EXPERIMENT,
        residual.EXPERIMENT,
        softmax.EXPERIMENT,
        shape_drift.EXPERIMENT,
        memory.EXPERIMENT,
    )
}
