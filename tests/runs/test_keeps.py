"""A checkpoint the branch panel shows is kept from the training parent's retention (tinygpt.runs.keeps)."""

from __future__ import annotations

import json

from helpers import tiny_config

from tinygpt.runs.files import list_checkpoints, read_json
from tinygpt.runs.keeps import KEEP_FOR_S, KEEPS_FILE, keep_checkpoint, kept_checkpoints
from tinygpt.runs.loop import run_training
from tinygpt.runs.retention import checkpoints_to_drop
from tinygpt.runs.store import RunStore


def survivors(steps: list[int], horizon: int) -> list[int]:
    """What retention leaves of checkpoints written at `steps`, one save at a time, with no keeps."""
    kept: list[int] = []
    for step in steps:
        kept.append(step)
        for gone in checkpoints_to_drop(kept, horizon=horizon):
            kept.remove(gone)
    return kept


def test_a_kept_step_survives_the_retention_that_deletes_it_otherwise(tmp_path, tiny_text):
    config = tiny_config(tiny_text, max_steps=60, checkpoint_every=2, eval_interval=1000, sample_every=1000)
    assert 30 not in survivors(list(range(0, 61, 2)), horizon=60)  # without the keep, step 30 is deleted
    writer = RunStore(tmp_path / "runs").create(config.to_dict(), owner="cli")
    writer.close()
    keep_checkpoint(writer.run_dir, 30)  # the panel showed step 30 before the worker wrote it
    run_training(writer.run_dir, config)
    steps = list_checkpoints(writer.run_dir)
    assert 30 in steps and steps[-1] == 60 and len(steps) <= 13  # the budget's 12, plus the kept one


def test_keeps_expire_and_a_rerun_within_the_minute_writes_nothing(tmp_path):
    keep_checkpoint(tmp_path, 500, now=1000.0)
    keep_checkpoint(tmp_path, 700, now=1000.0)
    assert kept_checkpoints(tmp_path, now=1000.0 + KEEP_FOR_S - 1) == [500, 700]
    assert kept_checkpoints(tmp_path, now=1000.0 + KEEP_FOR_S + 1) == []
    before = (tmp_path / KEEPS_FILE).stat().st_mtime_ns
    keep_checkpoint(tmp_path, 500, now=1030.0)  # the panel redrawn half a minute later: the keep stands
    assert (tmp_path / KEEPS_FILE).stat().st_mtime_ns == before
    keep_checkpoint(tmp_path, 900, now=1000.0 + KEEP_FOR_S + 5)  # expired keeps are dropped on the next write
    assert read_json(tmp_path / KEEPS_FILE) == {"900": 1000.0 + 2 * KEEP_FOR_S + 5}


def test_a_malformed_keeps_file_keeps_nothing_and_breaks_nothing(tmp_path):
    (tmp_path / KEEPS_FILE).write_text("[1, 2")
    assert kept_checkpoints(tmp_path) == []
    (tmp_path / KEEPS_FILE).write_text(json.dumps({"12": "soon", "x": 1e12, "40": 1e12}))
    assert kept_checkpoints(tmp_path) == [40]
    keep_checkpoint(tmp_path, 8)
    assert kept_checkpoints(tmp_path) == [8, 40]
