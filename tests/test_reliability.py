"""Reliability: every failure says what happened and what to do, in one line, never a traceback; nothing written is
lost. One test (or a few) per case of RELIABILITY.md's table, named by its number (the long kill and churn runs
are tests/reliability_probe.py).

CLI cases run `tinygpt.cli.commands.main` in this process (fast, and a traceback would fail the test as an exception);
worker cases use real worker processes from a RunManager.
"""

from __future__ import annotations

import errno
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import REPO, cli_env, mounted_tmpfs, tiny_config, wait_for

from tinygpt import data as data_module
from tinygpt.cli.commands import main
from tinygpt.cli.flags import build_parser
from tinygpt.config import ATTN_SCALES, DEVICES, MASKS, OPTIMIZERS, SOFTMAXES
from tinygpt.errors import ResourceError, RunStoreError, TinyGPTError
from tinygpt.presets import PRESETS
from tinygpt.runs import files as run_files
from tinygpt.runs import preflight as preflight_module
from tinygpt.runs import status as run_status
from tinygpt.runs import store as run_store
from tinygpt.runs import writer as run_writer
from tinygpt.runs.control import QueueControl
from tinygpt.runs.corpus import read_corpus
from tinygpt.runs.divergence import DIVERGE_PATIENCE
from tinygpt.runs.files import CORPUS_FILE, checkpoint_stem, list_checkpoints, read_events, snapshot_path
from tinygpt.runs.lock import RunLockedError, acquire_writer_lock, writer_lock_holder
from tinygpt.runs.loop import run_training
from tinygpt.runs.reader import RunReader
from tinygpt.runs.resume import LATEST
from tinygpt.runs.scheduler import RunManager
from tinygpt.runs.status import read_status, update_status
from tinygpt.runs.store import RunStore


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit status, stdout, stderr). argparse's own errors exit via SystemExit."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "error:" in lines[0]
    return lines[0]


def new_run(root: Path, config, owner: str = "cli") -> tuple[RunStore, Path]:
    store = RunStore(root)
    with store.create(config.to_dict(), owner=owner) as writer:
        return store, writer.run_dir


@pytest.fixture
def manager(tmp_path):
    manager = RunManager(RunStore(tmp_path / "runs"), max_active=2, threads_per_run=1, lease_seconds=600)
    yield manager
    manager.shutdown()


# ---------------------------------------------------------------- 1. CLI tracebacks


@pytest.mark.parametrize(
    ("content", "says"),
    [("[1, 2]", "must hold a JSON object"), ('{"model": [1]}', "'model' must be a JSON object"), ("{", "is not JSON")],
)
def test_1_a_config_file_that_is_not_an_object_is_one_line(tmp_path, capsys, content, says):
    (tmp_path / "c.json").write_text(content)
    code, _, err = cli(capsys, "train", "--config", str(tmp_path / "c.json"), "--runs-dir", str(tmp_path / "r"))
    assert code == 2 and says in one_error_line(err)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("value", ["-1", "0", "two", "1e9"])
def test_1_threads_must_be_a_positive_whole_number(tmp_path, capsys, value):
    code, _, err = cli(capsys, "train", "--threads", value, "--runs-dir", str(tmp_path / "r"))
    assert code == 2 and "--threads" in one_error_line(err)
    assert not (tmp_path / "r").exists()  # refused before a run exists: nothing left "queued" forever


def test_1_a_runs_dir_that_cannot_be_a_folder_says_so(tmp_path, capsys, tiny_text):
    args = ("--source", "text", "--text", tiny_text, "--max-steps", "2", "--device", "cpu", "--quiet")
    code, _, err = cli(capsys, "train", "--runs-dir", "/proc/nope", *args)
    assert code == 2 and "the runs folder /proc/nope is not writable" in one_error_line(err)
    assert "TINYGPT_RUNS_DIR" in err
    file = tmp_path / "passwd"
    file.write_text("root:x:0:0\n")
    code, _, err = cli(capsys, "train", "--runs-dir", str(file), *args)
    assert code == 2 and "is a file, not a folder" in one_error_line(err)
    for command in (("runs",), ("sample", "--run", "abcdefgh12")):
        code, out, err = cli(capsys, *command, "--runs-dir", str(file))
        assert code in (0, 2) and (code == 0 or one_error_line(err))


