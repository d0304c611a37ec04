"""Branching a run (issue 37): a new run from one checkpoint of another, on the parent's batches from there on.

The parents train in-process (tinygpt.runs.loop.run_training) and the branches by the same resume the app's
worker does: from their own copy of the branch step's checkpoint. One test goes through RunManager's workers.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import tiny_config, wait_for

from tinygpt.config import ConfigError
from tinygpt.runs.branch import BranchError, create_branch, plan_branch, read_branch, reset_point
from tinygpt.runs.control import KnobChange, QueueControl
from tinygpt.runs.files import checkpoint_stem, list_checkpoints, read_config, read_config_json, read_events
from tinygpt.runs.knobs import knob_changes
from tinygpt.runs.loop import run_training
from tinygpt.runs.owners import Actor, may_control
from tinygpt.runs.store import RunStore


def trained_parent(tmp_path, text, **overrides):
    config = tiny_config(text, max_steps=24, **overrides)
    store = RunStore(tmp_path / "runs")
    writer = store.create(config.to_dict(), owner="cli")
    writer.close()
    assert run_training(writer.run_dir, config) == "finished"
    return store, writer.run_id


def branch_and_train(store, parent, step, changes, owner="cli"):
    plan = plan_branch(store, parent, step, changes)
    run_id = create_branch(store, plan, owner=owner)
    run_dir = store.path(run_id)
    assert run_training(run_dir, resume_from=step) == "finished"
    return run_id


def losses(store, run_id):
    return [(m["step"], m["loss"]) for m in store.reader(run_id).metrics]


def evals(store, run_id):
    return [(e["step"], e["val_loss"]) for e in store.reader(run_id).evals]


@pytest.mark.parametrize("dropout", [0.0, 0.2])  # 0.2: torch's own generator (dropout) is restored too
def test_a_branch_with_no_change_equals_its_parent_to_the_bit(tmp_path, tiny_text, dropout):
    store, parent = trained_parent(tmp_path, tiny_text, dropout=dropout)
    branch = branch_and_train(store, parent, 10, {})
    assert len(losses(store, branch)) == 24
    assert losses(store, branch) == losses(store, parent)  # steps 1-10 copied, 11-24 trained: the same floats
    assert evals(store, branch) == evals(store, parent)
    config = read_config_json(store.path(branch))
    assert config["parent"] == parent and read_branch(store.path(branch)) == {"parent": parent, "step": 10,
                                                                              "changes": {}}  # fmt: skip
    snapshots = [s["step"] for s in store.reader(branch).attention_index()["snapshots"]]
    assert snapshots == [s["step"] for s in store.reader(parent).attention_index()["snapshots"]]
    times = [m["time"] for m in store.reader(branch).metrics]
    gaps, parent_gaps = np.diff(times[:10]), np.diff([m["time"] for m in store.reader(parent).metrics][:10])
    assert gaps == pytest.approx(parent_gaps, abs=1e-6)  # the history moved on in time as one: the pace is kept
    assert 0 <= times[10] - times[9] < 30  # and the branch's first step follows its step 10 by seconds, no gap
    said = [e["message"] for e in read_events(store.path(branch)) if e.get("branched_from")]
    assert said == [f"branched from run {parent} at step 10: no change"]


def test_a_branch_with_a_changed_learning_rate_differs_only_after_the_branch(tmp_path, tiny_text):
    store, parent = trained_parent(tmp_path, tiny_text)
    branch = branch_and_train(store, parent, 10, {"learning_rate": 1e-2})
    mine, theirs = dict(losses(store, branch)), dict(losses(store, parent))
    assert [mine[s] for s in range(1, 11)] == [theirs[s] for s in range(1, 11)]  # the parent's history, copied
    # Step 11's loss is measured before its update, on the weights both runs share: the new rate shows from step 12.
    assert mine[11] == theirs[11] and all(mine[s] != theirs[s] for s in range(12, 25))
    lr = {m["step"]: m["lr"] for m in store.reader(branch).metrics}
    parent_lr = {m["step"]: m["lr"] for m in store.reader(parent).metrics}
    was = read_config(store.path(parent)).train  # the parent is only read: its config stays as it was
    ratio = 1e-2 / was.learning_rate
    assert lr[10] == parent_lr[10] and lr[11] == pytest.approx(ratio * parent_lr[11])
    config = read_config(store.path(branch)).train
    floor = pytest.approx(was.min_lr * ratio)  # the floor moved with the peak, as the live knob moves it
    assert config.learning_rate == 1e-2 and config.min_lr == floor
    changes = [(e["step"], e["knob"], e["old"], e["new"]) for e in knob_changes(read_events(store.path(branch)))]
    assert changes == [(10, "learning_rate", was.learning_rate, 1e-2), (10, "min_lr", was.min_lr, floor)]
    assert read_branch(store.path(branch))["changes"] == {"learning_rate": 1e-2, "min_lr": floor}


def test_a_branch_changes_the_optimizer_state_a_setting_lives_in(tmp_path, tiny_text):
    """weight_decay and the betas are kept in the optimizer's saved groups: a branch changes them there, or the
    restored optimizer would train on with the parent's."""
    store, parent = trained_parent(tmp_path, tiny_text)
    changes = {"weight_decay": 0, "beta2": 0.99, "max_steps": 30, "dropout": 0.1, "mask": "none"}
    branch = branch_and_train(store, parent, 20, changes)
    assert len(losses(store, branch)) == 30
    step = list_checkpoints(store.path(branch))[-1]
    groups = json.loads(checkpoint_stem(store.path(branch), step).with_suffix(".json").read_text())["optimizer"]
    decaying = [g for g in groups["param_groups"] if g.get("decays")]
    assert decaying and all(g["weight_decay"] == 0.0 for g in decaying)
    assert all(g["betas"] == [0.9, 0.99] for g in groups["param_groups"] if "betas" in g)
    config = read_config(store.path(branch))
    assert (config.model.dropout, config.model.mask, config.train.weight_decay) == (0.1, "none", 0.0)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"num_heads": 4}, "shape of the weights"),
        ({"hidden_dim": 64, "learning_rate": 2e-3}, "shape of the weights"),
        ({"seed": 7}, "parent's batches"),
        ({"source": "shakespeare"}, "corpus"),
        ({"optimizer": "muon"}, "optimizer state"),
        ({"colour": "red"}, "not a setting"),
    ],
)
def test_a_refused_change_says_why_before_any_folder_is_made(tmp_path, tiny_text, changes, named):
    store, parent = trained_parent(tmp_path, tiny_text)
    before = sorted(p.name for p in store.root.iterdir())
    with pytest.raises(BranchError, match=named) as refused:
        plan_branch(store, parent, 10, changes)
    assert next(iter(changes)) in str(refused.value) and "new run" in str(refused.value)
    assert sorted(p.name for p in store.root.iterdir()) == before


