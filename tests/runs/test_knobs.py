

def test_a_queued_runs_knobs_are_its_own_and_the_changes_waiting_for_its_worker():
    from tinygpt.runs.knobs import with_queued

    knobs = {"learning_rate": 0.003, "min_lr": 0.0003, "warmup_steps": 50, "mask": "causal"}
    planned = with_queued(knobs, [("learning_rate", 0.01), ("warmup_steps", 60), ("mask", "none"), ("mask", "bad")])
    assert planned == {"learning_rate": 0.01, "min_lr": 0.001, "warmup_steps": 60, "mask": "none"}  # min_lr moved along
    assert knobs["learning_rate"] == 0.003  # the run's own, unchanged


def test_attention_spans_cut_at_a_window_change_under_the_sliding_window_alone():
    """A review: the entropy chart's even-spread line "sliding_window, steps 103-600" was window 5's, where steps
    103-126 had trained with window 8. A window change under another mask changes nothing the run attends to."""
    from tinygpt.runs.knobs import attention_spans

    def change(step, knob, old, new):
        return {"kind": "knob", "step": step, "knob": knob, "old": old, "new": new, "ok": True}

    config = {"model": {"mask": "causal", "window": 8}}
    events = [change(50, "window", 8, 6), change(103, "mask", "causal", "sliding_window"),
              change(126, "window", 6, 5), change(300, "mask", "sliding_window", "none")]  # fmt: skip
    assert attention_spans(config, events, 600) == [
        ("causal", None, 0, 103), ("sliding_window", 6, 103, 126), ("sliding_window", 5, 126, 300),
        ("none", None, 300, 600)]  # fmt: skip
    assert attention_spans(config, [], 40) == [("causal", None, 0, 40)]
