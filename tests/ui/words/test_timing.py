"""Compare's words under a seconds axis: what the seconds count, and the loads, devices and threads, from the runs'
own records; unknowns are said, never assumed."""

from tinygpt.ui.words.timing import seconds_notes


def run(clock=True, loads=(), device="cpu", threads=1):
    metrics = [{"step": s, "time": 100.0 + s, **({"clock": float(s)} if clock else {})} for s in (1, 2, 3)]
    evals = [{"step": 3, "val_loss": 2.0, "load_avg": x} for x in loads]
    return {"metrics": metrics, "evals": evals, "status": {"device": device, "threads": threads}}


def test_same_footing_says_what_seconds_count_and_each_load():
    notes = seconds_notes({"A": run(loads=(0.4, 1.2)), "B": run(loads=(0.8,))})
    assert notes[0].startswith("Seconds are each run's training time: pauses")
    assert "A 0.4-1.2 · B 0.8" in notes[1]
    assert not any("differ" in n for n in notes)


def test_different_loads_warn_that_the_gap_may_be_the_machine():
    notes = seconds_notes({"A": run(loads=(0.5, 0.7)), "B": run(loads=(4.0, 5.5))})
    assert any("The loads differ" in n for n in notes)


def test_small_load_differences_do_not_warn():
    notes = seconds_notes({"A": run(loads=(1.0,)), "B": run(loads=(1.6,))})
    assert not any("The loads differ" in n for n in notes)


def test_an_old_run_without_clock_or_load_is_named_not_assumed():
    notes = seconds_notes({"old": run(clock=False), "new": run(loads=(1.0,))})
    assert notes[0].startswith("Seconds are each run's training time")  # true of "new"
    assert notes[1].startswith("old recorded wall-clock time only")
    assert not seconds_notes({"old": run(clock=False)})[0].startswith("Seconds are")
    assert any("No machine load recorded for old" in n for n in notes)
    assert any("new 1.0" in n for n in notes)


def test_devices_and_threads_that_differ_are_said():
    notes = seconds_notes({"A": run(loads=(1,), device="cuda:0", threads=2), "B": run(loads=(1,))})
    assert any(n.startswith("They trained on different devices: cuda:0 (A) · cpu (B)") for n in notes)
    assert any(n.startswith("They trained on different thread counts: 2 (A) · 1 (B)") for n in notes)


def test_bad_values_are_ignored_and_no_runs_say_nothing():
    assert seconds_notes({}) == []
    bad = {"metrics": [{"step": 1, "clock": 0.0}], "evals": [{"load_avg": "x"}, {"load_avg": True}], "status": None}
    assert any("No machine load recorded for A" in n for n in seconds_notes({"A": bad}))


def test_a_run_without_steps_is_said_as_such_and_many_runs_make_a_short_caption():
    """A review compared 27 runs, one of which failed at step 0 with no metrics: the caption called it "written by
    an older version", dropped what the seconds count for the other 26, and listed 26 loads (2,200 characters)."""
    runs = {f"run {i}": run(loads=(0.5 + i * 0.2,)) for i in range(26)}
    runs["failed"] = {"metrics": [], "evals": [], "status": {"device": "cpu", "threads": 1}}
    notes = seconds_notes(runs)
    assert notes[0].startswith("Seconds are each run's training time")
    assert any(n == "failed took no step: nothing of it is on the seconds axis." for n in notes)
    assert not any("older version" in n for n in notes)
    assert "across 26 runs; the quietest run 0 (median 0.5), the busiest run 25 (5.5)" in " ".join(notes)
    assert len(" ".join(notes)) < 700