SAMPLE_FLAGS = [("--temperature", "-1"), ("--temperature", "nan"), ("--temperature", "1e-9"), ("--top-p", "0"),
                ("--top-p", "1.5"), ("--top-k", "0"), ("--max-new-tokens", "-3"), ("--seed", str(2**64))]  # fmt: skip


@pytest.mark.parametrize(("flag", "value"), SAMPLE_FLAGS)
def test_1_sample_flags_out_of_range_are_one_line(tmp_path, capsys, flag, value):
    code, _, err = cli(capsys, "sample", "--run", "abcdefgh12", "--runs-dir", str(tmp_path), flag, value)
    assert code == 2 and flag in one_error_line(err)


@pytest.mark.parametrize("garbage", [b"\x00\xff garbage", b"[1, 2, 3]", b'{"model": {"hidden_dim": "wide"}}'])
def test_1_resume_of_a_run_whose_config_is_garbage_is_one_line(tmp_path, capsys, tiny_text, garbage):
    store, run_dir = new_run(tmp_path, tiny_config(tiny_text))
    (run_dir / "config.json").write_bytes(garbage)
    code, _, err = cli(capsys, "train", "--resume", run_dir.name, "--runs-dir", str(tmp_path))
    assert code == 2 and "cannot be resumed" in one_error_line(err)


# ---------------------------------------------------------------- 2. a read-only runs folder (engine side)

EROFS = OSError(errno.EROFS, "Read-only file system")


def test_2_create_start_and_resume_on_a_read_only_folder_raise_a_clear_error(tmp_path, tiny_text, monkeypatch):
    store, run_dir = new_run(tmp_path / "runs", tiny_config(tiny_text, max_steps=3), owner="app")
    run_training(run_dir, tiny_config(tiny_text, max_steps=3))
    manager = RunManager(store, max_active=1, threads_per_run=1)
    try:

        def read_only(*args, **kwargs):
            raise OSError(errno.EROFS, "Read-only file system")

        monkeypatch.setattr(run_store.tempfile, "mkdtemp", read_only)
        for module in (run_store, run_status, run_writer):  # each binds the name it calls
            monkeypatch.setattr(module, "write_json_atomic", read_only)
        expected = f"the runs folder {store.root} is not writable: [Errno 30] Read-only file system; set TINYGPT_"
        for action in (lambda: store.create({}, owner="app"), lambda: manager.start(tiny_config(tiny_text))):
            with pytest.raises(RunStoreError) as caught:
                action()
            assert str(caught.value).startswith(expected)
        with pytest.raises(RunStoreError, match="not writable"):
            manager.resume(run_dir.name, max_steps=6)
        assert manager.queued_runs() == [] and manager.live_runs() == []
    finally:
        monkeypatch.undo()
        manager.shutdown()


def test_2_a_really_read_only_mount(tmp_path, tiny_text):
    try:
        mount = mounted_tmpfs(tmp_path / "ro", "8m")
        remount = mount.__enter__()
    except OSError as exc:
        pytest.skip(str(exc))
    try:
        store, run_dir = new_run(tmp_path / "ro" / "runs", tiny_config(tiny_text, max_steps=3), owner="app")
        run_training(run_dir, tiny_config(tiny_text, max_steps=3))
        remount(True)
        manager = RunManager(store, max_active=1, threads_per_run=1)  # recovering the folder does not crash it
        try:
            with pytest.raises(RunStoreError, match="not writable: .*Read-only file system"):
                manager.start(tiny_config(tiny_text))
            with pytest.raises(RunStoreError, match="not writable"):
                manager.resume(run_dir.name, max_steps=6)
        finally:
            manager.shutdown()
        assert store.reader(run_dir.name).status()["state"] == "finished"  # still readable
    finally:
        mount.__exit__(None, None, None)


# ---------------------------------------------------------------- 3. divergence without NaN


def divergent(text, **overrides):
    return tiny_config(text, learning_rate=10.0, warmup_steps=0, max_grad_norm=0.0, **overrides)


def test_3_a_useless_loss_for_many_steps_is_flagged_diverged(tmp_path, tiny_text):
    config = divergent(tiny_text, max_steps=200, checkpoint_every=1)
    store, run_dir = new_run(tmp_path, config)
    assert run_training(run_dir, config) == "diverged"  # no control: it ends, resumable
    reader = store.reader(run_dir.name)
    status, event = reader.status(), [e for e in reader.events if e["kind"] == "diverged"][0]
    vocab = len(reader.config()["vocab"])
    assert status["state"] == "diverged" and status["step"] == event["step"] < 200
    assert event["steps"] == DIVERGE_PATIENCE and event["limit"] == pytest.approx(1.5 * math.log(vocab))
    assert event["mean_loss"] > event["limit"] and event["rule"] == "loss_above_uniform"
    assert f"1.5 x ln {vocab}" in status["reason"] and "lower learning_rate" in status["reason"]
    assert event["checkpoint"] < event["first_step"] and f"checkpoint {event['checkpoint']}" in status["reason"]


