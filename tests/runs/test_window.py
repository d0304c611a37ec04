"""A run's exact records between two steps (tinygpt/runs/window.py): read incrementally, rewinds followed."""

import json

from tinygpt.runs.window import metrics_between


def write(path, steps, loss, mode="a"):
    with open(path, mode) as f:
        for s in steps:
            f.write(json.dumps({"step": s, "loss": loss}) + "\n")


def test_the_window_holds_every_record_of_its_steps_follows_appends_and_rewinds(tmp_path):
    path = tmp_path / "metrics.jsonl"
    write(path, range(1, 101), 2.0, "w")
    assert [m["step"] for m in metrics_between(tmp_path, 40, 59)] == list(range(40, 60))
    write(path, range(101, 201), 1.0)
    assert len(metrics_between(tmp_path, 90, 109)) == 20
    write(path, range(95, 120), 3.0)  # a worker resumed from step 94: steps 95 on were trained again
    again = metrics_between(tmp_path, 90, 109)
    assert [m["loss"] for m in again] == [2.0] * 5 + [3.0] * 15
    with open(path, "a") as f:
        f.write('{"step": 120, "lo')  # a line being written: not read until it is whole
    assert [m["step"] for m in metrics_between(tmp_path, 115, 125)] == list(range(115, 120))
    assert metrics_between(tmp_path / "missing", 1, 5) == []
