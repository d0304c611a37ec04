"""The phase change is the jump of the snapshots' best induction score, and which head is on top can change
between snapshots: a step said next to a head's name must be that head's own jump (a reviewer's Circuits screen
credited L1H1 with the phase change at step 1260, when L1H2 was on top there and L1H1's own score jumped at 1880)."""

import re

from helpers import switching_scores

from tinygpt.inside import heads
from tinygpt.lab import induction

TWO, ONE = list(induction.INDUCTION_VARIANTS)


def final(head: str, mean: float) -> dict:
    half = 1.96 * 0.05 / 256**0.5
    return {"head": head, "mean": mean, "std": 0.05, "low": mean - half, "high": mean + half, "rows": 256,
            "baseline": 0.05, "step": 3000}  # fmt: skip


def verdict(head: str = "L1H1"):
    flat = [{**r, "roles": {**r["roles"], "induction": [[0.05] * 4]}} for r in switching_scores()]
    return induction.induction_verdict({TWO: switching_scores(), ONE: flat},
                                       final={TWO: final(head, 0.8), ONE: final("L0H0", 0.06)})  # fmt: skip


def test_a_head_has_its_own_jump_and_the_phase_change_says_whose_score_it_was_in():
    records = switching_scores()
    change = heads.phase_change(records)
    assert change.score.step == 1260 and change.jump_head == "L1H2" and change.head == "L1H1"
    assert change.whose == "L1H2's at the jump, L1H1's at the last snapshot"
    assert heads.head_jump(records, "L1H1").step == 1880
    assert heads.head_jump(records, "L1H2").step == 1260
    assert heads.head_jump(records, "L0H0") is None  # flat
    assert heads.head_jump(records, "L3H0") is None  # no such head: no curve
    assert [p["score"] for p in heads.head_series(records, "L1H1")][::50] == [0.05, 0.05, 0.8, 0.8]


def test_the_verdict_credits_each_head_only_with_its_own_jump():
    v = verdict()
    assert v.reproduced is True, v.sentence
    assert v.observed["phase change step (score)"] == 1260
    assert v.observed["best head"] == "L1H1" and v.observed["best head's own score jump step"] == 1880
    assert "(L1H2's at the jump, L1H1's at the last snapshot) jumped from 0.05" in v.sentence
    assert "the phase change at step 1260" in v.sentence
    owns = re.findall(r"(L\dH\d)'s own snapshot score jumped at step (\d+)", v.sentence)
    assert owns == [("L1H1", "1880")]
    records = switching_scores()
    for head, step in owns:
        assert heads.head_jump(records, head).step == int(step)


def test_a_verdict_head_without_a_jump_of_its_own_is_said_to_have_none():
    v = verdict("L0H0")  # the final measurement picks a head whose snapshot curve is flat
    assert "L0H0's own snapshot score shows no jump" in v.sentence
    assert v.observed["best head's own score jump step"] is None
    assert not re.search(r"L0H0's [^;]*step \d+", v.sentence.split("picks L0H0")[0])