@pytest.mark.parametrize(
    "overrides",
    [
        {},  # healthy
        {"learning_rate": 1e-5},  # learning slowly: the loss stays near ln(V), never far above it
        {"learning_rate": 1.0, "warmup_steps": 0, "max_grad_norm": 0.0},  # a spike of ~10 steps that recovers
        {"learning_rate": 1e-2, "warmup_steps": 0},  # the pitfall lab's "no warmup": stalls, does not diverge
    ],
)
def test_3_healthy_slow_and_recovering_runs_are_not_flagged(tmp_path, tiny_text, overrides):
    config = tiny_config(tiny_text, max_steps=150, **overrides)
    store, run_dir = new_run(tmp_path, config)
    assert run_training(run_dir, config) == "finished"
    assert not [e for e in store.reader(run_dir.name).events if e["kind"] == "diverged"]


def test_3_a_diverged_run_waits_for_a_command_and_the_cli_says_why(tmp_path, tiny_text, capsys):
    config = divergent(tiny_text, max_steps=10**6)
    store, run_dir = new_run(tmp_path, config)
    control = QueueControl()
    answers = []

    def on_record(record):
        if record["step"] == DIVERGE_PATIENCE + 5:  # stepped on after a resume: it had paused at PATIENCE + 1
            answers.append(read_status(run_dir)["state"])
            control.send({"cmd": "stop"})

    def train():
        answers.append(run_training(run_dir, config, control, on_record=on_record))

    thread = threading.Thread(target=train)
    thread.start()
    wait_for(lambda: read_status(run_dir).get("state") == "diverged", what="diverged")
    control.send({"cmd": "knob", "name": "learning_rate", "value": 1e-3})
    control.send({"cmd": "step", "n": 10})
    thread.join(30)
    assert answers[-1] == "stopped"
    code, out, err = cli(capsys, *divergent_cli_args(tiny_text, tmp_path))
    assert code == 1 and err.strip().splitlines()[-1].startswith("run ") and ": diverged at step" in err


def divergent_cli_args(text, tmp_path):
    return ("train", "--source", "text", "--text", text, "--hidden-dim", "32", "--num-heads", "2", "--max-seq-len",
            "16", "--batch-size", "4", "--learning-rate", "10", "--warmup-steps", "0", "--max-grad-norm", "0",
            "--max-steps", "200", "--device", "cpu", "--quiet", "--runs-dir", str(tmp_path / "cli"))  # fmt: skip


# ---------------------------------------------------------------- 4. an exact resume after a worker is killed


def test_4_sigkill_of_a_worker_then_resume_follows_the_uninterrupted_curve_step_by_step(manager, tiny_text):
    config = tiny_config(tiny_text, max_steps=120, checkpoint_every=25, eval_interval=20, dropout=0.1)
    whole, killed = manager.start(config), manager.start(config)
    store = manager.store
    wait_for(lambda: (store.reader(killed).status().get("step") or 0) >= 60, what="step 60")
    os.kill(manager.worker_pid(killed), signal.SIGKILL)
    wait_for(lambda: store.reader(killed).status()["state"] == "failed", what="the kill noticed")
    last = store.reader(killed).metrics[-1]["step"]
    checkpoint = list_checkpoints(store.path(killed))[-1]
    assert checkpoint <= last  # usually some steps were lost with the process and are trained again
    manager.resume(killed)
    for run_id in (whole, killed):
        wait_for(lambda run_id=run_id: store.reader(run_id).status()["state"] == "finished", 120, "finished")
    a, b = store.reader(whole), store.reader(killed)
    assert [m["step"] for m in b.metrics] == list(range(1, 121))  # the reader rewound the re-trained steps
    for mine, theirs in zip(b.metrics, a.metrics, strict=True):
        for key in ("loss", "grad_norm", "lr", "clipped", "update_ratios"):
            assert mine[key] == theirs[key], (mine["step"], key)  # bit for bit, every step
    assert [(e["step"], e["val_loss"]) for e in b.evals] == [(e["step"], e["val_loss"]) for e in a.evals]
    resumed = [e for e in b.events if e.get("resumed_from") is not None][-1]
    assert resumed["resumed_from"] == checkpoint
    if last > checkpoint:
        assert resumed["rewound_from"] == last
        assert f"resumed from checkpoint {checkpoint} (steps {checkpoint + 1}-{last}" in resumed["message"]


