"""Tests for the run folder: atomic files, safe run ids, incremental torn-line-tolerant reading, bounded memory."""

from __future__ import annotations

import json
import math
import os
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tinygpt.config import LIVE_MODEL_KNOBS, LIVE_TRAIN_KNOBS
from tinygpt.errors import RunStoreError, TinyGPTError
from tinygpt.runs.files import (
    ACTIVE_STATES,
    ENDED_STATES,
    FINAL_STATES,
    PAUSED_STATES,
    RESUMABLE_STATES,
    STATES,
    checkpoint_stem,
    default_root,
    delete_checkpoint,
    list_checkpoints,
    new_run_id,
    read_events,
    read_json,
    snapshot_name,
    snapshot_path,
    write_atomic,
    write_json_atomic,
)
from tinygpt.runs.knobs import knob_answer, knob_changes, knobs_now
from tinygpt.runs.reader import RunReader, ThinnedSeries
from tinygpt.runs.retention import retained_steps
from tinygpt.runs.status import read_status, rewind, update_status
from tinygpt.runs.store import RunStore, validate_run_id
from tinygpt.runs.writer import RunWriter

CONFIG = {"train": {"max_steps": 100}, "model": {"num_layers": 1}}


def _strict_loads(text: str):
    """json.loads that rejects NaN/Infinity, like a browser's JSON.parse."""
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c} in {text!r}"))


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "runs")


@pytest.fixture
def writer(store: RunStore):
    with store.create(CONFIG, owner="cli") as w:
        yield w


# ---------------------------------------------------------------- atomic files


def test_atomic_write_survives_a_failure_midway(tmp_path: Path):
    path = tmp_path / "status.json"
    write_json_atomic(path, {"state": "running"})

    def half_then_crash(f):
        f.write(b'{"state": "fin')
        raise OSError("disk full")

    with pytest.raises(OSError):
        write_atomic(path, half_then_crash)
    assert read_json(path) == {"state": "running"}
    assert os.listdir(tmp_path) == ["status.json"]  # the temp file was removed too


def test_concurrent_reader_never_sees_a_partial_file(tmp_path: Path):
    path = tmp_path / "status.json"
    write_json_atomic(path, {"i": 0, "pad": "x" * 200_000})
    stop, bad = threading.Event(), []

    def read_loop():
        while not stop.is_set():
            try:
                read_json(path)
            except RunStoreError as e:
                bad.append(e)

    thread = threading.Thread(target=read_loop)
    thread.start()
    for i in range(200):
        write_json_atomic(path, {"i": i, "pad": "x" * (200_000 + i)})
    stop.set()
    thread.join()
    assert not bad
    assert read_json(path)["i"] == 199


def test_read_json_missing_and_corrupt(tmp_path: Path):
    assert read_json(tmp_path / "nope.json", default={"a": 1}) == {"a": 1}
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(RunStoreError):
        read_json(tmp_path / "bad.json")


# ---------------------------------------------------------------- run ids and the store