def test_a_bad_value_a_missing_checkpoint_or_no_steps_left_are_refused(tmp_path, tiny_text):
    store, parent = trained_parent(tmp_path, tiny_text)
    before = sorted(p.name for p in store.root.iterdir())
    with pytest.raises(ConfigError, match="learning_rate"):
        plan_branch(store, parent, 10, {"learning_rate": -1.0})
    with pytest.raises(BranchError, match=r"no checkpoint at step 7.*\[0, 10, 20, 24\]"):
        plan_branch(store, parent, 7, {})
    with pytest.raises(BranchError, match="max_steps above 20"):
        plan_branch(store, parent, 20, {"max_steps": 20})
    assert sorted(p.name for p in store.root.iterdir()) == before
    assert plan_branch(store, parent, None, {"max_steps": 40}).step == 24  # None: the newest checkpoint


def test_a_learner_branches_anyones_run_into_a_run_of_their_own(tmp_path, tiny_text):
    """Through the app's manager and a real worker process: Bob branches Alice's run; the branch is Bob's."""
    from tinygpt.runs.scheduler import RunManager

    config = tiny_config(tiny_text, max_steps=24)
    store = RunStore(tmp_path / "runs")
    writer = store.create({**config.to_dict(), "learner": {"id": "alice", "name": "Alice"}}, owner="app")
    writer.close()
    run_training(writer.run_dir, config)
    alice, bob = Actor("alice", "Alice"), Actor("bob", "Bob")
    manager = RunManager(store, max_active=1, threads_per_run=1, lease_seconds=600)
    try:
        with pytest.raises(BranchError):  # refused before the queue, too
            manager.branch(writer.run_id, 10, {"num_layers": 3}, actor=bob)
        branch = manager.branch(writer.run_id, 10, {"learning_rate": 1e-2}, actor=bob)
        same = manager.branch(writer.run_id, 10, {}, actor=alice)  # queued behind it (one slot)
        for run in (branch, same):
            wait_for(lambda run=run: store.reader(run).status().get("state") == "finished", timeout=60)
    finally:
        manager.shutdown()
    config = read_config_json(store.path(branch))
    assert config["learner"] == {"id": "bob", "name": "Bob"} and config["parent"] == writer.run_id
    assert may_control(config, bob) and not may_control(config, alice)
    assert not may_control(read_config_json(writer.run_dir), bob)  # Alice's run stays hers
    mine, theirs = losses(store, branch), losses(store, writer.run_id)
    assert mine[:11] == theirs[:11] and mine[11] != theirs[11] and len(mine) == 24
    assert losses(store, same) == theirs  # in a worker process too: no change is the parent, to the bit