def test_4_a_resume_in_the_moment_after_a_kill_is_not_lost(manager, tiny_text):
    """Resume clicked after the worker died but before the monitor noticed: it used to be sent down the dead pipe
    and dropped, leaving the run failed. The monitor is held off (its lock) to make that moment certain."""
    run_id = manager.start(tiny_config(tiny_text, max_steps=40, checkpoint_every=10))
    store = manager.store
    wait_for(lambda: (store.reader(run_id).status().get("step") or 0) >= 15, what="step 15")
    with manager.slots.lock:  # the monitor cannot reap while we hold it
        process = manager.slots.live_job(run_id).process
        os.kill(process.pid, signal.SIGKILL)
        wait_for(lambda: not process.is_alive(), what="the worker to die")
        manager.resume(run_id)
    wait_for(lambda: store.reader(run_id).status().get("state") == "finished", 120, what="finished after all")
    assert [m["step"] for m in store.reader(run_id).metrics] == list(range(1, 41))


def test_4_ctrl_c_of_the_cli_then_resume_follows_the_uninterrupted_curve(tmp_path, tiny_text):
    """SIGINT stops the CLI between two steps: an interrupt in the middle of one used to checkpoint the batch
    stream a batch ahead of the weights, and the resumed curve parted from the uninterrupted one."""
    config = tiny_config(tiny_text, max_steps=150, checkpoint_every=40, eval_interval=25, dropout=0.1)
    reference_store, reference_dir = new_run(tmp_path / "reference", config)
    run_training(reference_dir, config)
    (tmp_path / "config.json").write_text(json.dumps(config.to_dict()))
    runs = tmp_path / "runs"
    train = [sys.executable, "-m", "tinygpt", "train", "--runs-dir", str(runs), "--threads", "1", "--quiet"]
    proc = subprocess.Popen([*train, "--config", str(tmp_path / "config.json")], env=cli_env(), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    run_id = proc.stdout.readline().split()[1]
    wait_for(lambda: (read_status(runs / run_id).get("step") or 0) >= 50, what="step 50")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err
    status = read_status(runs / run_id)
    assert status["state"] == "stopped" and status["reason"].startswith("stopped: interrupted (SIGINT) at step")
    assert list_checkpoints(runs / run_id)[-1] == status["step"] < 150
    again = subprocess.run([*train, "--resume", run_id], env=cli_env(), cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)  # fmt: skip
    assert again.returncode == 0, again.stderr
    got = [(m["step"], m["loss"], m["grad_norm"]) for m in RunReader(runs / run_id).metrics]
    want = [(m["step"], m["loss"], m["grad_norm"]) for m in reference_store.reader(reference_dir.name).metrics]
    assert got == want


# ---------------------------------------------------------------- 5. the CLI says why a run failed


def test_5_offline_shakespeare_prints_the_reason_and_exits_1(tmp_path, capsys, monkeypatch):
    """Offline with the embedded copy damaged (offline with it intact trains: tests/cli/test_cli.py)."""
    monkeypatch.delenv("TINYGPT_SHAKESPEARE", raising=False)
    monkeypatch.setattr(data_module, "EMBEDDED_SHAKESPEARE", tmp_path / "gone.txt.xz")
    monkeypatch.setenv("TINYGPT_CACHE_DIR", str(tmp_path / "cache"))
    defaults = data_module.load_shakespeare.__defaults__
    monkeypatch.setattr(data_module.load_shakespeare, "__defaults__", (*defaults[:2], 2, "http://127.0.0.1:9/x"))
    code, out, err = cli(capsys, "train", "--max-steps", "2", "--device", "cpu", "--quiet", "--runs-dir", str(tmp_path))
    last = err.strip().splitlines()[-1]
    assert code == 1 and last.startswith("run ") and ": failed: The embedded copy" in last
    assert "could not download Tiny Shakespeare" in last
    assert "TINYGPT_SHAKESPEARE" in last


def test_5_truncated_and_pickled_checkpoints_say_so(tmp_path, capsys, tiny_text):
    config = tiny_config(tiny_text, max_steps=20)
    store, run_dir = new_run(tmp_path, config)
    run_training(run_dir, config)
    weights = checkpoint_stem(run_dir, 20).with_suffix(".safetensors")
    weights.write_bytes(weights.read_bytes()[:100])
    args = ("--runs-dir", str(tmp_path), "--quiet")
    code, out, err = cli(capsys, "train", "--resume", run_dir.name, "--from-step", "20", "--max-steps", "25", *args)
    assert code == 1 and "failed: weights file" in err and "truncated" in err.strip().splitlines()[-1]
    torch.save({"model": torch.zeros(3)}, checkpoint_stem(run_dir, 10).with_suffix(".safetensors"))  # a pickle
    code, _, err = cli(capsys, "sample", "--run", run_dir.name, "--step", "10", "--runs-dir", str(tmp_path))
    assert code == 2 and "checkpoint" in one_error_line(err)


# ---------------------------------------------------------------- 6. a run folder without status.json


def test_6_a_run_without_status_json_reports_what_it_knows_and_resumes(tmp_path, capsys, tiny_text):
    config = tiny_config(tiny_text, max_steps=20, checkpoint_every=10)
    store, run_dir = new_run(tmp_path / "runs", config, owner="app")
    run_training(run_dir, config)
    (run_dir / "status.json").unlink()
    reason = "status.json missing; resumable from checkpoint 20"
    (summary,) = store.list_runs()
    assert (summary.state, summary.step, summary.reason) == ("stopped", 20, reason)
    assert RunReader(run_dir).status()["reason"] == reason
    (run_dir / "status.json").write_text("{ garbage")  # unreadable counts the same
    assert store.list_runs()[0].reason == "status.json is unreadable; resumable from checkpoint 20"
    manager = RunManager(store, max_active=1, threads_per_run=1)
    try:
        manager.resume(summary.run_id, max_steps=25)
        wait_for(lambda: store.reader(summary.run_id).status().get("state") == "finished", what="finished")
        assert store.reader(summary.run_id).status()["step"] == 25
    finally:
        manager.shutdown()
    (run_dir / "status.json").unlink()
    code, out, _ = cli(capsys, "train", "--resume", run_dir.name, "--max-steps", "30", "--runs-dir", str(store.root),
                       "--quiet")  # fmt: skip
    assert code == 0 and read_status(run_dir)["step"] == 30 and "finished" in out


# ---------------------------------------------------------------- 8. a damaged newest checkpoint


def test_8_resume_falls_back_to_the_newest_checkpoint_that_loads(tmp_path, tiny_text):
    config = tiny_config(tiny_text, max_steps=30, checkpoint_every=10)
    store, run_dir = new_run(tmp_path, config)
    run_training(run_dir, config)
    weights = checkpoint_stem(run_dir, 30).with_suffix(".safetensors")
    weights.write_bytes(weights.read_bytes()[:100])
    assert run_training(run_dir, tiny_config(tiny_text, max_steps=35), resume_from=LATEST) == "finished"
    events = read_events(run_dir)
    skipped = [e for e in events if e["kind"] == "checkpoint" and e.get("checkpoint") == 30]
    assert skipped and "truncated" in skipped[0]["message"]
    resumed = [e for e in events if e.get("resumed_from") is not None][-1]
    assert resumed["resumed_from"] == 20 and "newer checkpoint 30 could not be loaded" in resumed["message"]
    reader = store.reader(run_dir.name)
    assert [m["step"] for m in reader.metrics] == list(range(1, 36)) and reader.status()["step"] == 35


def test_8_from_step_rewinds_to_a_chosen_checkpoint(tmp_path, capsys, tiny_text):
    config = tiny_config(tiny_text, max_steps=30, checkpoint_every=10)
    store, run_dir = new_run(tmp_path, config)
    run_training(run_dir, config)
    args = ("train", "--resume", run_dir.name, "--runs-dir", str(tmp_path), "--quiet")
    code, _, err = cli(capsys, *args, "--from-step", "15")
    assert code == 2 and "no checkpoint at step 15; it has [0, 10, 20, 30]" in one_error_line(err)
    code, _, _ = cli(capsys, *args, "--from-step", "10")
    assert code == 0 and list_checkpoints(run_dir) == [0, 10, 20, 30]  # 20 and 30 trained again
    assert [m["step"] for m in store.reader(run_dir.name).metrics] == list(range(1, 31))
    code, _, err = cli(capsys, "train", "--from-step", "10", "--runs-dir", str(tmp_path))
    assert code == 2 and "--from-step needs --resume" in one_error_line(err)


def test_8_manager_resume_from_step(manager, tiny_text):
    run_id = manager.start(tiny_config(tiny_text, max_steps=30, checkpoint_every=10))
    store = manager.store
    wait_for(lambda: store.reader(run_id).status().get("state") == "finished", what="finished")
    with pytest.raises(TinyGPTError, match="no checkpoint at step 5"):
        manager.resume(run_id, from_step=5)
    manager.resume(run_id, from_step=10, max_steps=30)
    wait_for(lambda: "resumed from checkpoint 10" in json.dumps(store.reader(run_id).events), what="the resume")
    wait_for(lambda: store.reader(run_id).status().get("state") == "finished", what="finished again")


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[:60]),  # truncated
        lambda p: p.write_bytes(pickle.dumps({"weights": [1, 2]})),  # a pickle
        lambda p: np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True),  # a pickled .npy
        lambda p: p.write_bytes(b""),  # empty
        lambda p: p.write_text("not numpy at all"),
        lambda p: np.save(p, np.zeros(3)),  # the wrong shape
    ],
)
def test_8_an_unreadable_attention_snapshot_raises_run_store_error(tmp_path, tiny_text, damage):
    config = tiny_config(tiny_text, max_steps=5)
    store, run_dir = new_run(tmp_path, config)
    run_training(run_dir, config)
    path = snapshot_path(run_dir, 5)
    damage(path)
    if path.with_suffix(".npy.npy").exists():
        path.with_suffix(".npy.npy").rename(path)
    with pytest.raises(RunStoreError, match="step 5"):
        store.reader(run_dir.name).load_attention(5)


