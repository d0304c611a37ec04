"""The branch point on Compare's chart (issue 37): a solid rule at the branch step in the branch's colour, named
with its parent in the subtitle, read back through `to_dict()`; and the settings table around a branch."""

from __future__ import annotations

from chart_helpers import METRICS, mark_type, rules_at, texts, views

from tinygpt.ui.charts import compare
from tinygpt.ui.charts.style import step_seconds

PARENT, BRANCH = "2L×4H×64 · shakespeare · LR 0.002", "2L×4H×64 · shakespeare · LR 0.01"


def test_the_branch_point_is_a_rule_at_its_step_labelled_with_the_parent():
    series = {PARENT: METRICS, BRANCH: METRICS}
    spec = compare.compare_chart(series, "loss", branches={BRANCH: (120, PARENT)}).to_dict()
    branch_rules = [v for v in views(spec) if mark_type(v) == "rule" and v["data"]["name"] == "compare_branches"]
    assert len(branch_rules) == 1 and "strokeDash" not in branch_rules[0]["mark"]  # knob changes are the dashed ones
    assert rules_at(spec, "x") == [120]
    assert branch_rules[0]["encoding"]["color"]["field"] == "run"  # in the branch's colour, on the runs' scale
    assert spec["datasets"]["compare_branches"] == [
        {"step": 120, "run": BRANCH, "label": f"from {PARENT}", "entry": f"branched from {PARENT} at step 120"}
    ]
    # named above the plot: a label along the rule crossed the curves (three reviews)
    assert f"from {PARENT}" not in texts(spec)
    assert spec["title"]["subtitle"] == [f"solid rule at step 120: «{BRANCH}» branched from {PARENT}"]
    two = compare.compare_chart({**series, "C": METRICS}, "loss", evals={PARENT: []},
                                branches={BRANCH: (120, PARENT), "C": (60, PARENT)}).to_dict()  # fmt: skip
    assert two["title"]["subtitle"][-1] == "solid rules: where each of 2 branches left its parent (hover one for which)"


def test_no_branch_no_branch_layers_and_a_branch_not_shown_is_left_out():
    for branches in (None, {}, {"a run not compared": (50, PARENT)}):
        spec = compare.compare_chart({PARENT: METRICS}, "loss", branches=branches).to_dict()
        assert all(v.get("data", {}).get("name") != "compare_branches" for v in views(spec))  # no empty layer
        assert rules_at(spec, "x") == []


def test_on_the_seconds_axis_the_rule_is_at_the_branch_steps_time():
    spec = compare.compare_chart({BRANCH: METRICS}, "loss", branches={BRANCH: (100, PARENT)}, seconds=True)
    assert rules_at(spec.to_dict(), "x") == [step_seconds(METRICS)(100)]  # the branch's own clock, as its curve


def test_the_settings_table_shows_a_branchs_change_once_and_not_its_bookkeeping():
    parent = {"run_id": "aaaaaaaa", "train": {"learning_rate": 0.002, "max_steps": 200}}
    branch = {"run_id": "bbbbbbbb", "parent": "aaaaaaaa", "branch": {"step": 120, "changes": {"learning_rate": 0.01}},
              "train": {"learning_rate": 0.01, "max_steps": 200}}  # fmt: skip
    change = {"step": 120, "kind": "knob", "knob": "learning_rate", "old": 0.002, "new": 0.01, "branch": True}
    rows = compare.config_diff({"P": parent, "B": branch}, events={"P": [], "B": [change]})
    # once, from the value its copied history trained at, as its curve on the chart (not "0.01→0.01 @120")
    assert rows == [{"setting": "train.learning_rate", "P": "0.002", "B": "0.002→0.01 @120"}]
    # A review: a branch whose parent had changed the rate before the branch read "0.006→0.003 @975", a history it
    # never had; it trained at 0.002, 0.003 from step 976 (the parent's, copied) and 0.006 from its branch at 1000
    copied = {"step": 975, "kind": "knob", "knob": "learning_rate", "old": 0.002, "new": 0.003}
    at_branch = {**change, "step": 1000, "old": 0.003, "new": 0.006}
    branch["train"]["learning_rate"] = 0.006
    rows = compare.config_diff({"P": parent, "B": branch}, events={"P": [copied], "B": [copied, at_branch]})
    assert rows == [{"setting": "train.learning_rate", "P": "0.002→0.003 @975", "B": "0.002→0.003 @975→0.006 @1000"}]


def test_a_branchs_copied_knob_changes_are_drawn_once_with_its_parent_compared():
    """A review read the parent's LR changes @436 and @708 twice on Runs' compare chart (②/③, ⑥/⑦): the branch's
    events.jsonl copies its parent's history up to the branch step."""
    lr = [{"step": s, "kind": "knob", "knob": "learning_rate", "old": o, "new": n, "ok": True}
          for s, o, n in ((40, 0.002, 0.005), (80, 0.005, 0.0005))]  # fmt: skip
    own = {"step": 100, "kind": "knob", "knob": "learning_rate", "old": 0.0005, "new": 0.001, "ok": True,
           "branch": True}  # fmt: skip
    events = {PARENT: lr, BRANCH: [*lr, own]}
    spec = compare.compare_chart({PARENT: METRICS, BRANCH: METRICS}, "loss", events=events,
                                 branches={BRANCH: (100, PARENT)}).to_dict()  # fmt: skip
    marks = [(m["run"], m["step"]) for m in spec["datasets"]["compare_knobs"]]
    assert sorted(marks) == sorted([(BRANCH, 100), (PARENT, 40), (PARENT, 80)]), marks
    alone = compare.compare_chart({BRANCH: METRICS}, "loss", events={BRANCH: [*lr, own]},
                                  branches={BRANCH: (100, PARENT)}).to_dict()  # fmt: skip
    assert len(alone["datasets"]["compare_knobs"]) == 3  # without its parent, the branch's history is all there is
