"""One "best induction head" on the Circuits page: a browser run showed L1H2 in the phase-change chart's caption
(the training-time snapshot scores) and L1H1 in the verdict (256 fresh probe rows) on one screen. Where the
verdict's measurement exists the page names its head, with its source; the snapshots' pick is named beside it, with
its own source and both numbers, only when the two differ."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from tinygpt.ui.circuits import best_head, circuits_view  # noqa: E402

TWO = "2 layers"


def records(last_best: str = "L1H2") -> list[dict]:
    """Snapshots of a (2, 3) induction grid: a jump at step 500; at the newest snapshot `last_best` scores 0.80 and
    L1H1 0.60 (where last_best is L1H1, L1H2 has 0.60)."""
    out = []
    for i in range(10):
        grid = [[0.05, 0.05, 0.05], [0.05, 0.05, 0.05]]  # (L, H)
        if i >= 5:
            grid[1][1], grid[1][2] = (0.60, 0.80) if last_best == "L1H2" else (0.80, 0.60)
        second = 3.0 if i < 5 else 1.0
        out.append({"step": 100 * i, "roles": {"induction": grid}, "baselines": {"induction": 0.05},
                    "copy_loss": {"first": 3.0, "second": second}})  # fmt: skip
    return out


def final(head: str = "L1H1", mean: float = 0.45, step: int = 900) -> dict:
    """What induction.final_induction returns: the head chosen and scored on fresh probe rows."""
    return {"head": head, "mean": mean, "std": 0.2, "low": mean - 0.02, "high": mean + 0.02, "rows": 256,
            "baseline": 0.05, "step": step}  # fmt: skip


def test_a_disagreement_names_both_heads_with_both_numbers_and_their_sources():
    note = best_head.heads_disagree(records("L1H2"), final("L1H1"))
    assert note == (
        "The training-time snapshot scores on 2 fixed probe rows rank L1H2 first at step 900 (0.80; L1H1 0.60 "
        "there); the final measurement the verdict reads, on 256 fresh probe rows at step 900, picks L1H1 (0.45)."
    )


def test_no_note_when_they_agree_or_there_is_no_verdict_yet():
    assert best_head.heads_disagree(records("L1H1"), final("L1H1")) == ""
    assert best_head.heads_disagree(records("L1H2"), None) == ""
    assert best_head.heads_disagree([], final("L1H1")) == ""


def test_the_phase_change_caption_names_the_verdicts_head_once_it_exists():
    recs = {TWO: records("L1H2")}
    caption = circuits_view.change_caption(recs, ended=True, final={TWO: final("L1H1")})
    assert "best head L1H1, 0.45 on 256 fresh probe rows at step 900" in caption
    assert "best head L1H2" not in caption  # the snapshots' head is named only as their own ranking, below
    assert f"{TWO}: the training-time snapshot scores on 2 fixed probe rows rank L1H2 first at step 900" in caption
    assert "picks L1H1 (0.45)" in caption
    agree = circuits_view.change_caption({TWO: records("L1H1")}, ended=True, final={TWO: final("L1H1")})
    assert "rank" not in agree and "best head L1H1, 0.45 on 256 fresh probe rows" in agree


def test_while_training_the_caption_says_its_best_head_is_the_snapshots():
    caption = circuits_view.change_caption({TWO: records("L1H2")}, ended=False)
    assert "best head in the training-time snapshot scores on 2 fixed probe rows: L1H2, 0.80 at step 900" in caption
    assert "provisional" in caption and "fresh" not in caption


def test_the_heads_section_caption_says_where_its_number_comes_from():
    caption = best_head.verdict_head_caption(TWO, final("L1H1"))
    assert caption == (
        "Best induction head of this run (2 layers), as the induction experiment's verdict measures it: L1H1, 0.45 "
        "on 256 fresh probe rows at step 900 (± 0.20 across rows; uniform 0.05)."
    )