# ---------------------------------------------------------------- 9. a full disk


def test_9_a_start_without_room_on_the_disk_raises_instead_of_queueing(manager, tiny_text, monkeypatch):
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(preflight_module.shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 1000, 1000))
    with pytest.raises(ResourceError, match="is full: 1 kB free, and a new run needs about"):
        manager.start(tiny_config(tiny_text))
    assert manager.store.list_runs() == [] and manager.queued_runs() == []


def test_9_status_json_is_rewritten_in_place_when_the_disk_is_full(tmp_path, tiny_text, monkeypatch):
    store, run_dir = new_run(tmp_path, tiny_config(tiny_text))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_status, "write_json_atomic", full)
    update_status(run_dir, state="failed", reason="failed: the disk is full")
    assert read_status(run_dir)["reason"] == "failed: the disk is full"


def test_9_a_really_full_disk(tmp_path, tiny_text):
    """A 3 MB file system: the run that fills it fails saying so, the next start is refused, a resume after
    freeing space continues from the last checkpoint that loads."""
    try:
        mount = mounted_tmpfs(tmp_path / "disk", "3m")
        mount.__enter__()
    except OSError as exc:
        pytest.skip(str(exc))
    try:
        root = tmp_path / "disk" / "runs"
        big = tiny_config(tiny_text, hidden_dim=64, max_steps=10**6, checkpoint_every=1)  # ~1.2 MB a checkpoint
        store, run_dir = new_run(root, big)
        assert run_training(run_dir, big) == "failed"
        status = read_status(run_dir)
        assert status["state"] == "failed" and "is full" in status["reason"] and status["step"] > 0
        with pytest.raises(ResourceError, match="is full"):
            preflight_module.check_disk(root, big)
        *older, newest = list_checkpoints(run_dir)
        for step in older:
            run_files.delete_checkpoint(run_dir, step)  # the user frees some space
        longer = tiny_config(tiny_text, hidden_dim=64, max_steps=newest + 1)  # one more checkpoint fits
        assert run_training(run_dir, longer, resume_from=LATEST) == "finished"
        assert list_checkpoints(run_dir) == [newest, newest + 1]
    finally:
        mount.__exit__(None, None, None)


