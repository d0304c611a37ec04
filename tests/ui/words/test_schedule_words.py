"""The learning-rate note of a branch (schedule_words.lr_note): two schedules, the parent's up to the branch step
and its own from the next, and no "changed live" for the branch's own change (a review's branch LR 0.002 → 0.0005
at step 500 read "a linear warmup over 30 steps to 0.0005 … Changed live (LR 0.002 → 0.0005 at step 500)")."""

from __future__ import annotations

from tinygpt.schedule import lr_at
from tinygpt.ui.words.schedule_words import lr_note

TRAIN = {"learning_rate": 0.0005, "min_lr": 5e-05, "warmup_steps": 30, "max_steps": 600}
BRANCH = {"train": TRAIN, "branch": {"step": 500, "changes": {"learning_rate": 0.0005, "min_lr": 5e-05}}}
EVENTS = [
    {"step": 500, "kind": "knob", "knob": "learning_rate", "ok": True, "old": 0.002, "new": 0.0005, "branch": True},
    {"step": 500, "kind": "knob", "knob": "min_lr", "ok": True, "old": 0.0002, "new": 5e-05, "branch": True,
     "coupled_to": "learning_rate"},
]  # fmt: skip


def test_a_branch_says_its_parents_schedule_then_its_own():
    said = lr_note(BRANCH, {}, True, EVENTS, 600)
    first = lr_at(500, 0.0005, 5e-05, 30, 600)  # what step 501 trained at
    assert said == (
        "Up to step 500, its parent's: a linear warmup over 30 steps to 0.002, then a cosine decay to the floor, "
        f"0.0002, at step 600. Branched there (LR 0.002 → 0.0005): a cosine decay from {first:.3g} at step 501 to "
        "the floor, 5e-05, at step 600."
    )
    assert "live" not in said


def test_a_live_change_after_the_branch_is_said_as_one():
    later = {"step": 550, "kind": "knob", "knob": "learning_rate", "ok": True, "old": 0.0005, "new": 0.001}
    said = lr_note(BRANCH, {"learning_rate": 0.001, "min_lr": 5e-05, "warmup_steps": 30}, False, [*EVENTS, later],
                   560)  # fmt: skip
    assert said.startswith("Up to step 500, its parent's:")
    assert "Changed live (LR 0.0005 → 0.001 at step 550); from here:" in said


def test_a_branch_that_left_the_schedule_alone_reads_as_its_settings():
    plain = {"train": TRAIN, "branch": {"step": 500, "changes": {"mask": "none"}}}
    assert lr_note(plain, {}, True, [], 600).startswith("This run's settings: a linear warmup over 30 steps to 0.0005")
