"""`python -m tinygpt train --branch RUN --from-step N --setting value` (issue 37), in-process through main()."""

from __future__ import annotations

from helpers import tiny_train_args

from tinygpt.cli.commands import main
from tinygpt.runs.branch import read_branch
from tinygpt.runs.files import list_checkpoints, read_config
from tinygpt.runs.store import RunStore


def test_train_branch_continues_a_run_with_a_changed_setting_and_refuses_a_shape(
    tmp_path, tiny_text, capsys, monkeypatch
):
    runs = tmp_path / "runs"
    assert main([*tiny_train_args(runs, tiny_text, 20), "--quiet"]) == 0
    store = RunStore(runs)
    (parent,) = [r.run_id for r in store.list_runs()]
    step = [s for s in list_checkpoints(store.path(parent)) if 0 < s < 20][0]
    args = ["train", "--branch", parent, "--from-step", str(step), "--runs-dir", str(runs), "--threads", "1"]
    assert main([*args, "--learning-rate", "0.01", "--quiet"]) == 0
    (branch,) = [r.run_id for r in store.list_runs() if r.run_id != parent]
    assert (
        read_branch(store.path(branch))["step"] == step and read_config(store.path(branch)).train.learning_rate == 0.01
    )
    mine, theirs = store.reader(branch).metrics, store.reader(parent).metrics
    assert [m["loss"] for m in mine[: step + 1]] == [m["loss"] for m in theirs[: step + 1]]
    assert mine[step + 1]["loss"] != theirs[step + 1]["loss"] and len(mine) == 20
    capsys.readouterr()

    assert main([*args, "--num-heads", "4"]) == 2  # refused in one line, before any folder
    err = capsys.readouterr().err
    assert "num_heads" in err and "shape of the weights" in err and "Traceback" not in err
    assert len(store.list_runs()) == 2
    assert main(["train", "--branch", parent, "--resume", parent, "--runs-dir", str(runs)]) == 2
    monkeypatch.setenv("WORLD_SIZE", "2")  # under torchrun: refused, no folder
    assert main([*args]) == 2 and "without torchrun" in capsys.readouterr().err
    assert len(store.list_runs()) == 2