# ---------------------------------------------------------------- 10. one writer per run

HOLDER = textwrap.dedent(
    """
    import sys, time
    from tinygpt.runs.lock import acquire_writer_lock
    lock = acquire_writer_lock(sys.argv[1], "a test's stand-in for the app's training worker")
    print("locked", flush=True)
    time.sleep(60)
    """
)


def test_10_one_writer_per_run_and_a_dead_holder_does_not_block(tmp_path, capsys, tiny_text):
    config = tiny_config(tiny_text, max_steps=5)
    store, run_dir = new_run(tmp_path / "runs", config, owner="app")
    run_training(run_dir, config)
    before = (run_dir / "metrics.jsonl").read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], stdout=subprocess.PIPE, text=True,
                              env=cli_env())  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert writer_lock_holder(run_dir)["pid"] == holder.pid
        code, _, err = cli(capsys, "train", "--resume", run_dir.name, "--max-steps", "9", "--runs-dir", str(store.root))
        assert code == 2 and f"pid {holder.pid}" in one_error_line(err) and "one process" in err
        with pytest.raises(RunLockedError, match="stand-in"):
            run_training(run_dir, config, resume_from=LATEST)  # direct callers are refused too
        with pytest.raises(RunLockedError):
            update_status(run_dir, state="paused")
        manager = RunManager(store, max_active=1, threads_per_run=1)
        try:
            with pytest.raises(TinyGPTError, match="only one process"):
                manager.resume(run_dir.name, max_steps=9)
        finally:
            manager.shutdown()
        assert (run_dir / "metrics.jsonl").read_bytes() == before  # nobody wrote a byte
        assert read_status(run_dir)["state"] == "finished"
    finally:
        holder.kill()
        holder.wait()
    assert writer_lock_holder(run_dir) is None  # the kernel dropped the dead holder's lock: no stale lock
    code, _, _ = cli(capsys, "train", "--resume", run_dir.name, "--max-steps", "9", "--runs-dir", str(store.root),
                     "--quiet")  # fmt: skip
    assert code == 0 and read_status(run_dir)["step"] == 9


