"""`python -m tinygpt.bench.prepare` stays runnable: two roles cut to 3 steps each, through the real RunManager."""

from __future__ import annotations

import json

from tinygpt.bench import prepare


def test_the_benchmark_times_each_run_and_judges_its_experiment(tmp_path):
    result = prepare.bench_prepare(max_steps=3, keep=str(tmp_path), roles=("exp:softmax", "heads"))
    json.dumps(result)  # printable as it is
    rows = {(r["role"], r["label"]): r for r in result["runs"]}
    assert set(rows) == {("exp:softmax", "stable softmax"), ("exp:softmax", "naive softmax"), ("heads", "run")}
    for row in rows.values():
        assert row["max_steps"] == 3 and row["state"] in prepare.DONE
        assert 0 < row["seconds_start_to_end"] <= result["total_wall_s"]
    assert set(result["verdicts"]) == {"exp:softmax"}  # the heads run has no verdict
    assert result["slots"] >= 1 and result["load_1min_before"] >= 0
