

def test_a_queued_runs_knobs_are_its_own_and_the_changes_waiting_for_its_worker():
    from tinygpt.runs.knobs import with_queued

    knobs = {"learning_rate": 0.003, "min_lr": 0.0003, "warmup_steps": 50, "mask": "causal"}
    planned = with_queued(knobs, [("learning_rate", 0.01), ("warmup_steps", 60), ("mask", "none"), ("mask", "bad")])
    assert planned == {"learning_rate": 0.01, "min_lr": 0.001, "warmup_steps": 60, "mask": "none"}  # min_lr moved along
    assert knobs["learning_rate"] == 0.003  # the run's own, unchanged
