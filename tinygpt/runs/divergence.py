"""When a run has diverged, and what it says then.

A non-finite loss or gradient is caught by the Trainer (the update is skipped) and named here by its first
non-finite tensor (`nonfinite_reason`). A loss that stays finite but far above what guessing scores is divergence
too (`loss_limit`, `blowup_reason`): the weights no longer model the text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

# Divergence without NaN: a loss this many times ln(V) (what guessing uniformly scores, and an untrained model's
# loss) for DIVERGE_PATIENCE steps in a row. Measured on the demo preset (ln 65 = 4.17, limit 6.26): lr 10 with no
# warmup or clipping stays above it for 254 steps (loss ~500); lr 1 spikes above it for 35 steps and recovers; lr
# 0.1, lr 1e-2 without warmup, lr 1e-5 (slow) and the demo itself never exceed it for more than 2 steps.
DIVERGE_LOSS_FACTOR = 1.5
DIVERGE_PATIENCE = 50


def loss_limit(vocab_size: int) -> float:
    """The loss above which a step counts toward divergence: DIVERGE_LOSS_FACTOR x ln(V)."""
    return DIVERGE_LOSS_FACTOR * math.log(vocab_size)


def nonfinite_reason(record: dict) -> tuple[str, dict]:
    """The reason and the event fields for a step whose loss or gradient went non-finite (`record["nonfinite"]`
    names the first tensor that did, and in which pass)."""
    info = record.get("nonfinite") or {}
    where = "forward pass" if info.get("where") == "forward" else "backward pass"
    reason = (
        f"diverged at step {record['step']}: loss {record['loss']}, grad norm {record['grad_norm']}; first non-finite "
        f"tensor {info.get('tensor', 'unknown')} ({where}). The update was not applied: lower the learning rate or "
        "the attention scale, then resume."
    )
    return reason, info


def blowup_reason(
    losses: list[float], step: int, vocab_size: int, checkpoints: list[int], update_ratios: Iterable[float] = ()
) -> tuple[str, dict]:
    """The reason and the event fields for `losses`, the last steps up to `step` that all stayed above
    loss_limit(vocab_size): their mean, the update ratio now, and the checkpoint from before it blew up."""
    steps, limit = len(losses), loss_limit(vocab_size)
    first = step - steps + 1
    mean = sum(losses) / steps
    before = [s for s in checkpoints if s < first]
    ratios = sorted(update_ratios)
    ratio = f"; update ratio ||dW||/||W|| now {ratios[len(ratios) // 2]:.2g} (healthy: ~1e-3)" if ratios else ""
    back = f"resume from checkpoint {before[-1]}, from before it blew up" if before else "start a new run"
    reason = (
        f"diverged at step {step}: the loss stayed above {limit:.2f} ({DIVERGE_LOSS_FACTOR:g} x ln {vocab_size}; "
        f"guessing uniformly scores {math.log(vocab_size):.2f}) for {steps} steps in a row, steps {first}-{step}, "
        f"mean {mean:.3g}{ratio}. The weights no longer model the text: lower learning_rate (or raise warmup_steps, "
        f"or set max_grad_norm), then {back}."
    )
    fields = dict(rule="loss_above_uniform", limit=limit, mean_loss=mean, first_step=first, steps=steps,
                  checkpoint=before[-1] if before else None)  # fmt: skip
    return reason, fields


def diverged_release_reason(diverged: str, release: str) -> str:
    """The reason of a diverged run whose worker the manager let go (`release`: "paused: its training slot went to
    a queued run; resume it to continue"): it stays diverged, with its own reason first, and says what a resume
    would do then. A resume restarts it from its newest checkpoint with the settings that diverged, so "resume it
    to continue" is not the advice: the settings change once it is resumed (a queued or starting run takes knob
    changes before its first step)."""
    why = release.removeprefix("paused:").split(";")[0].strip() or "its worker was let go"
    return (
        f"{diverged.rstrip()} Its worker has ended since ({why}): resuming restarts it from its newest checkpoint "
        "with the settings that diverged, so change them right after you resume it (a queued run takes them "
        "before its first step)."
    )


def released_as(diverged: str, release: str) -> tuple[str, str]:
    """(state, reason) of a run whose worker the manager let go with reason `release`: paused, or, when it had
    diverged (`diverged`: why; "" if it had not), diverged with that reason first (diverged_release_reason)."""
    return ("diverged", diverged_release_reason(diverged, release)) if diverged else ("paused", release)


def killed_on_release(status: dict, release: str) -> tuple[str, str]:
    """released_as for a worker killed for not answering its release, from its run's status.json."""
    diverged = str(status.get("reason") or "diverged") if status.get("state") == "diverged" else ""
    state, reason = released_as(diverged, release)
    return state, f"{reason} (the worker did not respond and was killed)"


FREED = "its worker was freed for a queued run"  # a paused run's slot fact, said after who paused it


def freed_reason(status: dict) -> str:
    """The reason of a paused run whose worker gives its training slot to a queued run, from its status.json. A
    person's pause ("paused by you at step 41", "paused by the instructor at step 41") is kept, with the slot fact
    added: replacing it lost who paused the lecture run, and learners read "the instructor can resume it" of a run
    the instructor had paused on purpose (tinygpt/ui/words/run_words.reason_for still turns "by you" and "resume it"
    into each viewer's words). Any other pause (a diverged run keeps its own reason: released_as) says the slot."""
    reason = str(status.get("reason") or "")
    if reason.startswith("paused by ") and FREED not in reason:
        who = "the instructor can resume it" if reason.startswith("paused by the instructor") else "resume it"
        return f"{reason.split(';')[0].rstrip('.')}; {FREED}; {who} to continue"  # a hold: its owner may not
    return reason if FREED in reason else "paused: its training slot went to a queued run; resume it to continue"
