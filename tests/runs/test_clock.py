"""A run's training clock (tinygpt.runs.clock): seconds trained with pauses and waits left out, carried on every
metrics record, continued by a resume from the clock of the step it resumes at; the load on every eval."""

from __future__ import annotations

import json
import threading
import time

from helpers import tiny_config, wait_for

from tinygpt.runs import clock as clock_lib
from tinygpt.runs.clock import TrainClock, trained_until
from tinygpt.runs.control import QueueControl
from tinygpt.runs.files import read_evals
from tinygpt.runs.loop import run_training
from tinygpt.runs.store import RunStore


def test_the_clock_stands_still_while_stopped_and_speed_counts_its_seconds(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(clock_lib.time, "perf_counter", lambda: now[0])
    clock = TrainClock(trained=5.0, step=10)
    now[0] += 2.0
    assert clock.tick() == 7.0
    clock.stop()
    now[0] += 600.0  # paused for ten minutes
    assert clock.tick() == 7.0
    clock.restart(10)
    now[0] += 1.0
    assert clock.speed(12) == 2.0  # 2 steps in the 1 s trained since the restart
    assert clock.speed(12) is None  # no new step


def test_trained_until_reads_the_clock_of_the_step_a_resume_continues_from(tmp_path):
    history = [(s, s * 0.1) for s in range(1, 251)] + [(s, 30 + s * 0.1) for s in range(201, 231)]  # a rewind to 200
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "clock": c}) + "\n" for s, c in history))
    assert trained_until(tmp_path, 230) == 53.0  # the surviving history's step 230, not the abandoned one
    assert trained_until(tmp_path, 200) == 20.0
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "time": 5}\n')  # written before the clock existed
    assert trained_until(tmp_path, 1) == 0.0
    assert trained_until(tmp_path / "missing", 1) == 0.0


def test_a_paused_run_s_metrics_carry_a_clock_that_leaves_the_pause_out(tmp_path, tiny_text):
    config = tiny_config(tiny_text, max_steps=12, eval_interval=6)
    store = RunStore(tmp_path / "runs")
    writer = store.create(config.to_dict(), owner="cli")
    writer.close()
    run_dir = writer.run_dir
    control = QueueControl()

    def at_step(record):
        if record["step"] == 4:
            control.send({"cmd": "pause"})

    result = []
    thread = threading.Thread(target=lambda: result.append(run_training(run_dir, config, control, on_record=at_step)))
    thread.start()
    reader = store.reader(run_dir.name)
    wait_for(lambda: reader.poll() is not None and reader.status().get("state") == "paused", timeout=60)
    time.sleep(1.5)  # the pause: wall time passes, training time does not
    control.send({"cmd": "resume"})
    thread.join(60)
    assert result == ["finished"]
    reader.poll()
    metrics = reader.metrics
    clocks = [m["clock"] for m in metrics]
    assert clocks == sorted(clocks) and clocks[0] >= 0
    wall = metrics[4]["time"] - metrics[3]["time"]  # steps 4 -> 5 straddle the pause
    trained = metrics[4]["clock"] - metrics[3]["clock"]
    assert wall >= 1.5 and trained < 1.0, (wall, trained)
    assert all("load_avg" in e for e in read_evals(run_dir))
    assert reader.status().get("threads") >= 1