def test_10_the_cli_cannot_resume_a_run_the_app_is_training(manager, capsys, tiny_text):
    run_id = manager.start(tiny_config(tiny_text, max_steps=10**6, checkpoint_every=500))
    store = manager.store
    wait_for(lambda: (store.reader(run_id).status().get("step") or 0) >= 3, what="training")
    code, _, err = cli(capsys, "train", "--resume", run_id, "--runs-dir", str(store.root))
    assert code == 2 and "the app's training worker" in one_error_line(err)
    assert store.reader(run_id).status()["state"] == "running"
    manager.stop(run_id)
    with acquire_writer_lock(store.path(run_id), "a test"):  # the worker's lock went with it
        assert writer_lock_holder(store.path(run_id))["this_process"]
    assert writer_lock_holder(store.path(run_id)) is None  # released: nothing left behind that blocks


# ---------------------------------------------------------------- 11. the corpus stored once


def test_11_a_text_corpus_is_stored_once_and_referenced(tmp_path, capsys, tiny_text):
    text = tiny_text * 300  # ~1 MB
    config = tiny_config(text, max_steps=10, checkpoint_every=5)
    store, run_dir = new_run(tmp_path / "runs", config)
    assert (run_dir / CORPUS_FILE).read_text() == text
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["data"]["text"] == "" and len(saved["data"]["text_sha256"]) == 64
    assert run_training(run_dir, config) == "finished"
    assert (run_dir / "config.json").stat().st_size < 10_000
    for step in list_checkpoints(run_dir):
        assert checkpoint_stem(run_dir, step).with_suffix(".json").stat().st_size < 20_000
    assert read_corpus(run_dir) == text and store.reader(run_dir.name).config()["data"]["text"] == ""
    assert run_training(run_dir, tiny_config(text, max_steps=12), resume_from=LATEST) == "finished"
    code, out, _ = cli(capsys, "train", "--config", str(run_dir / "config.json"), "--max-steps", "2", "--runs-dir",
                       str(tmp_path / "again"), "--quiet")  # fmt: skip
    assert code == 0
    (copy,) = RunStore(tmp_path / "again").list_runs()
    assert read_corpus(RunStore(tmp_path / "again").path(copy.run_id)) == text
    (run_dir / CORPUS_FILE).write_text(text[:-5])  # edited after the fact: refused, not silently retrained
    assert run_training(run_dir, tiny_config(text, max_steps=14), resume_from=LATEST) == "failed"
    assert "is not the text run" in read_status(run_dir)["reason"]


