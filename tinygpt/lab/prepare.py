"""What the lesson's *Prepare the long runs* starts, as plain data: every long step's runs, in the lesson's order.

The app's button (tinygpt/ui/teach/lesson_view.py `prepare`) and the benchmark (`python -m tinygpt.bench.prepare`) both
start `prepared_runs()`, so what is measured is what a class waits for. Pure: no Streamlit, no run manager.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import RunConfig
from ..presets import preset
from . import induction
from .registry import EXPERIMENTS

HEADS = "heads"  # the role of the run (the Demo preset's model, 4 heads per layer) the multiple-heads step looks at
INDUCTION = "induction"  # the role of the induction experiment's two runs
SEED = 1337  # the lesson's seed: every prepared run starts from it
SOURCE = "shakespeare"  # the pitfalls' and the heads run's corpus in the lesson
# The heads run's length: the Demo preset's 300 steps showed one specialised head (or none) on each of 5 seeds, never
# two on different jobs; 1,000 steps showed two on 10 of 10 seeds, longer runs fewer (BENCHMARKS.md, "The
# multiple-heads step: when do heads specialise?").
HEADS_STEPS = 1000
INDUCTION_SOURCE = "synthetic:copyvar"  # the induction pair's corpus (the copy task, words of every length)
PRIORITY = "prepared"  # tinygpt.runs.jobs.PREPARED: a live run (the lecture run) goes ahead of these

# The order Prepare starts them in (the run manager's queue is first come, first served within a class), so the
# earliest steps' runs are ready first; a step's own click starts its runs live, ahead of these (tinygpt.runs.slots).
PREPARE_ORDER = ("exp:shape_drift", "exp:scaling", HEADS, "exp:residual", "exp:mask", "exp:warmup", "exp:softmax",
                 "exp:position", INDUCTION)  # fmt: skip
assert {r.removeprefix("exp:") for r in PREPARE_ORDER} >= set(EXPERIMENTS) - {"memory"}  # memory trains nothing


@dataclass(frozen=True)
class PreparedRun:
    role: str  # a PREPARE_ORDER entry: "exp:<key>", HEADS or INDUCTION
    label: str  # the run's label within its role ("correct", "2 layers", "run" for the heads run)
    config: RunConfig
    priority: str = PRIORITY


def role_configs(role: str, seed: int = SEED) -> dict[str, RunConfig]:
    """{label: RunConfig} of one role's runs, as the lesson starts them."""
    if role == HEADS:
        return {"run": preset("demo", source=SOURCE, seed=seed, max_steps=HEADS_STEPS)}
    if role == INDUCTION:
        return induction.induction_configs(INDUCTION_SOURCE, seed)
    return EXPERIMENTS[role.removeprefix("exp:")].configs(seed=seed, source=SOURCE)


def prepared_runs(seed: int = SEED, roles: tuple[str, ...] = PREPARE_ORDER) -> list[PreparedRun]:
    """Every run Prepare starts for `roles` (all of PREPARE_ORDER by default), in the order it starts them."""
    return [PreparedRun(role, label, config) for role in roles for label, config in role_configs(role, seed).items()]
