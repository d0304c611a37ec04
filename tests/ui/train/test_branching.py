"""The pure parts of the app's branching (tinygpt/ui/train/branching.py): the branch points Compare marks, the parent's
label on Train, and the words for what a branch changes."""

from __future__ import annotations

from helpers import tiny_config

from tinygpt.ui.train.branching import branch_points, changes_from, describe, parent_label

PARENT, BRANCH = "2L×4H×64 · shakespeare · LR 0.002", "2L×4H×64 · shakespeare · LR 0.01"


def test_branch_points_name_the_parent_even_when_it_is_not_compared():
    configs = {
        BRANCH: {"parent": "parentid1", "branch": {"step": 120, "changes": {"learning_rate": 0.01}}},
        PARENT: {"parent": None},
        "orphan": {"parent": "goneid123", "branch": {"step": 5, "changes": {}}},
        "a rerun": {"parent": "parentid1"},  # a run that replaced another (Train's "train again"), not a branch
    }
    points = branch_points(configs, {"parentid1": PARENT})
    assert points == {BRANCH: (120, PARENT), "orphan": (5, "run goneid123")}


def test_the_parent_curve_on_train_says_where_the_branch_left_it():
    parent = tiny_config("abc").to_dict()
    branch = {**parent, "train": {**parent["train"], "learning_rate": 0.01}, "parent": "parentid1",
              "branch": {"step": 120, "changes": {"learning_rate": 0.01}}}  # fmt: skip
    branch["branch"]["changes"]["min_lr"] = 0.001  # moved along with the learning rate: not a change of its own
    assert parent_label(parent, branch) == "parent, branched at step 120 (LR→0.01)"
    assert (
        parent_label(parent, {**branch, "branch": {"step": 5, "changes": {}}})
        == "parent, branched at step 5 (no change)"
    )
    assert parent_label(parent, {**parent, "parent": "parentid1"}).startswith("previous run")  # a replaced run


def test_the_control_changes_only_what_differs_from_the_checkpoint_and_says_so():
    base = tiny_config("abc")
    values = {"learning_rate": base.train.learning_rate * 5, "mask": "none", "max_steps": base.train.max_steps}
    changes = changes_from(values, base)
    assert changes == {"learning_rate": base.train.learning_rate * 5, "mask": "none"}
    assert (
        describe(changes, base) == f"LR {base.train.learning_rate:g}→{base.train.learning_rate * 5:g}, mask causal→none"
    )
    assert describe({}, base).startswith("no change")
