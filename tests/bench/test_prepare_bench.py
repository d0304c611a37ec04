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


def test_with_a_learner_it_records_both_forecasts_against_what_happened(tmp_path):
    """--with-learner: a learner's Demo run queued after the batch, and the instructor's and that learner's
    forecasts beside the times they came true (a review read 28m48s beside "10 min"; it took 5.5)."""
    result = prepare.bench_prepare(max_steps=3, keep=str(tmp_path), roles=("exp:softmax",), with_learner=True)
    json.dumps(result)
    forecasts = result["forecasts"]
    assert forecasts["ready_at_s"] == result["total_wall_s"] and forecasts["samples"]
    assert forecasts["samples"][0]["t"] >= 0 and forecasts["samples"][0]["runs_left"] >= 1
    for row in forecasts["samples"]:  # an error only beside a forecast that gave a number
        assert ("ready_error_s" in row) == (row["ready_in_s"] is not None)