def test_new_run_ids_are_valid_and_distinct():
    ids = {new_run_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(validate_run_id(i) == i and len(i) == 16 for i in ids)


@pytest.mark.parametrize(
    "run_id, ok",
    [("../etc", False), ("..", False), ("a/b", False), ("/abs", False), ("/abs/olute_path", False),
     ("short", False), ("x" * 65, False), ("", False), (None, False), ("run id with space", False),
     ("ok_id_123", True), ("x" * 64, True), ("A-b_C-d_", True)],
)  # fmt: skip
def test_run_id_validation(store: RunStore, run_id, ok: bool):
    if ok:
        assert store.path(run_id) == store.root / run_id
    else:
        with pytest.raises(RunStoreError):
            store.path(run_id)
        assert issubclass(RunStoreError, TinyGPTError)


def test_symlink_escaping_root_is_rejected(store: RunStore, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    store.root.mkdir(parents=True)
    (store.root / "escape_link").symlink_to(outside)
    with pytest.raises(RunStoreError):
        store.path("escape_link")


def test_default_root_from_env(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("TINYGPT_RUNS_DIR", str(tmp_path / "elsewhere"))
    assert default_root() == tmp_path / "elsewhere"
    assert RunStore().root == (tmp_path / "elsewhere").resolve()
    monkeypatch.delenv("TINYGPT_RUNS_DIR")
    assert default_root() == Path("runs")


def test_create_list_delete(store: RunStore):
    with store.create(CONFIG, owner="app") as first:
        first.write_config({"vocab": ["a", "b"], "num_params": 42, "owner": "tampered"})
    with store.create(CONFIG, owner="cli", parent=first.run_id) as second:
        second.write_status(state="running", step=7, best_val_loss=1.5)
    runs = store.list_runs()
    assert [r.run_id for r in runs] == [second.run_id, first.run_id]  # newest first
    assert runs[0].state == "running" and runs[0].step == 7 and runs[0].max_steps == 100
    assert runs[0].parent == first.run_id and runs[0].best_val_loss == 1.5
    assert runs[1].state == "queued" and runs[1].owner == "app"  # identity survives write_config
    assert runs[1].config["vocab"] == ["a", "b"] and runs[1].config["num_params"] == 42
    store.delete(first.run_id)
    assert not store.exists(first.run_id) and store.exists(second.run_id)
    with pytest.raises(RunStoreError):
        store.delete(first.run_id)
    with pytest.raises(RunStoreError):
        store.create(CONFIG, owner="someone")


def test_list_runs_survives_broken_folders(store: RunStore):
    with store.create(CONFIG, owner="cli") as good, store.create(CONFIG, owner="cli") as broken:
        (broken.run_dir / "config.json").write_text("{not json")
    (store.root / "empty_run_folder").mkdir()
    (store.root / "list_config").mkdir()
    (store.root / "list_config" / "config.json").write_text("[1, 2]")
    (store.root / ".hidden-tmp").mkdir()  # not a run id: ignored
    (store.root / "stray_file_here.txt").write_text("hi")
    runs = {r.run_id: r for r in store.list_runs()}
    assert set(runs) == {good.run_id, broken.run_id, "empty_run_folder", "list_config"}
    assert runs[good.run_id].state == "queued"
    for name in (broken.run_id, "empty_run_folder", "list_config"):
        assert runs[name].state == "unreadable" and runs[name].reason


# ---------------------------------------------------------------- writer and reader


def test_non_finite_floats_are_written_as_valid_json(writer: RunWriter):
    nan, inf = float("nan"), float("inf")
    writer.append_metric(
        {"step": 1, "loss": nan, "grad_norm": inf, "lr": np.float32(1e-3), "clipped": np.bool_(True),
         "layer_grad_norms": {"emb": -inf, "L0.attn": np.float32(nan)}, "shape": (1, 2)}
    )  # fmt: skip
    writer.write_status(state="diverged", best_val_loss=nan)
    line = (writer.run_dir / "metrics.jsonl").read_text(encoding="utf-8").strip()
    record = _strict_loads(line)
    assert record["loss"] is None and record["grad_norm"] is None
    assert record["layer_grad_norms"] == {"emb": None, "L0.attn": None}
    assert math.isclose(record["lr"], 1e-3, rel_tol=1e-6) and record["clipped"] is True and record["shape"] == [1, 2]
    assert _strict_loads((writer.run_dir / "status.json").read_text())["best_val_loss"] is None
    reader = RunReader(writer.run_dir)
    assert reader.metrics[0]["loss"] is None and reader.status()["state"] == "diverged"


def test_incremental_read_and_torn_line(writer: RunWriter):
    reader = RunReader(writer.run_dir)
    assert reader.metrics == [] and reader.config()["owner"] == "cli"
    writer.append_metric({"step": 1, "loss": 4.0})
    writer.append_metric({"step": 2, "loss": 3.5})
    version = reader.version
    assert reader.poll() and reader.version == version + 1
    assert [m["step"] for m in reader.metrics] == [1, 2]
    assert not reader.poll() and reader.version == version + 1  # nothing new: no redraw

    path = writer.run_dir / "metrics.jsonl"
    with open(path, "ab") as f:  # a writer caught mid-line
        f.write(b'{"step": 3, "lo')
    assert not reader.poll()
    assert [m["step"] for m in reader.metrics] == [1, 2] and reader.skipped_lines == 0
    with open(path, "ab") as f:
        f.write(b'ss": 3.0}\n')
    assert reader.poll()
    assert [m["step"] for m in reader.metrics] == [1, 2, 3] and reader.metrics[-1]["loss"] == 3.0


def test_reopened_writer_ends_a_torn_line(writer: RunWriter):
    writer.append_event({"step": 1, "kind": "state", "message": "running"})
    writer.close()
    with open(writer.run_dir / "events.jsonl", "ab") as f:  # the worker was killed mid-write
        f.write(b'{"step": 2, "kind": "cl')
    with RunWriter(writer.run_dir) as resumed:
        resumed.append_event({"step": 2, "kind": "state", "message": "resumed"})
    reader = RunReader(writer.run_dir)
    assert [e["message"] for e in reader.events] == ["running", "resumed"]
    assert reader.skipped_lines == 1
    with pytest.raises(RunStoreError):
        resumed.append_event({"step": 3, "kind": "typo"})


def test_garbage_lines_are_skipped(tmp_path: Path):
    lines = ['{"step": 1, "loss": 2.0}', "garbage{", "", "[1, 2]", '{"step": 2, "loss": 1.0}', '\xff"', "7"]
    (tmp_path / "metrics.jsonl").write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    reader = RunReader(tmp_path)  # no config or status at all: empty, not an error
    assert [m["step"] for m in reader.metrics] == [1, 2]
    assert reader.skipped_lines == 4 and reader.config() == {} and reader.status() == {}


def test_replaced_file_is_read_from_the_start(writer: RunWriter):
    for step in range(1, 6):
        writer.append_metric({"step": step})
    reader = RunReader(writer.run_dir)
    (writer.run_dir / "metrics.jsonl").write_text('{"step": 1, "loss": 9.0}\n')  # shorter: a new file
    assert reader.poll()
    assert reader.metrics == [{"step": 1, "loss": 9.0}]


def test_rewound_run_drops_the_steps_after_the_resume_point(writer: RunWriter):
    for step in [1, 2, 3, 4, 5, 3, 4]:
        writer.append_metric({"step": step, "loss": float(step)})
    assert [m["step"] for m in RunReader(writer.run_dir).metrics] == [1, 2, 3, 4]


def test_thinned_series_bounds():
    series = ThinnedSeries(max_points=50, recent=10)
    for step in range(1, 10_001):
        series.append({"step": step})
    steps = [r["step"] for r in series.records]
    assert len(steps) <= 50 and steps[0] == 1 and steps[-10:] == list(range(9991, 10_001))
    assert steps == sorted(set(steps))
    with pytest.raises(ValueError):
        ThinnedSeries(max_points=10, recent=10)


@pytest.mark.slow  # ~7 s: 100k lines parsed under tracemalloc
def test_reader_memory_stays_bounded(writer: RunWriter):
    groups = {"emb": 0.1, "L0.attn": 0.2, "L0.mlp": 0.3, "ln_f": 0.4}
    # Lines are built before tracing starts (tracemalloc makes every allocation slow); the reader is what is measured.
    chunks = [
        "".join(
            json.dumps({"step": step, "time": 1.7e9 + step, "loss": 1.0 / step, "lr": 1e-3, "grad_norm": 0.5,
                        "clipped": False, "layer_grad_norms": groups, "update_ratios": groups, "tokens_per_s": 1e4})
            + "\n"
            for step in range(chunk * 10_000 + 1, (chunk + 1) * 10_000 + 1)
        ).encode()
        for chunk in range(10)
    ]  # fmt: skip
    reader = RunReader(writer.run_dir, max_points=4000)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with open(writer.run_dir / "metrics.jsonl", "ab") as f:
            for chunk in chunks:
                f.write(chunk)
                f.flush()
                assert reader.poll()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    steps = [m["step"] for m in reader.metrics]
    assert len(steps) <= 4000
    assert steps[0] == 1 and steps[-1] == 100_000 and all(a < b for a, b in zip(steps, steps[1:], strict=False))
    assert steps[-1000:] == list(range(99_001, 100_001))  # the recent past at full resolution
    assert current - base < 16e6, f"reader holds {(current - base) / 1e6:.1f} MB"  # all 100k would be ~150 MB
    assert peak - base < 48e6


def test_events_and_samples_are_capped_but_rare_events_kept(writer: RunWriter):
    writer.append_event({"step": 0, "kind": "knob", "message": "lr", "knob": "learning_rate", "old": 1, "new": 2})
    for step in range(1, 3001):
        writer.append_event({"step": step, "kind": "clip", "message": "clipped"})
        writer.append_sample({"step": step, "prompt": "", "text": "é\n"})
    reader = RunReader(writer.run_dir)
    assert len(reader.events) == RunReader.EVENTS_RECENT + 1
    assert reader.events[0]["kind"] == "knob" and reader.events[-1]["step"] == 3000
    assert len(reader.samples) == 200 and reader.samples[-1]["text"] == "é\n"


def test_attention_retention_keeps_first_early_and_latest(writer: RunWriter):
    tokens = list("abc")
    reader = RunReader(writer.run_dir)
    assert reader.attention_index() == {} and reader.attention_version == 0
    for step in range(0, 3000, 10):
        weights = np.full((2, 1, 3, 3), step / 3000.0, dtype=np.float32)
        writer.write_attention(step, weights, "abc", tokens)
    reader.poll()
    files = sorted(p.name for p in (writer.run_dir / "attention").glob("step_*.npy"))
    index = reader.attention_index()
    steps = [s["step"] for s in index["snapshots"]]
    assert 16 < len(files) <= 64
    assert sorted(s["file"] for s in index["snapshots"]) == files
    assert steps[0] == 0 and steps[-1] == 2990 and steps == sorted(steps)
    assert index["tokens"] == tokens and index["probe_text"] == "abc"
    assert reader.attention_version == 1
    latest = reader.load_attention(2990)
    assert latest.dtype == np.float32 and latest.shape == (2, 1, 3, 3)
    np.testing.assert_allclose(latest, 2990 / 3000.0, rtol=1e-3)
    writer.write_attention(3000, np.zeros((2, 1, 3, 3)), "abc", tokens)
    reader.poll()
    assert reader.attention_version == 2
    assert steps[:31] == list(range(0, 301, 10))  # the early phase, where heads form, is kept whole
    with pytest.raises(RunStoreError):
        reader.load_attention(1010)  # dropped: the middle of the run is spread out
    with pytest.raises(RunStoreError):
        writer.write_attention(1, np.zeros((2, 1, 3, 3)), "abcd", list("abcd"))


@pytest.mark.parametrize(
    ("max_steps", "every"),
    [(300, 10), (4000, 10), (10_000, 10), (100_000, 10), (3000, 10), (3000, 50), (20_000, 50), (2000, 10)],
)
def test_snapshot_retention_keeps_the_early_phase_whole_then_log_spaced(max_steps, every):
    """Issue 23 finding 5: a 4000-step run kept only every second snapshot of its first 300 steps (the dense phase
    reached 10% of the run, 400 steps, and was halved to fit half the budget). Now every snapshot of the first
    min(300 steps, 10% of the run) stays at any length, and the rest is log-spaced: no doubling of the step after
    the dense phase is left without a snapshot (measured at 100,000 steps: 31 dense, then 320, 480, 640, 960,
    1280, 1920, 2560, 3840, 5120, 7680, 10240, ... 61440, 81920 ... to the end, 62 in all)."""
    kept: list[int] = []
    for step in range(0, max_steps + 1, every):
        kept = retained_steps([*kept, step], 64, horizon=max_steps)
        assert len(kept) <= 64
    dense = min(300, max_steps // 10)
    assert [s for s in kept if s <= dense] == list(range(0, dense + 1, every))  # the early phase, whole
    assert kept[0] == 0 and kept[-1] == max_steps
    later = [s for s in kept if s >= dense]
    for a, b in zip(later, later[1:], strict=False):  # log-spaced: each next one at most about twice as far in
        assert b <= 2 * max(a, every) + every, (a, b, kept)
    assert [s for s in kept if max_steps / 3 <= s <= 2 * max_steps / 3]  # and the middle is there


def test_retention_is_stable_a_dropped_step_never_comes_back_and_pins_stay():
    """The retention works on what is left (dropped files are gone): a step it drops is never asked for again, and
    pinned steps (checkpoints around a knob change or a divergence) stay whatever the run's length."""
    kept: list[int] = []
    dropped: set[int] = set()
    for step in range(0, 100_001, 100):
        new = retained_steps([*kept, step], 12, keep_recent=3, horizon=100_000, pinned=[4300, 4400, 70_000])
        dropped |= set(kept) - set(new)
        kept = new
        assert not dropped & set(kept)
    assert {4300, 4400, 70_000} <= set(kept) and len(kept) <= 12 + 3
    assert kept[:4] == [0, 100, 200, 300] and kept[-3:] == [99_800, 99_900, 100_000]


def test_checkpoints_around_a_knob_change_and_a_divergence_survive_a_long_run():
    """Issue 23 finding 5: "resume from checkpoint N, from before it blew up" named a checkpoint the thinning
    could delete later; now the checkpoints just before and after each applied knob change, non-finite step or
    divergence are kept (a refused knob changes nothing and pins nothing)."""
    from tinygpt.runs.retention import checkpoints_to_drop

    events = [
        {"step": 4350, "kind": "knob", "ok": True, "knob": "learning_rate"},
        {"step": 5050, "kind": "knob", "ok": False, "knob": "mask"},
        {"step": 7020, "kind": "nonfinite", "tensor": "loss"},
        {"step": 8000, "kind": "diverged", "checkpoint": 7900},
        {"step": 9000, "kind": "clip"},
    ]
    kept: list[int] = []
    for step in range(0, 10_001, 100):
        kept.append(step)
        for gone in checkpoints_to_drop(kept, horizon=10_000, events=[e for e in events if e["step"] <= step]):
            kept.remove(gone)
    assert {4300, 4400, 7000, 7100, 8000, 8100} <= set(kept)
    assert 5000 not in kept and 5100 not in kept and 9000 not in kept  # a refused knob and a clip pin nothing
    before = [s for s in range(0, 10_001, 100)]
    assert not {4300, 4400} <= set(retained_steps(before, 12, 3, 10_000))  # unpinned, the thinning drops them


def test_orphan_snapshot_removed_on_reopen(writer: RunWriter):
    writer.write_attention(0, np.zeros((1, 1, 2, 2)), "ab", ["a", "b"])
    np.save(writer.run_dir / "attention" / "step_00000050.npy", np.zeros((1, 1, 2, 2), dtype=np.float16))
    RunWriter(writer.run_dir).close()
    assert sorted(p.name for p in (writer.run_dir / "attention").iterdir()) == ["index.json", "step_00000000.npy"]


def test_checkpoints_need_both_files(writer: RunWriter):
    for step in (500, 100, 700):
        stem = checkpoint_stem(writer.run_dir, step)
        stem.parent.mkdir(exist_ok=True)
        stem.with_suffix(".safetensors").write_bytes(b"x")
        stem.with_suffix(".json").write_text("{}")
    checkpoint_stem(writer.run_dir, 900).with_suffix(".safetensors").write_bytes(b"x")  # being written: no .json yet
    checkpoint_stem(writer.run_dir, 700).with_suffix(".safetensors").unlink()  # half deleted: a .json alone
    (writer.run_dir / "checkpoints" / "notes.json").write_text("{}")
    assert list_checkpoints(writer.run_dir) == [100, 500]
    assert RunReader(writer.run_dir).checkpoints() == [100, 500]
    delete_checkpoint(writer.run_dir, 500)
    assert list_checkpoints(writer.run_dir) == [100]
    assert not checkpoint_stem(writer.run_dir, 500).with_suffix(".safetensors").exists()
    assert list_checkpoints(writer.run_dir / "nowhere") == []


def test_file_names_are_spelled_here():
    assert checkpoint_stem(Path("r"), 500) == Path("r/checkpoints/step_00000500")
    assert snapshot_name(7) == "step_00000007.npy"
    assert snapshot_path(Path("r"), 7) == Path("r/attention/step_00000007.npy")


def test_the_name_format_lives_only_in_the_run_files_module():
    """One home for the step-numbered file names: every other module calls tinygpt.runs.files."""
    package = Path(__file__).resolve().parents[2] / "tinygpt"
    spelled = sorted(str(p.relative_to(package)) for p in package.rglob("*.py") if "step_{" in p.read_text())
    assert spelled == ["runs/files.py"]


def test_update_status_merges_validates_and_stamps(writer: RunWriter):
    writer.write_status(state="running", step=7, tokens_per_s=100.0)
    status = update_status(writer.run_dir, state="failed", reason="failed: the worker was killed")
    assert status == read_status(writer.run_dir)
    assert (status["state"], status["step"], status["tokens_per_s"]) == ("failed", 7, 100.0)
    assert status["updated"] >= read_json(writer.run_dir / "config.json")["created"]
    with pytest.raises(RunStoreError, match="unknown run state 'crashed'"):
        update_status(writer.run_dir, state="crashed")
    with pytest.raises(RunStoreError, match="unknown run state"):
        writer.write_status(state="crashed")
    assert read_status(writer.run_dir)["state"] == "failed"  # nothing written for a refused state
    assert read_status(writer.run_dir / "missing") == {}


def test_state_groups_are_states():
    for group in (ACTIVE_STATES, PAUSED_STATES, FINAL_STATES, ENDED_STATES, RESUMABLE_STATES):
        assert set(group) <= set(STATES)
    assert set(ENDED_STATES) <= set(FINAL_STATES) and not set(ACTIVE_STATES) & set(FINAL_STATES)


def test_rewind_drops_later_checkpoints_and_snapshots(writer: RunWriter):
    for step in (0, 10, 20):
        writer.write_attention(step, np.zeros((1, 1, 2, 2)), "ab", ["a", "b"])
        stem = checkpoint_stem(writer.run_dir, step)
        stem.parent.mkdir(exist_ok=True)
        stem.with_suffix(".safetensors").write_bytes(b"x")
        stem.with_suffix(".json").write_text("{}")
    writer.close()
    rewind(writer.run_dir, 10)
    assert list_checkpoints(writer.run_dir) == [0, 10]
    assert [s["step"] for s in RunReader(writer.run_dir).attention_index()["snapshots"]] == [0, 10]
    RunWriter(writer.run_dir).close()  # a writer reopening the run deletes the unlisted snapshot file
    assert not snapshot_path(writer.run_dir, 20).exists() and snapshot_path(writer.run_dir, 10).exists()


def test_knob_events_read_back():
    config = {
        "model": {"mask": "causal", "attn_scale": "head_dim", "attn_scale_mult": 1.0, "window": 16, "num_heads": 4},
        "train": {"learning_rate": 1e-3, "min_lr": 1e-4, "warmup_steps": 100, "max_grad_norm": 1.0},
    }
    events = [
        {"kind": "knob", "knob": "mask", "old": "causal", "new": "none", "step": 3},  # an old run folder: no "ok"
        {"kind": "clip", "step": 4, "message": "clipping"},
        {"kind": "knob", "knob": "learning_rate", "request": "a", "ok": True, "old": 1e-3, "new": 2e-3, "step": 5},
        {
            "kind": "knob",
            "knob": "min_lr",
            "request": "a",
            "ok": True,
            "old": 1e-4,
            "new": 2e-4,
            "step": 5,
            "coupled_to": "learning_rate",
        },
        {"kind": "knob", "knob": "window", "request": "b", "ok": False, "error": "window must be ...", "step": 6},
        {"kind": "knob", "knob": "mask", "request": "c", "ok": True, "old": "none", "new": "none", "step": 7},
        {"kind": "knob", "knob": "mask", "request": "c", "ok": True, "old": "none", "new": "causal", "step": 9},
        {"kind": "knob", "knob": "num_heads", "old": 4, "new": 8, "step": 9},  # not a live knob: never a knob now
    ]
    assert [(e["knob"], e["step"]) for e in knob_changes(events)] == [
        ("mask", 3),
        ("learning_rate", 5),
        ("min_lr", 5),
        ("mask", 9),
        ("num_heads", 9),
    ]
    assert knob_answer(events, "a")["knob"] == "learning_rate"  # the first answer: the knob that was asked for
    assert knob_answer(events, "b")["ok"] is False
    assert knob_answer(events, "c")["step"] == 7
    assert knob_answer(events, "zzz") is None and knob_answer(events, None) is None
    now = knobs_now(config, events)
    assert set(now) == set(LIVE_MODEL_KNOBS + LIVE_TRAIN_KNOBS)
    assert (now["learning_rate"], now["min_lr"], now["mask"], now["window"]) == (2e-3, 2e-4, "causal", 16)
    assert now["weight_decay"] is None  # not in this config
    assert knobs_now(config, events[:1])["mask"] == "none"
    assert knobs_now({}, [])["mask"] is None


def test_read_events_skips_torn_lines(writer: RunWriter):
    assert read_events(writer.run_dir) == []
    writer.append_event({"step": 1, "kind": "state", "message": "a"})
    writer.close()
    with open(writer.run_dir / "events.jsonl", "ab") as f:
        f.write(b'{"step": 2, "kind"')
    assert [e["message"] for e in read_events(writer.run_dir)] == ["a"]


def test_runstore_imports_without_torch():
    """Pages import runstore to read runs; it must not drag torch in (numpy and tinygpt.config only)."""
    import subprocess
    import sys

    probe = "import sys, tinygpt.runs.store, tinygpt.runs.reader; print('torch' in sys.modules)"
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- a run's state from its lock (issue 22)

_WRITER = """
import sys, time
from tinygpt.runs.lock import acquire_writer_lock
from tinygpt.runs.writer import RunWriter
lock = acquire_writer_lock(sys.argv[1], "the CLI (python -m tinygpt train)")
writer = RunWriter(sys.argv[1])
writer.append_metric({"step": 2150, "loss": 1.5})
writer.write_status(state="running", reason="training", step=2150, max_steps=100000)
print("running", flush=True)
time.sleep(60)
"""


def _start_writer(run_dir: Path):
    import subprocess
    import sys

    from helpers import cli_env

    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(run_dir)], stdout=subprocess.PIPE, text=True,
                            env=cli_env())  # fmt: skip
    assert proc.stdout.readline().strip() == "running"
    return proc


def test_a_killed_writer_leaves_its_run_interrupted_not_running(store: RunStore):
    """Finding 9: after kill -9 of a CLI run, status.json and `runs` said `running step 2150/100000` forever."""
    with store.create({"train": {"max_steps": 100000}}, owner="cli") as writer:
        run_dir = writer.run_dir
    proc = _start_writer(run_dir)
    reader = RunReader(run_dir)
    try:
        assert reader.status()["state"] == "running" and store.list_runs()[0].state == "running"
    finally:
        proc.kill()
        proc.wait()
    reader.poll()  # status.json did not change: the reader must still notice that its writer is gone
    status = reader.status()
    assert status["state"] == "stopped" and status["reason"].startswith("interrupted at step 2150")
    assert "resum" in status["reason"] and read_status(run_dir)["state"] == "running"  # the file's own word
    summary = store.list_runs()[0]
    assert summary.state == "stopped" and summary.reason.startswith("interrupted at step 2150")
    assert json.loads((run_dir / "status.json").read_text())["state"] == "running"  # reading wrote nothing


def test_a_writer_that_ended_since_the_last_poll_is_finished_not_interrupted(store: RunStore):
    """A lab run of 200 steps ended within a page's refresh: the reader still held "running" from its last poll,
    found the writer's lock free, and the verdict read "the silent bug run was stopped". The file says finished."""
    from tinygpt.runs.lock import acquire_writer_lock

    with store.create({"train": {"max_steps": 200}}, owner="cli") as writer:
        run_dir = writer.run_dir
    update_status(run_dir, state="running", step=150)
    with acquire_writer_lock(run_dir, "a test writer"):
        reader = RunReader(run_dir)
        reader.poll()
        assert reader.status()["state"] == "running"  # held by this process: it writes the run
    update_status(run_dir, state="finished", step=200, reason="finished: reached max_steps 200")  # then let go
    assert reader.status()["state"] == "finished"  # not polled since: read again before "interrupted"


def test_delete_refuses_a_run_another_process_writes(store: RunStore):
    """Finding 4: any learner could delete a run the CLI was training; the CLI then died 'not writable'."""
    with store.create({"train": {"max_steps": 100000}}, owner="cli") as writer:
        run_id, run_dir = writer.run_id, writer.run_dir
    proc = _start_writer(run_dir)
    try:
        with pytest.raises(RunStoreError, match=f"pid {proc.pid}"):
            store.delete(run_id)
        assert run_dir.is_dir()
    finally:
        proc.kill()
        proc.wait()
    store.delete(run_id, wait_s=5)  # the holder is gone: the lock went with it
    assert not run_dir.exists()


def _induction_record(step: int, score: float, gap: float) -> dict:
    """A score record of a 2-layer, 2-head model whose best induction head scores `score` (the others stay low) and
    whose second copy of the repeated probe is `gap` nats cheaper than the first."""
    return {
        "step": step,
        "roles": {"induction": [[0.05, 0.04], [score, 0.06]]},
        "copy_loss": {"first": 3.0, "second": 3.0 - gap},
    }


def _copyvar_like(step: int) -> tuple[float, float]:
    """The copyvar run of issue 23 finding 5: flat, then the phase change at steps 1140-1260, then a slow rise."""
    rise = min(1.0, max(0.0, (step - 1140) / 120))
    return 0.05 + 0.5 * rise + 0.00002 * step, 2.0 * rise


def test_snapshots_and_checkpoints_inside_a_phase_change_survive_a_long_run(tmp_path):
    """Issue 23 finding 5: the copyvar induction run had no checkpoint between steps 800 and 1600, so ablation and
    the logit lens could not be run inside its phase change (1140-1260). The loop feeds every score record to its
    Moments, and retention keeps what lies inside the jump (and one either side) among snapshots and checkpoints,
    at any run length; without those pins the thinning leaves none there."""
    from tinygpt.inside.heads import phase_change
    from tinygpt.runs.moments import Moments
    from tinygpt.runs.retention import checkpoints_to_drop

    moments, records = Moments(), []
    (tmp_path / "run").mkdir()
    writer = RunWriter(tmp_path / "run")
    checkpoints: list[int] = []
    for step in range(0, 20_001, 10):
        records.append(_induction_record(step, *_copyvar_like(step)))
        moments.add_scores(records[-1])
        writer.write_attention(step, np.zeros((1, 1, 2, 2)), "ab", ["a", "b"], horizon=20_000, pin=moments.pins)
        if step % 100 == 0:
            checkpoints.append(step)
            for gone in checkpoints_to_drop(checkpoints, horizon=20_000, pinned=moments.pins(checkpoints)):
                checkpoints.remove(gone)
    snapshots = [s["step"] for s in writer._attn_index["snapshots"]]
    change = phase_change(records)
    assert change.found and 1140 <= change.score.step <= 1260 and 1140 <= change.gap.step <= 1260
    assert [s for s in checkpoints if 1140 <= s <= 1260] == [1200]  # every checkpoint inside the jump ...
    assert 1100 in checkpoints and 1300 in checkpoints  # ... and one either side of it
    inside = [s for s in snapshots if 1140 <= s <= 1260]
    assert len(inside) >= 8 and change.score.step in snapshots and change.gap.step in snapshots
    assert len(snapshots) <= 64 + 64 and len(checkpoints) <= 12 + 12
    unpinned = [
        s for s in range(0, 20_001, 100) if s not in checkpoints_to_drop(list(range(0, 20_001, 100)), horizon=20_000)
    ]
    assert not [s for s in unpinned if 800 < s < 1600]  # what the run kept before: nothing inside the change


def test_a_slow_rise_over_a_whole_run_pins_a_bounded_number_of_snapshots():
    from tinygpt.runs.moments import MAX_WINDOW_PINS, Moments

    # A rise of 0.5 over the middle quarter of the run: a jump (heads.find_jump), 250 snapshots wide
    wide = [_induction_record(s, 0.05 + 0.5 * min(max((s - 4000) / 2500, 0), 1), 0.0) for s in range(0, 10_001, 10)]
    moments = Moments(scores=wide)
    assert moments.windows()
    assert len(moments.pins(range(0, 10_001, 10))) <= MAX_WINDOW_PINS + 2
    # The same rise spread evenly over the whole run is a ramp, no phase change (issue 33): nothing to pin
    ramp = Moments(scores=[_induction_record(s, 0.05 + s / 20_000, 0.0) for s in range(0, 10_001, 10)])
    assert ramp.windows() == [] and ramp.pins(range(0, 10_001, 10)) == []


def test_moments_pin_around_applied_knob_changes_and_divergences_only():
    from tinygpt.runs.moments import Moments

    moments = Moments(events=[
        {"step": 450, "kind": "knob", "ok": True}, {"step": 650, "kind": "knob", "ok": False},
        {"step": 820, "kind": "diverged"}, {"step": 900, "kind": "clip"}, {"kind": "nonfinite"},
    ])  # fmt: skip
    assert moments.pins(range(0, 1001, 100)) == [400, 500, 800, 900]


def test_moments_find_the_jump_once_per_new_score_record(monkeypatch):
    """The loop asks for pins on every snapshot write and checkpoint: the windows are found again only when a score
    record came in since (at 2,000 records finding them took ~50 ms a call: a 20,000-step run's test took 107 s)."""
    from tinygpt.runs import moments as moments_module
    from tinygpt.runs.moments import Moments

    calls = []
    real = moments_module.jump_window
    monkeypatch.setattr(moments_module, "jump_window", lambda *a: calls.append(1) or real(*a))
    moments = Moments(scores=[_induction_record(s, *_copyvar_like(s)) for s in range(0, 2001, 10)])
    first = moments.pins(range(0, 2001, 10))
    assert moments.pins(range(0, 2001, 100)) and len(calls) == 2  # both series, once
    moments.add_scores(_induction_record(2010, *_copyvar_like(2010)))
    assert moments.pins(range(0, 2011, 10)) and len(calls) == 4  # a new record: found again
    assert first and moments.windows() == Moments(scores=[_induction_record(s, *_copyvar_like(s))
                                                         for s in range(0, 2011, 10)]).windows()  # fmt: skip


def test_a_branchs_steps_before_its_branch_point_have_the_old_knobs():
    """Review: a branch's config.json holds its own mask (none); its steps before the branch point were the
    parent's, under the causal mask its branch event records as old."""
    from tinygpt.runs.knobs import knobs_at, knobs_first, knobs_now, mask_spans

    config = {"model": {"mask": "none"}, "train": {"learning_rate": 0.002}}
    events = [{"kind": "knob", "knob": "mask", "step": 200, "ok": True, "old": "causal", "new": "none"}]
    assert knobs_first(config, events)["mask"] == "causal" and knobs_now(config, events)["mask"] == "none"
    assert knobs_at(config, events, 150)["mask"] == "causal" and knobs_at(config, events, 250)["mask"] == "none"
    assert mask_spans(config, events, 300) == [("causal", 0, 200), ("none", 200, 300)]