def test_11_an_old_run_folder_with_the_text_inline_still_loads_and_resumes(tmp_path, tiny_text):
    config = tiny_config(tiny_text, max_steps=6)
    store, run_dir = new_run(tmp_path, config)
    assert run_training(run_dir, config) == "finished"
    inline = {k: v for k, v in config.data.to_dict().items() if k != "text_sha256"}  # the layout before corpus.txt
    for path in [run_dir / "config.json", *(run_dir / "checkpoints").glob("*.json")]:
        saved = json.loads(path.read_text())
        part = saved if path.name == "config.json" else saved["config"]
        part["data"] = inline
        path.write_text(json.dumps(saved))
    (run_dir / CORPUS_FILE).unlink()
    assert read_corpus(run_dir) == tiny_text
    from tinygpt.runs.models import load_model

    assert load_model(run_dir).step == 6
    assert run_training(run_dir, tiny_config(tiny_text, max_steps=8), resume_from=LATEST) == "finished"
    assert (run_dir / CORPUS_FILE).read_text() == tiny_text  # moved out on the way
    assert json.loads(checkpoint_stem(run_dir, 8).with_suffix(".json").read_text())["config"]["data"]["text"] == ""


# ---------------------------------------------------------------- 12. refused up front, not inside the loop


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--device", "cuda"), "not available on this machine"),
        (("--checkpoint-every", "0"), "--checkpoint-every: expected a whole number from 1"),
        # Within the table of limits (tinygpt.config.LIMITS) but beyond this machine: the memory estimate refuses
        (("--max-seq-len", "65536"), "lower max_seq_len"),
        (("--hidden-dim", "16384", "--num-heads", "4"), "lower hidden_dim"),
        (("--batch-size", "8192", "--max-seq-len", "1024"), "of memory to train"),
        (("--max-seq-len", "100000"), "--max-seq-len: expected a whole number from 1 to 65,536"),  # past the table
        (("--source", "nonsense"), "invalid choice"),
        (("--source", "text", "--text", "too short"), "characters"),
        (("--seed", "-1"), "--seed: expected a whole number from 0"),
        (("--threads", "-1"), "--threads"),
    ],
)
def test_12_what_cannot_work_is_refused_before_a_run_exists(tmp_path, capsys, flags, says):
    if "cuda" in flags and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, _, err = cli(capsys, "train", "--max-steps", "3", "--runs-dir", str(tmp_path / "r"), *flags)
    assert code == 2 and says in one_error_line(err)
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").iterdir())


def test_12_the_memory_estimate_names_the_number_and_what_to_lower():
    from tinygpt.presets import preset

    config = preset("demo", max_seq_len=65_536)  # the longest context the table of limits allows
    with pytest.raises(ResourceError) as caught:
        preflight_module.check_memory(config, "cpu", free=16 * 10**9)
    message = str(caught.value)
    assert message.startswith("this run needs about 4.41 TB of memory to train, but the cpu has 16 GB free: ")
    assert "the attention scores alone take 4.4 TB (2 layers x batch 16 x 4 heads x 65,536^2 positions)" in message
    preflight_module.check_memory(preset("demo"), "cpu", free=16 * 10**9)  # the demo fits easily


# ---------------------------------------------------------------- 13. help


def test_13_every_flag_has_help_choices_and_the_presets_values():
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    actions = {a.dest: a for a in train._actions if a.option_strings}
    for action in actions.values():
        assert action.help and len(action.help.split()) >= 3, action.dest
        assert not (action.metavar or "").startswith(("RUN.", "MODEL.", "TRAIN.", "DATA.")), action.dest
    assert tuple(actions["model.attn_scale"].choices) == ATTN_SCALES and tuple(actions["model.mask"].choices) == MASKS
    assert tuple(actions["model.softmax"].choices) == SOFTMAXES and tuple(actions["train.device"].choices) == DEVICES
    assert "synthetic:add" in actions["data.source"].choices
    assert "GPT-2 had them" in actions["model.bias"].help and actions["model.bias"].metavar == "{true,false}"
    assert "demo 64, lecture 128, nanogpt-cpu 128, fast 128, fast-3min 128, gpu 384" in actions["model.hidden_dim"].help
    assert tuple(actions["train.optimizer"].choices) == OPTIMIZERS
    assert f"demo {PRESETS['demo']['run']['attention_every']}" in actions["run.attention_every"].help
    assert "learning_rate / 10" in actions["train.min_lr"].help
    assert "model.vocab_size" not in actions and "data.text_sha256" not in actions
    help_text = train.format_help()
    assert "RUN.ATTENTION_EVERY" not in help_text and "attn scale" not in help_text
    subprocess.run([sys.executable, "-m", "tinygpt", "train", "--help"], env=cli_env(), cwd=REPO, check=True,
                   capture_output=True, timeout=60)  # fmt: skip
