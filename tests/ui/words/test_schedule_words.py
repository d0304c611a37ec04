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


def test_a_finished_run_whose_rate_moved_live_says_where_its_floor_went():
    """Review 6 of stop 56: a finished run read "… to the floor, 0.0002, at step 1,500. Changed live (LR 0.002 →
    0.1 at step 284, LR 0.1 → 0.0005 at step 607)" under a line that ended at 5e-05: the floor moves with the rate."""
    config = {"train": {"learning_rate": 0.002, "min_lr": 0.0002, "warmup_steps": 30, "max_steps": 1500}}
    events = [{"step": 284, "kind": "knob", "knob": "learning_rate", "ok": True, "old": 0.002, "new": 0.1},
              {"step": 284, "kind": "knob", "knob": "min_lr", "ok": True, "old": 0.0002, "new": 0.01,
               "coupled_to": "learning_rate"},
              {"step": 607, "kind": "knob", "knob": "learning_rate", "ok": True, "old": 0.1, "new": 0.0005},
              {"step": 607, "kind": "knob", "knob": "min_lr", "ok": True, "old": 0.01, "new": 5e-05,
               "coupled_to": "learning_rate"}]  # fmt: skip
    said = lr_note(config, {"learning_rate": 0.0005, "min_lr": 5e-05, "warmup_steps": 30}, True, events, 1500)
    assert said.endswith("Changed live (LR 0.002 → 0.1 at step 284, LR 0.1 → 0.0005 at step 607); the floor moved "
                         "with the rate, 0.0002 → 0.01 → 5e-05: the line shows the rates it used."), said


def test_a_branch_that_changed_its_length_says_its_parents_decay_to_the_parents_end():
    """A review's branch (LR 0.003 → 0.005, max steps 4,000 → 1,500 at step 600) read "its parent's: … a cosine
    decay to the floor, 0.0003, at step 1,500": the parent decays to 4,000, its rate at step 600 is that cosine's."""
    train = {"learning_rate": 0.005, "min_lr": 0.0005, "warmup_steps": 30, "max_steps": 1500}
    changes = {"learning_rate": 0.005, "max_steps": 1500, "min_lr": 0.0005}
    events = [
        {"step": 600, "kind": "knob", "knob": "learning_rate", "ok": True, "old": 0.003, "new": 0.005, "branch": True},
        {"step": 600, "kind": "knob", "knob": "max_steps", "ok": True, "old": 4000, "new": 1500, "branch": True},
        {"step": 600, "kind": "knob", "knob": "min_lr", "ok": True, "old": 0.0003, "new": 0.0005, "branch": True},
    ]
    said = lr_note({"train": train, "branch": {"step": 600, "changes": changes}}, {}, True, events, 1500)
    assert said.startswith(
        "Up to step 600, its parent's: a linear warmup over 30 steps to 0.003, then a cosine decay to the floor, "
        "0.0003, at step 4,000. Branched there ("
    ), said
    assert said.endswith("to the floor, 0.0005, at step 1,500."), said


def test_a_branch_of_a_parent_changed_live_says_the_parents_own_settings_then_its_changes():
    """A review's branch at step 22,004 read "its parent's: a linear warmup over 50 steps to 0.005 ..." of a parent
    that warmed up over 30 steps to 0.002 and was changed live at steps 8,127 (LR) and 17,728 (warmup)."""
    train = {"learning_rate": 0.001, "min_lr": 0.0001, "warmup_steps": 50, "max_steps": 25000}
    knob = {"kind": "knob", "ok": True}
    events = [
        {**knob, "step": 8127, "knob": "learning_rate", "old": 0.002, "new": 0.005},
        {**knob, "step": 8127, "knob": "min_lr", "old": 0.0002, "new": 0.0005, "coupled_to": "learning_rate"},
        {**knob, "step": 17728, "knob": "warmup_steps", "old": 30, "new": 36},
        {**knob, "step": 18046, "knob": "warmup_steps", "old": 36, "new": 50},
        {**knob, "step": 22004, "knob": "learning_rate", "old": 0.005, "new": 0.001, "branch": True},
        {**knob, "step": 22004, "knob": "max_steps", "old": 200000, "new": 25000, "branch": True},
        {**knob, "step": 22004, "knob": "min_lr", "old": 0.0005, "new": 0.0001, "branch": True},
    ]
    branch = {"step": 22004, "changes": {"learning_rate": 0.001, "max_steps": 25000, "min_lr": 0.0001}}
    said = lr_note({"train": train, "branch": branch}, {}, True, events, 25000)
    assert said.startswith(
        "Up to step 22,004, its parent's: a linear warmup over 30 steps to 0.002, then a cosine decay to the floor, "
        "0.0002, at step 200,000. Branched there (LR 0.005 → 0.001"
    ), said
    assert "LR 0.002 → 0.005 at step 8,127" in said and "warmup 30 → 36 at step 17,728" in said, said
