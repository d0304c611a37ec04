"""The Circuits head table, its role sentences, the red rules' caption and the lesson's headline name a head and a
step together only where the step is that head's own jump (heads.head_jump): on a run whose best induction head
switched from L1H2 (on top at the phase change, step 1260) to L1H1 (its own jump at 1880), a reviewer read "since
the phase change at step 1260" credited to one head and the verdict crediting another."""

import re

from helpers import switching_scores

from tinygpt.inside import heads
from tinygpt.lab import induction
from tinygpt.ui.circuits import circuits_view
from tinygpt.ui.teach import lesson_checks
from tinygpt.ui.teach.lesson_evidence import _verdict
from tinygpt.ui.words import ablation_words

RECORDS = switching_scores()
TWO, ONE = list(induction.INDUCTION_VARIANTS)


def own_step(name: str) -> int | None:
    jump = heads.head_jump(RECORDS, name)
    return jump.step if jump else None


def test_every_since_step_that_is_a_jump_is_that_heads_own_at_every_step():
    change = heads.phase_change(RECORDS).score.step
    for step in [r["step"] for r in RECORDS]:
        for row in circuits_view.head_rows(RECORDS, step):
            if "(" in row["since step"]:
                since = int(row["since step"].split()[0])
                assert since == own_step(row["head"]) and since <= step, (step, row)
                assert ("(phase change)" in row["since step"]) == (since == change), (step, row)
        for sentence in circuits_view.role_sentences(RECORDS, step):
            head = sentence.split()[0]
            said = re.search(r"since (?:the phase change at|its own score jumped at) step (\d+)", sentence)
            if said:
                assert int(said[1]) == own_step(head), (step, sentence)


def test_the_head_that_took_over_is_an_induction_head_since_its_own_jump():
    rows = {r["head"]: r for r in circuits_view.head_rows(RECORDS, None)}
    assert rows["L1H1"]["since step"] == "1880 (its own jump)"
    # down to 0.30 at the end, still 6x its uniform 0.05: an induction head by the lesson's rule (2x), which the
    # table follows (a review: Circuits showed no role for a head the lesson called specialised)
    assert rows["L1H2"]["role"] == "induction"
    quiet = {r["head"]: r for r in circuits_view.head_rows(RECORDS[:1], None)}
    assert all(r["role"] == "-" for r in quiet.values())  # every head at its uniform share: no role
    # said, with the nearest (a review read an empty list under "Heads at step 300", its best score 1.7x)
    assert circuits_view.role_sentences(RECORDS[:1], None) == [
        "No head has a role yet: no score reaches 2x its uniform baseline. The nearest: L0H0's previous-token score "
        "0.100 against its baseline 0.100 (1.0x)."
    ]
    sentences = circuits_view.role_sentences(RECORDS, None)
    assert any(s.startswith("L1H1 is an induction head since its own score jumped at step 1880") for s in sentences)
    assert all(s.startswith("L1H2 ") for s in sentences if "1260" in s)  # the phase change is L1H2's own jump
    middle = {r["head"]: r for r in circuits_view.head_rows(RECORDS, 1500)}  # L1H2 on top: the phase change is its
    assert middle["L1H2"]["since step"] == "1260 (phase change)"
    assert any(s.startswith("L1H2 is an induction head since the phase change at step 1260")
               for s in circuits_view.role_sentences(RECORDS, 1500))  # fmt: skip


def test_the_red_rules_caption_says_whose_score_jumped_and_the_best_heads_own_step():
    final = {"head": "L1H1", "mean": 0.45, "std": 0.1, "low": 0.44, "high": 0.46, "rows": 256, "baseline": 0.05,
             "step": 3000}  # fmt: skip
    caption = circuits_view.change_caption({TWO: RECORDS}, ended=True, final={TWO: final})
    assert ("2 layers: phase change at step 1260 in the snapshots' best score (L1H2's at the jump, L1H1's at the "
            "last snapshot)") in caption  # fmt: skip
    assert "L1H1, 0.45 on 256 fresh probe rows at step 3000; L1H1's own snapshot score jumped at step 1880" in caption


def test_the_lesson_headline_puts_the_best_heads_own_jump_next_to_its_name():
    half = 1.96 * 0.05 / 16
    fin = {"mean": 0.8, "std": 0.05, "low": 0.8 - half, "high": 0.8 + half, "rows": 256, "baseline": 0.05,
           "step": 3000}  # fmt: skip
    flat = [{**r, "roles": {**r["roles"], "induction": [[0.05] * 4]}} for r in RECORDS]
    verdict = _verdict(induction.induction_verdict({TWO: RECORDS, ONE: flat},
                                                   final={TWO: {**fin, "head": "L1H1"},
                                                          ONE: {**fin, "head": "L0H0", "mean": 0.06,
                                                                "low": 0.05, "high": 0.07}}))  # fmt: skip
    line = lesson_checks.verdict_headline(lesson_checks.INDUCTION, "The induction phase change", verdict)
    assert "L1H1 ends at 0.80 (its own jump at step 1880)" in line, line
    assert "phase change at step 1260" in line
    assert not re.search(r"L1H1[^,;]*1260", line), line


def test_the_ablation_caption_says_the_windows_overlap_on_a_short_held_out_split():
    """A review read "10,240 validation tokens" on a learner's text whose held-out split was 1,972 characters: the
    windows are drawn at random from it, overlapping, and the caption says so with both numbers."""

    said = ablation_words.ablation_words({"windows": (320, 32), "tokens": 10_240, "held_out": 1_972, "seconds": 0.5})
    assert said.startswith("320 held-out windows of 32 (10,240 characters), drawn at random, overlapping, from 1,972")
    assert "in 0.50 s" in said