@pytest.mark.parametrize("pause_after_the_change", [False, True])
def test_reset_point_branches_a_run_back_to_before_its_mask_change(tmp_path, tiny_text, pause_after_the_change):
    """The lesson's "reset the lecture run": a run whose mask went to none at step 12 is branched from the newest
    checkpoint at or before the change. A pause right after the change checkpoints step 12 with the new mask, so
    the branch puts the old one back; either way the reset run equals a run that never changed, to the bit."""
    config = tiny_config(tiny_text, max_steps=24)
    store = RunStore(tmp_path / "runs")
    clean = store.create(config.to_dict(), owner="cli")
    clean.close()
    run_training(clean.run_dir, config)
    broken = store.create(config.to_dict(), owner="cli")
    broken.close()
    control = QueueControl()

    def at_step(record):
        if record["step"] == 12:
            control.send(KnobChange("mask", "none"))
            if pause_after_the_change:
                control.send({"cmd": "pause"})
                control.send({"cmd": "resume"})

    run_training(broken.run_dir, config, control, on_record=at_step)
    point = reset_point(broken.run_dir, ["mask", "learning_rate"])
    assert point == ((12, {"mask": "causal"}) if pause_after_the_change else (10, {}))
    reset = branch_and_train(store, broken.run_id, *point)
    assert read_config(store.path(reset)).model.mask == "causal"
    assert losses(store, reset) == losses(store, clean.run_id)  # as if the mask had never changed
    assert losses(store, broken.run_id)[12] != losses(store, clean.run_id)[12]  # the broken run leaked from step 13
    assert reset_point(clean.run_dir, ["mask"]) is None


def as_written_before_issue_32(config: dict) -> dict:
    """A config dict in the layout the code before issue 32 wrote (config.json, a checkpoint's "config"): the lab's
    switches among the model's fields, no "interventions" section."""
    old = {k: v for k, v in config.items() if k != "interventions"}
    return {**old, "model": {**config["model"], **config["interventions"]}}


