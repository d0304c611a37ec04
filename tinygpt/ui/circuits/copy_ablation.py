"""The Circuits heatmap's third panel and the lesson's ablation check: every head zero-ablated in turn on the second
copy of the repeated random probe (tinygpt.lab.induction.second_copy_rows), where only copying predicts. One
measurement at a checkpoint, cached, read by both, with its noise over the probe rows."""

from __future__ import annotations

import streamlit as st

from tinygpt.lab import induction
from tinygpt.ui.host import resources

SECOND_COPY = "second copy"  # the heatmap panel of the lesson's ablation check's own numbers


def second_copy(run_dir: str, step: int) -> list[list[float]] | None:
    """induction.second_copy_ablation at a checkpoint, (L, H) as lists. The Circuits heatmap's third panel and the
    lesson's ablation check read this one measurement: one probe, one checkpoint, one set of numbers."""
    measured = second_copy_measured(run_dir, step)
    return None if measured is None else measured["deltas"]


@st.cache_data(max_entries=16, show_spinner=False)
def second_copy_measured(run_dir: str, step: int) -> dict | None:
    """induction.second_copy_rows at a checkpoint, summed up (cached: a checkpoint never changes): {"deltas",
    "se": (L, H) the mean change and its standard error over the rows, "row_deltas" (L, H, B), "first", "second":
    the clean copies' mean losses, "gap_se": the standard error of first - second, "rows"}."""
    loaded = resources.cached_model(run_dir, step)
    rows = induction.second_copy_rows(loaded.model, loaded.tokenizer.vocab)
    if rows is None:
        return None
    deltas, count = rows["deltas"], rows["deltas"].shape[-1]  # (L, H, B)
    gap = rows["first"] - rows["second"]  # (B,) each row's paired gap
    return {"deltas": deltas.mean(-1).tolist(), "se": (deltas.std(-1, ddof=1) / count**0.5).tolist(),
            "row_deltas": deltas.tolist(),  # (L, H, B): a head against the others, row by row (lesson_evidence)
            "first": float(rows["first"].mean()), "second": float(rows["second"].mean()),
            "gap_se": float(gap.std(ddof=1) / count**0.5), "rows": count}  # fmt: skip
