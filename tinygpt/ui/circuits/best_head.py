"""Which head is the "best induction head", in words: two measurements name one, and they can disagree.

The training-time snapshot scores are the argmax of each attention snapshot's (L, H) induction scores on
heads.INDUCTION_ROWS fixed probe rows: cheap and noisy, what the curves and the phase change's step come from. The
verdict's final measurement (tinygpt.lab.induction.final_induction) chooses its head on VERDICT_ROWS fresh rows and
scores it on as many others, at the last checkpoint. A browser run showed L1H2 in the phase-change chart's caption
and L1H1 in the verdict, on one screen. Where the final measurement exists it is the page's "best head", said with
its source; the snapshots' own pick is named beside it, with its source and both numbers, only where it differs.
Pure: records and measurements in, sentences out.
"""

from __future__ import annotations

from tinygpt.inside import heads
from tinygpt.lab import induction

SNAPSHOTS = f"the training-time snapshot scores on {heads.INDUCTION_ROWS} fixed probe rows"


def snapshot_best(records: list[dict]) -> dict | None:
    """{"step", "score", "name"}: the head with the highest induction score at the newest snapshot that has one."""
    best = heads.best_series(records)
    return best[-1] if best else None


def fresh_words(final: dict) -> str:
    """ "L1H1, 0.45 on 256 fresh probe rows at step 3000": the final measurement's head, with where it comes from."""
    at = f" at step {final['step']}" if final.get("step") is not None else ""
    return f"{final['head']}, {final['mean']:.2f} on {final['rows']} fresh probe rows{at}"


def snapshot_score(records: list[dict], name: str, step: int) -> float | None:
    """Head `name`'s induction score in the snapshot at `step` (its (L, H) grid), None where it has none."""
    layer, head = induction.head_index(name)
    grid = next(((r.get("roles") or {}).get("induction") for r in records if r.get("step") == step), None)
    try:
        return float(grid[layer][head])
    except (TypeError, IndexError, ValueError):
        return None


def heads_disagree(records: list[dict], final: dict | None) -> str:
    """ "" unless both measurements exist and name different heads; then both picks, each with its number and its
    source, e.g. "The training-time snapshot scores on 2 fixed probe rows rank L1H2 first at step 3000 (0.52; L1H1 0.47
    there); the final measurement the verdict reads, on 256 fresh probe rows at step 3000, picks L1H1 (0.45)."."""
    live = snapshot_best(records)
    if not final or live is None or live["name"] == final["head"]:
        return ""
    other = snapshot_score(records, final["head"], live["step"])
    theirs = "" if other is None else f"; {final['head']} {other:.2f} there"
    at = f" at step {final['step']}" if final.get("step") is not None else ""
    return (
        f"{SNAPSHOTS[0].upper()}{SNAPSHOTS[1:]} rank {live['name']} first at step {live['step']} "
        f"({live['score']:.2f}{theirs}); the final measurement the verdict reads, on {final['rows']} fresh probe "
        f"rows{at}, picks {final['head']} ({final['mean']:.2f})."
    )


def verdict_head_caption(label: str, final: dict) -> str:
    """The run in view's best induction head as the experiment's verdict measured it, with where the number is from."""
    return (
        f"Best induction head of this run ({label}), as the induction experiment's verdict measures it: "
        f"{fresh_words(final)} (± {final['std']:.2f} across rows; uniform {final['baseline']:.2f})."
    )


def checked_head(records: list[dict], final: dict | None) -> str | None:
    """The induction head the page's checks are about: the verdict's final measurement's head, else the phase
    change's head in the training-time scores (as the lesson's ablation check picks it, lesson_evidence._ablation).
    The Head picker opens on it: it opened on L0H0 (+0.023 when ablated) beside a check about L1H1 (+0.671)."""
    return (final or {}).get("head") or heads.phase_change(records).head