def test_a_run_folder_written_before_issue_32_loads_resumes_and_branches_with_its_switches(tmp_path, tiny_text):
    from tinygpt.config import Interventions
    from tinygpt.interventions import attached
    from tinygpt.runs.models import load_model

    store, parent = trained_parent(tmp_path, tiny_text, detach_residual=True, zeroed_probes="hook_pos")
    run_dir = store.path(parent)
    straight = losses(store, parent)
    switches = Interventions(detach_residual=True, zeroed_probes="hook_pos")
    for path in [run_dir / "config.json", *(checkpoint_stem(run_dir, s).with_suffix(".json") for s in (10, 20))]:
        meta = json.loads(path.read_text())
        key = "config" if "format" in meta else None  # a checkpoint's JSON holds the run config under "config"
        if key:
            meta[key] = as_written_before_issue_32(meta[key])
        else:
            meta = as_written_before_issue_32(meta)
        assert "interventions" not in (meta[key] if key else meta)
        path.write_text(json.dumps(meta))
    assert read_config(run_dir).interventions == switches  # migrated on read
    assert "detach_residual" not in read_config_json(run_dir)["model"]
    assert store.reader(parent).config()["interventions"]["zeroed_probes"] == "hook_pos"
    assert attached(load_model(run_dir, 20).model) == switches  # sampling's model has them on
    # Resumed from step 10 the losses are the straight run's to the bit: the switches are attached again.
    assert run_training(run_dir, read_config(run_dir), resume_from=10) == "finished"
    assert losses(store, parent) == straight
    # A branch from the old layout carries the switches in its own config.json, in today's layout.
    branch = branch_and_train(store, parent, 20, {"learning_rate": 1e-3})
    written = json.loads((store.path(branch) / "config.json").read_text())
    assert written["interventions"] == switches.to_dict() and "detach_residual" not in written["model"]


def test_a_branchs_first_steps_read_the_knobs_its_parent_trained_them_under(tmp_path, tiny_text):
    """Stop 43's list: a parent that changed a knob before the branch point (mask none -> causal at step 6) and a
    branch at step 20 that changes another (the learning rate). The branch's steps 0-6 were trained under mask
    none: its history must say so (the leak notes read mask_spans), not the branch's causal config."""
    from tinygpt.runs.knobs import knobs_first, leak_spans

    config = tiny_config(tiny_text, max_steps=24, mask="none")
    store = RunStore(tmp_path / "runs")
    parent = store.create(config.to_dict(), owner="cli")
    parent.close()
    control = QueueControl()
    run_training(parent.run_dir, config, control,
                 on_record=lambda r: r["step"] == 6 and control.send(KnobChange("mask", "causal")))  # fmt: skip
    branch = branch_and_train(store, parent.run_id, 20, {"learning_rate": 0.01})
    reader = store.reader(branch)
    assert knobs_first(reader.config(), reader.events)["mask"] == "none"
    assert knobs_first(reader.config(), reader.events)["learning_rate"] == config.train.learning_rate
    assert leak_spans(reader.config(), reader.events, 24) == [("none", 0, 6)]


def test_a_change_recorded_at_the_checkpoint_step_is_not_copied_into_the_branch(tmp_path, tiny_text):
    """A review's Reset at step 7 branched the lecture run from its checkpoint at step 2000, the step its LR 0.1 was
    recorded at (applied after that step, after its checkpoint): the branch trained at 0.003 while its copied event
    made every page say 0.1, the instructor's slider too."""
    from tinygpt.runs.knobs import knobs_now

    config = tiny_config(tiny_text, max_steps=24)
    store = RunStore(tmp_path / "runs")
    broken = store.create(config.to_dict(), owner="cli")
    broken.close()
    control = QueueControl()

    def at_step(record):
        if record["step"] == 20:  # a checkpoint step (every 10)
            control.send(KnobChange("learning_rate", 0.1))

    run_training(broken.run_dir, config, control, on_record=at_step)
    assert [e["step"] for e in knob_changes(read_events(broken.run_dir)) if e["knob"] == "learning_rate"] == [20]
    point = reset_point(broken.run_dir, ["learning_rate"])
    assert point == (20, {})  # the checkpoint at 20 was written before the change: nothing to put back
    plan = plan_branch(store, broken.run_id, *point)
    branch = create_branch(store, plan, owner="cli")
    events = read_events(store.path(branch))
    assert not [e for e in knob_changes(events) if e["knob"] == "learning_rate"], events
    assert knobs_now(read_config_json(store.path(branch)), events)["learning_rate"] == config.train.learning_rate
