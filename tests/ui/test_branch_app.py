"""The Runs page's "Branch from a checkpoint" control and Compare with a branch (issue 37), through AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import tiny_config, wait_for  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.runs.branch import read_branch  # noqa: E402
from tinygpt.runs.files import checkpoint_stem, list_checkpoints, read_config, read_config_json  # noqa: E402
from tinygpt.runs.keeps import kept_checkpoints  # noqa: E402
from tinygpt.runs.loop import run_training  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.runs import runs_keys
from tinygpt.ui.train import train_keys

REPO = Path(__file__).resolve().parents[2]


def trained_parent(runs_dir, text: str) -> tuple[RunStore, str]:
    """A finished 24-step run the command line trained (read-only in the app): checkpoints at 0, 10, 20 and 24."""
    store = RunStore(runs_dir)
    config = tiny_config(text, max_steps=24)
    with store.create(config.to_dict(), owner="cli") as writer:
        parent = writer.run_id
    run_training(store.path(parent), config)
    return store, parent


def start_branch(at: AppTest) -> str:
    """Press "Start the branch" (no exception, no error): the branch, now the run in view."""
    [go] = [b for b in at.button if b.label == "Start the branch"]
    go.click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at.session_state[state.RUN_ID]


def test_a_learner_branches_a_run_they_do_not_own_and_compares_the_two(runs_dir, tiny_text):
    store = RunStore(runs_dir)
    config = tiny_config(tiny_text, max_steps=24)
    with store.create(config.to_dict(), owner="cli") as writer:  # trained from the command line: read-only here
        parent = writer.run_id
    run_training(store.path(parent), config)
    step = 10
    assert step in list_checkpoints(store.path(parent))

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key=f"{train_keys.W_BRANCH}:{parent}:step").value == 20  # the newest with steps left after it
    at.selectbox(key=f"{train_keys.W_BRANCH}:{parent}:step").set_value(step).run()
    at.number_input(key=f"{train_keys.W_BRANCH}:{parent}:{step}:learning_rate").set_value(0.01).run()
    # What the branch will change, said before it starts (the markdown escapes taken out).
    assert any("LR 0.002→0.01" in c.value.replace("\\", "") for c in at.caption)
    branch = start_branch(at)
    # The picker follows the branch, the run in view now; no label says "(current)" (a review's picker kept it on
    # the parent: the browser sends back the label it showed)
    picker = at.selectbox(key=runs_keys.W_RUNS_PICK)
    assert picker.value == branch and not any("(current)" in str(o) for o in picker.options)
    assert any("the run in view" in c.value for c in at.caption)
    assert branch != parent and read_branch(store.path(branch)) == {
        "parent": parent, "step": step, "changes": {"learning_rate": 0.01, "min_lr": 0.001}
    }  # fmt: skip
    assert read_config_json(store.path(branch))["learner"]["id"]  # this browser's learner owns it
    assert read_config(store.path(branch)).train.learning_rate == 0.01
    wait_for(lambda: store.reader(branch).status().get("state") == "finished", timeout=60)

    at.switch_page("pages/train.py").run()  # the branch is current: its parent's curve, faint, beside it
    assert not at.exception, at.exception
    at.switch_page("pages/runs.py").run()
    at.multiselect(key=runs_keys.W_COMPARE).set_value([parent, branch]).run()
    assert not at.exception, at.exception
    mine, theirs = store.reader(branch).metrics, store.reader(parent).metrics
    assert [m["loss"] for m in mine[:11]] == [m["loss"] for m in theirs[:11]] and mine[11]["loss"] != theirs[11]["loss"]


def test_a_watcher_branches_the_run_in_view_from_the_train_page(runs_dir, tiny_text):
    """Train's "Branch from a checkpoint" is the Runs page's control: a learner watching a run they do not own
    (read-only) branches it into a run of their own, which becomes the run in view."""
    store, parent = trained_parent(runs_dir, tiny_text)

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["run"] = parent
    at.query_params["view"] = "1"  # a watcher's link
    at.run()
    at.switch_page("pages/train.py").run()
    assert not at.exception, at.exception
    assert at.session_state[state.RUN_ID] == parent
    assert any(e.label.startswith("Branch from a checkpoint") for e in at.expander)
    at.selectbox(key=f"{train_keys.W_BRANCH}:{parent}:step").set_value(10).run()
    at.selectbox(key=f"{train_keys.W_BRANCH}:{parent}:10:mask").set_value("none").run()
    branch = start_branch(at)
    assert branch != parent and read_branch(store.path(branch)) == {
        "parent": parent, "step": 10, "changes": {"mask": "none"}
    }  # fmt: skip
    assert read_config_json(store.path(branch))["learner"]["id"]  # the watcher's own run


def test_a_typed_change_stays_while_the_parents_retention_deletes_its_checkpoint(runs_dir, tiny_text):
    """Review: branching a training parent, a learning rate typed into the panel went back to the checkpoint's
    within seconds and "Start the branch" made a plain copy. The parent's checkpoint retention deleted the step the
    panel was on (5000 -> 8500 -> 11000), the panel moved to the newest and drew new boxes with their defaults."""
    store, parent = trained_parent(runs_dir, tiny_text)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/runs.py").run()
    step_box = f"{train_keys.W_BRANCH}:{parent}:step"
    assert at.selectbox(key=step_box).value == 20
    at.number_input(key=f"{train_keys.W_BRANCH}:{parent}:20:learning_rate").set_value(0.01).run()
    for suffix in (".json", ".safetensors"):  # the retention deletes step 20, as a training parent's does
        checkpoint_stem(store.path(parent), 20).with_suffix(suffix).unlink()
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key=step_box).value == 10
    assert at.number_input(key=f"{train_keys.W_BRANCH}:{parent}:10:learning_rate").value == 0.01
    text = " ".join(c.value.replace("\\", "") for c in at.caption)
    assert "From step 10: LR 0.002→0.01" in text and "The checkpoint at step 20 is gone" in text, text
    assert "LR 0.002→0.01 (its floor 0.0002→0.001). Its learning rate at step 11: " in text, text  # spaced


def test_the_panel_keeps_the_step_it_shows_from_the_parents_retention(runs_dir, tiny_text):
    """Review 4.5 (stop 51): a second learner's typed learning rate and "Start the branch" were lost while the
    parent trained: retention deleted the step the panel showed, and the panel moved on. The panel now writes a
    keep for the step it shows, which a training loop pins (tests/runs/test_keeps.py)."""
    store, parent = trained_parent(runs_dir, tiny_text)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/runs.py").run()
    assert kept_checkpoints(store.path(parent)) == [20]  # the step it opened on
    at.selectbox(key=f"{train_keys.W_BRANCH}:{parent}:step").set_value(10).run()
    assert kept_checkpoints(store.path(parent)) == [10, 20]  # the step picked, and the one shown before for a while


def test_a_default_step_that_retention_deleted_moves_on_unsaid(runs_dir, tiny_text):
    """A review opened the branch panel and read "The checkpoint at step 3,500 is gone ... with your changes kept":
    the panel had been drawn (folded) on the newest step then, and nobody had picked it or changed anything."""
    store, parent = trained_parent(runs_dir, tiny_text)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/runs.py").run()
    assert at.selectbox(key=f"{train_keys.W_BRANCH}:{parent}:step").value == 20
    for suffix in (".json", ".safetensors"):
        checkpoint_stem(store.path(parent), 20).with_suffix(suffix).unlink()
    at.run()
    assert not at.exception, at.exception
    text = " ".join(c.value.replace("\\", "") for c in at.caption)
    assert "is gone" not in text and "From step 10: " in text, text


def test_a_branch_click_with_a_run_training_asks_at_once_on_runs(runs_dir, tiny_text):
    """A review: "Start the branch" on Runs seemed to do nothing while the learner's run trained; the slot question
    came later, on Train. It is drawn at the page's top, before the panel: the click now reruns the page."""
    from tinygpt.runs.owners import Actor
    from tinygpt.ui.host import resources
    from tinygpt.ui.people import people_keys

    anna = Actor("a" * 16, "anna")
    store, parent = trained_parent(runs_dir, tiny_text)
    manager = resources.get_manager()
    busy = manager.start(tiny_config(tiny_text, max_steps=10**6), actor=anna)
    try:
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
        at.session_state[people_keys.LEARNER] = anna
        at.run()
        at.switch_page("pages/runs.py").run()
        at.selectbox(key=runs_keys.W_RUNS_PICK).set_value(parent).run()
        [go] = [b for b in at.button if b.label == "Start the branch"]
        go.click().run()
        assert not at.exception, at.exception
        said = " ".join(str(w.value) for w in at.warning).replace("\\", "")
        assert "already have a run training or queued" in said, said
        assert any(b.label == "Stop it and start the branch" for b in at.button)
    finally:
        manager.stop(busy)
