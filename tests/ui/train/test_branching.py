"""The pure parts of the app's branching (tinygpt/ui/train/branching.py): the branch points Compare marks, the parent's
label on Train, and the words for what a branch changes."""

from __future__ import annotations

from helpers import tiny_config

from tinygpt.ui.charts import curves
from tinygpt.ui.train import branching
from tinygpt.ui.train.branching import (
    branch_points,
    changes_from,
    describe,
    parent_changes_after,
    parent_from,
    parent_label,
)

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
    assert parent_label(parent, {**parent, "parent": "parentid1"}).startswith("the run before this one")


def test_the_control_changes_only_what_differs_from_the_checkpoint_and_says_so():
    base = tiny_config("abc")
    values = {"learning_rate": base.train.learning_rate * 5, "mask": "none", "max_steps": base.train.max_steps}
    changes = changes_from(values, base)
    assert changes == {"learning_rate": base.train.learning_rate * 5, "mask": "none"}
    t = base.train  # the floor moves with the peak, said (a review found it only in Compare's table)
    assert describe(changes, base) == (f"LR {t.learning_rate:g}→{t.learning_rate * 5:g} (its floor {t.min_lr:g}→"
                                       f"{t.min_lr * 5:g}), mask causal→none")  # fmt: skip
    assert describe({}, base).startswith("no change")
    # as the form labels it: a review read "max_steps 1000→700" beside "LR 0.002→0.005"
    assert describe({"max_steps": 700}, base) == f"max steps {base.train.max_steps}→700"


def knob(step: int, name: str, old, new, **more) -> dict:
    return {"kind": "knob", "knob": name, "step": step, "ok": True, "old": old, "new": new, **more}


def test_a_no_change_branch_promises_its_start_not_its_parents_later_changes():
    """Review: "no change: it follows its parent exactly" on a branch of the lecture run at 4000, whose learning
    rate went to 0.1 live at 4208; the branch kept 0.003 and the two curves parted there."""
    said = describe({}, tiny_config("abc"))
    assert "follows" not in said and "exactly" not in said
    assert said == (
        "no change: it starts from the parent's weights, optimizer state and batches at this step; live changes "
        "made to the parent later do not reach it"
    )


def test_the_parent_curve_names_the_parents_later_live_changes_the_branch_did_not_take():
    parent = tiny_config("abc").to_dict()
    parent["train"] = {**parent["train"], "learning_rate": 0.003, "min_lr": 0.003}
    branch = {**parent, "parent": "parentid1", "branch": {"step": 4000, "changes": {}}}
    before = [knob(3000, "warmup_steps", 100, 200)]  # before the branch step: the branch has it too
    later = [knob(4208, "learning_rate", 0.003, 0.1), knob(4208, "min_lr", 0.003, 0.1, coupled_to="learning_rate")]
    label = parent_label(parent, branch, before + later, [])
    assert label == (
        "parent, branched at step 4000 (no change); the parent's LR changed to 0.1 at step 4208; the branch kept 0.003"
    )
    assert parent_label(parent, branch, before, []) == "parent, branched at step 4000 (no change)"
    # the branch took the same change itself by then: nothing parts the curves there
    assert parent_changes_after(later, branch, [knob(4100, "learning_rate", 0.003, 0.1)]) == []
    # the branch moved it elsewhere first: "had", not "kept"
    [moved] = parent_changes_after(later, branch, [knob(4100, "learning_rate", 0.003, 0.01)])
    assert moved == "the parent's LR changed to 0.1 at step 4208; the branch had 0.01"
    many = [knob(4300 + i, "learning_rate", 0.1 * i, 0.1 * (i + 1)) for i in range(4)]
    assert parent_changes_after(later + many, branch)[-1] == "3 more live changes to the parent after that"
    back = [knob(4300, "learning_rate", 0.1, 0.003)]  # the parent back at the branch's value: nothing new to say
    assert len(parent_changes_after(later + back, branch)) == 1
    assert parent_changes_after(later, parent) == []  # not a branch


def test_the_parent_curve_of_a_branch_starts_where_it_branched():
    """Review 6.5: the grey dashed parent curve lay hidden under the branch's own up to the branch step (there the
    branch's history is the parent's, copied); drawn from the branch step on, it shows where the two part, on the
    parent's own clock on the seconds axis."""
    parent = [{"step": s, "loss": 3.0 - s / 100, "clock": s / 10} for s in range(0, 200, 10)]
    branch = {"parent": "p1", "branch": {"step": 120, "changes": {"learning_rate": 0.01}}}
    assert parent_from(branch) == 120 and parent_from({"parent": "p1"}) is None
    mine = parent[:13] + [{"step": s, "loss": 2.0, "clock": s / 10} for s in range(130, 200, 10)]
    for seconds, first in ((False, 120), (True, 12.0)):
        spec = curves.loss_chart(mine, [], [], 65, ghost=parent, ghost_label="p", ghost_from=120, seconds=seconds)
        ghost = [r["step"] for r in spec["datasets"]["ghost"]]
        assert ghost[0] == first and len(ghost) == 8
    whole = curves.loss_chart(mine, [], [], 65, ghost=parent, ghost_label="previous run")
    assert [r["step"] for r in whole["datasets"]["ghost"]][0] == 0


def test_a_branch_says_what_its_changes_do_to_its_first_learning_rate():
    """A review's branch cut max steps 3000→950 at step 800: its rate went 0.002588 → 0.000479 at step 801, the
    panel saying only "max steps 3000→950"."""
    from tinygpt.config import RunConfig

    base = RunConfig.from_dict({"train": {"learning_rate": 0.003, "min_lr": 0.0003, "warmup_steps": 45,
                                          "max_steps": 3000}})  # fmt: skip
    said = branching.schedule_effect({"max_steps": 950}, base, 800)
    assert said == "Its learning rate at step 801: 0.00259 → 0.000479 (the schedule over 950 steps).", said
    assert branching.schedule_effect({"mask": "causal"}, base, 800) == ""  # the schedule untouched
    assert branching.schedule_effect({"max_steps": 3001}, base, 800) == ""  # moved by under 1%: nothing to say
    doubled = branching.schedule_effect({"learning_rate": 0.006}, base, 800)  # min_lr moves along, as live
    assert "0.00259 → 0.00518" in doubled, doubled


def test_the_grey_curve_of_a_replaced_run_names_its_live_changes():
    """A review compared a run against a grey curve labelled "LR 0.002 → 0.01" that had trained at 0.005 from step
    278, under mask none from 374 and scaling none from 448: the bends of that curve were unexplained."""
    before = {"train": {"learning_rate": 0.002}}
    after = {"parent": "p1", "train": {"learning_rate": 0.01}}
    knob = [{"kind": "knob", "knob": k, "old": o, "new": n, "step": s, "applied": True}
            for k, o, n, s in (("learning_rate", 0.002, 0.005, 278), ("mask", "causal", "none", 374),
                               ("attn_scale", "head_dim", "none", 448))]  # fmt: skip
    label = parent_label(before, after, knob)
    assert label.startswith("the run before this one: ") and "; its live changes: LR 0.002→0.005 @278" in label
    assert label.endswith("mask causal→none @374 and 1 more"), label
    assert "live changes" not in parent_label(before, after, [])
